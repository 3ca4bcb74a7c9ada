//! The search for inputs on which a law fails.
//!
//! Small inputs first, so the first counterexample found is one a person can
//! check by hand: every scalar in {0, 1} (exhaustively, the last operand's
//! scalars varying fastest), then in {0, 1, -1, 2}, then a deterministic
//! random mix of small integers, fractions, negatives and (for sampling in
//! `f64`) large and small magnitudes.

use super::rational::Rat;
use super::sample::{eval, scalar, Ext, Num, Value};
use crate::ir::{Expr, Scalar, Ty};

/// Inputs per phase; bounds the search's compile time.
const BUDGET: usize = 1024;

/// The inputs (one value per operand) and the two sides that differ.
pub struct Found<N> {
    pub operands: Vec<Value<N>>,
    pub left: Value<N>,
    pub right: Value<N>,
}

/// Which law, evaluated on concrete operands.
#[derive(Clone, Copy)]
pub enum Law<'a> {
    /// `(a ∘ b) ∘ c` vs `a ∘ (b ∘ c)`.
    Assoc { body: &'a Expr },
    /// `e ∘ a` vs `a` (`left`), or `a ∘ e` vs `a`.
    Identity { body: &'a Expr, identity: &'a Expr, left: bool },
}

impl Law<'_> {
    pub fn operands(self) -> usize {
        match self {
            Law::Assoc { .. } => 3,
            Law::Identity { .. } => 1,
        }
    }

    /// Both sides, or `None` when either has no value on these inputs.
    pub fn sides<N: Num>(self, x: &[Value<N>]) -> Option<(Value<N>, Value<N>)> {
        match self {
            Law::Assoc { body } => {
                let (a, b, c) = (x[0].clone(), x[1].clone(), x[2].clone());
                let ab = eval(body, &[a.clone(), b.clone()])?;
                let bc = eval(body, &[b, c.clone()])?;
                Some((eval(body, &[ab, c])?, eval(body, &[a, bc])?))
            }
            Law::Identity { body, identity, left } => {
                let e = eval(identity, &[])?;
                let a = x[0].clone();
                let side = if left { eval(body, &[e, a.clone()])? } else { eval(body, &[a.clone(), e])? };
                Some((side, a))
            }
        }
    }
}

fn leaf_tys(ty: &Ty, out: &mut Vec<Ty>) {
    match ty {
        Ty::Scalar(_) | Ty::Param(_) | Ty::Field { .. } => out.push(ty.clone()),
        Ty::Tuple(ts) => ts.iter().for_each(|t| leaf_tys(t, out)),
        Ty::Array(t, n) => (0..*n).for_each(|_| leaf_tys(t, out)),
        Ty::Struct { fields, .. } => fields.iter().for_each(|(_, t)| leaf_tys(t, out)),
    }
}

fn q(n: i128, d: i128) -> Rat {
    Rat::new(n, d).unwrap_or(Rat::ZERO)
}

/// The candidate values of one phase for a scalar of type `ty`.
fn candidates(ty: &Ty, phase: usize, wide: bool) -> Vec<Rat> {
    let ints = |xs: &[i128]| xs.iter().map(|n| Rat::int(*n)).collect::<Vec<_>>();
    match ty {
        Ty::Scalar(Scalar::Bool) => ints(&[0, 1]),
        Ty::Scalar(Scalar::U32 | Scalar::U64) => match phase {
            0 => ints(&[0, 1]),
            1 => ints(&[0, 1, 2, 3]),
            _ => ints(&[0, 1, 2, 3, 5, 7, 10, 12, 100, 255, 1000]),
        },
        Ty::Scalar(Scalar::I32 | Scalar::I64) => match phase {
            0 => ints(&[0, 1]),
            1 => ints(&[0, 1, -1, 2]),
            _ => ints(&[0, 1, -1, 2, -2, 3, -5, 7, 10, -12, 100, -1000]),
        },
        _ => match phase {
            0 => ints(&[0, 1]),
            1 => ints(&[0, 1, -1, 2]),
            _ => {
                let mut v = ints(&[0, 1, -1, 2, -2, 3, -7, 10]);
                v.extend([q(1, 2), q(-1, 2), q(1, 3), q(5, 4), q(-3, 8)]);
                if wide {
                    // Magnitudes far from 1 show up violations that
                    // cancel at small inputs; exact arithmetic does not need them.
                    v.extend([Rat::int(1_000_000), Rat::int(-100_000_000), q(1, 1_000_000), q(1, 10)]);
                }
                v
            }
        },
    }
}

