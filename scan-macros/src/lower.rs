//! syn -> [`ir`]: the user's fn body (and identity) as a typed expression tree.
//!
//! Everything outside the supported subset is rejected here, at its token,
//! with a message that names what is supported. Types are inferred the way
//! rustc would for this small language (literals take the type of the other
//! operand); rustc still type-checks the user's fn, which the macro keeps, so
//! this pass only needs to be right for code rustc accepts.

use std::collections::HashSet;

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Error, Result};

use crate::ir::{
    BinOp, ConstName, Expr, ExprKind, Lit, Lowered, Member, MethodSpec, Operands, ParamConst, Scalar, ScalarConst, Ty,
    UnOp, METHODS,
};

/// What an operator body may contain; appended to every "not supported"
/// error, with the method names of [`METHODS`].
const SUPPORTED: &str = "supported: `let` bindings, arithmetic (+ - *, and / % on floats), comparison, bitwise \
     (& | ^ !) and logical (&& ||) operators, `if`/`else`, tuple/array/struct construction, field \
     and constant-index access, literals, the consts of f32/f64/i32/u32/i64/u64 (MIN, MAX, INFINITY, \
     NEG_INFINITY, ...), `as` casts, and the methods";

const ITEM_TYPES: &str = "item types are i32, u32, i64, u64, f32, f64, bool, a type parameter \
     `T: CudaScalar`, tuples and arrays `[T; N]` of them, and #[repr(C)] #[scan_item] structs";

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

/// Resolves a type written in the signature.
pub fn ty(t: &syn::Type, type_params: &[String]) -> Result<Ty> {
    match t {
        syn::Type::Paren(p) => ty(&p.elem, type_params),
        syn::Type::Group(g) => ty(&g.elem, type_params),
        syn::Type::Tuple(t) if !t.elems.is_empty() => {
            Ok(Ty::Tuple(t.elems.iter().map(|e| ty(e, type_params)).collect::<Result<_>>()?))
        }
        syn::Type::Array(a) => {
            let n = match &a.len {
                syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(n), .. }) => n.base10_parse::<usize>()?,
                other => return Err(Error::new(other.span(), "array lengths must be integer literals")),
            };
            Ok(Ty::Array(Box::new(ty(&a.elem, type_params)?), n))
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
    let mut cx = Lowerer::new(params, item.clone(), type_params);
    let e = cx.block(block, Some(item)).and_then(|e| cx.expect_ty(&e, item).map(|()| e));
    e.map_err(without_echoes)
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
    let mut cx = Lowerer::new([String::new(), String::new()], item.clone(), type_params);
    cx.in_identity = true;
    let e = cx.expr(expr, Some(item)).and_then(|e| cx.expect_ty(&e, item).map(|()| e));
    e.map_err(without_echoes)
}

struct Lowerer {
    params: [String; 2],
    item: Ty,
    type_params: Vec<String>,
    /// In-scope `let` bindings: (written name, unique name, type); innermost last.
    scope: Vec<(String, String, Ty)>,
    used: HashSet<String>,
    /// Unique names of bindings whose value failed to lower: their uses
    /// fail with an [`ECHO`], so that only the value's error is reported.
    poisoned: HashSet<String>,
    in_identity: bool,
}

