//! `max`/`min` over polynomials, with `+` distributing over both (max-plus and
//! min-plus algebra) and `±inf`.
//!
//! A form is `max_i min_j p_ij` (every lattice expression has one: `min`
//! distributes over `max`). Over the reals, `max(x, y) + z = max(x + z, y + z)`,
//! `c * max(x, y) = max(c x, c y)` for `c > 0` and `-max(x, y) = min(-x, -y)`.
//! The empty `max` is `-inf` and a `max` holding an empty `min` is `+inf`, so
//! `max(-inf, a) = a` and `a + -inf = -inf` fall out of the representation.
//! Dominated pieces are dropped (`min(a, a + 1) = a`, `max(0, u) = u` for an
//! unsigned `u`) and the rest sorted. The form is canonical for the operators
//! a scan needs; where it is not, the checker's counterexample search decides.

use std::cmp::Ordering;

use super::poly::{term_nonneg, Atom, Poly};
use super::rational::{Overflow, Rat};

/// The cap on pieces, so that `-` of a large `max` cannot blow up compile time.
const MAX_PIECES: usize = 512;

/// Why a tropical operation has no normal form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LatError {
    Overflow,
    /// `inf - inf` or `0 * inf`: no real value.
    Undefined,
    TooLarge,
}

impl From<Overflow> for LatError {
    fn from(_: Overflow) -> Self {
        LatError::Overflow
    }
}

type LResult = Result<Lattice, LatError>;

/// `max` over `min`-terms of polynomials.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Lattice(pub Vec<Vec<Poly>>);

impl Lattice {
    pub fn plain(p: Poly) -> Lattice {
        Lattice(vec![vec![p]])
    }
    pub fn constant(c: Rat) -> Lattice {
        Lattice::plain(Poly::constant(c))
    }
    pub fn atom(a: Atom) -> Lattice {
        Lattice::plain(Poly::atom(a))
    }
    /// `max` over the `min`-terms, normalized.
    pub fn from_terms(terms: Vec<Vec<Poly>>) -> Lattice {
        Lattice(terms).simplified()
    }
    pub fn neg_inf() -> Lattice {
        Lattice(Vec::new())
    }
    pub fn pos_inf() -> Lattice {
        Lattice(vec![Vec::new()])
    }
    pub fn is_neg_inf(&self) -> bool {
        self.0.is_empty()
    }
    pub fn is_pos_inf(&self) -> bool {
        self.0.len() == 1 && self.0[0].is_empty()
    }
    pub fn is_inf(&self) -> bool {
        self.is_neg_inf() || self.is_pos_inf()
    }

    /// The polynomial, when the form has no `max`/`min`.
    pub fn as_plain(&self) -> Option<&Poly> {
        match &self.0[..] {
            [t] if t.len() == 1 => Some(&t[0]),
            _ => None,
        }
    }
    pub fn as_const(&self) -> Option<Rat> {
        self.as_plain().and_then(Poly::as_const)
    }

    pub fn add(&self, o: &Lattice) -> LResult {
        if (self.is_neg_inf() && o.is_pos_inf()) || (self.is_pos_inf() && o.is_neg_inf()) {
            return Err(LatError::Undefined);
        }
        let mut out = Vec::new();
        for a in &self.0 {
            for b in &o.0 {
                let mut term = Vec::with_capacity(a.len() * b.len());
                for p in a {
                    for q in b {
                        term.push(p.add(q)?);
                    }
                }
                out.push(term);
                if out.len() > MAX_PIECES {
                    return Err(LatError::TooLarge);
                }
            }
        }
        Ok(Lattice(out).simplified())
    }

    /// `-max_i min_j p_ij = min_i max_j -p_ij`, back in max-of-min form by
    /// picking one piece from every term.
    pub fn neg(&self) -> LResult {
        let mut choices: Vec<Vec<Poly>> = vec![Vec::new()];
        for term in &self.0 {
            let mut next = Vec::with_capacity(choices.len() * term.len());
            for c in &choices {
                for p in term {
                    let mut pick = c.clone();
                    pick.push(p.neg());
                    next.push(pick);
                }
            }
            if next.len() > MAX_PIECES {
                return Err(LatError::TooLarge);
            }
            choices = next;
        }
        Ok(Lattice(choices).simplified())
    }

    pub fn sub(&self, o: &Lattice) -> LResult {
        self.add(&o.neg()?)
    }

    pub fn maximum(&self, o: &Lattice) -> Lattice {
        Lattice(self.0.iter().chain(&o.0).cloned().collect()).simplified()
    }