/// SplitMix64: deterministic, so a compile error is the same on every build.
struct Mix(u64);
impl Mix {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
}

/// Judges one input: `Some(true)` the sides agree, `Some(false)` a violation,
/// `None` skip (no value). Arguments: the operands, then the two sides.
pub type Same<'a, N> = dyn Fn(&[Value<N>], &Value<N>, &Value<N>) -> Option<bool> + 'a;

/// The first inputs on which `same(left, right)` is `Some(false)`; inputs where
/// it is `None` (no value, NaN) are skipped. `wide`: include magnitudes far from 1.
/// Returns the counterexample, if any, and how many inputs were evaluated.
pub fn search<N: Num>(item: &Ty, law: Law, wide: bool, same: &Same<'_, N>) -> (Option<Found<N>>, usize) {
    let mut leaves = Vec::new();
    leaf_tys(item, &mut leaves);
    let k = law.operands();
    let tys: Vec<&Ty> = (0..k).flat_map(|_| leaves.iter()).collect();
    let mut rng = Mix(0x5CA1_AB1E);
    let mut evaluated = 0;
    for phase in 0..3 {
        let cands: Vec<Vec<Rat>> = tys.iter().map(|t| candidates(t, phase, wide)).collect();
        let total = cands.iter().try_fold(1usize, |acc, c| acc.checked_mul(c.len()));
        let exhaustive = total.filter(|t| *t <= BUDGET);
        let rounds = exhaustive.unwrap_or(BUDGET);
        for round in 0..rounds {
            // Exhaustive: the digits of `round`, the last scalar fastest.
            let mut digits = vec![0usize; cands.len()];
            let mut r = round;
            for (i, c) in cands.iter().enumerate().rev() {
                digits[i] = if exhaustive.is_some() {
                    let d = r % c.len();
                    r /= c.len();
                    d
                } else {
                    rng.below(c.len())
                };
            }
            let mut vals = digits.iter().zip(&cands).zip(&tys).map(|((d, c), t)| scalar::<N>(t, c[*d]));
            let operands: Vec<Value<N>> =
                (0..k).map(|_| Value::build(item, &mut |_| vals.next().unwrap_or(Value::Bool(false)))).collect();
            let Some((left, right)) = law.sides(&operands) else { continue };
            evaluated += 1;
            if same(&operands, &left, &right) == Some(false) {
                return (Some(Found { operands, left, right }), evaluated);
            }
        }
    }
    (None, evaluated)
}

/// Exact equality, for [`super::sample::Ext`] values.
pub fn exact<N: Num>(_: &[Value<N>], l: &Value<N>, r: &Value<N>) -> Option<bool> {
    Some(l == r)
}

/// Converts sampled `f64` inputs to exact ones (every finite `f64` is a rational).
fn to_exact(v: &Value<f64>) -> Option<Value<Ext>> {
    Some(match v {
        Value::Num(x) => Value::Num(Ext::float(*x)?),
        Value::Bool(b) => Value::Bool(*b),
        Value::Tuple(xs) => Value::Tuple(xs.iter().map(to_exact).collect::<Option<_>>()?),
        Value::Array(xs) => Value::Array(xs.iter().map(to_exact).collect::<Option<_>>()?),
        Value::Struct(fs) => {
            Value::Struct(fs.iter().map(|(n, x)| Some((n.clone(), to_exact(x)?))).collect::<Option<_>>()?)
        }
    })
}

fn overflowed(l: &Value<f64>, r: &Value<f64>) -> bool {
    l.leaves().into_iter().zip(r.leaves()).any(|p| match p {
        (Value::Num(x), Value::Num(y)) => x.is_infinite() != y.is_infinite(),
        _ => false,
    })
}

fn large(v: &Value<f64>) -> bool {
    v.leaves().into_iter().any(|x| matches!(x, Value::Num(x) if x.abs() > 100.0))
}

/// For `f64` sampling under `law`: [`close`], and where it sees a violation,
/// the same inputs again in exact arithmetic when the body allows it, so that
/// rounding (cancellation, say) is never reported as a violation.
///
/// `approximate`: the body has functions exact arithmetic cannot evaluate, so
/// a difference that cannot be rechecked counts; otherwise such an input (an
/// exact overflow of `i128`) is skipped.
pub fn close_or_exact(
    law: Law<'_>,
    tol: f64,
    approximate: bool,
) -> impl Fn(&[Value<f64>], &Value<f64>, &Value<f64>) -> Option<bool> + '_ {
    move |ops, l, r| match close(l, r, tol) {
        // An infinity against a finite value from large inputs is an overflow
        // of f64 (`exp(1e6)`), which is rounding, not a violation.
        Some(false) if overflowed(l, r) && ops.iter().any(large) => None,
        Some(false) => {
            let exact_ops: Option<Vec<Value<Ext>>> = ops.iter().map(to_exact).collect();
            match exact_ops.and_then(|x| law.sides::<Ext>(&x)) {
                Some((el, er)) => Some(el == er),
                None if approximate => Some(false),
                None => None,
            }
        }
        other => other,
    }
}

