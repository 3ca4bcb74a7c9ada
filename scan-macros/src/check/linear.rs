//! Linear arithmetic for branch conditions: whether comparisons like
//! `l.1 > r.1` can hold together (Fourier–Motzkin elimination, exact over the
//! rationals), and substitution of the equalities a path implies.
//!
//! Both are used only to discard impossible paths and to compare forms on a
//! path, so giving up (a condition that is not linear, too many constraints)
//! is always safe: it can make a proof fail, never succeed wrongly.

use std::collections::BTreeMap;

use super::poly::{Atom, CmpOp, Mono, Poly, Var, VarKind};
use super::rational::Rat;
use super::tropical::Lattice;

/// `sum coeffs·atom + konst > 0` (strict) or `>= 0`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Ineq {
    coeffs: BTreeMap<Atom, Rat>,
    konst: Rat,
    strict: bool,
}

/// A polynomial of degree at most one: its coefficients and constant.
fn linear(p: &Poly) -> Option<(BTreeMap<Atom, Rat>, Rat)> {
    let mut coeffs = BTreeMap::new();
    let mut konst = Rat::ZERO;
    for (m, c) in &p.0 {
        match &m.0[..] {
            [] => konst = *c,
            [(a, 1)] => {
                coeffs.insert(a.clone(), *c);
            }
            _ => return None,
        }
    }
    Some((coeffs, konst))
}

fn ineq(p: &Poly, sign: i128, strict: bool) -> Option<Ineq> {
    let (coeffs, konst) = linear(p)?;
    let s = Rat::int(sign);
    let coeffs = coeffs.into_iter().map(|(a, c)| Some((a, c.mul(s).ok()?))).collect::<Option<_>>()?;
    Some(Ineq { coeffs, konst: konst.mul(s).ok()?, strict })
}

/// The cap on constraints during elimination.
const MAX_CONSTRAINTS: usize = 400;

/// Alternatives (a disjunction) of conjunctions of linear constraints.
type Dnf = Vec<Vec<Ineq>>;

/// The cap on alternatives, to bound compile time; past it, "feasible".
const MAX_ALTERNATIVES: usize = 256;

/// A constraint on one piece; a non-linear piece is no constraint (dropping
/// constraints only makes a path look feasible, which is safe).
fn piece(p: &Poly, sign: i128, strict: bool) -> Vec<Ineq> {
    ineq(p, sign, strict).into_iter().collect()
}

/// `d < 0` (strict) or `d <= 0`, for `d = max_i min_j p_ij`: every `i` has a
/// `j` with `p_ij < 0`: one alternative per choice of `j`s.
fn below(d: &Lattice, strict: bool) -> Option<Dnf> {
    let mut alts: Dnf = vec![Vec::new()];
    for term in &d.0 {
        let mut next = Vec::new();
        for alt in &alts {
            for p in term {
                let mut a = alt.clone();
                a.extend(piece(p, -1, strict));
                next.push(a);
            }
        }
        if next.len() > MAX_ALTERNATIVES {
            return None;
        }
        alts = next;
    }
    Some(alts)
}

/// `d > 0` (strict) or `d >= 0`: some `i` has every `p_ij > 0`.
fn above(d: &Lattice, strict: bool) -> Dnf {
    d.0.iter().map(|term| term.iter().flat_map(|p| piece(p, 1, strict)).collect()).collect()
}

fn and(a: Dnf, b: Dnf) -> Option<Dnf> {
    if a.len() * b.len() > MAX_ALTERNATIVES {
        return None;
    }
    Some(a.iter().flat_map(|x| b.iter().map(move |y| x.iter().chain(y).cloned().collect())).collect())
}

