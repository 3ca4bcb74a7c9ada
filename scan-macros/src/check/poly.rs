//! Polynomials with exact rational coefficients over atoms: the normal form of
//! `+ - *` (and of wrapping integer arithmetic, which is a ring too).
//!
//! An atom is an input variable (`a.0`), or a sub-form this module cannot look
//! into (a bitwise form, a `max`/`min` that `*` cannot distribute over, a
//! comparison). Atoms are themselves in normal form, so equal polynomials
//! denote equal functions: comparing them syntactically is sound, even where
//! treating a sub-form as opaque loses completeness.

use std::collections::BTreeMap;

use super::bits::BitForm;
use super::rational::{Overflow, Rat};
use super::tropical::Lattice;

/// What is known about an input variable's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum VarKind {
    Bool,
    Signed,
    Unsigned,
    /// A float, or a scalar the macro cannot see (a type parameter).
    Real,
}

/// An input variable: one scalar component of one operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Var {
    pub id: u16,
    pub kind: VarKind,
}

/// A comparison `d < 0`, `d <= 0` or `d != 0` of a real difference `d`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CmpOp {
    Lt,
    Le,
    Ne,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Atom {
    Var(Var),
    /// A polynomial that is not a single atom, used as an operand of a bitwise op.
    Poly(Box<Poly>),
    /// A bitwise form that is not a single atom, used in arithmetic.
    Bits(Box<BitForm>),
    /// A `max`/`min` form used where `*` cannot distribute over it.
    Lat(Box<Lattice>),
    /// Boolean: the integer form is not zero.
    NonZero(Box<BitForm>),
    /// Boolean: a comparison of a real difference with zero.
    Cmp(CmpOp, Box<Lattice>),
}

/// A product of atoms with exponents, sorted by atom.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Mono(pub Vec<(Atom, u32)>);

impl Mono {
    fn mul(&self, o: &Mono) -> Mono {
        let mut out: Vec<(Atom, u32)> = Vec::with_capacity(self.0.len() + o.0.len());
        let (mut i, mut j) = (0, 0);
        while i < self.0.len() || j < o.0.len() {
            let take_left = j == o.0.len() || (i < self.0.len() && self.0[i].0 <= o.0[j].0);
            let (atom, exp) = if take_left {
                i += 1;
                self.0[i - 1].clone()
            } else {
                j += 1;
                o.0[j - 1].clone()
            };
            match out.last_mut() {
                Some(last) if last.0 == atom => last.1 += exp,
                _ => out.push((atom, exp)),
            }
        }
        Mono(out)
    }
}

/// A sum of monomials with nonzero rational coefficients.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Poly(pub BTreeMap<Mono, Rat>);

impl Poly {
    pub fn constant(c: Rat) -> Poly {
        let mut p = Poly::default();
        if !c.is_zero() {
            p.0.insert(Mono::default(), c);
        }
        p
    }

    pub fn atom(a: Atom) -> Poly {
        let mut p = Poly::default();
        p.0.insert(Mono(vec![(a, 1)]), Rat::ONE);
        p
    }

    /// The value, when the polynomial is a constant.
    pub fn as_const(&self) -> Option<Rat> {
        match self.0.len() {
            0 => Some(Rat::ZERO),
            1 => self.0.get(&Mono::default()).copied(),
            _ => None,
        }
    }

    /// The atom, when the polynomial is exactly one atom.
    pub fn as_atom(&self) -> Option<&Atom> {
        let (mono, c) = self.0.iter().next()?;
        match (self.0.len(), &mono.0[..]) {
            (1, [(atom, 1)]) if *c == Rat::ONE => Some(atom),
            _ => None,
        }
    }

    pub fn add(&self, o: &Poly) -> Result<Poly, Overflow> {
        let mut out = self.0.clone();
        for (m, c) in &o.0 {
            let sum = match out.get(m) {
                Some(old) => old.add(*c)?,
                None => *c,
            };
            if sum.is_zero() {
                out.remove(m);
            } else {
                out.insert(m.clone(), sum);
            }
        }
        Ok(Poly(out))
    }

    pub fn neg(&self) -> Poly {
        Poly(self.0.iter().map(|(m, c)| (m.clone(), c.neg())).collect())
    }

    #[cfg(test)]
    pub fn sub(&self, o: &Poly) -> Result<Poly, Overflow> {
        self.add(&o.neg())
    }

