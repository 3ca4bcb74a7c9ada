//! The property test behind `assume_associative`: a `#[cfg(test)] #[test]` in
//! the user's crate that checks both laws on random inputs through the
//! generated type's `::scan_core::ScanOp` impl.
//!
//! Floats are compared with a relative tolerance (rounding is not a
//! violation); integers and booleans exactly. Inputs where both sides are NaN
//! (out of the body's domain, say `ln` of a negative) are skipped, but most
//! inputs must be evaluable, so an operator that is NaN everywhere fails. NaN
//! on one side only fails: one grouping gave a number and the other did not.
//!
//! A generic operator (`fn f<T: CudaScalar>(..)`) is tested at `T = f64` when
//! every bound of every type parameter is one `f64` meets (`CudaScalar`,
//! `CudaFloat`, `Copy`, ...) and there is no `where` clause; otherwise (a bound
//! of the user's own) it gets no generated test.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};

use super::OpDef;
use crate::ir::{Scalar, Ty};

/// Random inputs per run.
const CASES: usize = 1000;

/// One scalar component: its access path (`.0`, `[2]`, `.name`) and type
/// (`None`: a struct field whose scalar only rustc knows).
fn leaves(ty: &Ty, path: TokenStream, out: &mut Vec<(TokenStream, Option<Scalar>)>) -> Option<()> {
    match ty {
        Ty::Scalar(s) => out.push((path, Some(*s))),
        // A struct field (`Tally::count`): rustc knows its scalar, and the
        // test compares it exactly (random inputs are small integers).
        Ty::Field { .. } => out.push((path, None)),
        // A type parameter: the operator type has no concrete instance here.
        Ty::Param(_) => return None,
        Ty::Tuple(ts) => {
            for (i, t) in ts.iter().enumerate() {
                let i = syn::Index::from(i);
                leaves(t, quote!(#path.#i), out)?;
            }
        }
        Ty::Array(t, n) => {
            for i in 0..*n {
                leaves(t, quote!(#path[#i]), out)?;
            }
        }
        Ty::Struct { fields, .. } => {
            for (name, t) in fields {
                let f = syn::Ident::new(name, Span::call_site());
                leaves(t, quote!(#path.#f), out)?;
            }
        }
    }
    Some(())
}

/// An expression of type `ty` built from `rng` draws.
fn random(ty: &Ty) -> Option<TokenStream> {
    Some(match ty {
        Ty::Scalar(Scalar::Bool) => quote!(rng.below(2) == 1),
        Ty::Scalar(Scalar::F32) => quote!(rng.range_f64(-4.0, 4.0) as f32),
        Ty::Scalar(Scalar::F64) => quote!(rng.range_f64(-4.0, 4.0)),
        Ty::Scalar(Scalar::Bf16) => quote!(::scan_core::maps::bf16::from_f64(rng.range_f64(-4.0, 4.0))),
        Ty::Scalar(Scalar::F16) => quote!(::scan_core::maps::f16::from_f64(rng.range_f64(-4.0, 4.0))),
        Ty::Scalar(Scalar::I32) => quote!((rng.below(201) as i64 - 100) as i32),
        Ty::Scalar(Scalar::I64) => quote!(rng.below(201) as i64 - 100),
        Ty::Scalar(Scalar::U32) => quote!(rng.below(201) as u32),
        Ty::Scalar(Scalar::U64) => quote!(rng.below(201)),
        Ty::Field { .. } => quote!(__small(&mut rng)),
        Ty::Param(_) => return None,
        Ty::Tuple(ts) => {
            let xs = ts.iter().map(random).collect::<Option<Vec<_>>>()?;
            quote!((#(#xs,)*))
        }
        Ty::Array(t, n) => {
            let xs = (0..*n).map(|_| random(t)).collect::<Option<Vec<_>>>()?;
            quote!([#(#xs),*])
        }
        Ty::Struct { name, fields } => {
            let path = name;
            let names = fields.iter().map(|(n, _)| syn::Ident::new(n, Span::call_site()));
            let xs = fields.iter().map(|(_, t)| random(t)).collect::<Option<Vec<_>>>()?;
            quote!(#path { #(#names: #xs),* })
        }
    })
}

/// Bounds `f64` is known to meet: the test may instantiate a parameter bound
/// by nothing else at `f64`.
const F64_MEETS: &[&str] = &[
    "CudaScalar",
    "CudaFloat",
    "CudaType",
    "Copy",
    "Clone",
    "Debug",
    "PartialEq",
    "PartialOrd",
    "Send",
    "Sync",
    "Default",
];

/// The type parameters bounded by `CudaFloat` (in their own bounds or a
/// `where` clause): floats, whose `LOWEST`/`HIGHEST` are infinities.
pub fn float_params(generics: &syn::Generics) -> Vec<String> {
    let is_float_bound = |b: &syn::TypeParamBound| {
        matches!(b, syn::TypeParamBound::Trait(tb)
            if tb.path.segments.last().is_some_and(|s| s.ident == "CudaFloat"))
    };
    let in_where = |name: &syn::Ident| {
        generics.where_clause.as_ref().is_some_and(|w| {
            w.predicates.iter().any(|p| match p {
                syn::WherePredicate::Type(pt) => {
                    matches!(&pt.bounded_ty, syn::Type::Path(tp) if tp.qself.is_none() && tp.path.is_ident(name))
                        && pt.bounds.iter().any(is_float_bound)
                }
                _ => false,
            })
        })
    };
    generics
        .type_params()
        .filter(|t| t.bounds.iter().any(is_float_bound) || in_where(&t.ident))
        .map(|t| t.ident.to_string())
        .collect()
}

/// The names of the type parameters (empty for a non-generic operator) when
/// each can be `f64` in the generated test; `None` when a bound may exclude
/// `f64` (a `where` clause, or a trait not in [`F64_MEETS`]).
pub fn f64_params(generics: &syn::Generics) -> Option<Vec<String>> {
    if generics.where_clause.as_ref().is_some_and(|w| !w.predicates.is_empty()) {
        return None;
    }
    let mut names = Vec::new();
    for t in generics.type_params() {
        let known = t.bounds.iter().all(|b| match b {
            syn::TypeParamBound::Trait(tb) => {
                matches!(tb.modifier, syn::TraitBoundModifier::None)
                    && tb.lifetimes.is_none()
                    && tb
                        .path
                        .segments
                        .last()
                        .is_some_and(|s| s.arguments.is_none() && F64_MEETS.contains(&s.ident.to_string().as_str()))
            }
            _ => false,
        });
        if !known || t.default.is_some() {
            return None;
        }
        names.push(t.ident.to_string());
    }
    Some(names)
}

/// `ty` with every type parameter named in `params` replaced by `f64`.
fn at_f64(ty: &Ty, params: &[String]) -> Ty {
    match ty {
        Ty::Param(p) if params.contains(p) => Ty::Scalar(Scalar::F64),
        Ty::Scalar(_) | Ty::Param(_) | Ty::Field { .. } => ty.clone(),
        Ty::Tuple(ts) => Ty::Tuple(ts.iter().map(|t| at_f64(t, params)).collect()),
        Ty::Array(t, n) => Ty::Array(Box::new(at_f64(t, params)), *n),
        Ty::Struct { name, fields } => Ty::Struct {
            name: name.clone(),
            fields: fields.iter().map(|(n, t)| (n.clone(), at_f64(t, params))).collect(),
        },
    }
}

/// The test's tokens; empty for a generic operator whose bounds `f64` may not meet.
pub fn laws_test(op: &OpDef) -> TokenStream {
    let Some(params) = &op.f64_params else {
        return TokenStream::new();
    };
    let item = at_f64(&super::normal::resolve_item(op.item, op.body), params);
    let mut parts = Vec::new();
    let (Some(()), Some(gen)) = (leaves(&item, TokenStream::new(), &mut parts), random(&item)) else {
        return TokenStream::new();
    };
    let name = op.type_name;
    let ty = if params.is_empty() {
        quote!(#name)
    } else {
        let f64s = params.iter().map(|_| quote!(f64));
        quote!(#name<#(#f64s),*>)
    };
    let fn_name = op.fn_name.to_string();
    let test = format_ident!("__scan_op_laws_of_{}", op.fn_name);
    let same = parts.iter().map(|(p, s)| match s {
        Some(Scalar::F32) => quote!(__close(l #p as f64, r #p as f64, 1e-3)),
        Some(Scalar::F64) => quote!(__close(l #p, r #p, 1e-9)),
        // 8 and 11 bits of precision: a few roundings apart.
        Some(Scalar::Bf16) => quote!(__close(f64::from(l #p .to_f32()), f64::from(r #p .to_f32()), 5e-2)),
        Some(Scalar::F16) => quote!(__close(f64::from(l #p .to_f32()), f64::from(r #p .to_f32()), 1e-2)),
        _ => quote!(Some(l #p == r #p)),
    });
    let show = parts.iter().map(|(p, _)| quote!(format!("{:?}", x #p)));
    quote! {
        #[cfg(test)]
        #[test]
        #[allow(non_snake_case)]
        fn #test() {
            type __Op = #ty;
            type __Item = <__Op as ::scan_core::ScanOp>::Item;
            fn __combine(l: __Item, r: __Item) -> __Item {
                <__Op as ::scan_core::ScanOp>::combine(l, r)
            }
            /// Within `tol` relative to the larger magnitude. `None` when both
            /// sides are NaN (an input out of the body's domain); NaN on one
            /// side only is a violation: one grouping gave a number.
            #[allow(dead_code)]
            fn __close(l: f64, r: f64, tol: f64) -> Option<bool> {
                match (l.is_nan(), r.is_nan()) {
                    (true, true) => return None,
                    (true, false) | (false, true) => return Some(false),
                    (false, false) => {}
                }
                if l.is_infinite() || r.is_infinite() {
                    return Some(l == r);
                }
                Some((l - r).abs() <= tol * l.abs().max(r.abs()).max(1.0))
            }
            /// `Some(true)`: equal up to rounding; `Some(false)`: a component
            /// differs (a violation even if another is NaN on both sides);
            /// `None`: out of the domain.
            fn __same(l: __Item, r: __Item) -> Option<bool> {
                let (mut differs, mut undefined) = (false, false);
                for s in [#(#same),*] {
                    match s {
                        Some(ok) => differs |= !ok,
                        None => undefined = true,
                    }
                }
                if differs {
                    Some(false)
                } else if undefined {
                    None
                } else {
                    Some(true)
                }
            }
            /// A small nonnegative integer of any scalar type.
            #[allow(dead_code)]
            fn __small<S: ::scan_core::CudaScalar>(rng: &mut ::scan_core::__private::Rng) -> S {
                let mut v = S::ZERO;
                for _ in 0..rng.below(9) {
                    v = v + S::ONE;
                }
                v
            }
            fn __show(x: __Item) -> String {
                let parts: Vec<String> = vec![#(#show),*];
                format!("({})", parts.join(", "))
            }
            let mut rng = ::scan_core::__private::Rng::fresh(concat!("laws of ", #fn_name));
            let e = <__Op as ::scan_core::ScanOp>::identity();
            let mut evaluated = 0usize;
            for _ in 0..#CASES {
                let (a, b, c): (__Item, __Item, __Item) = (#gen, #gen, #gen);
                let (l, r) = (__combine(__combine(a, b), c), __combine(a, __combine(b, c)));
                let checks = [
                    (__same(l, r), "associativity", l, r),
                    (__same(__combine(e, a), a), "left identity", __combine(e, a), a),
                    (__same(__combine(a, e), a), "right identity", __combine(a, e), a),
                ];
                let mut all_defined = true;
                for (ok, law, x, y) in checks {
                    match ok {
                        Some(ok) => assert!(
                            ok,
                            "`{}` breaks {}: a = {}, b = {}, c = {} gives {} vs {}",
                            #fn_name, law, __show(a), __show(b), __show(c), __show(x), __show(y)
                        ),
                        None => all_defined = false,
                    }
                }
                evaluated += all_defined as usize;
            }
            assert!(
                evaluated >= #CASES / 10,
                "`{}`: only {} of {} random inputs gave a value (not NaN); the laws are untested",
                #fn_name, evaluated, #CASES
            );
        }
    }
}