/// The literal as alternatives of linear constraints.
fn literal(op: CmpOp, d: &Lattice, holds: bool) -> Option<Dnf> {
    match (op, holds) {
        (CmpOp::Lt, true) => below(d, true),
        (CmpOp::Lt, false) => Some(above(d, false)),
        (CmpOp::Le, true) => below(d, false),
        (CmpOp::Le, false) => Some(above(d, true)),
        (CmpOp::Ne, false) => and(below(d, false)?, above(d, false)),
        (CmpOp::Ne, true) => {
            let mut alts = below(d, true)?;
            alts.extend(above(d, true));
            Some(alts)
        }
    }
}

/// Whether comparisons `(op, d, holds)` (`d < 0`, `d <= 0`, `d != 0`, or their
/// negations when `holds` is false) can all hold at once over the reals, with
/// unsigned variables nonnegative. `d` may hold `max`/`min` of linear pieces;
/// non-linear pieces are ignored.
pub fn feasible(lits: &[(CmpOp, &Lattice, bool)]) -> bool {
    let mut alts: Dnf = vec![Vec::new()];
    for (op, d, holds) in lits {
        let Some(next) = literal(*op, d, *holds).and_then(|l| and(alts.clone(), l)) else { return true };
        alts = next;
    }
    alts.into_iter().any(|mut cs| {
        // Unsigned variables are nonnegative.
        let mut unsigned: Vec<Atom> = Vec::new();
        for c in &cs {
            for a in c.coeffs.keys() {
                if matches!(a, Atom::Var(Var { kind: VarKind::Unsigned | VarKind::Bool, .. })) && !unsigned.contains(a)
                {
                    unsigned.push(a.clone());
                }
            }
        }
        for a in unsigned {
            cs.push(Ineq { coeffs: BTreeMap::from([(a, Rat::ONE)]), konst: Rat::ZERO, strict: false });
        }
        eliminate(cs)
    })
}

/// Fourier–Motzkin: eliminates one variable at a time; infeasible exactly when
/// a constant constraint `k > 0` / `k >= 0` fails.
fn eliminate(mut cs: Vec<Ineq>) -> bool {
    loop {
        for c in &cs {
            if c.coeffs.is_empty() {
                let s = c.konst.signum();
                if s < 0 || (s == 0 && c.strict) {
                    return false;
                }
            }
        }
        cs.retain(|c| !c.coeffs.is_empty());
        // Scaled so that the first coefficient is ±1, equal constraints are
        // equal values: drop the duplicates elimination keeps producing.
        let Some(mut scaled) = cs.iter().map(normalized).collect::<Option<Vec<_>>>() else { return true };
        scaled.sort();
        scaled.dedup();
        cs = scaled;
        // Eliminate the variable that creates the fewest new constraints.
        let mut best: Option<(usize, &Atom)> = None;
        for c in &cs {
            for a in c.coeffs.keys() {
                let (p, n) = cs.iter().fold((0, 0), |(p, n), d| match d.coeffs.get(a).map(|k| k.signum()) {
                    Some(1) => (p + 1, n),
                    Some(_) => (p, n + 1),
                    None => (p, n),
                });
                if best.map_or(true, |(cost, _)| p * n < cost) {
                    best = Some((p * n, a));
                }
            }
        }
        let Some(x) = best.map(|(_, a)| a.clone()) else { return true };
        let (mut pos, mut neg, mut rest) = (Vec::new(), Vec::new(), Vec::new());
        for c in cs {
            match c.coeffs.get(&x).map(|k| k.signum()) {
                Some(1) => pos.push(c),
                Some(_) => neg.push(c),
                None => rest.push(c),
            }
        }
        for p in &pos {
            for n in &neg {
                // p·|n_x| + n·p_x cancels x; strict if either is.
                let (px, nx) = (p.coeffs[&x], n.coeffs[&x].neg());
                let Some(c) = combine(p, nx, n, px) else { return true };
                rest.push(Ineq { strict: p.strict || n.strict, ..c });
            }
        }
        if rest.len() > MAX_CONSTRAINTS {
            return true;
        }
        cs = rest;
    }
}

