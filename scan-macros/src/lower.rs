//! syn -> [`ir`](crate::ir): the user's fn body (and identity) as a typed expression tree.
//!
//! Everything outside the supported subset is rejected here, at its token,
//! with a message that names what is supported. Types are inferred the way
//! rustc would for this small language (literals take the type of the other
//! operand); rustc still type-checks the user's fn, which the macro keeps, so
//! this pass only needs to be right for code rustc accepts.
//!
//! Here: the entry points, the lowerer's state, statements and `let`, and
//! the expression dispatch; by kind of syntax: `pattern.rs` (bindings),
//! `literal.rs` (literals, names, consts), `operator.rs` (operators, casts,
//! `if`), `call.rs` (methods, calls, fields, struct literals).

use std::collections::HashSet;

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Error, Result};

use crate::ir::{
    BinOp, ConstName, Expr, ExprKind, Lit, Lowered, Member, MethodSpec, Operands, ParamConst, Scalar, ScalarConst, Ty,
    UnOp, METHODS,
};

mod call;
mod depth;
mod literal;
mod operator;
mod pattern;

use operator::is_assign_op;

/// What an operator body may contain; appended to every "not supported"
/// error, with the method names of [`METHODS`].
const SUPPORTED: &str = "supported: `let` bindings, arithmetic (+ - *, and / % on floats), comparison, bitwise \
     (& | ^ !) and logical (&& ||) operators, `if`/`else`, tuple/array/struct construction, field \
     and constant-index access, literals, the consts of f32/f64/i32/u32/i64/u64 (MIN, MAX, INFINITY, \
     NEG_INFINITY, ...), `as` casts, and the methods";

const ITEM_TYPES: &str = "item types are i32, u32, i64, u64, f32, f64, bf16, f16, bool, a type parameter \
     `T: CudaScalar`, tuples and arrays `[T; N]` of them, and #[repr(C)] #[scan_item] structs";

/// Rust's primitive types that no item may be: without this they would be
/// taken for `#[scan_item]` structs, and the first error would be a puzzling
/// "expected `u8`, found an integer".
const UNSUPPORTED_PRIMITIVES: &[&str] = &["i8", "u8", "i16", "u16", "i128", "u128", "isize", "usize", "char", "str"];

/// `what` reads "loops (`for`) are"; a trailing " (hint)" after "is"/"are"
/// is moved after "not supported".
fn unsupported(span: Span, what: &str) -> Error {
    let (what, hint) = match what.rsplit_once(" (") {
        Some((w, h)) if w.ends_with(" is") || w.ends_with(" are") => (w, format!(" ({h}")),
        _ => (what, String::new()),
    };
    let methods: Vec<&str> = METHODS.iter().map(|m| m.name).collect();
    Error::new(span, format!("{what} not supported in a #[scan_op] body{hint}; {SUPPORTED} {}", methods.join(", ")))
}

/// The most scalars an item may hold (4 to 8 KiB): the checker evaluates
/// the operator on thousands of items, and a GPU thread holds several.
pub const MAX_ITEM_SCALARS: usize = 1024;

/// The scalars `t` holds (a struct: those of the fields the body or the
/// identity shows, at least one; the macro never reads its declaration).
fn scalar_count(t: &Ty) -> usize {
    match t {
        Ty::Tuple(ts) => ts.iter().map(scalar_count).fold(0, usize::saturating_add),
        Ty::Array(t, n) => scalar_count(t).saturating_mul(*n),
        Ty::Struct { fields, .. } => fields.iter().map(|(_, t)| scalar_count(t)).fold(0, usize::saturating_add).max(1),
        _ => 1,
    }
}

/// `t`, unless it holds more than [`MAX_ITEM_SCALARS`] scalars.
fn bounded(t: Ty, span: proc_macro2::Span) -> Result<Ty> {
    let count = scalar_count(&t);
    if count > MAX_ITEM_SCALARS {
        return Err(Error::new(
            span,
            format!("items of at most {MAX_ITEM_SCALARS} scalars are supported; this one holds {count}"),
        ));
    }
    Ok(t)
}

/// A tuple or array value of a body of type `t`, unless it holds more than
/// four items' worth of scalars (`(l, r)` of the largest items is two;
/// nested tuples in `let`s would otherwise multiply without end).
fn bounded_value(t: Ty, span: proc_macro2::Span) -> Result<Ty> {
    let (count, most) = (scalar_count(&t), 4 * MAX_ITEM_SCALARS);
    if count > most {
        return Err(Error::new(
            span,
            format!("values of at most {most} scalars are supported; this one holds {count}"),
        ));
    }
    Ok(t)
}

