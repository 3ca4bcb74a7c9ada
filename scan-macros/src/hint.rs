//! `ScanOp::multiplies_narrow_floats`, read off the typed body: whether it
//! multiplies or divides `f32`, `bf16` or `f16` values into what it returns
//! (the CPU's tiled scan then reduces each chunk before scanning it, so that
//! a long product does not stick on subnormals).
//!
//! Only a product whose value can reach the result counts: one inside a
//! condition or a comparison decides a bool, one cast to an integer is cut
//! off from the floats, and one of literals alone is a constant, so none of
//! them can become a running product across a scan. Each of those, counted,
//! cost about 10% where nothing underflows (the reduced-first order's price).
//! A product that reaches the result through a cast to `f64` still counts:
//! a value carried in `f64` can be narrowed to `f32` again in the next
//! combine.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use crate::ir::{BinOp, Expr, ExprKind, Method, Scalar, Ty};

/// A `bool` expression for the generated `multiplies_narrow_floats`. A
/// product of known scalars is decided here; one of a type parameter, or of
/// a struct field (whose type the macro never sees), asks
/// `scan_core::__private` about the type rustc instantiates.
///
/// `operand` is the fn's first parameter, the name the field checks' closures
/// bind: the user's fn binds it already, so no unit struct or const of that
/// name is in scope to turn the closure's parameter into a pattern.
pub fn multiplies_narrow_floats(body: &Expr, operand: &Ident) -> TokenStream {
    let mut answer = Answer { operand, known: false, checks: Vec::new() };
    answer.visit(body);
    if answer.known {
        return quote!(true);
    }
    if answer.checks.is_empty() {
        return quote!(false);
    }
    let checks = answer.checks.iter().map(|(_, check)| check);
    quote!(#(#checks)||*)
}

struct Answer<'a> {
    operand: &'a Ident,
    /// A product of `f32`, `bf16` or `f16` values is in the body.
    known: bool,
    /// Run-time checks of the opaque scalars multiplied, each once (by its
    /// printed form).
    checks: Vec<(String, TokenStream)>,
}

