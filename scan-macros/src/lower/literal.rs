//! Literals, names and constants: typed from the context where Rust would
//! infer them, with their values when the macro can know them.

use super::*;

/// bf16 and f16 have no literal syntax in Rust.
fn half_literal(span: proc_macro2::Span, s: Scalar) -> Error {
    let name = scalar_name(s);
    Error::new(
        span,
        format!("`{name}` has no literals; use the operands only (or a `{name}` identity given to the attribute)"),
    )
}

impl Lowerer {
    pub(super) fn lit(&mut self, l: &syn::Lit, expect: Option<&Ty>) -> Result<Expr> {
        let span = l.span();
        match l {
            syn::Lit::Bool(b) => Ok(self.mk(ExprKind::Lit(Lit::Bool(b.value)), Ty::Scalar(Scalar::Bool), span)),
            syn::Lit::Int(i) => {
                let ty = match i.suffix() {
                    "" => match expect {
                        Some(Ty::Scalar(s)) if s.is_half() => return Err(half_literal(span, *s)),
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
                        Some(t) => {
                            return Err(Error::new(
                                span,
                                format!("expected `{}`, found an integer{}", show(t), unseen_note(t)),
                            ))
                        }
                        None => return Err(untyped(span, i.base10_digits(), "i32")),
                    },
                    suffix => match scalar_named(suffix) {
                        Some(s) if s.is_half() => return Err(half_literal(span, s)),
                        Some(s) if s.is_int() => Ty::Scalar(s),
                        Some(s) if s.is_float() => {
                            let v = finite(round_to(i.base10_parse()?, s), s, span)?;
                            return Ok(self.mk(ExprKind::Lit(Lit::Float(v)), Ty::Scalar(s), span));
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
                // rustc refuses a literal out of its type's range (the
                // `overflowing_literals` lint, denied by default); a
                // translation must not wrap it instead.
                if let Ty::Scalar(s) = &ty {
                    let (min, max) = s.int_range().unwrap_or((i128::MIN, i128::MAX));
                    let limit = if self.negated_literal && min < 0 { -min } else { max };
                    if v > limit {
                        return Err(Error::new(
                            span,
                            format!(
                                "literal out of range for `{}`: `{}` is past its maximum, {max}",
                                scalar_name(*s),
                                i.base10_digits()
                            ),
                        ));
                    }
                }
                Ok(self.mk(ExprKind::Lit(Lit::Int(v)), ty, span))
            }
            syn::Lit::Float(f) => {
                let ty = match f.suffix() {
                    "" => match expect {
                        Some(Ty::Scalar(s)) if s.is_half() => return Err(half_literal(span, *s)),
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
                        Some(t) => {
                            return Err(Error::new(
                                span,
                                format!("expected `{}`, found a float{}", show(t), unseen_note(t)),
                            ))
                        }
                        None => return Err(untyped(span, f.base10_digits(), "f64")),
                    },
                    "f32" => Ty::Scalar(Scalar::F32),
                    "f64" => Ty::Scalar(Scalar::F64),
                    s => return Err(Error::new(span, format!("`{s}` literals are not supported"))),
                };
                // The exact value in the literal's own type (an f32 literal is
                // rounded once, to f32, as rustc does).
                // A type the macro cannot see may be an f32: then the GPU
                // source rounds the f64 value to it (`decltype(S::f)(1.0..)`)
                // where rustc rounds the decimal once. The two differ only for
                // a decimal next to the middle between two f32s; refuse those.
                if ty.is_opaque_scalar() {
                    let (once, twice) = (f.base10_parse::<f32>()?, f.base10_parse::<f64>()? as f32);
                    if once.to_bits() != twice.to_bits() && once.is_finite() {
                        return Err(Error::new(
                            span,
                            format!(
                                "`{0}` rounds to another f32 through an f64 ({twice:?}) than directly ({once:?}), and \
                                 the macro cannot see this value's type: write `{0}f32` or `{0}f64`",
                                f.base10_digits()
                            ),
                        ));
                    }
                }
                let v = match &ty {
                    Ty::Scalar(s @ Scalar::F32) => finite(f.base10_parse::<f32>()? as f64, *s, span)?,
                    // (A type the macro cannot see: checked as an f64, the
                    // widest it may be.)
                    _ => finite(f.base10_parse::<f64>()?, Scalar::F64, span)?,
                };
                Ok(self.mk(ExprKind::Lit(Lit::Float(v)), ty, span))
            }
            _ => Err(unsupported(span, "this literal is")),
        }
    }

    pub(super) fn path(&mut self, p: &syn::ExprPath) -> Result<Expr> {
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
                return Ok(self.mk(ExprKind::Param(i), self.param_tys[i].clone(), span));
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
    pub(super) fn constant(&mut self, path: &syn::Path, span: Span) -> Result<Expr> {
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
            format!("unknown constant `{full}`; supported: MIN, MAX of i32/u32/i64/u64; INFINITY, NEG_INFINITY, MIN, MAX, EPSILON, MIN_POSITIVE, NAN of f32/f64 (and ZERO, ONE of bf16/f16); ZERO, ONE, LOWEST, HIGHEST of a type parameter"),
        ))
    }
}

pub(super) fn untyped(span: Span, digits: &str, default: &str) -> Error {
    Error::new(
        span,
        format!("cannot tell the type of `{digits}` here; add a suffix (`{digits}{default}`) or annotate the `let`"),
    )
}

/// `v`, a literal's value in `s`, unless it is out of `s`'s range (rounded
/// to infinity: rustc rejects such a literal too, and no literal can spell
/// it in the generated code).
fn finite(v: f64, s: Scalar, span: proc_macro2::Span) -> Result<f64> {
    if v.is_finite() {
        return Ok(v);
    }
    let name = scalar_name(s);
    Err(Error::new(
        span,
        format!("literal out of range for `{name}` (it rounds to infinity); write `{name}::INFINITY` or `{name}::MAX`"),
    ))
}

pub(super) fn round_to(v: f64, s: Scalar) -> f64 {
    if s == Scalar::F32 {
        v as f32 as f64
    } else {
        v
    }
}

/// The value of `s::c`, if the scalar type has that const.
pub(super) fn scalar_const(s: Scalar, c: ScalarConst) -> Option<Lit> {
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
        // The `half` types' values (bf16: 8 significant bits, exponent as
        // f32's; f16: 11 bits, exponents -14 to 15).
        (Scalar::Bf16 | Scalar::F16, C::Zero) => Some(Lit::Float(0.0)),
        (Scalar::Bf16 | Scalar::F16, C::One) => Some(Lit::Float(1.0)),
        (Scalar::Bf16 | Scalar::F16, C::Infinity) => Some(Lit::Float(f64::INFINITY)),
        (Scalar::Bf16 | Scalar::F16, C::NegInfinity) => Some(Lit::Float(f64::NEG_INFINITY)),
        (Scalar::Bf16 | Scalar::F16, C::Nan) => Some(Lit::Float(f64::NAN)),
        (Scalar::Bf16, C::Max) => Some(Lit::Float(3.3895313892515355e38)),
        (Scalar::Bf16, C::Min) => Some(Lit::Float(-3.3895313892515355e38)),
        (Scalar::Bf16, C::Epsilon) => Some(Lit::Float(0.0078125)),
        (Scalar::Bf16, C::MinPositive) => Some(Lit::Float(1.1754943508222875e-38)),
        (Scalar::F16, C::Max) => Some(Lit::Float(65504.0)),
        (Scalar::F16, C::Min) => Some(Lit::Float(-65504.0)),
        (Scalar::F16, C::Epsilon) => Some(Lit::Float(0.0009765625)),
        (Scalar::F16, C::MinPositive) => Some(Lit::Float(6.103515625e-05)),
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
pub(super) fn param_const(c: ParamConst) -> Option<Lit> {
    match c {
        ParamConst::Zero => Some(Lit::Int(0)),
        ParamConst::One => Some(Lit::Int(1)),
        ParamConst::Lowest | ParamConst::Highest => None,
    }
}