/// Resolves a type written in the signature.
pub fn ty(t: &syn::Type, type_params: &[String]) -> Result<Ty> {
    match t {
        syn::Type::Paren(p) => ty(&p.elem, type_params),
        syn::Type::Group(g) => ty(&g.elem, type_params),
        syn::Type::Tuple(tt) if !tt.elems.is_empty() => {
            bounded(Ty::Tuple(tt.elems.iter().map(|e| ty(e, type_params)).collect::<Result<_>>()?), t.span())
        }
        syn::Type::Array(a) => {
            let n = match &a.len {
                syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(n), .. }) => n.base10_parse::<usize>()?,
                other => return Err(Error::new(other.span(), "array lengths must be integer literals")),
            };
            if n == 0 {
                return Err(Error::new(a.len.span(), "arrays of no items are not supported (an item of zero bytes)"));
            }
            bounded(Ty::Array(Box::new(ty(&a.elem, type_params)?), n), t.span())
        }
        syn::Type::Path(p) if p.qself.is_none() => {
            if let Some(id) = p.path.get_ident() {
                let s = id.to_string();
                if let Some(sc) = scalar_named(&s) {
                    return Ok(Ty::Scalar(sc));
                }
                if type_params.contains(&s) {
                    return Ok(Ty::Param(s));
                }
                if UNSUPPORTED_PRIMITIVES.contains(&s.as_str()) {
                    return Err(Error::new(t.span(), format!("`{s}` is not a supported scalar; {ITEM_TYPES}")));
                }
            }
            let generic = p.path.segments.iter().any(|s| !s.arguments.is_none());
            if generic {
                return Err(Error::new(t.span(), format!("generic item types are not supported; {ITEM_TYPES}")));
            }
            // A user struct: the macro cannot see it; rustc requires it to
            // implement `CudaType` (which #[scan_item] provides).
            Ok(Ty::Struct { name: plain_path(&p.path), fields: Vec::new() })
        }
        syn::Type::Reference(_) => Err(Error::new(
            t.span(),
            format!("references are not supported: operands are passed by value; {ITEM_TYPES}"),
        )),
        _ => Err(Error::new(t.span(), format!("unsupported item type; {ITEM_TYPES}"))),
    }
}

pub fn scalar_named(s: &str) -> Option<Scalar> {
    Some(match s {
        "bool" => Scalar::Bool,
        "i32" => Scalar::I32,
        "u32" => Scalar::U32,
        "i64" => Scalar::I64,
        "u64" => Scalar::U64,
        "f32" => Scalar::F32,
        "f64" => Scalar::F64,
        "bf16" => Scalar::Bf16,
        "f16" => Scalar::F16,
        _ => return None,
    })
}

pub fn scalar_name(s: Scalar) -> &'static str {
    match s {
        Scalar::Bool => "bool",
        Scalar::I32 => "i32",
        Scalar::U32 => "u32",
        Scalar::I64 => "i64",
        Scalar::U64 => "u64",
        Scalar::F32 => "f32",
        Scalar::F64 => "f64",
        Scalar::Bf16 => "bf16",
        Scalar::F16 => "f16",
    }
}

pub fn path_string(p: &syn::Path) -> String {
    let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
    let s = segs.join("::");
    if p.leading_colon.is_some() {
        format!("::{s}")
    } else {
        s
    }
}

/// `p` without generic arguments: the path a struct is known by (two
/// spellings of it compare equal as their idents do).
fn plain_path(p: &syn::Path) -> syn::Path {
    let mut p = p.clone();
    for seg in &mut p.segments {
        seg.arguments = syn::PathArguments::None;
    }
    p
}

/// Lowers the user's fn body; `params` are the left and right operand names.
/// Reports every error of the body it can tell apart: independent parts
/// (operands, elements, arguments, branches, statements) are all lowered
/// even when one fails.
pub fn body(block: &syn::Block, params: [String; 2], item: &Ty, type_params: &[String]) -> Result<Expr> {
    let [l, r] = params;
    function(block, vec![(l, item.clone()), (r, item.clone())], item, type_params)
}

/// An operator's item type and body, lowered as [`body`] for `item` (which
/// holds the identity's fields: [`fields_from_identity`]). Where the body's
/// result shows a struct field's scalar that the identity left unseen
/// (`best: if .. { i32::MIN } else { .. }` beside an identity's `best: 0`),
/// the body is lowered again knowing it: the checker must not take an
/// integer field for a float (its `MIN` would pass for -inf in arithmetic).
pub fn operator_body(block: &syn::Block, params: [String; 2], item: Ty, type_params: &[String]) -> Result<(Ty, Expr)> {
    let first = body(block, params.clone(), &item, type_params)?;
    let known = known_fields(item.clone(), &first.ty);
    if known == item {
        return Ok((item, first));
    }
    let second = body(block, params, &known, type_params)?;
    Ok((known, second))
}

/// `item` with each struct field of unseen type (`Ty::Field`) given the type
/// that `shown` (a value of the same type) has for it, where that is seen.
fn known_fields(item: Ty, shown: &Ty) -> Ty {
    match (item, shown) {
        (Ty::Struct { name, fields }, Ty::Struct { name: n, fields: seen }) if same_struct(&name, n) => {
            let fields = fields
                .into_iter()
                .map(|(f, t)| match seen.iter().find(|(g, _)| *g == f) {
                    Some((_, s)) if matches!(t, Ty::Field { .. }) && !matches!(s, Ty::Field { .. }) => (f, s.clone()),
                    Some((_, s)) => (f, known_fields(t, s)),
                    None => (f, t),
                })
                .collect();
            Ty::Struct { name, fields }
        }
        (Ty::Tuple(ts), Ty::Tuple(ss)) if ts.len() == ss.len() => {
            Ty::Tuple(ts.into_iter().zip(ss).map(|(t, s)| known_fields(t, s)).collect())
        }
        (Ty::Array(t, n), Ty::Array(s, m)) if n == *m => Ty::Array(Box::new(known_fields(*t, s)), n),
        (item, _) => item,
    }
}