    pub fn minimum(&self, o: &Lattice) -> LResult {
        let mut out = Vec::new();
        for a in &self.0 {
            for b in &o.0 {
                out.push(a.iter().chain(b).cloned().collect());
            }
            if out.len() > MAX_PIECES {
                return Err(LatError::TooLarge);
            }
        }
        Ok(Lattice(out).simplified())
    }

    /// `c * x`: distributes for `c > 0`, flips `max`/`min` for `c < 0`.
    pub fn scale(&self, c: Rat) -> LResult {
        if c.is_zero() {
            return if self.is_inf() { Err(LatError::Undefined) } else { Ok(Lattice::constant(Rat::ZERO)) };
        }
        let base = if c.signum() < 0 { self.neg()? } else { self.clone() };
        let k = if c.signum() < 0 { c.neg() } else { c };
        let mut out = Vec::with_capacity(base.0.len());
        for term in &base.0 {
            let mut t = Vec::with_capacity(term.len());
            for p in term {
                t.push(p.scale(k)?);
            }
            out.push(t);
        }
        Ok(Lattice(out).simplified())
    }

    /// `x * y`. `None` when neither factor is a constant and one has a
    /// `max`/`min` or an infinity: the product has no max-plus form, and the
    /// caller decides what to do with it.
    pub fn mul(&self, o: &Lattice) -> Option<LResult> {
        if let Some(c) = self.as_const() {
            return Some(o.scale(c));
        }
        if let Some(c) = o.as_const() {
            return Some(self.scale(c));
        }
        let (p, q) = (self.as_plain()?, o.as_plain()?);
        Some(p.mul(q).map(Lattice::plain).map_err(LatError::from))
    }

    /// `|x| = max(x, -x)`.
    pub fn abs(&self) -> LResult {
        Ok(self.maximum(&self.neg()?))
    }

    /// Sorts and removes duplicate and dominated pieces and terms.
    fn simplified(self) -> Lattice {
        let mut terms: Vec<Vec<Poly>> = Vec::with_capacity(self.0.len());
        for mut term in self.0 {
            term.sort();
            term.dedup();
            // In a min, a piece above another piece never wins.
            let keep: Vec<bool> =
                (0..term.len()).map(|i| !(0..term.len()).any(|j| j != i && leq(&term[j], &term[i]))).collect();
            let term: Vec<Poly> = term.into_iter().zip(keep).filter(|(_, k)| *k).map(|(p, _)| p).collect();
            terms.push(term);
        }
        terms.sort();
        terms.dedup();
        // In a max, a term below another term never wins. Of two terms that are
        // each below the other (equal up to dropped pieces), keep the first.
        let n = terms.len();
        let mut keep = vec![true; n];
        for i in 0..n {
            for j in 0..n {
                if i != j && keep[j] && term_leq(&terms[i], &terms[j]) && (!term_leq(&terms[j], &terms[i]) || j < i) {
                    keep[i] = false;
                    break;
                }
            }
        }
        Lattice(terms.into_iter().zip(keep).filter(|(_, k)| *k).map(|(t, _)| t).collect())
    }
}

/// `p <= q` everywhere, provably: every term of `q - p` is nonnegative.
/// Walks both in monomial order and stops at the first term that is not, so
/// the common case (unrelated pieces) costs one comparison, not a subtraction.
fn leq(p: &Poly, q: &Poly) -> bool {
    let (mut i, mut j) = (p.0.iter(), q.0.iter());
    let (mut x, mut y) = (i.next(), j.next());
    loop {
        let ok = match (x, y) {
            (None, None) => return true,
            (Some((mp, cp)), None) => {
                x = i.next();
                term_nonneg(mp, cp.neg())
            }
            (None, Some((mq, cq))) => {
                y = j.next();
                term_nonneg(mq, *cq)
            }
            (Some((mp, cp)), Some((mq, cq))) => match mp.cmp(mq) {
                Ordering::Less => {
                    x = i.next();
                    term_nonneg(mp, cp.neg())
                }
                Ordering::Greater => {
                    y = j.next();
                    term_nonneg(mq, *cq)
                }
                Ordering::Equal => {
                    (x, y) = (i.next(), j.next());
                    cq.add(cp.neg()).is_ok_and(|d| term_nonneg(mp, d))
                }
            },
        };
        if !ok {
            return false;
        }
    }
}

