//! Exact rationals over `i128`, with overflow reported instead of wrapped.
//!
//! Coefficients of the checker's normal forms and the values of its exact
//! counterexample search. Operator bodies have few, small constants, so `i128`
//! is plenty; an overflow makes the checker fall back to sampling rather
//! than give a wrong answer.

use std::cmp::Ordering;
use std::fmt;

/// `num / den` in lowest terms with `den > 0`.
///
/// The derived order is structural (by numerator, then denominator): normal
/// forms only need *a* total order to sort by; [`Rat::cmp_value`] compares values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rat {
    num: i128,
    den: i128,
}

/// An exact result did not fit `i128`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overflow;

pub type RatResult = Result<Rat, Overflow>;

fn gcd(mut a: i128, mut b: i128) -> i128 {
    a = a.abs();
    b = b.abs();
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Rat {
    pub const ZERO: Rat = Rat { num: 0, den: 1 };
    pub const ONE: Rat = Rat { num: 1, den: 1 };

    pub fn int(n: i128) -> Rat {
        Rat { num: n, den: 1 }
    }

    /// `num / den` reduced; `den` must be nonzero.
    pub fn new(num: i128, den: i128) -> RatResult {
        if den == 0 || num == i128::MIN || den == i128::MIN {
            return Err(Overflow);
        }
        let g = gcd(num, den).max(1);
        let s = if den < 0 { -1 } else { 1 };
        Ok(Rat { num: s * num / g, den: s * den / g })
    }

    /// The exact value of a finite `f64` (a dyadic rational), if it fits.
    pub fn from_f64(x: f64) -> RatResult {
        if !x.is_finite() {
            return Err(Overflow);
        }
        let mut den: i128 = 1;
        let mut v = x;
        // Scale by two until integral: exact in binary floating point.
        while v.fract() != 0.0 {
            v *= 2.0;
            den = den.checked_mul(2).ok_or(Overflow)?;
        }
        if v.abs() >= 1e37 {
            return Err(Overflow);
        }
        Rat::new(v as i128, den)
    }

    pub fn num(self) -> i128 {
        self.num
    }
    pub fn den(self) -> i128 {
        self.den
    }
    pub fn is_zero(self) -> bool {
        self.num == 0
    }
    pub fn is_integer(self) -> bool {
        self.den == 1
    }
    pub fn signum(self) -> i128 {
        self.num.signum()
    }

    pub fn add(self, o: Rat) -> RatResult {
        let g = gcd(self.den, o.den);
        let l = self.den / g;
        let num = self.num.checked_mul(o.den / g).ok_or(Overflow)?;
        let num = num.checked_add(o.num.checked_mul(l).ok_or(Overflow)?).ok_or(Overflow)?;
        Rat::new(num, l.checked_mul(o.den).ok_or(Overflow)?)
    }
    pub fn neg(self) -> Rat {
        // `new` rejects i128::MIN, so negation cannot overflow.
        Rat { num: -self.num, den: self.den }
    }
    pub fn mul(self, o: Rat) -> RatResult {
        let g1 = gcd(self.num, o.den).max(1);
        let g2 = gcd(o.num, self.den).max(1);
        let num = (self.num / g1).checked_mul(o.num / g2).ok_or(Overflow)?;
        let den = (self.den / g2).checked_mul(o.den / g1).ok_or(Overflow)?;
        Rat::new(num, den)
    }
    /// `None` when dividing by zero.
    pub fn div(self, o: Rat) -> Option<RatResult> {
        if o.is_zero() {
            return None;
        }
        Some(self.mul(Rat { num: o.den, den: o.num }.normalized()))
    }
    fn normalized(self) -> Rat {
        if self.den < 0 {
            Rat { num: -self.num, den: -self.den }
        } else {
            self
        }
    }
    /// Rounds toward zero, as integer division and float-to-int casts do.
    pub fn trunc(self) -> Rat {
        Rat::int(self.num / self.den)
    }

    /// Compares values (the derived `Ord` is structural).
    pub fn cmp_value(self, o: Rat) -> Ordering {
        match (self.num.checked_mul(o.den), o.num.checked_mul(self.den)) {
            (Some(a), Some(b)) => a.cmp(&b),
            // Only reached for huge values: the f64 approximation orders them.
            _ => self.to_f64().total_cmp(&o.to_f64()),
        }
    }

    pub fn to_f64(self) -> f64 {
        self.num as f64 / self.den as f64
    }
}

impl fmt::Display for Rat {
    /// Integers as integers, terminating fractions as decimals (`0.25`), others
    /// as `num/den`, so counterexamples read like the literals a user writes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.den == 1 {
            return write!(f, "{}", self.num);
        }
        let mut d = self.den;
        while d % 2 == 0 {
            d /= 2;
        }
        while d % 5 == 0 {
            d /= 5;
        }
        if d == 1 && self.den <= 1_000_000 {
            write!(f, "{}", self.to_f64())
        } else {
            write!(f, "{}/{}", self.num, self.den)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(n: i128, d: i128) -> Rat {
        Rat::new(n, d).unwrap()
    }

    #[test]
    fn reduces_to_lowest_terms_with_positive_denominator() {
        assert_eq!(r(2, -4), r(-1, 2));
        assert_eq!(r(-2, -4).num(), 1);
        assert_eq!(r(-2, -4).den(), 2);
        assert_eq!(r(0, -7), Rat::ZERO);
    }

    #[test]
    fn arithmetic_is_exact() {
        assert_eq!(r(1, 3).add(r(1, 6)).unwrap(), r(1, 2));
        assert_eq!(r(1, 3).add(r(1, 2).neg()).unwrap(), r(-1, 6));
        assert_eq!(r(2, 3).mul(r(9, 4)).unwrap(), r(3, 2));
        assert_eq!(r(2, 3).div(r(-4, 9)).unwrap().unwrap(), r(-3, 2));
        assert!(r(1, 2).div(Rat::ZERO).is_none());
        assert_eq!(r(-7, 2).trunc(), Rat::int(-3));
    }

    #[test]
    fn overflow_is_reported_not_wrapped() {
        let big = Rat::int(i128::MAX / 2 + 1);
        assert_eq!(big.add(big), Err(Overflow));
        assert_eq!(big.mul(Rat::int(3)), Err(Overflow));
    }

    #[test]
    fn floats_convert_exactly() {
        assert_eq!(Rat::from_f64(0.375).unwrap(), r(3, 8));
        assert_eq!(Rat::from_f64(-2.0).unwrap(), Rat::int(-2));
        assert!(Rat::from_f64(f64::INFINITY).is_err());
        assert!(Rat::from_f64(f32::MAX as f64).is_err());
    }

    #[test]
    fn value_order_differs_from_structural_order() {
        assert_eq!(r(1, 2).cmp_value(r(1, 3)), Ordering::Greater);
        assert_eq!(r(-1, 2).cmp_value(r(1, 3)), Ordering::Less);
    }

    #[test]
    fn display_reads_like_literals() {
        assert_eq!(r(-3, 1).to_string(), "-3");
        assert_eq!(r(1, 4).to_string(), "0.25");
        assert_eq!(r(-1, 3).to_string(), "-1/3");
    }
}