/// Lowers the body of a fn of the subset with parameters `params` (name,
/// type) returning `ret`: `#[scan_op]`'s two operands, or the one input of a
/// `#[scan_maps]` lift or project.
pub fn function(block: &syn::Block, params: Vec<(String, Ty)>, ret: &Ty, type_params: &[String]) -> Result<Expr> {
    no_raw_identifiers(quote::ToTokens::to_token_stream(block), "the body")?;
    depth::check_block(block)?;
    let mut cx = Lowerer::new(params, ret.clone(), type_params);
    let e = cx.block(block, Some(ret)).and_then(|e| cx.expect_ty(&e, ret).map(|()| e));
    let e = e.map_err(without_echoes)?;
    depth::check_lowered(&e)?;
    Ok(e)
}

/// An error at every raw identifier (`r#type`) in `tokens`: the generated
/// CUDA and the checker name bindings and fields by their text, which a raw
/// identifier's `r#` would break. `place` is "the body" or "the identity".
fn no_raw_identifiers(tokens: proc_macro2::TokenStream, place: &str) -> Result<()> {
    use proc_macro2::TokenTree;
    let mut errors = Vec::new();
    let mut stack = vec![tokens];
    while let Some(tokens) = stack.pop() {
        for tree in tokens {
            match tree {
                TokenTree::Ident(id) if id.to_string().starts_with("r#") => errors.push(Error::new(
                    id.span(),
                    format!("raw identifiers are not supported in {place}: rename `{id}`"),
                )),
                TokenTree::Group(g) => stack.push(g.stream()),
                _ => {}
            }
        }
    }
    all(errors.into_iter().map(Err::<(), _>)).map(drop)
}

/// The message of an error that only echoes one already reported: a use of
/// a `let` binding whose value failed to lower. Dropped before reporting.
const ECHO: &str = "scan_op internal: a use of a binding whose value has an error";

/// `e` without its echoes (an error always keeps at least one message).
fn without_echoes(e: Error) -> Error {
    let mut kept: Option<Error> = None;
    for one in e.clone() {
        if one.to_string() != ECHO {
            match &mut kept {
                Some(k) => k.combine(one),
                None => kept = Some(one),
            }
        }
    }
    kept.unwrap_or(e)
}

/// Both results, or the errors of both.
fn both<A, B>(a: Result<A>, b: Result<B>) -> Result<(A, B)> {
    match (a, b) {
        (Ok(a), Ok(b)) => Ok((a, b)),
        (Err(mut e), Err(f)) => {
            e.combine(f);
            Err(e)
        }
        (Err(e), _) | (_, Err(e)) => Err(e),
    }
}

/// Every result, or the errors of all that failed.
fn all<T>(results: impl IntoIterator<Item = Result<T>>) -> Result<Vec<T>> {
    let mut oks = Vec::new();
    let mut errs: Option<Error> = None;
    for r in results {
        match (r, &mut errs) {
            (Ok(x), _) => oks.push(x),
            (Err(e), Some(all)) => all.combine(e),
            (Err(e), None) => errs = Some(e),
        }
    }
    errs.map_or(Ok(oks), Err)
}

/// Lowers the identity expression of `#[scan_op(identity = ...)]`.
pub fn identity(expr: &syn::Expr, item: &Ty, type_params: &[String]) -> Result<Expr> {
    // (A struct field's name reaches the generated test as it is written.)
    no_raw_identifiers(quote::ToTokens::to_token_stream(expr), "the identity")?;
    depth::check_expr(expr)?;
    let mut cx = Lowerer::new(Vec::new(), item.clone(), type_params);
    cx.in_identity = true;
    let e = cx.expr(expr, Some(item)).and_then(|e| cx.expect_ty(&e, item).map(|()| e));
    let e = e.map_err(without_echoes)?;
    depth::check_lowered(&e)?;
    Ok(e)
}

/// `item` with the fields of each struct in it (at the top, or inside tuples
/// and arrays) as the identity's literal names them, where the item type
/// alone could not list them.
pub fn fields_from_identity(item: Ty, identity: &Ty) -> Ty {
    match (item, identity) {
        (Ty::Struct { name, fields }, Ty::Struct { name: n, fields: named }) if fields.is_empty() && *n == name => {
            Ty::Struct { name, fields: named.clone() }
        }
        (Ty::Tuple(ts), Ty::Tuple(ids)) if ts.len() == ids.len() => {
            Ty::Tuple(ts.into_iter().zip(ids).map(|(t, id)| fields_from_identity(t, id)).collect())
        }
        (Ty::Array(t, n), Ty::Array(id, m)) if n == *m => Ty::Array(Box::new(fields_from_identity(*t, id)), n),
        (item, _) => item,
    }
}