    pub fn scale(&self, k: Rat) -> Result<Poly, Overflow> {
        if k.is_zero() {
            return Ok(Poly::default());
        }
        let mut out = BTreeMap::new();
        for (m, c) in &self.0 {
            out.insert(m.clone(), c.mul(k)?);
        }
        Ok(Poly(out))
    }

    pub fn mul(&self, o: &Poly) -> Result<Poly, Overflow> {
        let mut acc = Poly::default();
        for (m1, c1) in &self.0 {
            for (m2, c2) in &o.0 {
                let mut term = Poly::default();
                let c = c1.mul(*c2)?;
                if !c.is_zero() {
                    term.0.insert(m1.mul(m2), c);
                }
                acc = acc.add(&term)?;
            }
        }
        Ok(acc)
    }

    /// True when the polynomial is `>= 0` for every input: a nonnegative
    /// constant plus positive multiples of monomials that cannot be negative
    /// (even powers, unsigned variables). Sufficient, not necessary.
    pub fn provably_nonneg(&self) -> bool {
        self.0.iter().all(|(m, c)| term_nonneg(m, *c))
    }
}

/// `c·m >= 0` for every input: a nonnegative constant, or a positive multiple
/// of a monomial that cannot be negative.
pub fn term_nonneg(m: &Mono, c: Rat) -> bool {
    if m.0.is_empty() || c.is_zero() {
        return c.signum() >= 0;
    }
    c.signum() > 0
        && m.0
            .iter()
            .all(|(a, e)| e % 2 == 0 || matches!(a, Atom::Var(Var { kind: VarKind::Unsigned | VarKind::Bool, .. })))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(id: u16) -> Poly {
        Poly::atom(Atom::Var(Var { id, kind: VarKind::Real }))
    }
    fn k(n: i128) -> Poly {
        Poly::constant(Rat::int(n))
    }

    #[test]
    fn like_terms_collect_and_cancel() {
        let (a, b) = (v(0), v(1));
        let s = a.add(&b).unwrap().sub(&a).unwrap();
        assert_eq!(s, b);
        assert_eq!(a.sub(&a).unwrap(), Poly::default());
        assert_eq!(s.as_atom(), b.as_atom());
    }

    #[test]
    fn multiplication_distributes_and_commutes() {
        let (a, b, c) = (v(0), v(1), v(2));
        let left = a.add(&b).unwrap().mul(&c).unwrap();
        let right = c.mul(&a).unwrap().add(&b.mul(&c).unwrap()).unwrap();
        assert_eq!(left, right);
        // (a + 1)(a - 1) = a^2 - 1
        let sq = a.add(&k(1)).unwrap().mul(&a.sub(&k(1)).unwrap()).unwrap();
        assert_eq!(sq, a.mul(&a).unwrap().sub(&k(1)).unwrap());
        assert_eq!(sq.0.keys().map(|m| m.0.iter().map(|(_, e)| e).sum::<u32>()).max(), Some(2));
    }

    #[test]
    fn the_linear_recurrence_is_associative_as_polynomials() {
        // combine(l, r) = (l0 * r0, r0 * l1 + r1)
        let comb =
            |l: &(Poly, Poly), r: &(Poly, Poly)| (l.0.mul(&r.0).unwrap(), r.0.mul(&l.1).unwrap().add(&r.1).unwrap());
        let (a, b, c) = ((v(0), v(1)), (v(2), v(3)), (v(4), v(5)));
        assert_eq!(comb(&comb(&a, &b), &c), comb(&a, &comb(&b, &c)));
    }

    #[test]
    fn subtraction_is_not() {
        let (a, b, c) = (v(0), v(1), v(2));
        let left = a.sub(&b).unwrap().sub(&c).unwrap();
        let right = a.sub(&b.sub(&c).unwrap()).unwrap();
        assert_ne!(left, right);
    }

    #[test]
    fn constants_and_nonnegativity() {
        assert_eq!(k(3).as_const(), Some(Rat::int(3)));
        assert_eq!(Poly::default().as_const(), Some(Rat::ZERO));
        assert_eq!(v(0).as_const(), None);
        let u = Poly::atom(Atom::Var(Var { id: 9, kind: VarKind::Unsigned }));
        assert!(u.add(&k(2)).unwrap().provably_nonneg());
        assert!(!v(0).provably_nonneg());
        assert!(v(0).mul(&v(0)).unwrap().provably_nonneg());
        assert!(!u.sub(&k(1)).unwrap().provably_nonneg());
    }
}