impl Lowerer {
    fn new(params: [String; 2], item: Ty, type_params: &[String]) -> Self {
        Lowerer {
            params,
            item,
            type_params: type_params.to_vec(),
            scope: Vec::new(),
            used: HashSet::new(),
            poisoned: HashSet::new(),
            in_identity: false,
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
        let (pat, annotated) = match &local.pat {
            syn::Pat::Type(pt) => (&*pt.pat, Some(ty(&pt.ty, &self.type_params)?)),
            p => (p, None),
        };
        let value = self.expr(&init.expr, annotated.as_ref());
        let value = match (value, &annotated) {
            (Ok(v), Some(t)) => self.expect_ty(&v, t).map(|()| v),
            (v, _) => v,
        };
        let depth = self.scope.len();
        let mut binds = Vec::new();
        let bound = match value {
            Ok(value) => self.pattern(pat, value, &mut binds),
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
        for (name, value) in binds.into_iter().rev() {
            let (ty, sp) = (body.ty.clone(), body.span);
            body = self.mk(ExprKind::Let { name, value: Box::new(value), body: Box::new(body) }, ty, sp);
        }
        Ok(body)
    }

    /// Binds a pattern (an ident, or tuple patterns of idents) to `value`,
    /// destructuring tuples into one `let` per component.
    fn pattern(&mut self, pat: &syn::Pat, value: Expr, binds: &mut Vec<(String, Expr)>) -> Result<()> {
        match pat {
            syn::Pat::Ident(p) => {
                if let Some(r) = &p.by_ref {
                    return Err(unsupported(r.span, "references are"));
                }
                if let Some(m) = &p.mutability {
                    return Err(unsupported(m.span, "mutable bindings (and assignment) are"));
                }
                if p.subpat.is_some() {
                    return Err(unsupported(p.span(), "`@` patterns are"));
                }
                let name = self.bind(&p.ident.to_string(), value.ty.clone());
                binds.push((name, value));
                Ok(())
            }
            syn::Pat::Wild(_) => Ok(()),
            syn::Pat::Paren(p) => self.pattern(&p.pat, value, binds),
            syn::Pat::Tuple(t) => {
                let Ty::Tuple(tys) = &value.ty else {
                    return Err(Error::new(
                        t.span(),
                        format!("a tuple pattern needs a tuple, found `{}`", show(&value.ty)),
                    ));
                };
                if tys.len() != t.elems.len() || t.elems.iter().any(|p| matches!(p, syn::Pat::Rest(_))) {
                    return Err(Error::new(t.span(), format!("this pattern must name all {} components", tys.len())));
                }
                let tys = tys.clone();
                // Bind the whole tuple once, so its expression is not duplicated.
                let whole = self.bind("tuple", value.ty.clone());
                let span = value.span;
                let vty = value.ty.clone();
                binds.push((whole.clone(), value));
                for (i, (p, t)) in t.elems.iter().zip(tys).enumerate() {
                    let base = self.mk(ExprKind::Local(whole.clone()), vty.clone(), span);
                    let field = self.mk(ExprKind::Field(Box::new(base), Member::Index(i)), t, p.span());
                    self.pattern(p, field, binds)?;
                }
                Ok(())
            }
            p => Err(unsupported(p.span(), "this pattern is")),
        }
    }

    /// Binds every name of `pat` as poisoned (its value failed to lower).
    fn poison(&mut self, pat: &syn::Pat) {
        match pat {
            syn::Pat::Ident(p) => {
                let unique = self.bind(&p.ident.to_string(), self.item.clone());
                self.poisoned.insert(unique);
            }
            syn::Pat::Paren(p) => self.poison(&p.pat),
            syn::Pat::Tuple(t) => t.elems.iter().for_each(|p| self.poison(p)),
            syn::Pat::Type(t) => self.poison(&t.pat),
            _ => {}
        }
    }

    fn bind(&mut self, written: &str, ty: Ty) -> String {
        let mut unique = written.to_string();
        let mut k = 1;
        while self.used.contains(&unique) || self.params.contains(&unique) {
            unique = format!("{written}_{k}");
            k += 1;
        }
        self.used.insert(unique.clone());
        self.scope.push((written.to_string(), unique.clone(), ty));
        unique
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
                let ty = Ty::Tuple(items.iter().map(|x| x.ty.clone()).collect());
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
                let ty = Ty::Array(Box::new(elem), items.len());
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
                let ty = Ty::Array(Box::new(x.ty.clone()), n);
                Ok(self.mk(ExprKind::Array(vec![x; n]), ty, span))
            }
            E::Struct(s) => self.struct_(s, expect),
            _ => Err(self.reject(e).unwrap_or_else(|| unsupported(span, "this expression is"))),
        }
    }

