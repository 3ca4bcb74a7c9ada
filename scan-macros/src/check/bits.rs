//! The normal form of `& | ^ !` on integers and booleans: the algebraic
//! normal form of a Boolean ring, bit by bit.
//!
//! Per bit, `x & y` is multiplication and `x ^ y` addition modulo 2, and
//! `x | y = x ^ y ^ (x & y)`, `!x = x ^ 1`: every expression is a unique XOR of
//! ANDs of atoms. A monomial carries a constant mask (the bits it lives in),
//! so integer constants like `0xff` fit: `mask & a & b`. Two forms are equal
//! as functions exactly when they are equal here (for atoms taken as opaque).

use std::collections::BTreeMap;

use super::poly::Atom;

/// XOR over monomials `mask & atom1 & atom2 & ...`; atoms sorted and distinct,
/// masks nonzero. The empty monomial is the constant term.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BitForm(pub BTreeMap<Vec<Atom>, i128>);

impl BitForm {
    pub fn constant(k: i128) -> BitForm {
        let mut f = BitForm::default();
        if k != 0 {
            f.0.insert(Vec::new(), k);
        }
        f
    }

    #[cfg(test)]
    pub fn atom(a: Atom) -> BitForm {
        let mut f = BitForm::default();
        f.0.insert(vec![a], -1);
        f
    }

    pub fn as_const(&self) -> Option<i128> {
        match self.0.len() {
            0 => Some(0),
            1 => self.0.get(&Vec::new()).copied(),
            _ => None,
        }
    }

    fn toggle(&mut self, atoms: Vec<Atom>, mask: i128) {
        let m = self.0.get(&atoms).copied().unwrap_or(0) ^ mask;
        if m == 0 {
            self.0.remove(&atoms);
        } else {
            self.0.insert(atoms, m);
        }
    }

    pub fn xor(&self, o: &BitForm) -> BitForm {
        let mut out = self.clone();
        for (atoms, mask) in &o.0 {
            out.toggle(atoms.clone(), *mask);
        }
        out
    }

    pub fn and(&self, o: &BitForm) -> BitForm {
        let mut out = BitForm::default();
        for (a1, m1) in &self.0 {
            for (a2, m2) in &o.0 {
                let mask = m1 & m2;
                if mask == 0 {
                    continue;
                }
                // x & x = x: the union of the atom sets, not a multiset.
                let mut atoms: Vec<Atom> = a1.iter().chain(a2).cloned().collect();
                atoms.sort();
                atoms.dedup();
                out.toggle(atoms, mask);
            }
        }
        out
    }

    pub fn or(&self, o: &BitForm) -> BitForm {
        self.xor(o).xor(&self.and(o))
    }

    /// `!x`: `ones` is `-1` for integers (all bits) and `1` for booleans.
    pub fn not(&self, ones: i128) -> BitForm {
        self.xor(&BitForm::constant(ones))
    }

    /// The atoms the form mentions, each once.
    pub fn atoms(&self) -> Vec<&Atom> {
        let mut out: Vec<&Atom> = self.0.keys().flatten().collect();
        out.sort();
        out.dedup();
        out
    }

    /// The value of bit 0 when every atom's bit 0 is given by `truth`.
    pub fn eval_bit(&self, truth: &dyn Fn(&Atom) -> bool) -> bool {
        self.0.iter().fold(false, |acc, (atoms, mask)| acc ^ (mask & 1 == 1 && atoms.iter().all(truth)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::poly::{Var, VarKind};

    fn v(id: u16) -> BitForm {
        BitForm::atom(Atom::Var(Var { id, kind: VarKind::Unsigned }))
    }

    #[test]
    fn and_or_xor_are_associative_and_commutative() {
        let (a, b, c) = (v(0), v(1), v(2));
        assert_eq!(a.and(&b).and(&c), a.and(&b.and(&c)));
        assert_eq!(a.or(&b).or(&c), a.or(&b.or(&c)));
        assert_eq!(a.xor(&b).xor(&c), a.xor(&b.xor(&c)));
        assert_eq!(a.or(&b), b.or(&a));
    }

    #[test]
    fn boolean_ring_laws_hold() {
        let (a, b) = (v(0), v(1));
        assert_eq!(a.xor(&a), BitForm::default());
        assert_eq!(a.and(&a), a);
        assert_eq!(a.or(&a), a);
        assert_eq!(a.not(-1).not(-1), a);
        // De Morgan: !(a | b) = !a & !b
        assert_eq!(a.or(&b).not(-1), a.not(-1).and(&b.not(-1)));
        // Absorption: a | (a & b) = a
        assert_eq!(a.or(&a.and(&b)), a);
    }

    #[test]
    fn identities_and_constants() {
        let a = v(0);
        assert_eq!(a.or(&BitForm::constant(0)), a);
        assert_eq!(a.and(&BitForm::constant(-1)), a);
        assert_eq!(a.xor(&BitForm::constant(0)), a);
        assert_ne!(a.and(&BitForm::constant(0xff)), a);
        assert_eq!(BitForm::constant(6).and(&BitForm::constant(3)).as_const(), Some(2));
        assert_eq!(BitForm::constant(6).or(&BitForm::constant(3)).as_const(), Some(7));
    }

    #[test]
    fn or_is_not_xor() {
        let (a, b, c) = (v(0), v(1), v(2));
        assert_ne!(a.or(&b), a.xor(&b));
        // (a | b) ^ c is not a | (b ^ c)
        assert_ne!(a.or(&b).xor(&c), a.or(&b.xor(&c)));
    }

    #[test]
    fn bit_zero_evaluates() {
        let (a, b) = (v(0), v(1));
        let f = a.or(&b);
        let truth = |t: [bool; 2]| move |x: &Atom| matches!(x, Atom::Var(Var { id, .. }) if t[*id as usize]);
        assert!(!f.eval_bit(&truth([false, false])));
        assert!(f.eval_bit(&truth([true, false])));
        assert!(f.eval_bit(&truth([true, true])));
    }
}
