//! `#[scan_maps]`: an `impl Maps<Op> for T` whose `lift` and `project` are
//! plain fns of the operator subset becomes, in addition, `CudaMaps<Op>`:
//! both bodies are lowered like an operator's (`lower`), the Rust impl runs
//! the translation (`rust`), and the CUDA source prints it (`cuda`), so
//! that the CPU and the GPU compute one tree with one set of rules.
//!
//! Parse (the impl's pieces) -> validate (signatures, bodies) -> expand;
//! every problem is reported at the user's token, and on error the impl is
//! emitted unchanged beside the errors.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{Error, FnArg, ImplItem, ImplItemFn, ItemImpl, Pat, Result, Type};

use crate::cuda::{self, Piece, Printed};
use crate::ir;
use crate::lower;
use crate::root::Root;
use crate::rust;
use crate::valid::Errors;

pub fn scan_maps(args: TokenStream, input: TokenStream, root: Root) -> TokenStream {
    let item: ItemImpl = match syn::parse2(input.clone()) {
        Ok(i) => i,
        Err(e) => {
            let msg = Error::new(e.span(), "#[scan_maps] applies to an `impl Maps<Op> for Type { ... }` block");
            return fallback(msg, input);
        }
    };
    if !args.is_empty() {
        return fallback(Error::new(args.span(), "#[scan_maps] takes no arguments"), input);
    }
    match parse(&item).and_then(|m| validate(&m)).and_then(|v| expand(&item, &v)) {
        Ok(generated) => root.apply(generated),
        Err(e) => fallback(e, input),
    }
}

fn fallback(e: Error, input: TokenStream) -> TokenStream {
    let errors = e.to_compile_error();
    quote!(#errors #input)
}

/// The pieces of the impl, as written.
struct MapsImpl<'a> {
    op: &'a Type,
    input: &'a Type,
    output: &'a Type,
    lift: &'a ImplItemFn,
    project: &'a ImplItemFn,
}

fn parse(item: &ItemImpl) -> Result<MapsImpl<'_>> {
    let mut errors = Errors::default();
    if !item.generics.params.is_empty() {
        errors.push(Error::new(
            item.generics.span(),
            "generic maps are not supported: write one #[scan_maps] impl per type (the CUDA source is printed per type)",
        ));
    }
    let op = match &item.trait_ {
        Some((None, path, _)) => maps_operator(path),
        _ => None,
    };
    if op.is_none() {
        errors.push(Error::new(item.self_ty.span(), "#[scan_maps] applies to `impl Maps<Op> for Type`"));
    }
    let (mut input, mut output, mut lift, mut project) = (None, None, None, None);
    for member in &item.items {
        match member {
            ImplItem::Type(t) if t.ident == "Input" => input = Some(&t.ty),
            ImplItem::Type(t) if t.ident == "Output" => output = Some(&t.ty),
            ImplItem::Fn(f) if f.sig.ident == "lift" => lift = Some(f),
            ImplItem::Fn(f) if f.sig.ident == "project" => project = Some(f),
            other => errors.push(Error::new(
                other.span(),
                "a #[scan_maps] impl holds `type Input`, `type Output`, `fn lift` and `fn project` only",
            )),
        }
    }
    let brace = item.brace_token.span.join();
    let missing = |what: &str| Error::new(brace, format!("missing `{what}`"));
    for (absent, what) in [
        (input.is_none(), "type Input = ...;"),
        (output.is_none(), "type Output = ...;"),
        (lift.is_none(), "fn lift(x: Input) -> Item"),
        (project.is_none(), "fn project(x: Item) -> Output"),
    ] {
        if absent {
            errors.push(missing(what));
        }
    }
    errors.finish(())?;
    match (op, input, output, lift, project) {
        (Some(op), Some(input), Some(output), Some(lift), Some(project)) => {
            Ok(MapsImpl { op, input, output, lift, project })
        }
        _ => Err(Error::new(Span::call_site(), "invalid #[scan_maps]")),
    }
}

/// `Op` of a path ending in `Maps<Op>`.
fn maps_operator(path: &syn::Path) -> Option<&Type> {
    let last = path.segments.last()?;
    if last.ident != "Maps" {
        return None;
    }
    match &last.arguments {
        syn::PathArguments::AngleBracketed(a) if a.args.len() == 1 => match &a.args[0] {
            syn::GenericArgument::Type(t) => Some(t),
            _ => None,
        },
        _ => None,
    }
}