    fn lit(&mut self, l: &syn::Lit, expect: Option<&Ty>) -> Result<Expr> {
        let span = l.span();
        match l {
            syn::Lit::Bool(b) => Ok(self.mk(ExprKind::Lit(Lit::Bool(b.value)), Ty::Scalar(Scalar::Bool), span)),
            syn::Lit::Int(i) => {
                let ty = match i.suffix() {
                    "" => match expect {
                        Some(t @ Ty::Scalar(s)) if s.is_int() => t.clone(),
                        Some(t) if t.is_opaque_scalar() => t.clone(),
                        Some(Ty::Scalar(s)) if s.is_float() => {
                            return Err(Error::new(
                                span,
                                format!(
                                    "`{}` is an integer literal, but `{}` is expected here; write `{}.0`",
                                    i.base10_digits(),
                                    scalar_name(*s),
                                    i.base10_digits()
                                ),
                            ))
                        }
                        Some(t) => return Err(Error::new(span, format!("expected `{}`, found an integer", show(t)))),
                        None => return Err(untyped(span, i.base10_digits(), "i32")),
                    },
                    suffix => match scalar_named(suffix) {
                        Some(s) if s.is_int() => Ty::Scalar(s),
                        Some(s) if s.is_float() => {
                            let v: f64 = i.base10_parse()?;
                            return Ok(self.mk(ExprKind::Lit(Lit::Float(round_to(v, s))), Ty::Scalar(s), span));
                        }
                        _ => {
                            return Err(Error::new(
                                span,
                                format!("`{suffix}` literals are not supported; {ITEM_TYPES}"),
                            ))
                        }
                    },
                };
                let v: i128 = i.base10_parse()?;
                Ok(self.mk(ExprKind::Lit(Lit::Int(v)), ty, span))
            }
            syn::Lit::Float(f) => {
                let ty = match f.suffix() {
                    "" => match expect {
                        Some(t @ Ty::Scalar(s)) if s.is_float() => t.clone(),
                        Some(t) if t.is_opaque_scalar() => t.clone(),
                        Some(Ty::Scalar(s)) if s.is_int() => {
                            return Err(Error::new(
                                span,
                                format!(
                                    "`{}` is a float literal, but `{}` is expected here",
                                    f.base10_digits(),
                                    scalar_name(*s)
                                ),
                            ))
                        }
                        Some(t) => return Err(Error::new(span, format!("expected `{}`, found a float", show(t)))),
                        None => return Err(untyped(span, f.base10_digits(), "f64")),
                    },
                    "f32" => Ty::Scalar(Scalar::F32),
                    "f64" => Ty::Scalar(Scalar::F64),
                    s => return Err(Error::new(span, format!("`{s}` literals are not supported"))),
                };
                // The exact value in the literal's own type (an f32 literal is
                // rounded once, to f32, as rustc does).
                let v = match &ty {
                    Ty::Scalar(Scalar::F32) => f.base10_parse::<f32>()? as f64,
                    _ => f.base10_parse::<f64>()?,
                };
                Ok(self.mk(ExprKind::Lit(Lit::Float(v)), ty, span))
            }
            _ => Err(unsupported(span, "this literal is")),
        }
    }

