//! Checks on the annotated fn: signature, identity, body subset, monoid laws.
//!
//! Every problem found is reported (errors are combined), each at the user's
//! token.

use proc_macro2::{Ident, Span};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{Error, GenericParam, Result};

use crate::ast::Operator;
use crate::check::{self, OpDef};
use crate::{cuda, ir, lower};

/// A validated operator: what `expand` generates from.
pub struct Valid {
    /// The item type as written (the first parameter's type).
    pub item_type: syn::Type,
    pub item: ir::Ty,
    /// The left and right operand names.
    pub names: [Ident; 2],
    pub body: ir::Expr,
    /// The body printed as CUDA (printability is checked here, with the
    /// other checks, so that its error is reported with theirs).
    pub cuda: cuda::Printed,
    pub identity: ir::Expr,
    pub identity_expr: syn::Expr,
    /// Type parameters the property test instantiates at `f64`, computed
    /// once (see [`check::f64_params`]).
    pub f64_params: Option<Vec<String>>,
    /// Type parameters bounded by `CudaFloat` (see [`check::float_params`]).
    pub float_params: Vec<String>,
    /// `assume_associative` was given.
    pub assume_associative: bool,
}

impl Valid {
    /// The operator as the checker and the property test see it.
    pub fn def<'a>(&'a self, fn_name: &'a Ident, type_name: &'a Ident) -> OpDef<'a> {
        OpDef {
            fn_name,
            type_name,
            item: &self.item,
            body: &self.body,
            identity: &self.identity,
            identity_span: self.identity_expr.span(),
            assume_associative: self.assume_associative,
            f64_params: self.f64_params.clone(),
            float_params: self.float_params.clone(),
        }
    }
}

/// Collects errors so that a user sees every problem at once.
#[derive(Default)]
pub struct Errors(Option<Error>);

impl Errors {
    pub fn push(&mut self, e: Error) {
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }
    pub fn finish<T>(self, value: T) -> Result<T> {
        match self.0 {
            Some(e) => Err(e),
            None => Ok(value),
        }
    }
    pub fn ok<T>(&mut self, r: Result<T>) -> Option<T> {
        r.map_err(|e| self.push(e)).ok()
    }
}

fn same_type(a: &syn::Type, b: &syn::Type) -> bool {
    a.to_token_stream().to_string() == b.to_token_stream().to_string()
}

/// A type as written, without the token spacing of `to_string` (`&f64`, `(f32, f32)`).
fn pretty(t: &syn::Type) -> String {
    let s = t.to_token_stream().to_string();
    let mut out = String::new();
    for c in s.chars() {
        if c == ' ' && (out.ends_with('&') || out.ends_with('(') || out.ends_with('[')) {
            continue;
        }
        if matches!(c, ',' | ')' | ']' | ';') && out.ends_with(' ') {
            out.pop();
        }
        out.push(c);
    }
    out
}