/// One lowered fn: its parameter's name, its body in the IR and in CUDA.
struct Lowered {
    param: Ident,
    body: ir::Expr,
    cuda: Printed,
}

struct Valid<'a> {
    op: &'a Type,
    lift: Lowered,
    project: Lowered,
}

fn validate<'a>(m: &MapsImpl<'a>) -> Result<Valid<'a>> {
    let mut errors = Errors::default();
    // The lowering needs the types themselves: `Self::Input` names one it
    // cannot see.
    let written = [Some(m.input), Some(m.output)].into_iter().chain([m.lift, m.project].into_iter().flat_map(|f| {
        let param = f.sig.inputs.iter().filter_map(|a| match a {
            FnArg::Typed(pt) => Some(&*pt.ty),
            FnArg::Receiver(_) => None,
        });
        let ret = match &f.sig.output {
            syn::ReturnType::Type(_, t) => Some(&**t),
            syn::ReturnType::Default => None,
        };
        param.chain(ret).map(Some).collect::<Vec<_>>()
    }));
    for t in written.flatten() {
        if names_self(t) {
            errors.push(Error::new(t.span(), "write the type out: #[scan_maps] cannot see what `Self::...` names"));
        }
    }
    errors.finish(())?;
    let mut errors = Errors::default();
    let input = errors.ok(lower::ty(m.input, &[]));
    let output = errors.ok(lower::ty(m.output, &[]));
    // The item is what lift returns and project takes.
    let lift_sig = errors.ok(signature(m.lift, m.input, None));
    let item_written = lift_sig.as_ref().map(|(_, ret)| *ret);
    let item = item_written.and_then(|t| errors.ok(lower::ty(t, &[])));
    let project_sig = item_written.and_then(|t| errors.ok(signature(m.project, t, Some(m.output))));
    let mut lower_fn = |f: &ImplItemFn, param: Option<&Ident>, from: &Option<ir::Ty>, to: &Option<ir::Ty>| {
        let (Some(param), Some(from), Some(to)) = (param, from, to) else { return None };
        let body = errors.ok(lower::function(&f.block, vec![(param.to_string(), from.clone())], to, &[]))?;
        // The C++ functions name their parameter `x` (maps::cuda_maps_source).
        let cuda = errors.ok(cuda::function(&body, &["x"]))?;
        Some(Lowered { param: param.clone(), body, cuda })
    };
    let lift = lower_fn(m.lift, lift_sig.as_ref().map(|(p, _)| p), &input, &item);
    let project = lower_fn(m.project, project_sig.as_ref().map(|(p, _)| p), &item, &output);
    errors.finish(())?;
    match (lift, project) {
        (Some(lift), Some(project)) => Ok(Valid { op: m.op, lift, project }),
        _ => Err(Error::new(Span::call_site(), "invalid #[scan_maps]")),
    }
}

/// Checks that `f` is `fn name(param: from) -> ...` (`from` as written, or
/// `Self::Input` / `Self::Item`-style paths are not resolved: write the type),
/// returning the parameter's name and the return type; with `to`, the return
/// type must be it.
fn signature<'a>(f: &'a ImplItemFn, from: &Type, to: Option<&Type>) -> Result<(Ident, &'a Type)> {
    let mut errors = Errors::default();
    let sig = &f.sig;
    let name = sig.ident.to_string();
    for (bad, what) in [
        (sig.constness.is_some(), "`const`"),
        (sig.asyncness.is_some(), "`async`"),
        (sig.unsafety.is_some(), "`unsafe`"),
        (!sig.generics.params.is_empty(), "generic"),
    ] {
        if bad {
            errors.push(Error::new(sig.span(), format!("`{name}` cannot be {what}")));
        }
    }
    let mut param = None;
    if sig.inputs.len() != 1 {
        errors.push(Error::new(
            sig.paren_token.span.join(),
            format!(
                "`{name}` takes exactly one parameter (a tuple for several input arrays), found {}",
                sig.inputs.len()
            ),
        ));
    }
    if let Some(FnArg::Typed(pt)) = sig.inputs.first() {
        match &*pt.pat {
            Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => param = Some(p.ident.clone()),
            other => errors.push(Error::new(other.span(), "the parameter must be a plain name (`x: T`)")),
        }
        if !same_type(&pt.ty, from) {
            errors.push(Error::new(
                pt.ty.span(),
                format!("`{name}` takes `{}`, as written above; found `{}`", show(from), show(&pt.ty)),
            ));
        }
    } else if let Some(FnArg::Receiver(r)) = sig.inputs.first() {
        errors.push(Error::new(r.span(), "`self` is not allowed: the maps are associated fns"));
    }
    let ret = match &sig.output {
        syn::ReturnType::Type(_, t) => Some(&**t),
        syn::ReturnType::Default => {
            errors.push(Error::new(sig.paren_token.span.close(), format!("`{name}` needs a return type")));
            None
        }
    };
    if let (Some(want), Some(got)) = (to, ret) {
        if !same_type(want, got) {
            errors.push(Error::new(
                got.span(),
                format!("`{name}` returns `{}`, as written above; found `{}`", show(want), show(got)),
            ));
        }
    }
    errors.finish(())?;
    match (param, ret) {
        (Some(p), Some(r)) => Ok((p, r)),
        _ => Err(Error::new(sig.span(), "invalid signature")),
    }
}

