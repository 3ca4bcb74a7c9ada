//! An interpreter of the IR on concrete inputs, in two number systems:
//! exact extended rationals ([`Ext`], for counterexamples to a failed proof,
//! checked over the reals) and `f64` (for bodies outside the symbolic
//! fragment: division by variables, `exp`, `ln`, comparisons of floats).
//!
//! Integers are evaluated as unbounded integers, like the symbolic check: a
//! wrap-around is not a counterexample, as rounding is not one for floats.

use std::cmp::Ordering;
use std::fmt;

use super::normal::{const_value, ConstVal};
use super::rational::Rat;
use crate::ir::{BinOp, Expr, ExprKind, Lit, Member, Method, Scalar, Ty, UnOp};

/// A number system the interpreter runs in. `None` is "no value here" (an
/// overflow, `0 * inf`, division by zero, or a function it cannot evaluate):
/// the input is skipped, never reported.
pub trait Num: Copy + PartialEq + fmt::Display {
    fn int(n: i128) -> Self;
    fn float(x: f64) -> Option<Self>;
    fn neg_inf() -> Self;
    fn pos_inf() -> Self;
    fn add(self, o: Self) -> Option<Self>;
    fn neg(self) -> Self;
    fn mul(self, o: Self) -> Option<Self>;
    /// `int`: integer division, rounding toward zero.
    fn div(self, o: Self, int: bool) -> Option<Self>;
    fn rem(self, o: Self) -> Option<Self>;
    fn cmp(self, o: Self) -> Option<Ordering>;
    /// The integer value, when finite and integral.
    fn to_int(self) -> Option<i128>;
    fn trunc(self) -> Option<Self>;
    /// `exp`, `ln`, `sqrt`, ...: only where the system can evaluate them.
    fn call(self, m: Method) -> Option<Self>;

    fn sub(self, o: Self) -> Option<Self> {
        self.add(o.neg())
    }
    /// Rust's float `max`/`min` ignore NaN; here the value is the larger or smaller.
    fn max(self, o: Self) -> Option<Self> {
        Some(if self.cmp(o)? == Ordering::Less { o } else { self })
    }
    fn min(self, o: Self) -> Option<Self> {
        Some(if self.cmp(o)? == Ordering::Greater { o } else { self })
    }
}

/// An extended rational: the reals the checker works over, plus `±inf`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ext {
    NegInf,
    Fin(Rat),
    PosInf,
}

impl fmt::Display for Ext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ext::NegInf => f.write_str("-inf"),
            Ext::PosInf => f.write_str("inf"),
            Ext::Fin(r) => r.fmt(f),
        }
    }
}

impl Ext {
    fn sign(self) -> i128 {
        match self {
            Ext::NegInf => -1,
            Ext::PosInf => 1,
            Ext::Fin(r) => r.signum(),
        }
    }
    fn inf(sign: i128) -> Ext {
        if sign < 0 {
            Ext::NegInf
        } else {
            Ext::PosInf
        }
    }
}

impl Num for Ext {
    fn int(n: i128) -> Self {
        Ext::Fin(Rat::int(n))
    }
    fn float(x: f64) -> Option<Self> {
        match x {
            f64::INFINITY => Some(Ext::PosInf),
            f64::NEG_INFINITY => Some(Ext::NegInf),
            _ => Rat::from_f64(x).ok().map(Ext::Fin),
        }
    }
    fn neg_inf() -> Self {
        Ext::NegInf
    }
    fn pos_inf() -> Self {
        Ext::PosInf
    }
    fn add(self, o: Self) -> Option<Self> {
        match (self, o) {
            (Ext::Fin(a), Ext::Fin(b)) => a.add(b).ok().map(Ext::Fin),
            (Ext::Fin(_), x) | (x, Ext::Fin(_)) => Some(x),
            (a, b) if a == b => Some(a),
            _ => None,
        }
    }
    fn neg(self) -> Self {
        match self {
            Ext::NegInf => Ext::PosInf,
            Ext::PosInf => Ext::NegInf,
            Ext::Fin(r) => Ext::Fin(r.neg()),
        }
    }
    fn mul(self, o: Self) -> Option<Self> {
        match (self, o) {
            (Ext::Fin(a), Ext::Fin(b)) => a.mul(b).ok().map(Ext::Fin),
            _ if self.sign() == 0 || o.sign() == 0 => None,
            _ => Some(Ext::inf(self.sign() * o.sign())),
        }
    }
    fn div(self, o: Self, int: bool) -> Option<Self> {
        match (self, o) {
            (Ext::Fin(a), Ext::Fin(b)) => {
                let q = a.div(b)?.ok()?;
                Some(Ext::Fin(if int { q.trunc() } else { q }))
            }
            (Ext::Fin(_), _) => Some(Ext::int(0)),
            (_, Ext::Fin(b)) if !b.is_zero() => Some(Ext::inf(self.sign() * b.signum())),
            _ => None,
        }
    }
    fn rem(self, o: Self) -> Option<Self> {
        let q = self.div(o, true)?;
        self.sub(q.mul(o)?)
    }
    fn cmp(self, o: Self) -> Option<Ordering> {
        Some(match (self, o) {
            (Ext::Fin(a), Ext::Fin(b)) => a.cmp_value(b),
            (a, b) if a == b => Ordering::Equal,
            (Ext::NegInf, _) | (_, Ext::PosInf) => Ordering::Less,
            _ => Ordering::Greater,
        })
    }
    fn to_int(self) -> Option<i128> {
        match self {
            Ext::Fin(r) if r.is_integer() => Some(r.num()),
            _ => None,
        }
    }
    fn trunc(self) -> Option<Self> {
        match self {
            Ext::Fin(r) => Some(Ext::Fin(r.trunc())),
            _ => None,
        }
    }
    fn call(self, m: Method) -> Option<Self> {
        match m {
            Method::Abs => Some(if self.sign() < 0 { self.neg() } else { self }),
            // Transcendental results are not rational.
            _ => None,
        }
    }
}