struct Lowerer {
    /// The parameters' names, and their types in `param_tys`.
    params: Vec<String>,
    param_tys: Vec<Ty>,
    /// The result's type (an operator's item).
    item: Ty,
    type_params: Vec<String>,
    /// In-scope `let` bindings: (written name, unique name, type); innermost last.
    scope: Vec<(String, String, Ty)>,
    used: HashSet<String>,
    /// Unique names of bindings whose value failed to lower: their uses
    /// fail with an [`ECHO`], so that only the value's error is reported.
    poisoned: HashSet<String>,
    in_identity: bool,
    /// Lowering the literal operand of a `-`: it may be one past its type's
    /// maximum (`-2147483648i32`).
    negated_literal: bool,
}

impl Lowerer {
    fn new(params: Vec<(String, Ty)>, item: Ty, type_params: &[String]) -> Self {
        let (params, param_tys) = params.into_iter().unzip();
        Lowerer {
            params,
            param_tys,
            item,
            type_params: type_params.to_vec(),
            scope: Vec::new(),
            used: HashSet::new(),
            poisoned: HashSet::new(),
            in_identity: false,
            negated_literal: false,
        }
    }

    fn mk(&self, kind: ExprKind, ty: Ty, span: Span) -> Expr {
        Expr { kind, ty, span }
    }

    fn expect_ty(&self, e: &Expr, want: &Ty) -> Result<()> {
        if compatible(&e.ty, want) {
            Ok(())
        } else {
            Err(Error::new(e.span, format!("expected `{}`, found `{}`", show(want), show(&e.ty))))
        }
    }

    fn block(&mut self, b: &syn::Block, expect: Option<&Ty>) -> Result<Expr> {
        let depth = self.scope.len();
        let r = self.stmts(&b.stmts, b.brace_token.span.join(), expect);
        self.scope.truncate(depth);
        r
    }

    fn stmts(&mut self, stmts: &[syn::Stmt], span: Span, expect: Option<&Ty>) -> Result<Expr> {
        let Some((first, rest)) = stmts.split_first() else {
            return Err(Error::new(span, "the body must end with the combined value"));
        };
        match first {
            syn::Stmt::Local(local) => self.local(local, rest, span, expect),
            syn::Stmt::Expr(e, None) if rest.is_empty() => self.expr(e, expect),
            syn::Stmt::Expr(e, _) => {
                let err = self.reject(e).unwrap_or_else(|| {
                    Error::new(e.span(), "statements are not supported: a body is `let` bindings then one value")
                });
                self.then_rest(err, rest, span, expect)
            }
            syn::Stmt::Item(i) => {
                self.then_rest(unsupported(i.span(), "items (fn, struct, use, ...) are"), rest, span, expect)
            }
            syn::Stmt::Macro(m) => self.then_rest(unsupported(m.mac.path.span(), "macros are"), rest, span, expect),
        }
    }

    /// `err` for a statement, with the errors of the statements after it.
    fn then_rest(&mut self, mut err: Error, rest: &[syn::Stmt], span: Span, expect: Option<&Ty>) -> Result<Expr> {
        if !rest.is_empty() {
            if let Err(more) = self.stmts(rest, span, expect) {
                err.combine(more);
            }
        }
        Err(err)
    }

    fn local(&mut self, local: &syn::Local, rest: &[syn::Stmt], span: Span, expect: Option<&Ty>) -> Result<Expr> {
        let Some(init) = &local.init else {
            return Err(Error::new(local.pat.span(), "a `let` needs a value (`let x = ...;`)"));
        };
        if let Some((else_tok, _)) = &init.diverge {
            return Err(unsupported(else_tok.span, "`let ... else` is"));
        }
        // An annotation the subset refuses fails the value, so that its
        // names are poisoned and the rest of the body is still lowered.
        let (pat, annotated, refused) = match &local.pat {
            syn::Pat::Type(pt) => match ty(&pt.ty, &self.type_params) {
                Ok(t) => (&*pt.pat, Some(t), None),
                Err(e) => (&*pt.pat, None, Some(e)),
            },
            p => (p, None, None),
        };
        // A one-name binding's written type (`let (n): f32` too), for the
        // translation.
        let written = match &local.pat {
            syn::Pat::Type(pt) => {
                let mut inner = &*pt.pat;
                while let syn::Pat::Paren(p) = inner {
                    inner = &p.pat;
                }
                matches!(inner, syn::Pat::Ident(_)).then(|| quote::ToTokens::to_token_stream(&pt.ty))
            }
            _ => None,
        };
        let value = match refused {
            // (Not lowered: its literals would have taken the annotation's type.)
            Some(e) => Err(e),
            None => self.expr(&init.expr, annotated.as_ref()),
        };
        let value = match (value, &annotated) {
            // An annotation pins a type the macro cannot see (a struct
            // field's, `let s: f32 = x.sum;`): the binding is then an f32,
            // which `/` and the float methods accept (the translation keeps
            // the annotation as written, so rustc checks it against the
            // field, in a #[scan_maps] body too).
            (Ok(mut v), Some(t)) => self.expect_ty(&v, t).map(|()| {
                // (Only where the translation writes the annotation.)
                if v.ty.is_opaque_scalar() && matches!(t, Ty::Scalar(_)) && written.is_some() {
                    v.ty = t.clone();
                }
                v
            }),
            (v, _) => v,
        };
        let depth = self.scope.len();
        let mut binds = Vec::new();
        let bound = match value {
            Ok(value) => self.pattern(pat, value, &mut binds).inspect_err(|_| {
                // A pattern the subset refuses (`mut x`, `[a, b]`): its
                // names too, bound or not yet, are poisoned.
                self.scope.truncate(depth);
                binds.clear();
                self.poison(pat);
            }),
            Err(e) => {
                // Its names are still bound, so that the rest of the body is
                // lowered (and its own errors reported) without echoes.
                self.poison(pat);
                Err(e)
            }
        };
        let body = self.stmts(rest, span, expect);
        self.scope.truncate(depth);
        let (_, mut body) = both(bound, body)?;
        let annotation = if binds.len() == 1 { written } else { None };
        for (name, value) in binds.into_iter().rev() {
            let (ty, sp) = (body.ty.clone(), body.span);
            let (value, body_) = (Box::new(value), Box::new(body));
            body = self.mk(ExprKind::Let { name, annotation: annotation.clone(), value, body: body_ }, ty, sp);
        }
        Ok(body)
    }

