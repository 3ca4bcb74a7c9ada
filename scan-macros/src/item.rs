//! `#[scan_item]`: gives a `#[repr(C)]` struct its CUDA declaration.

use proc_macro2::TokenStream;
use quote::quote;
use syn::spanned::Spanned;
use syn::{Error, ItemStruct, Result};

use crate::root::Root;

pub fn scan_item(args: TokenStream, input: TokenStream, root: Root) -> TokenStream {
    let result = syn::parse2::<ItemStruct>(input.clone())
        .map_err(|e| Error::new(e.span(), "#[scan_item] applies to a #[repr(C)] struct with named fields"))
        .and_then(|s| expand(args, &s).map(|generated| (s, generated)));
    match result {
        Ok((s, generated)) => {
            let generated = root.apply(generated);
            quote!(#s #generated)
        }
        Err(e) => {
            let e = e.to_compile_error();
            quote!(#e #input)
        }
    }
}

/// What `#[repr(...)]` says: `C` (required), `packed` (refused) and
/// `align(N)` (at most 16).
struct Repr {
    c: bool,
    packed: Option<proc_macro2::Span>,
    align: Option<syn::LitInt>,
}

fn repr(s: &ItemStruct) -> Repr {
    let mut r = Repr { c: false, packed: None, align: None };
    for a in s.attrs.iter().filter(|a| a.path().is_ident("repr")) {
        let _ = a.parse_nested_meta(|m| {
            r.c |= m.path.is_ident("C");
            if m.path.is_ident("packed") {
                r.packed = Some(m.path.span());
            }
            if m.input.peek(syn::token::Paren) {
                let content;
                syn::parenthesized!(content in m.input);
                if m.path.is_ident("align") {
                    r.align = content.parse::<syn::LitInt>().ok();
                } else {
                    let _ = content.parse::<proc_macro2::TokenStream>();
                }
            }
            Ok(())
        });
    }
    r
}

/// The most a kernel aligns an item it keeps in shared memory to.
const MAX_ALIGN: u64 = 16;

fn expand(args: TokenStream, s: &ItemStruct) -> Result<TokenStream> {
    // Every problem at once: each check is independent of the others.
    let mut problems: Vec<Error> = Vec::new();
    if !args.is_empty() {
        problems.push(Error::new_spanned(&args, "#[scan_item] takes no arguments"));
    }
    let repr = repr(s);
    if !repr.c {
        problems
            .push(Error::new(s.ident.span(), "#[scan_item] needs #[repr(C)]: the GPU reads the struct with C layout"));
    }
    if let Some(align) = &repr.align {
        if align.base10_parse::<u64>().is_ok_and(|n| n > MAX_ALIGN) {
            problems.push(Error::new(
                align.span(),
                format!(
                    "#[scan_item] structs can be aligned to at most {MAX_ALIGN} bytes: the GPU kernels keep items \
                     in shared memory aligned to {MAX_ALIGN}"
                ),
            ));
        }
    }
    if let Some(span) = repr.packed {
        problems.push(Error::new(
            span,
            "#[scan_item] structs cannot be packed: the GPU reads every field at its own alignment \
             (`repr(C, align(N))` is supported)",
        ));
    }
    if !s.generics.params.is_empty() {
        problems.push(Error::new_spanned(&s.generics, "#[scan_item] structs cannot be generic"));
    }
    let named = match &s.fields {
        syn::Fields::Named(fields) => Some(fields),
        _ => {
            problems.push(Error::new(s.ident.span(), "#[scan_item] structs need named fields"));
            None
        }
    };
    if let Some(fields) = named {
        for id in fields.named.iter().filter_map(|f| f.ident.as_ref()) {
            if let Some(why) = crate::cxx_names::field_name_problem(&id.to_string()) {
                problems.push(Error::new(id.span(), why));
            }
        }
        // C++ has no zero-sized structs or arrays: NVRTC would refuse the
        // declaration (or its size assertion) only when a GPU scan is built.
        if fields.named.is_empty() {
            problems.push(Error::new(
                s.ident.span(),
                "#[scan_item] structs need at least one field: C++ has no zero-sized structs",
            ));
        }
        for f in &fields.named {
            if let Some(len) = zero_length(&f.ty) {
                problems.push(Error::new(len.span(), "arrays of no items are not supported in a #[scan_item] struct"));
            }
        }
    }
    let mut problems = problems.into_iter();
    if let Some(mut first) = problems.next() {
        problems.for_each(|e| first.combine(e));
        return Err(first);
    }
    let Some(fields) = named else {
        return Err(Error::new(s.ident.span(), "#[scan_item] structs need named fields"));
    };
    let name = &s.ident;
    let name_str = name.to_string();
    let idents: Vec<_> = fields.named.iter().filter_map(|f| f.ident.as_ref()).collect();
    let tys: Vec<_> = fields.named.iter().map(|f| &f.ty).collect();
    let field_names: Vec<String> = idents.iter().map(|i| i.to_string()).collect();
    let c_fields = quote! {
        [#(::scan_core::__private::CField {
            name: ::std::string::String::from(#field_names),
            c_type: <#tys as ::scan_core::CudaType>::c_name(),
            offset: ::core::mem::offset_of!(#name, #idents),
            size: ::core::mem::size_of::<#tys>(),
            align: ::core::mem::align_of::<#tys>(),
        }),*]
    };
    // The C++ name: the Rust path and a hash of the layout
    // (`my_crate_stats_Stats_1f2e3d4c`), so that structs of one name in two
    // modules can share an NVRTC program, and so can `a::b::S` and `a_b::S`.
    let zero_sized = format!(
        "#[scan_item] struct `{name_str}` has no bytes (a field of a zero-sized type?): C++ has no zero-sized structs"
    );
    Ok(quote! {
        // Zero-sized field types that the fields' syntax does not show.
        const _: () = ::core::assert!(::core::mem::size_of::<#name>() > 0, #zero_sized);
        impl ::scan_core::CudaType for #name {
            fn c_name() -> ::std::string::String {
                ::scan_core::__private::item_name(
                    ::core::concat!(::core::module_path!(), "::", #name_str),
                    &#c_fields,
                    ::core::mem::size_of::<#name>(),
                    ::core::mem::align_of::<#name>(),
                )
            }
            fn c_decls(out: &mut ::std::string::String) {
                #(<#tys as ::scan_core::CudaType>::c_decls(out);)*
                ::scan_core::__private::c_struct(
                    out,
                    &Self::c_name(),
                    &#c_fields,
                    ::core::mem::size_of::<#name>(),
                    ::core::mem::align_of::<#name>(),
                );
            }
            fn c_literal(&self) -> ::std::string::String {
                let parts: ::std::vec::Vec<::std::string::String> =
                    ::std::vec![#(::scan_core::CudaType::c_literal(&self.#idents)),*];
                ::std::format!("{}::make({})", Self::c_name(), parts.join(", "))
            }
        }
    })
}

/// The length expression of an array type of literal length 0 (`[T; 0]`),
/// also inside tuples and other arrays.
fn zero_length(ty: &syn::Type) -> Option<&syn::Expr> {
    match ty {
        syn::Type::Array(a) => match &a.len {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(n), .. }) if n.base10_parse::<u64>().ok() == Some(0) => {
                Some(&a.len)
            }
            _ => zero_length(&a.elem),
        },
        syn::Type::Tuple(t) => t.elems.iter().find_map(zero_length),
        syn::Type::Paren(p) => zero_length(&p.elem),
        syn::Type::Group(g) => zero_length(&g.elem),
        _ => None,
    }
}