impl Num for f64 {
    fn int(n: i128) -> Self {
        n as f64
    }
    fn float(x: f64) -> Option<Self> {
        Some(x)
    }
    fn neg_inf() -> Self {
        f64::NEG_INFINITY
    }
    fn pos_inf() -> Self {
        f64::INFINITY
    }
    fn add(self, o: Self) -> Option<Self> {
        Some(self + o)
    }
    fn neg(self) -> Self {
        -self
    }
    fn mul(self, o: Self) -> Option<Self> {
        Some(self * o)
    }
    fn div(self, o: Self, int: bool) -> Option<Self> {
        if int {
            (o != 0.0).then(|| (self / o).trunc())
        } else {
            Some(self / o)
        }
    }
    fn rem(self, o: Self) -> Option<Self> {
        (o != 0.0).then(|| self % o)
    }
    fn cmp(self, o: Self) -> Option<Ordering> {
        self.partial_cmp(&o)
    }
    fn to_int(self) -> Option<i128> {
        (self.is_finite() && self.fract() == 0.0 && self.abs() < 1e30).then_some(self as i128)
    }
    fn trunc(self) -> Option<Self> {
        Some(f64::trunc(self))
    }
    fn call(self, m: Method) -> Option<Self> {
        Some(match m {
            Method::Abs => self.abs(),
            Method::Exp => self.exp(),
            Method::Ln => self.ln(),
            Method::Ln1p => self.ln_1p(),
            Method::ExpM1 => self.exp_m1(),
            Method::Sqrt => self.sqrt(),
            Method::Max | Method::Min | Method::MulAdd => return None,
        })
    }
    fn max(self, o: Self) -> Option<Self> {
        Some(f64::max(self, o))
    }
    fn min(self, o: Self) -> Option<Self> {
        Some(f64::min(self, o))
    }
}

/// A concrete value, shaped like the item type.
#[derive(Clone, Debug, PartialEq)]
pub enum Value<N> {
    Num(N),
    Bool(bool),
    Tuple(Vec<Value<N>>),
    Array(Vec<Value<N>>),
    Struct(Vec<(String, Value<N>)>),
}

impl<N: Num> fmt::Display for Value<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |f: &mut fmt::Formatter<'_>, xs: &[Value<N>], open: &str, close: &str| {
            f.write_str(open)?;
            for (i, x) in xs.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                x.fmt(f)?;
            }
            f.write_str(close)
        };
        match self {
            Value::Num(n) => n.fmt(f),
            Value::Bool(b) => b.fmt(f),
            Value::Tuple(xs) => list(f, xs, "(", if xs.len() == 1 { ",)" } else { ")" }),
            Value::Array(xs) => list(f, xs, "[", "]"),
            Value::Struct(fs) => {
                f.write_str("{ ")?;
                for (i, (n, x)) in fs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{n}: {x}")?;
                }
                f.write_str(" }")
            }
        }
    }
}

impl<N: Num> Value<N> {
    /// The scalar components, in the order of [`super::normal::Sym::leaves`].
    pub fn leaves(&self) -> Vec<&Value<N>> {
        match self {
            Value::Num(_) | Value::Bool(_) => vec![self],
            Value::Tuple(xs) | Value::Array(xs) => xs.iter().flat_map(Value::leaves).collect(),
            Value::Struct(fs) => fs.iter().flat_map(|(_, x)| x.leaves()).collect(),
        }
    }