/// Equality up to rounding, for `f64` values: each scalar within a relative
/// `tol` of the larger magnitude (at least 1). NaN on either side skips the
/// input (outside the function's domain, e.g. `ln` of a negative).
pub fn close(l: &Value<f64>, r: &Value<f64>, tol: f64) -> Option<bool> {
    let (ls, rs) = (l.leaves(), r.leaves());
    if ls.len() != rs.len() {
        return Some(false);
    }
    let mut all = true;
    for (x, y) in ls.into_iter().zip(rs) {
        match (x, y) {
            (Value::Num(x), Value::Num(y)) => {
                if x.is_nan() || y.is_nan() {
                    return None;
                }
                if x.is_infinite() || y.is_infinite() {
                    all &= x == y;
                    continue;
                }
                let scale = x.abs().max(y.abs()).max(1.0);
                all &= (x - y).abs() <= tol * scale;
            }
            (a, b) => all &= a == b,
        }
    }
    Some(all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::testing::body;

    #[test]
    fn finds_the_smallest_counterexample_to_sub_first() {
        let (item, body) = body("fn sub(a: f32, b: f32) -> f32 { a - b }");
        let (found, _) = search::<Ext>(&item, Law::Assoc { body: &body }, false, &exact);
        let f = found.expect("a - b is not associative");
        let ops: Vec<String> = f.operands.iter().map(|v| v.to_string()).collect();
        assert_eq!(ops, ["0", "0", "1"]);
        assert_eq!((f.left.to_string(), f.right.to_string()), ("-1".into(), "1".into()));
    }

    #[test]
    fn finds_nothing_for_an_associative_body() {
        let (item, body) = body("fn lr(l: (f64, f64), r: (f64, f64)) -> (f64, f64) { (l.0 * r.0, r.0 * l.1 + r.1) }");
        let (found, n) = search::<Ext>(&item, Law::Assoc { body: &body }, false, &exact);
        assert!(found.is_none());
        assert!(n > 1000, "evaluated {n} inputs");
    }

    #[test]
    fn needs_negative_inputs_for_max_with_identity_zero() {
        let (item, body) = body("fn max(a: f32, b: f32) -> f32 { a.max(b) }");
        let zero = crate::check::testing::expr("0.0f32", &item);
        let law = Law::Identity { body: &body, identity: &zero, left: false };
        let (found, _) = search::<Ext>(&item, law, false, &exact);
        let f = found.expect("0 is not an identity of max");
        assert_eq!(f.operands[0].to_string(), "-1");
        assert_eq!((f.left.to_string(), f.right.to_string()), ("0".into(), "-1".into()));
    }

    #[test]
    fn rounding_is_not_a_violation_but_a_real_difference_is() {
        let n = |x: f64| Value::Num(x);
        assert_eq!(close(&n(0.1 + 0.2), &n(0.3), 1e-9), Some(true));
        assert_eq!(close(&n(1e8 + 1.0), &n(1e8), 1e-9), Some(false));
        assert_eq!(close(&n(f64::NAN), &n(1.0), 1e-9), None);
        assert_eq!(close(&n(f64::NEG_INFINITY), &n(f64::NEG_INFINITY), 1e-9), Some(true));
    }

    #[test]
    fn cancellation_in_f64_is_rechecked_exactly() {
        // Associative over the reals (1/x adds), but f64 rounds the two orders differently.
        let (item, body) = body("fn h(a: f64, b: f64) -> f64 { a * b / (a + b) }");
        let law = Law::Assoc { body: &body };
        let (found, n) = search::<f64>(&item, law, true, &close_or_exact(law, 1e-9, false));
        assert!(found.is_none(), "{}", found.map(|f| f.left.to_string()).unwrap_or_default());
        assert!(n > 100);
    }

    #[test]
    fn samples_division_in_f64() {
        let (item, body) = body("fn avg(a: f64, b: f64) -> f64 { (a + b) / (1.0 + a * a) }");
        let (found, _) = search::<f64>(
            &item,
            Law::Assoc { body: &body },
            true,
            &close_or_exact(Law::Assoc { body: &body }, 1e-9, false),
        );
        assert!(found.is_some());
    }
}