impl Answer<'_> {
    fn visit(&mut self, e: &Expr) {
        match &e.kind {
            // The value is a bool: no product inside can be carried on.
            ExprKind::Binary(op, ..) if op.is_comparison() => return,
            ExprKind::Cast(_, to) if !to.is_float() => return,
            ExprKind::If { then, otherwise, .. } => {
                self.visit(then);
                self.visit(otherwise);
                return;
            }
            _ => {}
        }
        let operands: Vec<&Expr> = match &e.kind {
            ExprKind::Binary(BinOp::Mul | BinOp::Div, a, b) => vec![a, b],
            ExprKind::Method(Method::MulAdd, x, args) => std::iter::once(&**x).chain(args).collect(),
            _ => Vec::new(),
        };
        // The product's type, and its operands' (an unsuffixed literal takes
        // the other side's type, which may be the one that tells).
        if !operands.is_empty() && !operands.iter().all(|x| is_constant(x)) {
            self.note(&e.ty);
            for x in operands {
                self.note(&x.ty);
            }
        }
        for child in e.children() {
            self.visit(child);
        }
    }

    fn note(&mut self, ty: &Ty) {
        let check = match ty {
            Ty::Scalar(Scalar::F32 | Scalar::Bf16 | Scalar::F16) => {
                self.known = true;
                return;
            }
            Ty::Param(p) => {
                let p = format_ident!("{}", p);
                quote!(::scan_core::__private::is_narrow_float::<#p>())
            }
            Ty::Field { strukt, field } => {
                let field = format_ident!("{}", field);
                let x = self.operand;
                quote!(::scan_core::__private::is_narrow_float_field(|#x: #strukt| #x.#field))
            }
            Ty::Scalar(_) | Ty::Tuple(_) | Ty::Array(..) | Ty::Struct { .. } => return,
        };
        let key = check.to_string();
        if !self.checks.iter().any(|(k, _)| *k == key) {
            self.checks.push((key, check));
        }
    }
}

/// A literal or a named constant, possibly negated or cast: a product of
/// these alone is the same in every combine.
fn is_constant(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Lit(_) | ExprKind::Const { .. } => true,
        ExprKind::Unary(_, x) | ExprKind::Cast(x, _) => is_constant(x),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::testing::body;

    fn hint(src: &str) -> String {
        let operand = Ident::new("l", proc_macro2::Span::call_site());
        multiplies_narrow_floats(&body(src).1, &operand).to_string().replace(' ', "")
    }

    #[test]
    fn products_of_known_scalars_are_decided_here() {
        assert_eq!(hint("fn f(l: (f32, f32), r: (f32, f32)) -> (f32, f32) { (l.0 * r.0, r.0 * l.1 + r.1) }"), "true");
        assert_eq!(hint("fn f(a: f32, b: f32) -> f32 { a / b }"), "true");
        assert_eq!(hint("fn f(a: f32, b: f32) -> f32 { a.mul_add(b, 1.0) }"), "true");
        // Under a `let` and an `if`, and after a cast.
        let nested =
            "fn f(a: f64, b: f64) -> f64 { let x = if a > b { (a as f32) * 2.0 } else { 1.0 }; a + b + (x as f64) }";
        assert_eq!(hint(nested), "true");
        // Not products, or products of other scalars.
        assert_eq!(hint("fn f(a: f32, b: f32) -> f32 { a + b.max(a) }"), "false");
        assert_eq!(hint("fn f(l: (f64, f64), r: (f64, f64)) -> (f64, f64) { (l.0 * r.0, r.0 * l.1 + r.1) }"), "false");
        assert_eq!(hint("fn f(a: i32, b: i32) -> i32 { a.wrapping_mul(b) }"), "false");
    }

    #[test]
    fn opaque_scalars_are_asked_about_once_each() {
        let generic = "fn f<T: CudaScalar>(l: [T; 4], r: [T; 4]) -> [T; 4] { [l[0] * r[0] + l[1] * r[2], l[0] * r[1], l[2], l[3] * r[3]] }";
        assert_eq!(hint(generic), "::scan_core::__private::is_narrow_float::<T>()");
        let fields = "fn f(l: Step, r: Step) -> Step { Step { a: l.a * r.a, b: r.a * l.b + r.b, n: l.n * 2 } }";
        assert_eq!(
            hint(fields),
            "::scan_core::__private::is_narrow_float_field(|l:Step|l.a)||\
             ::scan_core::__private::is_narrow_float_field(|l:Step|l.b)||\
             ::scan_core::__private::is_narrow_float_field(|l:Step|l.n)"
        );
    }

    #[test]
    fn products_that_cannot_reach_the_result_do_not_count() {
        // In a condition, a comparison, a cast to an integer, or of literals alone.
        assert_eq!(hint("fn f(a: f32, b: f32) -> f32 { if a * b > 0.0 { a } else { b } }"), "false");
        assert_eq!(
            hint("fn f(l: (f32, bool), r: (f32, bool)) -> (f32, bool) { (l.0 + r.0, l.0 * r.0 > 1.0) }"),
            "false"
        );
        assert_eq!(hint("fn f(a: i64, b: i64) -> i64 { a + ((a as f32) * (b as f32)) as i64 }"), "false");
        assert_eq!(hint("fn f(a: f32, b: f32) -> f32 { a.max(b) + 2.0 * -0.5 }"), "false");
        let generic = "fn f<T: CudaScalar>(a: T, b: T) -> T { if a * b > T::ZERO { a } else { b } }";
        assert_eq!(hint(generic), "false");
        // The same products where they do reach it: a branch's value, a
        // cast to f64 (narrowed again in the next combine), a literal
        // times an operand.
        assert_eq!(hint("fn f(a: f32, b: f32) -> f32 { if a * b > 0.0 { a * b } else { b } }"), "true");
        assert_eq!(hint("fn f(a: f64, b: f64) -> f64 { ((a as f32) * (b as f32)) as f64 }"), "true");
        assert_eq!(hint("fn f(a: f32, b: f32) -> f32 { a.max(b) * 0.5 }"), "true");
    }
}