/// `min(a) <= min(b)`: every piece of `b` is above some piece of `a`.
fn term_leq(a: &[Poly], b: &[Poly]) -> bool {
    b.iter().all(|q| a.iter().any(|p| leq(p, q)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::poly::{Var, VarKind};

    fn v(id: u16) -> Lattice {
        Lattice::atom(Atom::Var(Var { id, kind: VarKind::Real }))
    }
    fn k(n: i128) -> Lattice {
        Lattice::constant(Rat::int(n))
    }

    #[test]
    fn max_and_min_are_associative_commutative_idempotent() {
        let (a, b, c) = (v(0), v(1), v(2));
        assert_eq!(a.maximum(&b).maximum(&c), a.maximum(&b.maximum(&c)));
        assert_eq!(a.maximum(&b), b.maximum(&a));
        assert_eq!(a.maximum(&a), a);
        assert_eq!(a.minimum(&b).unwrap().minimum(&c).unwrap(), a.minimum(&b.minimum(&c).unwrap()).unwrap());
        assert_eq!(a.minimum(&a).unwrap(), a);
    }

    #[test]
    fn plus_distributes_over_max_and_min() {
        let (a, b, c) = (v(0), v(1), v(2));
        assert_eq!(a.maximum(&b).add(&c).unwrap(), a.add(&c).unwrap().maximum(&b.add(&c).unwrap()));
        assert_eq!(a.minimum(&b).unwrap().add(&c).unwrap(), a.add(&c).unwrap().minimum(&b.add(&c).unwrap()).unwrap());
    }

    #[test]
    fn negation_swaps_max_and_min() {
        let (a, b) = (v(0), v(1));
        assert_eq!(a.maximum(&b).neg().unwrap(), a.neg().unwrap().minimum(&b.neg().unwrap()).unwrap());
        assert_eq!(a.maximum(&b).neg().unwrap().neg().unwrap(), a.maximum(&b));
        assert_eq!(
            a.maximum(&b).scale(Rat::int(-2)).unwrap(),
            a.scale(Rat::int(-2)).unwrap().minimum(&b.scale(Rat::int(-2)).unwrap()).unwrap()
        );
    }

    #[test]
    fn infinities_are_identities_and_absorbers() {
        let a = v(0);
        assert_eq!(a.maximum(&Lattice::neg_inf()), a);
        assert_eq!(a.minimum(&Lattice::pos_inf()).unwrap(), a);
        assert!(a.maximum(&Lattice::pos_inf()).is_pos_inf());
        assert!(a.minimum(&Lattice::neg_inf()).unwrap().is_neg_inf());
        assert!(a.add(&Lattice::neg_inf()).unwrap().is_neg_inf());
        assert!(Lattice::neg_inf().neg().unwrap().is_pos_inf());
        assert_eq!(Lattice::neg_inf().add(&Lattice::pos_inf()), Err(LatError::Undefined));
        assert_eq!(Lattice::neg_inf().scale(Rat::ZERO), Err(LatError::Undefined));
        assert!(Lattice::neg_inf().scale(Rat::int(-3)).unwrap().is_pos_inf());
    }

    #[test]
    fn dominated_pieces_are_dropped() {
        let a = v(0);
        assert_eq!(a.maximum(&a.add(&k(1)).unwrap()), a.add(&k(1)).unwrap());
        assert_eq!(a.minimum(&a.add(&k(1)).unwrap()).unwrap(), a);
        // absorption: max(a, min(a, b)) = a
        let b = v(1);
        assert_eq!(a.maximum(&a.minimum(&b).unwrap()), a);
        let u = Lattice::atom(Atom::Var(Var { id: 5, kind: VarKind::Unsigned }));
        assert_eq!(u.maximum(&k(0)), u);
        assert_ne!(a.maximum(&k(0)), a);
    }

    #[test]
    fn best_prefix_is_associative_with_identity_neg_inf_zero() {
        // combine(l, r) = (max(l0, l1 + r0), l1 + r1)
        let comb = |l: &(Lattice, Lattice), r: &(Lattice, Lattice)| {
            (l.0.maximum(&l.1.add(&r.0).unwrap()), l.1.add(&r.1).unwrap())
        };
        let (a, b, c) = ((v(0), v(1)), (v(2), v(3)), (v(4), v(5)));
        assert_eq!(comb(&comb(&a, &b), &c), comb(&a, &comb(&b, &c)));
        let e = (Lattice::neg_inf(), k(0));
        assert_eq!(comb(&e, &a), a);
        assert_eq!(comb(&a, &e), a);
    }

    #[test]
    fn max_plus_one_is_not_associative() {
        let comb = |l: &Lattice, r: &Lattice| l.max(r).add(&k(1)).unwrap();
        let (a, b, c) = (v(0), v(1), v(2));
        assert_ne!(comb(&comb(&a, &b), &c), comb(&a, &comb(&b, &c)));
    }

    #[test]
    fn products_without_a_constant_factor_have_no_form() {
        let (a, b) = (v(0), v(1));
        assert!(a.maximum(&b).mul(&a).is_none());
        assert_eq!(a.mul(&b).unwrap().unwrap().as_plain().map(|p| p.0.len()), Some(1));
        assert!(a.maximum(&b).mul(&k(2)).unwrap().is_ok());
    }
}