pub fn validate(op: &Operator) -> Result<Valid> {
    let mut errors = Errors::default();
    let sig = &op.func.sig;
    let tps = op.type_param_names();

    if let Some(t) = &sig.constness {
        errors.push(Error::new(t.span, "#[scan_op] fns cannot be `const`"));
    }
    if let Some(t) = &sig.asyncness {
        errors.push(Error::new(t.span, "#[scan_op] fns cannot be `async`"));
    }
    if let Some(t) = &sig.unsafety {
        errors.push(Error::new(t.span, "#[scan_op] fns cannot be `unsafe`"));
    }
    if let Some(v) = &sig.variadic {
        errors.push(Error::new(v.span(), "#[scan_op] fns cannot be variadic"));
    }
    for p in &sig.generics.params {
        match p {
            GenericParam::Type(t) => {
                if let Some(why) = crate::cxx_names::type_param_problem(&t.ident.to_string()) {
                    errors.push(Error::new(t.ident.span(), why));
                }
            }
            GenericParam::Lifetime(l) => {
                errors.push(Error::new(l.span(), "lifetime parameters are not supported: operands are passed by value"))
            }
            GenericParam::Const(c) => errors.push(Error::new(c.span(), "const generic parameters are not supported")),
        }
    }

    // Exactly two parameters, plain names, of one type.
    let mut names: Vec<Ident> = Vec::new();
    for p in &op.params {
        match (p.name, p.pat) {
            (_, None) => errors.push(Error::new(p.arg.span(), "a scan operator is a free fn: `self` is not allowed")),
            (None, Some(pat)) => errors.push(Error::new(pat.span(), "operands must be plain names (`l: T`)")),
            (Some(n), _) => names.push(n.clone()),
        }
    }
    if op.params.len() != 2 {
        let at = match op.params.get(2) {
            Some(extra) => extra.arg.span(),
            None => sig.paren_token.span.join(),
        };
        errors.push(Error::new(
            at,
            format!(
                "a scan operator takes exactly two operands of one type, `fn {}(left: T, right: T) -> T`; found {}",
                sig.ident,
                op.params.len()
            ),
        ));
    }
    let first_ty = op.params.first().and_then(|p| p.ty);
    if let (Some(a), Some(b)) = (first_ty, op.params.get(1).and_then(|p| p.ty)) {
        if !same_type(a, b) {
            errors.push(Error::new(
                b.span(),
                format!("both operands must have one type: the first is `{}`, this one is `{}`", pretty(a), pretty(b)),
            ));
        }
    }
    let ret_ok = matches!((op.ret, first_ty), (Some(r), Some(a)) if same_type(r, a));
    match (op.ret, first_ty) {
        (None, _) => errors.push(Error::new(
            sig.paren_token.span.close(),
            "missing return type: a scan operator returns its operands' type (`-> T`)",
        )),
        (Some(r), Some(a)) if !same_type(r, a) => errors.push(Error::new(
            r.span(),
            format!("the return type must be the operands' type `{}`, found `{}`", pretty(a), pretty(r)),
        )),
        _ => {}
    }

    let item = first_ty.and_then(|t| errors.ok(lower::ty(t, &tps)));
    let identity = match (&op.attr.identity, &item) {
        (None, _) => {
            errors.push(Error::new(
                op.attr.span,
                "missing `identity = ...`: a scan operator needs its identity, e.g. #[scan_op(identity = 0.0)]",
            ));
            None
        }
        (Some(e), Some(item)) => errors.ok(lower::identity(e, item, &tps)),
        (Some(_), None) => None,
    };
    // With a wrong return type, the body's type error would repeat it.
    // The macro cannot see a struct's declaration: the identity (a struct
    // literal naming every field) tells the checker which fields there are.
    let item = match (item, &identity) {
        (Some(item), Some(id)) => Some(lower::fields_from_identity(item, &id.ty)),
        (item, _) => item,
    };
    let (item, body) = match (item, names.len()) {
        (Some(item), 2) if ret_ok => {
            let params = [names[0].to_string(), names[1].to_string()];
            match errors.ok(lower::operator_body(&op.func.block, params, item.clone(), &tps)) {
                Some((item, body)) => (Some(item), Some(body)),
                None => (Some(item), None),
            }
        }
        (item, _) => (item, None),
    };

    let cuda = body.as_ref().and_then(|b| errors.ok(cuda::combine(b)));

    let (Some(item), Some(body), Some(cuda), Some(identity), Some(item_type), Some(identity_expr)) =
        (item, body, cuda, identity, first_ty, op.attr.identity.clone())
    else {
        return errors.finish(()).and_then(|()| Err(Error::new(Span::call_site(), "invalid #[scan_op]")));
    };
    let valid = Valid {
        item_type: item_type.clone(),
        item,
        names: [names[0].clone(), names[1].clone()],
        body,
        cuda,
        identity,
        identity_expr,
        f64_params: check::f64_params(&op.func.sig.generics),
        float_params: check::float_params(&op.func.sig.generics),
        assume_associative: op.attr.assume_associative.is_some(),
    };
    errors.ok(check::check(&valid.def(&sig.ident, &op.type_name)));
    errors.finish(valid)
}