    fn path(&mut self, p: &syn::ExprPath) -> Result<Expr> {
        let span = p.span();
        if p.qself.is_some() {
            return Err(unsupported(span, "qualified paths (`<T as Trait>::..`) are"));
        }
        if let Some(id) = p.path.get_ident() {
            let name = id.to_string();
            if let Some((_, unique, ty)) = self.scope.iter().rev().find(|(w, _, _)| *w == name) {
                if self.poisoned.contains(unique) {
                    return Err(Error::new(span, ECHO));
                }
                return Ok(self.mk(ExprKind::Local(unique.clone()), ty.clone(), span));
            }
            if let Some(i) = self.params.iter().position(|x| *x == name) {
                return Ok(self.mk(ExprKind::Param(i), self.item.clone(), span));
            }
            if self.in_identity {
                return Err(Error::new(span, format!("the identity cannot name `{name}`; it is a constant value")));
            }
            if name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_') {
                return Err(Error::new(
                    span,
                    format!("user constants (`{name}`) are not supported: the macro cannot see their value; write the literal"),
                ));
            }
            return Err(Error::new(
                span,
                format!("unknown name `{name}`; a body sees its two operands and its `let` bindings"),
            ));
        }
        self.constant(&p.path, span)
    }

    /// `f32::NEG_INFINITY`, `i32::MAX`, `T::ZERO`, ...
    fn constant(&mut self, path: &syn::Path, span: Span) -> Result<Expr> {
        let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if path.segments.iter().any(|s| !s.arguments.is_none()) {
            return Err(unsupported(span, "generic arguments in paths are"));
        }
        // Accept `core::f32::X` / `std::f32::X` as `f32::X`.
        let tail: Vec<&str> = match segs.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
            ["core" | "std", rest @ ..] => rest.to_vec(),
            all => all.to_vec(),
        };
        let full = path_string(path);
        if let [owner, name] = tail.as_slice() {
            if let Some(s) = scalar_named(owner) {
                if let Some((c, v)) = ScalarConst::parse(name).and_then(|c| Some((c, scalar_const(s, c)?))) {
                    let name = ConstName::Scalar(s, c);
                    return Ok(self.mk(ExprKind::Const { name, value: Some(v) }, Ty::Scalar(s), span));
                }
            } else if self.type_params.iter().any(|t| t == owner) {
                let Some(c) = ParamConst::parse(name) else {
                    return Err(Error::new(
                        span,
                        format!("`{owner}::{name}`: a type parameter offers the consts ZERO, ONE, LOWEST and HIGHEST (of `scan_core::CudaScalar`)"),
                    ));
                };
                let ty = Ty::Param(owner.to_string());
                let name = ConstName::Param(owner.to_string(), c);
                return Ok(self.mk(ExprKind::Const { name, value: param_const(c) }, ty, span));
            }
        }
        Err(Error::new(
            span,
            format!("unknown constant `{full}`; supported: MIN, MAX of i32/u32/i64/u64; INFINITY, NEG_INFINITY, MIN, MAX, EPSILON, MIN_POSITIVE, NAN of f32/f64; ZERO, ONE, LOWEST, HIGHEST of a type parameter"),
        ))
    }

    fn unary(&mut self, u: &syn::ExprUnary, expect: Option<&Ty>) -> Result<Expr> {
        let span = u.span();
        let (op, tok_span) = match &u.op {
            syn::UnOp::Neg(t) => (UnOp::Neg, t.span),
            syn::UnOp::Not(t) => (UnOp::Not, t.span),
            syn::UnOp::Deref(t) => return Err(unsupported(t.span, "dereferences (`*`) are")),
            _ => return Err(unsupported(span, "this operator is")),
        };
        let x = self.expr(&u.expr, expect)?;
        let ok = match (&op, &x.ty) {
            (UnOp::Neg, Ty::Scalar(s)) => *s != Scalar::Bool,
            (UnOp::Not, Ty::Scalar(s)) => !s.is_float(),
            (_, t) if t.is_opaque_scalar() => true,
            _ => false,
        };
        if !ok {
            return Err(Error::new(tok_span, format!("this operator does not apply to `{}`", show(&x.ty))));
        }
        let ty = x.ty.clone();
        Ok(self.mk(ExprKind::Unary(op, Box::new(x)), ty, span))
    }

    /// Lowers two operands of one type: an unsuffixed literal on either side
    /// takes the type of the other side.
    /// Both sides are lowered even when one fails, for its errors too.
    fn pair(&mut self, a: &syn::Expr, b: &syn::Expr, expect: Option<&Ty>) -> Result<(Expr, Expr)> {
        if is_untyped_lit(a) && !is_untyped_lit(b) {
            let y = self.expr(b, expect);
            let hint = y.as_ref().ok().map(|y| y.ty.clone());
            let x = self.expr(a, hint.as_ref().or(expect));
            both(x, y)
        } else {
            let x = self.expr(a, expect);
            let hint = x.as_ref().ok().map(|x| x.ty.clone());
            let y = self.expr(b, hint.as_ref().or(expect));
            let (x, y) = both(x, y)?;
            self.expect_ty(&y, &x.ty)?;
            Ok((x, y))
        }
    }

    fn binary(&mut self, b: &syn::ExprBinary, expect: Option<&Ty>) -> Result<Expr> {
        use syn::BinOp as B;
        let span = b.span();
        let op = match b.op {
            B::Add(_) => BinOp::Add,
            B::Sub(_) => BinOp::Sub,
            B::Mul(_) => BinOp::Mul,
            B::Div(_) => BinOp::Div,
            B::Rem(_) => BinOp::Rem,
            B::BitAnd(_) => BinOp::BitAnd,
            B::BitOr(_) => BinOp::BitOr,
            B::BitXor(_) => BinOp::BitXor,
            B::And(_) => BinOp::And,
            B::Or(_) => BinOp::Or,
            B::Eq(_) => BinOp::Eq,
            B::Ne(_) => BinOp::Ne,
            B::Lt(_) => BinOp::Lt,
            B::Le(_) => BinOp::Le,
            B::Gt(_) => BinOp::Gt,
            B::Ge(_) => BinOp::Ge,
            B::Shl(_) | B::Shr(_) => {
                return Err(unsupported(b.op.span(), "shifts are (their overflow rules differ between Rust and CUDA)"))
            }
            _ => return Err(unsupported(b.op.span(), "this operator is")),
        };
        let comparison = matches!(op, BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge);
        let logical = matches!(op, BinOp::And | BinOp::Or);
        let operand_expect = if comparison || logical { None } else { expect };
        let (x, y) = if logical {
            let bool_ty = Ty::Scalar(Scalar::Bool);
            let x = self.expr(&b.left, Some(&bool_ty))?;
            let y = self.expr(&b.right, Some(&bool_ty))?;
            self.expect_ty(&x, &bool_ty)?;
            self.expect_ty(&y, &bool_ty)?;
            (x, y)
        } else {
            self.pair(&b.left, &b.right, operand_expect)?
        };
        let t = x.ty.clone();
        let ok = match op {
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem => {
                t.is_opaque_scalar() || matches!(&t, Ty::Scalar(s) if *s != Scalar::Bool)
            }
            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => {
                t.is_opaque_scalar() || matches!(&t, Ty::Scalar(s) if !s.is_float())
            }
            BinOp::And | BinOp::Or => true,
            _ => t.is_opaque_scalar() || matches!(&t, Ty::Scalar(_)),
        };
        if !ok {
            return Err(Error::new(b.op.span(), format!("this operator does not apply to `{}`", show(&t))));
        }
        // Integer `/` and `%` panic in Rust on a zero divisor and on `MIN / -1`,
        // where CUDA's are undefined: no one result both sides would give. A
        // type parameter may be an integer, so it is refused too.
        if matches!(op, BinOp::Div | BinOp::Rem) && !matches!(&t, Ty::Scalar(s) if s.is_float()) {
            let sym = if op == BinOp::Div { "/" } else { "%" };
            return Err(Error::new(
                b.op.span(),
                format!(
                    "integer `{sym}` is not supported in a #[scan_op] body (on `{}`): it panics in Rust when the \
                     divisor is 0 or on MIN / -1, and CUDA's is undefined there; `{sym}` applies to f32 and f64",
                    show(&t)
                ),
            ));
        }
        let ty = if comparison || logical { Ty::Scalar(Scalar::Bool) } else { t };
        Ok(self.mk(ExprKind::Binary(op, Box::new(x), Box::new(y)), ty, span))
    }

    fn method(&mut self, m: &syn::ExprMethodCall, expect: Option<&Ty>) -> Result<Expr> {
        let span = m.span();
        let name = m.method.to_string();
        if let Some(t) = &m.turbofish {
            return Err(unsupported(t.span(), "turbofish (`::<>`) is"));
        }
        let args: Vec<&syn::Expr> = m.args.iter().collect();
        self.method_call(&name, m.method.span(), &m.receiver, &args, span, expect)
    }

    fn method_call(
        &mut self,
        name: &str,
        name_span: Span,
        receiver: &syn::Expr,
        args: &[&syn::Expr],
        span: Span,
        expect: Option<&Ty>,
    ) -> Result<Expr> {
        let Some(spec) = MethodSpec::named(name) else {
            return Err(unsupported(name_span, &format!("the method `{name}` is")));
        };
        let arity = spec.arity;
        if args.len() != arity {
            return Err(Error::new(span, format!("`{name}` takes {arity} argument(s)")));
        }
        // An unsuffixed literal receiver (`0.0f32.max(x)` is fine, `0.0.max(x)`
        // is ambiguous in Rust too) takes the argument's type.
        let recv = if is_untyped_lit(receiver) && arity > 0 && !is_untyped_lit(args[0]) {
            let a0 = self.expr(args[0], expect)?;
            self.expr(receiver, Some(&a0.ty))?
        } else {
            self.expr(receiver, expect)?
        };
        let t = recv.ty.clone();
        let lowered: Vec<Result<Expr>> =
            args.iter().map(|a| self.expr(a, Some(&t)).and_then(|x| self.expect_ty(&x, &t).map(|()| x))).collect();
        let mut lowered = all(lowered)?;
        let ok = match spec.operands {
            Operands::Numbers => t.is_opaque_scalar() || matches!(&t, Ty::Scalar(s) if *s != Scalar::Bool),
            Operands::Floats => matches!(&t, Ty::Scalar(s) if s.is_float()),
            Operands::Integers => t.is_opaque_scalar() || matches!(&t, Ty::Scalar(s) if s.is_int()),
        };
        if !ok {
            let on = spec.operands.describe();
            return Err(Error::new(name_span, format!("`{name}` is supported on {on}, found `{}`", show(&t))));
        }
        Ok(match spec.lowered {
            Lowered::Method(method) => self.mk(ExprKind::Method(method, Box::new(recv), lowered), t, span),
            Lowered::Wrapping(op) => {
                let y = lowered.pop().ok_or_else(|| Error::new(span, "missing argument"))?;
                self.mk(ExprKind::Binary(op, Box::new(recv), Box::new(y)), t, span)
            }
        })
    }

    /// Calls: only `f32::max(a, b)`-style method paths and `T::zero()`/`T::one()`.
    fn call(&mut self, c: &syn::ExprCall, expect: Option<&Ty>) -> Result<Expr> {
        let span = c.span();
        if let syn::Expr::Path(p) = &*c.func {
            // Calling a binding whose value was rejected (a closure): already reported.
            let local = p.path.get_ident().and_then(|id| self.scope.iter().rev().find(|(w, _, _)| id == w));
            if local.is_some_and(|(_, unique, _)| self.poisoned.contains(unique)) {
                return Err(Error::new(span, ECHO));
            }
            let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
            if let [owner, name] = segs.as_slice() {
                if self.type_params.contains(owner) && c.args.is_empty() && (name == "zero" || name == "one") {
                    // num-traits' `Zero::zero()` / `One::one()`.
                    let c = if name == "one" { ParamConst::One } else { ParamConst::Zero };
                    let ty = Ty::Param(owner.clone());
                    let name = ConstName::ParamFn(owner.clone(), c);
                    return Ok(self.mk(ExprKind::Const { name, value: param_const(c) }, ty, span));
                }
                if scalar_named(owner).is_some() && !c.args.is_empty() {
                    let args: Vec<&syn::Expr> = c.args.iter().skip(1).collect();
                    let recv = &c.args[0];
                    let name_span = p.path.segments[1].ident.span();
                    let e = self.method_call(name, name_span, recv, &args, span, expect)?;
                    let want = Ty::Scalar(scalar_named(owner).unwrap_or(Scalar::F32));
                    self.expect_ty(&e, &want)?;
                    return Ok(e);
                }
            }
        }
        Err(unsupported(c.func.span(), "function calls are"))
    }

    fn field(&mut self, f: &syn::ExprField) -> Result<Expr> {
        let span = f.span();
        let base = self.expr(&f.base, None)?;
        let (member, ty) = match (&f.member, &base.ty) {
            (syn::Member::Unnamed(i), Ty::Tuple(ts)) => {
                let k = i.index as usize;
                let t = ts.get(k).cloned().ok_or_else(|| Error::new(i.span, format!("no field `{k}`")))?;
                (Member::Index(k), t)
            }
            (syn::Member::Named(n), Ty::Struct { name, fields }) => {
                let field = n.to_string();
                let t = fields
                    .iter()
                    .find(|(f, _)| *f == field)
                    .map(|(_, t)| t.clone())
                    .unwrap_or_else(|| Ty::Field { strukt: name.clone(), field: field.to_string() });
                (Member::Named(field), t)
            }
            (m, t) => return Err(Error::new(m.span(), format!("no such field on `{}`", show(t)))),
        };
        Ok(self.mk(ExprKind::Field(Box::new(base), member), ty, span))
    }

    fn index(&mut self, i: &syn::ExprIndex) -> Result<Expr> {
        let span = i.span();
        let base = self.expr(&i.expr, None)?;
        let Ty::Array(elem, n) = &base.ty else {
            return Err(Error::new(i.expr.span(), format!("only arrays can be indexed, found `{}`", show(&base.ty))));
        };
        let k = match &*i.index {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(k), .. }) => k.base10_parse::<usize>()?,
            other => return Err(unsupported(other.span(), "indexing by a non-constant is")),
        };
        if k >= *n {
            return Err(Error::new(i.index.span(), format!("index {k} is out of bounds for `{}`", show(&base.ty))));
        }
        let ty = (**elem).clone();
        Ok(self.mk(ExprKind::Field(Box::new(base), Member::Index(k)), ty, span))
    }

    fn cast(&mut self, c: &syn::ExprCast) -> Result<Expr> {
        let span = c.span();
        let to = match ty(&c.ty, &self.type_params)? {
            Ty::Scalar(s) if s != Scalar::Bool => s,
            _ => return Err(Error::new(c.ty.span(), "casts are supported to i32, u32, i64, u64, f32 and f64")),
        };
        // `2 as f32`: an unsuffixed literal defaults to i32 / f64 as in Rust.
        let x = match &*c.expr {
            e if is_untyped_lit(e) => {
                let default = if matches!(strip(e), syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Float(_), .. })) {
                    Scalar::F64
                } else {
                    Scalar::I32
                };
                self.expr(e, Some(&Ty::Scalar(default)))?
            }
            e => self.expr(e, None)?,
        };
        if !matches!(&x.ty, Ty::Scalar(_)) && !x.ty.is_opaque_scalar() {
            return Err(Error::new(c.expr.span(), format!("cannot cast `{}`", show(&x.ty))));
        }
        Ok(self.mk(ExprKind::Cast(Box::new(x), to), Ty::Scalar(to), span))
    }

    fn if_(&mut self, i: &syn::ExprIf, expect: Option<&Ty>) -> Result<Expr> {
        let span = i.span();
        let bool_ty = Ty::Scalar(Scalar::Bool);
        let cond = self.expr(&i.cond, Some(&bool_ty)).and_then(|c| self.expect_ty(&c, &bool_ty).map(|()| c));
        let then = self.block(&i.then_branch, expect);
        let Some((_, otherwise)) = &i.else_branch else {
            let missing = Error::new(i.if_token.span, "an `if` needs an `else`: both branches give the value");
            return Err(match both(cond, then) {
                Ok(_) => missing,
                Err(mut earlier) => {
                    earlier.combine(missing);
                    earlier
                }
            });
        };
        let hint = then.as_ref().ok().map(|t| t.ty.clone());
        let otherwise = self.expr(otherwise, hint.as_ref().or(expect));
        let (cond, (then, otherwise)) = both(cond, both(then, otherwise))?;
        self.expect_ty(&otherwise, &then.ty)?;
        let ty = then.ty.clone();
        Ok(self.mk(
            ExprKind::If { cond: Box::new(cond), then: Box::new(then), otherwise: Box::new(otherwise) },
            ty,
            span,
        ))
    }

    fn struct_(&mut self, s: &syn::ExprStruct, expect: Option<&Ty>) -> Result<Expr> {
        let span = s.span();
        if let Some(r) = &s.rest {
            return Err(unsupported(r.span(), "struct update syntax (`..base`) is"));
        }
        if s.qself.is_some() {
            return Err(unsupported(span, "qualified paths are"));
        }
        let name = plain_path(&s.path);
        let known: Vec<(String, Ty)> = match expect {
            Some(Ty::Struct { name: n, fields }) if *n == name => fields.clone(),
            _ => Vec::new(),
        };
        let mut exprs = Vec::new();
        for fv in &s.fields {
            let syn::Member::Named(n) = &fv.member else {
                return Err(unsupported(fv.member.span(), "tuple structs are"));
            };
            let field = n.to_string();
            let want = known
                .iter()
                .find(|(f, _)| *f == field)
                .map(|(_, t)| t.clone())
                .unwrap_or_else(|| Ty::Field { strukt: name.clone(), field: field.to_string() });
            exprs.push(self.expr(&fv.expr, Some(&want)).map(|x| (field, x)));
        }
        let mut exprs = all(exprs)?;
        let mut fields: Vec<(String, Ty)> = exprs.iter().map(|(f, x)| (f.clone(), x.ty.clone())).collect();
        // One field order for every literal of a struct (the identity's, which
        // `valid` records in the item type), so consumers can compare positionally.
        let rank = |f: &str| known.iter().position(|(k, _)| k == f).unwrap_or(usize::MAX);
        fields.sort_by_key(|(f, _)| rank(f));
        exprs.sort_by_key(|(f, _)| rank(f));
        let ty = Ty::Struct { name: name.clone(), fields };
        Ok(self.mk(ExprKind::Struct { name, fields: exprs }, ty, span))
    }
}

