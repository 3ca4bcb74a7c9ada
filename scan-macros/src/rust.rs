//! IR -> Rust: the body of the generated `ScanOp::combine`.
//!
//! The CPU runs this translation rather than the user's fn so that both
//! backends compute one tree with one set of rules: integer `+ - *` and
//! negation wrap (through `scan_core::CudaScalar`) in every build profile, as
//! they do on the GPU; `max`/`min` go through the same trait.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};

use crate::ir::{BinOp, ConstName, Expr, ExprKind, Lit, Member, Scalar, Ty, UnOp};
use crate::lower::scalar_name;

pub fn expr(e: &Expr, names: &[Ident]) -> TokenStream {
    let sp = e.span;
    let scalar = quote_spanned!(sp=> ::scan_core::CudaScalar);
    match &e.kind {
        ExprKind::Param(i) => respanned(&names[*i], sp),
        ExprKind::Local(n) => Ident::new(n, sp).into_token_stream(),
        ExprKind::Lit(l) => lit(l, &e.ty, sp),
        ExprKind::Const { name, .. } => {
            let c = const_tokens(name, sp);
            quote_spanned!(sp=> (#c))
        }
        ExprKind::Field(base, m) => {
            let b = expr(base, names);
            match (m, &base.ty) {
                (Member::Index(k), Ty::Array(..)) => quote_spanned!(sp=> (#b)[#k]),
                (Member::Index(k), _) => {
                    let k = syn::Index { index: *k as u32, span: sp };
                    quote_spanned!(sp=> (#b).#k)
                }
                (Member::Named(n), _) => {
                    let n = Ident::new(n, sp);
                    quote_spanned!(sp=> (#b).#n)
                }
            }
        }
        ExprKind::Unary(op, x) => {
            let x = expr(x, names);
            match op {
                // A type the macro cannot see may be unsigned: `__private::neg`
                // leaves that to rustc (lowering refuses the seen ones).
                UnOp::Neg if e.ty.is_opaque_scalar() => quote_spanned!(sp=> ::scan_core::__private::neg(#x)),
                UnOp::Neg => quote_spanned!(sp=> #scalar::wrapping_neg(#x)),
                UnOp::Not => quote_spanned!(sp=> (!#x)),
            }
        }
        ExprKind::Binary(op, a, b) => {
            // A struct field the macro cannot see may be a tuple, an array or
            // a struct, which Rust compares and C++ does not: such operands of
            // a comparison go through `__private::scalar`, so rustc refuses
            // them at the user's span instead of NVRTC at run time.
            let compared = op.is_comparison() && matches!(a.ty, Ty::Field { .. });
            let (a, b) = (expr(a, names), expr(b, names));
            let a = if compared { quote_spanned!(sp=> ::scan_core::__private::scalar(#a)) } else { a };
            match op {
                BinOp::Add => quote_spanned!(sp=> #scalar::wrapping_add(#a, #b)),
                BinOp::Sub => quote_spanned!(sp=> #scalar::wrapping_sub(#a, #b)),
                BinOp::Mul => quote_spanned!(sp=> #scalar::wrapping_mul(#a, #b)),
                BinOp::Div => quote_spanned!(sp=> (#a / #b)),
                BinOp::Rem => quote_spanned!(sp=> (#a % #b)),
                BinOp::BitAnd => quote_spanned!(sp=> (#a & #b)),
                BinOp::BitOr => quote_spanned!(sp=> (#a | #b)),
                BinOp::BitXor => quote_spanned!(sp=> (#a ^ #b)),
                BinOp::And => quote_spanned!(sp=> (#a && #b)),
                BinOp::Or => quote_spanned!(sp=> (#a || #b)),
                BinOp::Eq => quote_spanned!(sp=> (#a == #b)),
                BinOp::Ne => quote_spanned!(sp=> (#a != #b)),
                BinOp::Lt => quote_spanned!(sp=> (#a < #b)),
                BinOp::Le => quote_spanned!(sp=> (#a <= #b)),
                BinOp::Gt => quote_spanned!(sp=> (#a > #b)),
                BinOp::Ge => quote_spanned!(sp=> (#a >= #b)),
            }
        }
        ExprKind::Method(m, recv, args) => {
            let r = expr(recv, names);
            let args: Vec<TokenStream> = args.iter().map(|a| expr(a, names)).collect();
            let name = format_ident!("{}", m.name(), span = sp);
            if m.spec().rust_via_scalar {
                quote_spanned!(sp=> #scalar::#name(#r, #(#args),*))
            } else {
                quote_spanned!(sp=> (#r).#name(#(#args),*))
            }
        }
        ExprKind::Cast(x, to) => {
            let x = expr(x, names);
            let to = Ident::new(scalar_name(*to), sp);
            quote_spanned!(sp=> ((#x) as #to))
        }
        ExprKind::If { cond, then, otherwise } => {
            let (c, t, o) = (expr(cond, names), expr(then, names), expr(otherwise, names));
            quote_spanned!(sp=> if #c { #t } else { #o })
        }
        ExprKind::Let { name, annotation, value, body } => {
            let n = Ident::new(name, sp);
            let (v, b) = (expr(value, names), expr(body, names));
            match annotation {
                // The type as the user wrote it (its own spans): where the
                // lowering took it for a field's (`let s: f32 = x.sum;`),
                // rustc then checks it in the translation too (a
                // #[scan_maps] body is replaced by it).
                Some(t) => quote_spanned!(sp=> { let #n: #t = #v; #b }),
                None => quote_spanned!(sp=> { let #n = #v; #b }),
            }
        }
        ExprKind::Tuple(xs) => {
            let xs = xs.iter().map(|x| expr(x, names));
            quote_spanned!(sp=> (#(#xs,)*))
        }
        ExprKind::Array(xs) => {
            let xs = xs.iter().map(|x| expr(x, names));
            quote_spanned!(sp=> [#(#xs),*])
        }
        ExprKind::Struct { name, fields } => {
            let path = quote!(#name);
            let fs = fields.iter().map(|(f, x)| {
                let f = Ident::new(f, sp);
                let x = expr(x, names);
                quote_spanned!(sp=> #f: #x)
            });
            quote_spanned!(sp=> #path { #(#fs),* })
        }
    }
}

/// A literal with its type made explicit (a suffix), so that the translation
/// types exactly as `lower` inferred.
fn lit(l: &Lit, ty: &Ty, sp: Span) -> TokenStream {
    use proc_macro2::Literal as L;
    let mut t = match (l, ty) {
        (Lit::Bool(b), _) => return quote_spanned!(sp=> #b),
        (Lit::Int(v), Ty::Scalar(Scalar::I32)) => L::i32_suffixed(*v as i32),
        (Lit::Int(v), Ty::Scalar(Scalar::U32)) => L::u32_suffixed(*v as u32),
        (Lit::Int(v), Ty::Scalar(Scalar::I64)) => L::i64_suffixed(*v as i64),
        (Lit::Int(v), Ty::Scalar(Scalar::U64)) => L::u64_suffixed(*v as u64),
        (Lit::Int(v), _) => L::u128_unsuffixed(*v as u128),
        (Lit::Float(v), Ty::Scalar(Scalar::F32)) => L::f32_suffixed(*v as f32),
        (Lit::Float(v), Ty::Scalar(Scalar::F64)) => L::f64_suffixed(*v),
        (Lit::Float(v), _) => L::f64_unsuffixed(*v),
    };
    t.set_span(sp);
    quote!(#t)
}

/// `ident` as tokens carrying the span `sp` (of the expression it stands in).
fn respanned(ident: &Ident, sp: Span) -> TokenStream {
    let mut i = ident.clone();
    i.set_span(sp);
    quote!(#i)
}

/// A constant as a Rust path expression (`f32::INFINITY`, `T::ZERO`,
/// `T::zero()`), carrying the span `sp`.
pub fn const_tokens(name: &ConstName, sp: Span) -> TokenStream {
    match name {
        ConstName::Scalar(s, c) => {
            let (t, n) = (Ident::new(scalar_name(*s), sp), Ident::new(c.name(), sp));
            quote_spanned!(sp=> #t::#n)
        }
        ConstName::Param(p, c) => {
            let (t, n) = (Ident::new(p, sp), Ident::new(c.name(), sp));
            quote_spanned!(sp=> #t::#n)
        }
        ConstName::ParamFn(p, c) => {
            let (t, n) = (Ident::new(p, sp), Ident::new(c.fn_name(), sp));
            quote_spanned!(sp=> #t::#n())
        }
    }
}