/// The constraint divided by the magnitude of its first coefficient.
fn normalized(c: &Ineq) -> Option<Ineq> {
    let k = c.coeffs.values().next()?;
    let inv = Rat::ONE.div(if k.signum() < 0 { k.neg() } else { *k })?.ok()?;
    let coeffs = c.coeffs.iter().map(|(a, v)| Some((a.clone(), v.mul(inv).ok()?))).collect::<Option<_>>()?;
    Some(Ineq { coeffs, konst: c.konst.mul(inv).ok()?, strict: c.strict })
}

fn combine(p: &Ineq, kp: Rat, n: &Ineq, kn: Rat) -> Option<Ineq> {
    let mut coeffs: BTreeMap<Atom, Rat> = BTreeMap::new();
    for (src, k) in [(p, kp), (n, kn)] {
        for (a, c) in &src.coeffs {
            let v = c.mul(k).ok()?;
            let sum = match coeffs.get(a) {
                Some(old) => old.add(v).ok()?,
                None => v,
            };
            if sum.is_zero() {
                coeffs.remove(a);
            } else {
                coeffs.insert(a.clone(), sum);
            }
        }
    }
    let konst = p.konst.mul(kp).ok()?.add(n.konst.mul(kn).ok()?).ok()?;
    Some(Ineq { coeffs, konst, strict: false })
}

/// The equalities `x = q` implied by `d == 0` literals with linear `d`, each
/// solved for its last variable.
pub fn equalities(lits: &[(CmpOp, &Lattice, bool)]) -> Vec<(Atom, Poly)> {
    // `d == 0` literals, and pairs `p >= 0`, `-p >= 0` of non-strict ones.
    let mut zero: Vec<Poly> = Vec::new();
    let mut nonneg: Vec<Poly> = Vec::new();
    for (op, d, holds) in lits {
        let Some(p) = d.as_plain() else { continue };
        match (op, holds) {
            (CmpOp::Ne, false) => zero.push(p.clone()),
            (CmpOp::Lt, false) => nonneg.push(p.clone()),
            (CmpOp::Le, true) => nonneg.push(p.neg()),
            _ => {}
        }
    }
    for p in &nonneg {
        // `p >= 0` with `-p >= 0` from another literal, or always (`-u >= 0`
        // for an unsigned `u` makes `u = 0`).
        let opposite = p.neg();
        if (nonneg.contains(&opposite) || opposite.provably_nonneg()) && !zero.contains(&opposite) {
            zero.push(p.clone());
        }
    }
    let mut out = Vec::new();
    for p in &zero {
        let Some((coeffs, _)) = linear(p) else { continue };
        let Some((x, c)) = coeffs.iter().next_back() else { continue };
        // p = c·x + rest = 0  =>  x = -rest / c
        let mut rest = p.clone();
        rest.0.remove(&Mono(vec![(x.clone(), 1)]));
        let Some(Ok(inv)) = Rat::ONE.div(*c) else { continue };
        if let Ok(q) = rest.scale(inv.neg()) {
            out.push((x.clone(), q));
        }
    }
    out
}