    /// A specific message for the syntax people most often try.
    fn reject(&self, e: &syn::Expr) -> Option<Error> {
        use syn::Expr as E;
        Some(match e {
            E::ForLoop(l) => unsupported(l.for_token.span, "loops (`for`) are"),
            E::While(l) => unsupported(l.while_token.span, "loops (`while`) are"),
            E::Loop(l) => unsupported(l.loop_token.span, "loops (`loop`) are"),
            E::Reference(r) => unsupported(r.and_token.span, "references (`&`) are"),
            E::Unary(syn::ExprUnary { op: syn::UnOp::Deref(star), .. }) => {
                unsupported(star.span, "dereferences (`*`) are")
            }
            E::Closure(c) => unsupported(c.or1_token.span, "closures are"),
            E::Macro(m) => unsupported(m.mac.path.span(), &format!("macros (`{}!`) are", path_string(&m.mac.path))),
            E::Return(r) => unsupported(r.return_token.span, "`return` is (the body ends with its value)"),
            E::Match(m) => unsupported(m.match_token.span, "`match` is (use `if`/`else`)"),
            E::Assign(a) => unsupported(a.eq_token.span, "assignment is (bind a new name with `let`)"),
            E::Binary(b) if is_assign_op(&b.op) => {
                unsupported(b.op.span(), "compound assignment is (bind a new name with `let`)")
            }
            E::Range(r) => unsupported(r.span(), "ranges are"),
            E::Try(t) => unsupported(t.question_token.span, "`?` is"),
            E::Break(b) => unsupported(b.break_token.span, "`break` is"),
            E::Continue(c) => unsupported(c.continue_token.span, "`continue` is"),
            E::Unsafe(u) => unsupported(u.unsafe_token.span, "`unsafe` blocks are"),
            E::Async(a) => unsupported(a.async_token.span, "`async` blocks are"),
            E::Await(a) => unsupported(a.await_token.span, "`.await` is"),
            E::Let(l) => unsupported(l.let_token.span, "`let` in conditions is"),
            E::Index(i) => unsupported(i.index.span(), "indexing by a non-constant is"),
            _ => return None,
        })
    }

    fn expr(&mut self, e: &syn::Expr, expect: Option<&Ty>) -> Result<Expr> {
        use syn::Expr as E;
        let span = e.span();
        match e {
            E::Paren(p) => self.expr(&p.expr, expect),
            E::Group(g) => self.expr(&g.expr, expect),
            E::Block(b) if b.label.is_none() => self.block(&b.block, expect),
            E::Lit(l) => self.lit(&l.lit, expect),
            E::Path(p) => self.path(p),
            E::Unary(u) => self.unary(u, expect),
            E::Binary(b) if !is_assign_op(&b.op) => self.binary(b, expect),
            E::MethodCall(m) => self.method(m, expect),
            E::Call(c) => self.call(c, expect),
            E::Field(f) => self.field(f),
            E::Index(i) => self.index(i),
            E::Cast(c) => self.cast(c),
            E::If(i) => self.if_(i, expect),
            E::Tuple(t) if !t.elems.is_empty() => {
                let want: Option<Vec<Ty>> = match expect {
                    Some(Ty::Tuple(ts)) if ts.len() == t.elems.len() => Some(ts.clone()),
                    _ => None,
                };
                let items: Vec<Result<Expr>> =
                    t.elems.iter().enumerate().map(|(i, x)| self.expr(x, want.as_ref().map(|w| &w[i]))).collect();
                let items = all(items)?;
                // (Bounded: nested tuples multiply.)
                let ty = bounded_value(Ty::Tuple(items.iter().map(|x| x.ty.clone()).collect()), span)?;
                Ok(self.mk(ExprKind::Tuple(items), ty, span))
            }
            E::Array(a) => {
                let want = match expect {
                    Some(Ty::Array(t, _)) => Some((**t).clone()),
                    _ => None,
                };
                if a.elems.is_empty() {
                    return Err(Error::new(span, "empty arrays are not supported"));
                }
                let mut items = Vec::new();
                for x in &a.elems {
                    // Later elements take the type of the first one (as rustc infers).
                    let first = items.iter().find_map(|f: &Result<Expr>| f.as_ref().ok().map(|f| f.ty.clone()));
                    let hint = want.clone().or(first);
                    items.push(self.expr(x, hint.as_ref()));
                }
                let items = all(items)?;
                let elem = items[0].ty.clone();
                for x in &items[1..] {
                    self.expect_ty(x, &elem)?;
                }
                let ty = bounded_value(Ty::Array(Box::new(elem), items.len()), span)?;
                Ok(self.mk(ExprKind::Array(items), ty, span))
            }
            E::Repeat(r) => {
                let n = match &*r.len {
                    syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(n), .. }) => n.base10_parse::<usize>()?,
                    other => return Err(Error::new(other.span(), "array lengths must be integer literals")),
                };
                let want = match expect {
                    Some(Ty::Array(t, _)) => Some((**t).clone()),
                    _ => None,
                };
                let x = self.expr(&r.expr, want.as_ref())?;
                // (Bounded before the copies are made: `[x; 1 << 40]`.)
                if n == 0 {
                    return Err(Error::new(r.len.span(), "empty arrays are not supported"));
                }
                let ty = bounded_value(Ty::Array(Box::new(x.ty.clone()), n), span)?;
                Ok(self.mk(ExprKind::Array(vec![x; n]), ty, span))
            }
            E::Struct(s) => self.struct_(s, expect),
            _ => Err(self.reject(e).unwrap_or_else(|| unsupported(span, "this expression is"))),
        }
    }
}