fn untyped(span: Span, digits: &str, default: &str) -> Error {
    Error::new(
        span,
        format!("cannot tell the type of `{digits}` here; add a suffix (`{digits}{default}`) or annotate the `let`"),
    )
}

fn is_assign_op(op: &syn::BinOp) -> bool {
    use syn::BinOp as B;
    matches!(
        op,
        B::AddAssign(_)
            | B::SubAssign(_)
            | B::MulAssign(_)
            | B::DivAssign(_)
            | B::RemAssign(_)
            | B::BitXorAssign(_)
            | B::BitAndAssign(_)
            | B::BitOrAssign(_)
            | B::ShlAssign(_)
            | B::ShrAssign(_)
    )
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

fn round_to(v: f64, s: Scalar) -> f64 {
    if s == Scalar::F32 {
        v as f32 as f64
    } else {
        v
    }
}

/// The value of `s::c`, if the scalar type has that const.
fn scalar_const(s: Scalar, c: ScalarConst) -> Option<Lit> {
    use ScalarConst as C;
    let f = |x32: f32, x64: f64| Some(Lit::Float(if s == Scalar::F32 { x32 as f64 } else { x64 }));
    match (s, c) {
        (Scalar::F32 | Scalar::F64, C::Infinity) => f(f32::INFINITY, f64::INFINITY),
        (Scalar::F32 | Scalar::F64, C::NegInfinity) => f(f32::NEG_INFINITY, f64::NEG_INFINITY),
        (Scalar::F32 | Scalar::F64, C::Max) => f(f32::MAX, f64::MAX),
        (Scalar::F32 | Scalar::F64, C::Min) => f(f32::MIN, f64::MIN),
        (Scalar::F32 | Scalar::F64, C::Epsilon) => f(f32::EPSILON, f64::EPSILON),
        (Scalar::F32 | Scalar::F64, C::MinPositive) => f(f32::MIN_POSITIVE, f64::MIN_POSITIVE),
        (Scalar::F32 | Scalar::F64, C::Nan) => f(f32::NAN, f64::NAN),
        (Scalar::I32, C::Min) => Some(Lit::Int(i32::MIN as i128)),
        (Scalar::I32, C::Max) => Some(Lit::Int(i32::MAX as i128)),
        (Scalar::U32, C::Min) => Some(Lit::Int(0)),
        (Scalar::U32, C::Max) => Some(Lit::Int(u32::MAX as i128)),
        (Scalar::I64, C::Min) => Some(Lit::Int(i64::MIN as i128)),
        (Scalar::I64, C::Max) => Some(Lit::Int(i64::MAX as i128)),
        (Scalar::U64, C::Min) => Some(Lit::Int(0)),
        (Scalar::U64, C::Max) => Some(Lit::Int(u64::MAX as i128)),
        _ => None,
    }
}

/// The value of a type parameter's const when it is the same for every
/// scalar (`ZERO`, `ONE`); `LOWEST`/`HIGHEST` depend on the type.
fn param_const(c: ParamConst) -> Option<Lit> {
    match c {
        ParamConst::Zero => Some(Lit::Int(0)),
        ParamConst::One => Some(Lit::Int(1)),
        ParamConst::Lowest | ParamConst::Highest => None,
    }
}

/// Whether a value of type `found` may stand where `want` is expected: equal,
/// or structs of one name (the macro does not know all their fields).
fn compatible(found: &Ty, want: &Ty) -> bool {
    match (found, want) {
        (Ty::Struct { name: a, .. }, Ty::Struct { name: b, .. }) => a == b,
        (Ty::Tuple(a), Ty::Tuple(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| compatible(x, y)),
        (Ty::Array(a, n), Ty::Array(b, m)) => n == m && compatible(a, b),
        // A struct field's type is unknown to the macro: rustc checks it.
        (Ty::Field { .. }, _) | (_, Ty::Field { .. }) => true,
        (a, b) => a == b,
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
        let branches = errors_of("fn f(l: f32, r: f32) -> f32 { if l.is_nan() { r.cbrt() } else { l } }");
        assert_eq!(branches.len(), 2, "{branches:?}");
        assert!(errors_of("fn f(l: f32, r: f32) -> f32 { let a = l; a + r }").is_empty());
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
