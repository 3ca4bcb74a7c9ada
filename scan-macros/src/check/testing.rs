//! Test support: operators written as Rust source, lowered by the macro's own
//! `lower`, so the checker's tests read like the code users write.

use proc_macro2::{Ident, Span};
use syn::{parse_str, FnArg, ItemFn, Pat};

use super::OpDef;
use crate::ir::{Expr, Ty};
use crate::lower;

/// A lowered operator: `fn name<T..>(l: Item, r: Item) -> Item { .. }` and its identity.
pub struct Op {
    pub name: Ident,
    pub type_name: Ident,
    pub item: Ty,
    pub body: Expr,
    pub identity: Expr,
    pub assume: bool,
    pub f64_params: Option<Vec<String>>,
    pub float_params: Vec<String>,
}

impl Op {
    pub fn def(&self) -> OpDef<'_> {
        OpDef {
            fn_name: &self.name,
            type_name: &self.type_name,
            item: &self.item,
            body: &self.body,
            identity: &self.identity,
            identity_span: Span::call_site(),
            assume_associative: self.assume,
            f64_params: self.f64_params.clone(),
            float_params: self.float_params.clone(),
        }
    }

    /// The checker's verdict, `Err` holding the message.
    pub fn check(&self) -> Result<(), String> {
        super::check(&self.def()).map_err(|e| e.into_compile_error().to_string())
    }
}

fn parts(src: &str) -> (ItemFn, Vec<String>, Ty) {
    let f: ItemFn = parse_str(src).expect("a fn");
    let tps: Vec<String> = f.sig.generics.type_params().map(|t| t.ident.to_string()).collect();
    let first = match f.sig.inputs.first() {
        Some(FnArg::Typed(p)) => p.ty.clone(),
        _ => panic!("two typed parameters"),
    };
    let item = lower::ty(&first, &tps).expect("an item type");
    (f, tps, item)
}

/// Lowers `src` (a fn) with `identity` (an expression).
/// As the macro does (`valid`), the body is lowered knowing the struct fields
/// the identity names, with their types where the identity shows them.
pub fn op(src: &str, identity: &str) -> Op {
    let (f, tps, item) = parts(src);
    let identity = lower::identity(&parse_str(identity).expect("an expression"), &item, &tps).expect("an identity");
    let item = lower::fields_from_identity(item, &identity.ty);
    let names = param_names(&f);
    let (item, body) = lower::operator_body(&f.block, names, item, &tps).expect("a supported body");
    let name = f.sig.ident.clone();
    let type_name = Ident::new(&crate::ast::camel_case(&name.to_string()), Span::call_site());
    let f64_params = super::f64_params(&f.sig.generics);
    let float_params = super::float_params(&f.sig.generics);
    Op { name, type_name, item, body, identity, assume: false, f64_params, float_params }
}

fn lowered(src: &str) -> (ItemFn, Vec<String>, Ty, Expr) {
    let (f, tps, item) = parts(src);
    let body = lower::body(&f.block, param_names(&f), &item, &tps).expect("a supported body");
    (f, tps, item, body)
}

fn param_names(f: &ItemFn) -> [String; 2] {
    let names: Vec<String> = f
        .sig
        .inputs
        .iter()
        .map(|a| match a {
            FnArg::Typed(p) => match &*p.pat {
                Pat::Ident(i) => i.ident.to_string(),
                _ => panic!("a named parameter"),
            },
            FnArg::Receiver(_) => panic!("no self"),
        })
        .collect();
    [names[0].clone(), names[1].clone()]
}

/// The item type and lowered body of a fn.
pub fn body(src: &str) -> (Ty, Expr) {
    let (_, _, item, body) = lowered(src);
    (item, body)
}

/// A closed expression (an identity) lowered for `item`.
pub fn expr(src: &str, item: &Ty) -> Expr {
    lower::identity(&parse_str(src).expect("an expression"), item, &[]).expect("an identity")
}