    /// A value of type `ty` whose scalars are taken in order from `next`.
    pub fn build(ty: &Ty, next: &mut dyn FnMut(&Ty) -> Value<N>) -> Value<N> {
        match ty {
            Ty::Scalar(_) | Ty::Param(_) | Ty::Field { .. } => next(ty),
            Ty::Tuple(ts) => Value::Tuple(ts.iter().map(|t| Value::build(t, next)).collect()),
            Ty::Array(t, n) => Value::Array((0..*n).map(|_| Value::build(t, next)).collect()),
            Ty::Struct { fields, .. } => {
                Value::Struct(fields.iter().map(|(n, t)| (n.clone(), Value::build(t, next))).collect())
            }
        }
    }
}

/// Evaluates `e` with the two operands bound to `params` (`None`: no value).
pub fn eval<N: Num>(e: &Expr, params: &[Value<N>]) -> Option<Value<N>> {
    Interp { params, locals: Vec::new() }.expr(e)
}

struct Interp<'p, N> {
    params: &'p [Value<N>],
    locals: Vec<(String, Value<N>)>,
}

fn is_int(ty: &Ty) -> bool {
    matches!(ty, Ty::Scalar(s) if s.is_int())
}

impl<N: Num> Interp<'_, N> {
    fn num(&mut self, e: &Expr) -> Option<N> {
        match self.expr(e)? {
            Value::Num(n) => Some(n),
            Value::Bool(b) => Some(N::int(b as i128)),
            _ => None,
        }
    }

    fn expr(&mut self, e: &Expr) -> Option<Value<N>> {
        Some(match &e.kind {
            ExprKind::Param(i) => self.params.get(*i)?.clone(),
            ExprKind::Local(name) => self.locals.iter().rev().find(|(n, _)| n == name)?.1.clone(),
            ExprKind::Lit(l) => lit(l, &e.ty)?,
            ExprKind::Const { name, value } => match const_value(name, value, &e.ty).ok()? {
                ConstVal::NegInf => Value::Num(N::neg_inf()),
                ConstVal::PosInf => Value::Num(N::pos_inf()),
                ConstVal::Lit(l) => lit(&l, &e.ty)?,
            },
            ExprKind::Field(base, m) => match (self.expr(base)?, m) {
                (Value::Tuple(mut xs) | Value::Array(mut xs), Member::Index(i)) if *i < xs.len() => xs.swap_remove(*i),
                (Value::Struct(fs), Member::Named(n)) => fs.into_iter().find(|(f, _)| f == n)?.1,
                _ => return None,
            },
            ExprKind::Unary(UnOp::Neg, x) => Value::Num(self.num(x)?.neg()),
            ExprKind::Unary(UnOp::Not, x) => match self.expr(x)? {
                Value::Bool(b) => Value::Bool(!b),
                Value::Num(n) => Value::Num(N::int(!n.to_int()?)),
                _ => return None,
            },
            ExprKind::Binary(op, l, r) => self.binary(*op, l, r)?,
            ExprKind::Method(m, recv, args) => {
                let x = self.num(recv)?;
                let args: Vec<N> = args.iter().map(|a| self.num(a)).collect::<Option<_>>()?;
                Value::Num(match (m, &args[..]) {
                    (Method::Max, [y]) => x.max(*y)?,
                    (Method::Min, [y]) => x.min(*y)?,
                    (Method::MulAdd, [y, z]) => x.mul(*y)?.add(*z)?,
                    (m, []) => x.call(*m)?,
                    _ => return None,
                })
            }
            ExprKind::Cast(x, to) => {
                let v = self.num(x)?;
                let from_float = matches!(&x.ty, Ty::Scalar(s) if s.is_float());
                Value::Num(if to.is_int() && from_float { v.trunc()? } else { v })
            }
            ExprKind::If { cond, then, otherwise } => match self.expr(cond)? {
                Value::Bool(true) => self.expr(then)?,
                Value::Bool(false) => self.expr(otherwise)?,
                _ => return None,
            },
            ExprKind::Let { name, value, body, .. } => {
                let v = self.expr(value)?;
                self.locals.push((name.clone(), v));
                let out = self.expr(body);
                self.locals.pop();
                out?
            }
            ExprKind::Tuple(xs) => Value::Tuple(xs.iter().map(|x| self.expr(x)).collect::<Option<_>>()?),
            ExprKind::Array(xs) => Value::Array(xs.iter().map(|x| self.expr(x)).collect::<Option<_>>()?),
            ExprKind::Struct { fields, .. } => {
                // Fields by name, as in `normal::resolve_item`.
                let mut fs: Vec<(String, Value<N>)> =
                    fields.iter().map(|(n, x)| Some((n.clone(), self.expr(x)?))).collect::<Option<_>>()?;
                fs.sort_by(|a, b| a.0.cmp(&b.0));
                Value::Struct(fs)
            }
        })
    }

    fn binary(&mut self, op: BinOp, l: &Expr, r: &Expr) -> Option<Value<N>> {
        let (a, b) = (self.expr(l)?, self.expr(r)?);
        if let (Value::Bool(x), Value::Bool(y)) = (&a, &b) {
            let (x, y) = (*x, *y);
            return Some(Value::Bool(match op {
                BinOp::And | BinOp::BitAnd => x & y,
                BinOp::Or | BinOp::BitOr => x | y,
                BinOp::BitXor | BinOp::Ne => x ^ y,
                BinOp::Eq => x == y,
                BinOp::Lt => !x & y,
                BinOp::Le => x <= y,
                BinOp::Gt => x & !y,
                BinOp::Ge => x >= y,
                _ => return None,
            }));
        }
        let (Value::Num(x), Value::Num(y)) = (a, b) else { return None };
        let int = is_int(&l.ty);
        // The top of an unsigned type (`u32::MAX`, `+inf` for `max`/`min`) is all ones.
        let unsigned = matches!(l.ty, Ty::Scalar(Scalar::U32 | Scalar::U64));
        let word = |v: N| if unsigned && v == N::pos_inf() { Some(-1) } else { v.to_int() };
        let bits = |f: fn(i128, i128) -> i128| Some(Value::Num(N::int(f(word(x)?, word(y)?))));
        let cmp = |f: fn(Ordering) -> bool| Some(Value::Bool(f(x.cmp(y)?)));
        match op {
            BinOp::Add => Some(Value::Num(x.add(y)?)),
            BinOp::Sub => Some(Value::Num(x.sub(y)?)),
            BinOp::Mul => Some(Value::Num(x.mul(y)?)),
            BinOp::Div => Some(Value::Num(x.div(y, int)?)),
            BinOp::Rem => Some(Value::Num(x.rem(y)?)),
            BinOp::BitAnd => bits(|p, q| p & q),
            BinOp::BitOr => bits(|p, q| p | q),
            BinOp::BitXor => bits(|p, q| p ^ q),
            BinOp::Eq => cmp(|o| o == Ordering::Equal),
            BinOp::Ne => cmp(|o| o != Ordering::Equal),
            BinOp::Lt => cmp(|o| o == Ordering::Less),
            BinOp::Le => cmp(|o| o != Ordering::Greater),
            BinOp::Gt => cmp(|o| o == Ordering::Greater),
            BinOp::Ge => cmp(|o| o != Ordering::Less),
            BinOp::And | BinOp::Or => None,
        }
    }
}

