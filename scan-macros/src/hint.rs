//! `ScanOp::multiplies_narrow_floats`, read off the typed body: whether it
//! multiplies or divides `f32`, `bf16` or `f16` values (the CPU's tiled scan
//! then reduces each chunk before scanning it, so that a long product does
//! not stick on subnormals).

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
        let operands: Vec<&Expr> = match &e.kind {
            ExprKind::Binary(BinOp::Mul | BinOp::Div, a, b) => vec![a, b],
            ExprKind::Method(Method::MulAdd, x, args) => std::iter::once(&**x).chain(args).collect(),
            _ => Vec::new(),
        };
        // The product's type, and its operands' (an unsuffixed literal takes
        // the other side's type, which may be the one that tells).
        if !operands.is_empty() {
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
}