fn strip(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) => strip(&p.expr),
        syn::Expr::Group(g) => strip(&g.expr),
        syn::Expr::Unary(syn::ExprUnary { op: syn::UnOp::Neg(_), expr, .. }) => strip(expr),
        e => e,
    }
}

/// An int or float literal without a suffix (possibly negated/parenthesized).
fn is_untyped_lit(e: &syn::Expr) -> bool {
    match strip(e) {
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => i.suffix().is_empty(),
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Float(f), .. }) => f.suffix().is_empty(),
        _ => false,
    }
}

/// Whether a value of type `found` may stand where `want` is expected: equal,
/// or structs of one name (the macro does not know all their fields).
fn compatible(found: &Ty, want: &Ty) -> bool {
    match (found, want) {
        (Ty::Struct { name: a, .. }, Ty::Struct { name: b, .. }) => same_struct(a, b),
        (Ty::Tuple(a), Ty::Tuple(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| compatible(x, y)),
        (Ty::Array(a, n), Ty::Array(b, m)) => n == m && compatible(a, b),
        // A struct field's type is unknown to the macro: rustc checks it.
        (Ty::Field { .. }, _) | (_, Ty::Field { .. }) => true,
        (a, b) => a == b,
    }
}

/// Whether two struct paths name one struct as far as the macro can tell:
/// equal once a leading `self::` is dropped (`self::F` is `F`). Other
/// spellings of one type (`crate::m::F` inside `m`) stay apart: rustc would
/// accept them, but the macro cannot resolve paths.
pub(crate) fn same_struct(a: &syn::Path, b: &syn::Path) -> bool {
    fn local(p: &syn::Path) -> syn::Path {
        let mut p = p.clone();
        if p.leading_colon.is_none() && p.segments.len() > 1 && p.segments[0].ident == "self" {
            p.segments = p.segments.into_iter().skip(1).collect();
        }
        p
    }
    local(a) == local(b)
}

/// For a type the macro cannot see into, what it took the type for (an
/// alias looks like a struct here), as "; ..." to end a message.
pub fn unseen_note(t: &Ty) -> String {
    match t {
        Ty::Struct { fields, .. } if fields.is_empty() => format!(
            "; the macro cannot see inside `{0}` and takes it for a #[scan_item] struct \
             (if `{0}` is an alias, write the type it stands for)",
            show(t)
        ),
        _ => String::new(),
    }
}

/// A type as the user writes it, for messages.
pub fn show(t: &Ty) -> String {
    match t {
        Ty::Scalar(s) => scalar_name(*s).to_string(),
        Ty::Param(p) => p.clone(),
        Ty::Field { strukt, field } => format!("{}::{field}", path_string(strukt)),
        Ty::Tuple(ts) => {
            let inner: Vec<String> = ts.iter().map(show).collect();
            if ts.len() == 1 {
                format!("({},)", inner[0])
            } else {
                format!("({})", inner.join(", "))
            }
        }
        Ty::Array(t, n) => format!("[{}; {n}]", show(t)),
        Ty::Struct { name, .. } => path_string(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lower_fn(src: &str) -> Result<Expr> {
        let f: syn::ItemFn = syn::parse_str(src).expect("test fn parses");
        let tps: Vec<String> = f
            .sig
            .generics
            .params
            .iter()
            .filter_map(|p| match p {
                syn::GenericParam::Type(t) => Some(t.ident.to_string()),
                _ => None,
            })
            .collect();
        let syn::FnArg::Typed(first) = &f.sig.inputs[0] else { panic!("typed") };
        let item = ty(&first.ty, &tps)?;
        body(&f.block, ["l".into(), "r".into()], &item, &tps)
    }

    #[test]
    fn a_body_shows_the_struct_field_types_the_identity_left_unseen() {
        let field_ty = |item: &Ty, name: &str| match item {
            Ty::Struct { fields, .. } => fields.iter().find(|(f, _)| f == name).map(|(_, t)| t.clone()),
            _ => None,
        };
        // The bound in either branch, or beside a field in a `max` or a sum:
        // rustc gives `v` its type, so the macro must too.
        for v in [
            "if r.k > 0 { i32::MIN } else { l.v.max(r.v) }",
            "if r.k > 0 { l.v.max(r.v) } else { i32::MIN }",
            "l.v.max(i32::MIN)",
            "l.v + r.v * 2i32",
        ] {
            let src = format!("fn f(l: P, r: P) -> P {{ P {{ k: l.k + r.k, v: {v} }} }}");
            let f: syn::ItemFn = syn::parse_str(&src).expect("test fn parses");
            let syn::FnArg::Typed(first) = &f.sig.inputs[0] else { panic!("typed") };
            let item = ty(&first.ty, &[]).expect("a type");
            let identity =
                identity(&syn::parse_str("P { k: 0u32, v: 0 }").expect("parses"), &item, &[]).expect("an identity");
            let item = fields_from_identity(item, &identity.ty);
            assert_eq!(field_ty(&item, "k"), Some(Ty::Scalar(Scalar::U32)));
            assert!(matches!(field_ty(&item, "v"), Some(Ty::Field { .. })), "{item:?}");
            let (item, body) = operator_body(&f.block, ["l".into(), "r".into()], item, &[]).expect("lowers");
            assert_eq!(field_ty(&item, "v"), Some(Ty::Scalar(Scalar::I32)), "{v}: {item:?}");
            assert_eq!(field_ty(&body.ty, "v"), Some(Ty::Scalar(Scalar::I32)), "{v}");
        }
    }

    /// The literals of a lowered body, with their types, in order.
    fn literals(e: &Expr, out: &mut Vec<(Lit, Ty)>) {
        if let ExprKind::Lit(l) = &e.kind {
            out.push((l.clone(), e.ty.clone()));
        }
        e.children().into_iter().for_each(|c| literals(c, out));
    }

    #[test]
    #[allow(clippy::excessive_precision)] // the point: a decimal next to the middle between two f32s
    fn literals_are_typed_and_ranged_as_rustc_does() {
        let lits = |src: &str| {
            let mut v = Vec::new();
            literals(&lower_fn(src).expect("lowers"), &mut v);
            v
        };
        let one = |src: &str| errors_of(src).join("\n");
        // Past the type's maximum: refused (rustc's `overflowing_literals`).
        assert!(one("fn f(l: u32, r: u32) -> u32 { l + 4294967296 }").contains("literal out of range for `u32`"));
        assert!(one("fn f(l: i32, r: i32) -> i32 { l.max(2147483648) }").contains("out of range for `i32`"));
        // One past it under `-` is the minimum, as in Rust.
        assert_eq!(lits("fn f(l: i32, r: i32) -> i32 { l.max(-2147483648) }")[0].0, Lit::Int(2147483648));
        assert!(errors_of("fn f(l: i64, r: i64) -> i64 { l.max(-(9223372036854775808)) }").is_empty());
        // No `-` on unsigned integers (E0600), a literal's included.
        assert!(one("fn f(l: u32, r: u32) -> u32 { -l + r }").contains("does not apply to `u32`"));
        assert!(one("fn f(l: u64, r: u64) -> u64 { l + -1 as u64 }").contains("does not apply to `u64`"));
        // A cast's literal of the target's kind is of the target's type.
        let wide = lits("fn f(l: i64, r: i64) -> i64 { l + 3000000000 as i64 }");
        assert_eq!(wide, vec![(Lit::Int(3000000000), Ty::Scalar(Scalar::I64))]);
        assert!(
            one("fn f(l: i64, r: i64) -> i64 { l + (3000000000 as i32) as i64 }").contains("out of range for `i32`")
        );
        let narrow = lits("fn f(l: f32, r: f32) -> f32 { l + 1.0000000596046448 as f32 }");
        assert_eq!(narrow, vec![(Lit::Float(1.0000000596046448f32 as f64), Ty::Scalar(Scalar::F32))]);
        assert_ne!(1.0000000596046448f32 as f64, 1.0000000596046448f64 as f32 as f64, "a value rounded twice differs");
        // Across kinds the defaults stay: i32 for `2 as f32`, f64 for `2.5 as i64`.
        assert_eq!(lits("fn f(l: f32, r: f32) -> f32 { l + 2 as f32 }")[0].1, Ty::Scalar(Scalar::I32));
        assert_eq!(lits("fn f(l: i64, r: i64) -> i64 { l + 2.5 as i64 }")[0].1, Ty::Scalar(Scalar::F64));
    }

    /// The messages of a body's errors, in order.
    fn errors_of(src: &str) -> Vec<String> {
        lower_fn(src).err().map_or_else(Vec::new, |e| e.into_iter().map(|e| e.to_string()).collect())
    }

    #[test]
    fn independent_errors_of_a_body_are_reported_together_without_echoes() {
        let both = errors_of("fn f(l: f32, r: f32) -> f32 { l.powi(2) + r.cbrt() }");
        assert_eq!(both.len(), 2, "{both:?}");
        assert!(both[0].contains("`powi`") && both[1].contains("`cbrt`"), "{both:?}");
        let tuple = errors_of("fn f(l: (u32, u32), r: (u32, u32)) -> (u32, u32) { (l.0 << 1, r.1.pow(2)) }");
        assert_eq!(tuple.len(), 2, "{tuple:?}");
        // `x`'s value fails; its use is not a second error, the shift is.
        let lets = errors_of("fn f(l: i32, r: i32) -> i32 { let x = l.pow(2); let y = x + r; y >> 1 }");
        assert_eq!(lets.len(), 2, "{lets:?}");
        assert!(lets[0].contains("`pow`") && lets[1].contains("shifts"), "{lets:?}");
        // A refused pattern or annotation is one error: the uses of its names add none.
        for (body, what) in [
            ("let mut x = l; x + r", "mutable bindings"),
            ("let [a, b] = [l, r]; a + b", "this pattern"),
            ("let (a, (b, mut c)) = (l, (r, r)); a + b + c", "mutable bindings"),
            ("let (a, b) = l; a + b", "needs a tuple"),
            ("let x @ _ = l; x + r", "`@` patterns"),
            ("let x: u8 = 1; l + r", "`u8`"),
        ] {
            let errors = errors_of(&format!("fn f(l: i32, r: i32) -> i32 {{ {body} }}"));
            assert!(errors.len() == 1 && errors[0].contains(what), "{body}: {errors:?}");
        }
        // The body after a refused annotation is still lowered.
        let after = errors_of("fn f(l: i32, r: i32) -> i32 { let x: &i32 = &l; let y = r.pow(2); l + x }");
        assert!(after.len() == 2 && after[1].contains("`pow`"), "{after:?}");
        let branches = errors_of("fn f(l: f32, r: f32) -> f32 { if l.is_nan() { r.cbrt() } else { l } }");
        assert_eq!(branches.len(), 2, "{branches:?}");
        assert!(errors_of("fn f(l: f32, r: f32) -> f32 { let a = l; a + r }").is_empty());
    }

    #[test]
    fn methods_on_the_wrong_type_say_what_they_apply_to() {
        let wrap = errors_of("fn f(l: f32, r: f32) -> f32 { l.wrapping_add(r) }");
        assert_eq!(wrap, ["`wrapping_add` applies to integers, found `f32`"]);
        let exp = errors_of("fn f(l: u32, r: u32) -> u32 { l.exp() }");
        assert_eq!(exp, ["`exp` is supported on f32 and f64, found `u32`"]);
    }

    #[test]
    fn unsuffixed_literals_take_the_other_operands_type() {
        let e = lower_fn("fn f(l: f32, r: f32) -> f32 { 2.0 * l + r }").expect("lowers");
        let ExprKind::Binary(BinOp::Add, lhs, _) = &e.kind else { panic!("{e:?}") };
        let ExprKind::Binary(BinOp::Mul, two, _) = &lhs.kind else { panic!("{lhs:?}") };
        assert_eq!(two.ty, Ty::Scalar(Scalar::F32));
        assert!(matches!(two.kind, ExprKind::Lit(Lit::Float(v)) if v == 2.0));
    }

    #[test]
    fn wrapping_methods_become_plain_arithmetic() {
        let e = lower_fn("fn f(l: u64, r: u64) -> u64 { l.wrapping_mul(r) }").expect("lowers");
        assert!(matches!(e.kind, ExprKind::Binary(BinOp::Mul, _, _)), "{e:?}");
    }

    #[test]
    fn shadowing_lets_get_unique_names_and_tuples_destructure() {
        let e = lower_fn(
            "fn f(l: (i32, i32), r: (i32, i32)) -> (i32, i32) { let (a, b) = l; let a = a + r.0; (a, b + r.1) }",
        )
        .expect("lowers");
        let mut names = Vec::new();
        let mut cur = &e;
        while let ExprKind::Let { name, body, .. } = &cur.kind {
            names.push(name.clone());
            cur = body;
        }
        assert_eq!(names, ["tuple", "a", "b", "a_1"]);
        assert_eq!(cur.ty, Ty::Tuple(vec![Ty::Scalar(Scalar::I32); 2]));
    }

    #[test]
    fn generic_consts_and_params_are_typed_by_the_parameter() {
        let f: syn::Expr = syn::parse_str("(T::ONE, T::LOWEST)").expect("parses");
        let item = Ty::Tuple(vec![Ty::Param("T".into()); 2]);
        let e = identity(&f, &item, &["T".to_string()]).expect("lowers");
        let ExprKind::Tuple(xs) = &e.kind else { panic!("{e:?}") };
        assert!(matches!(&xs[0].kind, ExprKind::Const { value: Some(Lit::Int(1)), .. }));
        assert!(matches!(&xs[1].kind, ExprKind::Const { value: None, .. }));
    }

    #[test]
    fn unsupported_forms_are_rejected_with_the_supported_list() {
        for body in ["loop { }", "&l", "l.powi(2)", "{ let f = |x: f32| x; f(l) }", "match l { _ => r }", "l << 1"] {
            let src = format!("fn f(l: f32, r: f32) -> f32 {{ {body} }}");
            let err = lower_fn(&src).expect_err(body).to_string();
            assert!(err.contains("not supported") && err.contains("supported:"), "{body}: {err}");
        }
    }
}