fn lit<N: Num>(l: &Lit, ty: &Ty) -> Option<Value<N>> {
    Some(match (l, ty) {
        (Lit::Bool(b), _) => Value::Bool(*b),
        (Lit::Int(n), _) => Value::Num(N::int(*n)),
        (Lit::Float(x), _) => Value::Num(N::float(*x)?),
    })
}

/// A scalar of type `ty` from a rational candidate (booleans: nonzero is true).
pub fn scalar<N: Num>(ty: &Ty, r: Rat) -> Value<N> {
    match ty {
        Ty::Scalar(Scalar::Bool) => Value::Bool(!r.is_zero()),
        _ => Value::Num(N::float(r.to_f64()).unwrap_or_else(|| N::int(0))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(n: i128, d: i128) -> Ext {
        Ext::Fin(Rat::new(n, d).unwrap())
    }

    #[test]
    fn extended_rationals_follow_the_reals() {
        assert_eq!(q(1, 2).add(q(1, 3)), Some(q(5, 6)));
        assert_eq!(Ext::NegInf.add(q(7, 1)), Some(Ext::NegInf));
        assert_eq!(Ext::NegInf.add(Ext::PosInf), None);
        assert_eq!(Ext::NegInf.mul(q(-2, 1)), Some(Ext::PosInf));
        assert_eq!(Ext::NegInf.mul(q(0, 1)), None);
        assert_eq!(Num::max(Ext::NegInf, q(-5, 1)), Some(q(-5, 1)));
        assert_eq!(q(7, 1).div(q(2, 1), true), Some(q(3, 1)));
        assert_eq!(q(7, 1).div(q(2, 1), false), Some(q(7, 2)));
        assert_eq!(q(-7, 1).rem(q(2, 1)), Some(q(-1, 1)));
        assert_eq!(q(1, 1).div(q(0, 1), false), None);
        assert_eq!(q(2, 1).call(Method::Exp), None);
    }

    #[test]
    fn values_print_like_rust_literals() {
        let v: Value<Ext> =
            Value::Tuple(vec![Value::Num(q(1, 2)), Value::Array(vec![Value::Num(Ext::NegInf), Value::Bool(true)])]);
        assert_eq!(v.to_string(), "(0.5, [-inf, true])");
        assert_eq!(v.leaves().len(), 3);
    }
}