/// `p` with `x` replaced by `q` (in its own monomials; nested atoms untouched).
pub fn substitute(p: &Poly, x: &Atom, q: &Poly) -> Option<Poly> {
    let mut out = Poly::default();
    for (m, c) in &p.0 {
        let mut term = Poly::constant(*c);
        for (a, e) in &m.0 {
            let factor = if a == x { q.clone() } else { Poly::atom(a.clone()) };
            for _ in 0..*e {
                term = term.mul(&factor).ok()?;
            }
        }
        out = out.add(&term).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(id: u16, kind: VarKind) -> Lattice {
        Lattice::atom(Atom::Var(Var { id, kind }))
    }

    #[test]
    fn chains_of_strict_inequalities_are_detected() {
        let (a, b, c) = (v(0, VarKind::Real), v(1, VarKind::Real), v(2, VarKind::Real));
        let ab = a.sub(&b).unwrap();
        let bc = b.sub(&c).unwrap();
        let ca = c.sub(&a).unwrap();
        // a < b, b < c, c < a: impossible.
        assert!(!feasible(&[(CmpOp::Lt, &ab, true), (CmpOp::Lt, &bc, true), (CmpOp::Lt, &ca, true)]));
        // a < b, b < c, c >= a: possible.
        assert!(feasible(&[(CmpOp::Lt, &ab, true), (CmpOp::Lt, &bc, true), (CmpOp::Lt, &ca, false)]));
        // a <= b, b <= c, c <= a, and a != c: impossible.
        let ac = a.sub(&c).unwrap();
        let lits = [(CmpOp::Le, &ab, true), (CmpOp::Le, &bc, true), (CmpOp::Le, &ca, true), (CmpOp::Ne, &ac, true)];
        assert!(!feasible(&lits));
    }

    #[test]
    fn comparisons_of_max_and_min_split_into_cases() {
        let (a, b, c) = (v(0, VarKind::Real), v(1, VarKind::Real), v(2, VarKind::Real));
        // max(a - c, b - c) < 0 (a < c and b < c) with a - c >= 0: impossible.
        let m = a.sub(&c).unwrap().maximum(&b.sub(&c).unwrap());
        let ac = a.sub(&c).unwrap();
        assert!(!feasible(&[(CmpOp::Lt, &m, true), (CmpOp::Lt, &ac, false)]));
        // max(a - c, b - c) >= 0 (a >= c or b >= c) with a - c < 0: b >= c, possible.
        assert!(feasible(&[(CmpOp::Lt, &m, false), (CmpOp::Lt, &ac, true)]));
        // min(a - c, b - c) > 0 with b <= c: impossible.
        let n = a.sub(&c).unwrap().minimum(&b.sub(&c).unwrap()).unwrap();
        let bc = b.sub(&c).unwrap();
        assert!(!feasible(&[(CmpOp::Le, &n, false), (CmpOp::Le, &bc, true)]));
    }

    #[test]
    fn opposite_inequalities_give_an_equality() {
        let (a, b) = (v(0, VarKind::Real), v(1, VarKind::Real));
        let ab = a.sub(&b).unwrap();
        // a - b >= 0 (not a - b < 0) and a - b <= 0: a == b.
        let eqs = equalities(&[(CmpOp::Lt, &ab, false), (CmpOp::Le, &ab, true)]);
        assert_eq!(eqs.len(), 1);
        // An unsigned u with u <= 0 is 0.
        let u = v(2, VarKind::Unsigned);
        let eqs = equalities(&[(CmpOp::Le, &u, true)]);
        assert_eq!(eqs, [(Atom::Var(Var { id: 2, kind: VarKind::Unsigned }), Poly::default())]);
    }

    #[test]
    fn unsigned_variables_are_nonnegative() {
        let u = v(0, VarKind::Unsigned);
        assert!(!feasible(&[(CmpOp::Lt, &u, true)]));
        let s = v(0, VarKind::Signed);
        assert!(feasible(&[(CmpOp::Lt, &s, true)]));
    }

    #[test]
    fn equalities_are_solved_and_substituted() {
        let (a, b) = (v(0, VarKind::Real), v(1, VarKind::Real));
        let d = a.sub(&b).unwrap();
        let eqs = equalities(&[(CmpOp::Ne, &d, false)]);
        assert_eq!(eqs.len(), 1);
        let (x, q) = &eqs[0];
        let pb = b.as_plain().unwrap().clone();
        let pa = a.as_plain().unwrap().clone();
        // b = a, so b + 1 becomes a + 1.
        let b1 = pb.add(&Poly::constant(Rat::ONE)).unwrap();
        assert_eq!(substitute(&b1, x, q).unwrap(), pa.add(&Poly::constant(Rat::ONE)).unwrap());
    }
}