/// Whether `t` mentions `Self` (`Self::Input`, `(Self::Item, f32)`, ...).
fn names_self(t: &Type) -> bool {
    fn any_self(ts: TokenStream) -> bool {
        ts.into_iter().any(|tt| match tt {
            proc_macro2::TokenTree::Ident(i) => i == "Self",
            proc_macro2::TokenTree::Group(g) => any_self(g.stream()),
            _ => false,
        })
    }
    any_self(t.to_token_stream())
}

fn same_type(a: &Type, b: &Type) -> bool {
    a.to_token_stream().to_string() == b.to_token_stream().to_string()
}

fn show(t: &Type) -> String {
    t.to_token_stream().to_string().replace(" ,", ",").replace("( ", "(").replace(" )", ")")
}

fn expand(item: &ItemImpl, v: &Valid) -> Result<TokenStream> {
    // The impl as written, each fn running the translation of its body.
    let mut rust_impl = item.clone();
    for member in &mut rust_impl.items {
        if let ImplItem::Fn(f) = member {
            let lowered = if f.sig.ident == "lift" { &v.lift } else { &v.project };
            let body = rust::expr(&lowered.body, std::slice::from_ref(&lowered.param));
            f.block = syn::parse_quote!({ #body });
            f.attrs.push(syn::parse_quote!(#[allow(unused_parens, unused_variables, non_snake_case, clippy::all)]));
        }
    }
    let op = v.op;
    let self_ty = &item.self_ty;
    let base = self_ty.to_token_stream().to_string().replace(' ', "");
    let pieces = |p: &Printed| -> Vec<TokenStream> {
        p.pieces
            .iter()
            .map(|piece| match piece {
                Piece::Text(t) => quote!(code.push_str(#t);),
                Piece::CName(t) => quote!(code.push_str(&<#t as ::scan_core::CudaType>::c_name());),
                Piece::Literal(x) => quote!(code.push_str(&::scan_core::CudaType::c_literal(&(#x)));),
            })
            .collect()
    };
    let (lift, project) = (pieces(&v.lift.cuda), pieces(&v.project.cuda));
    let types: Vec<&TokenStream> = v.lift.cuda.types.iter().chain(&v.project.cuda.types).collect();
    let span = self_ty.span();
    Ok(quote_spanned! {span=>
        #rust_impl

        impl ::scan_core::maps::CudaMaps<#op> for #self_ty {
            fn cuda_source() -> ::scan_core::CudaSource {
                let lift = { let mut code = ::std::string::String::new(); #(#lift)* code };
                let project = { let mut code = ::std::string::String::new(); #(#project)* code };
                let base = ::core::concat!(::core::module_path!(), "::", #base);
                let mut source = ::scan_core::maps::cuda_maps_source::<#op, Self>(base, &lift, &project);
                // Types the bodies construct, declared before the struct.
                #[allow(unused_mut)]
                let mut decls = ::std::string::String::new();
                #(<#types as ::scan_core::CudaType>::c_decls(&mut decls);)*
                source.code.insert_str(0, &decls);
                source
            }
        }
    })
}
