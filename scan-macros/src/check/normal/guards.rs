//! Guard feasibility: which combinations of branch conditions can hold at
//! once (decided once per guard and kept in [`Guards`]), and the first
//! difference between two components under the feasible guards.

use super::*;

/// The guards already decided for one operator: the same guards recur across
/// the cases of both sides of a law, so each is decided once. One per
/// operator's check, passed down to whatever decides guards.
#[derive(Default)]
pub struct Guards {
    decided: RefCell<HashMap<Guard, bool>>,
}

impl Guards {
    /// Whether the conditions of a guard can hold together. Exact for flags:
    /// boolean variables, and `!= 0` tests of bitwise forms of integer
    /// variables (per bit, an integer is a vector of independent booleans);
    /// and for linear comparisons ([`linear::feasible`]). Anything else is
    /// assumed feasible, which can only make a proof fail, never a wrong proof.
    pub fn feasible(&self, g: &Guard) -> bool {
        if let Some(&known) = self.decided.borrow().get(g) {
            return known;
        }
        let v = decide(g);
        let mut decided = self.decided.borrow_mut();
        if decided.len() > 100_000 {
            decided.clear(); // bounds memory on pathological bodies
        }
        decided.insert(g.clone(), v);
        v
    }
}

pub(super) fn decide(g: &Guard) -> bool {
    let cmps = comparisons(g);
    if !cmps.is_empty() && !linear::feasible(&cmps) {
        return false;
    }
    let flags: Guard = g.iter().filter(|(a, _)| !matches!(a, Atom::Cmp(..))).map(|(a, t)| (a.clone(), *t)).collect();
    flags_feasible(&flags)
}

pub(super) fn comparisons(g: &Guard) -> Vec<(CmpOp, &Lattice, bool)> {
    g.iter()
        .filter_map(|(a, t)| match a {
            Atom::Cmp(op, d) => Some((*op, &**d, *t)),
            _ => None,
        })
        .collect()
}

/// Whether two forms are equal on a path after substituting the equalities
/// its conditions imply (`a == b` on the path: `b` becomes `a`).
pub(super) fn equal_under(g: &Guard, l: &Lattice, r: &Lattice) -> bool {
    let eqs = linear::equalities(&comparisons(g));
    if eqs.is_empty() {
        return false;
    }
    let subst = |f: &Lattice| -> Option<Lattice> {
        let mut f = f.clone();
        for (x, q) in &eqs {
            let terms = f.0.iter().map(|t| t.iter().map(|p| linear::substitute(p, x, q)).collect::<Option<Vec<_>>>());
            f = Lattice::from_terms(terms.collect::<Option<Vec<_>>>()?);
        }
        Some(f)
    };
    matches!((subst(l), subst(r)), (Some(a), Some(b)) if a == b)
}

pub(super) fn flags_feasible(g: &Guard) -> bool {
    let var = |a: &Atom| match a {
        Atom::Var(v) => Some(*v),
        _ => None,
    };
    // Bit 0 decides a test of booleans (each atom 0 or 1), unless a constant
    // has other bits: `b as u32 == 2` (`(b ^ 2) != 0`) is never false.
    let all_bool = g.keys().all(|a| match a {
        Atom::Var(v) => v.kind == VarKind::Bool,
        Atom::NonZero(b) => {
            b.atoms().iter().all(|x| var(x).is_some_and(|v| v.kind == VarKind::Bool))
                && !matches!(b.0.get(&Vec::new()), Some(k) if k & !1 != 0)
        }
        _ => false,
    });
    // Integer tests decide bit by bit when every mask (and any constant) is
    // one full-width mask: all bits of a signed type, the width of an
    // unsigned one. (A variable narrower than the mask, widened, only fixes
    // some positions to 0: an infeasible verdict stays right.)
    let full = g.keys().find_map(|a| match a {
        Atom::NonZero(b) => b.0.iter().find(|(atoms, _)| !atoms.is_empty()).map(|(_, m)| *m),
        _ => None,
    });
    let all_int = g.keys().all(|a| match a {
        Atom::NonZero(b) => {
            b.0.iter().all(|(atoms, mask)| atoms.is_empty() || Some(*mask) == full)
                && !matches!(b.0.get(&Vec::new()), Some(k) if Some(*k) != full)
                && b.atoms()
                    .iter()
                    .all(|x| var(x).is_some_and(|v| matches!(v.kind, VarKind::Signed | VarKind::Unsigned)))
        }
        _ => false,
    });
    if !all_bool && !all_int {
        return true;
    }
    let mut vars: Vec<&Atom> = Vec::new();
    for a in g.keys() {
        match a {
            Atom::NonZero(b) => vars.extend(b.atoms()),
            other => vars.push(other),
        }
    }
    vars.sort();
    vars.dedup();
    if vars.len() > 12 {
        return true;
    }
    let holds = |a: &Atom, mask: u32| -> bool {
        let truth = |x: &Atom| vars.iter().position(|v| *v == x).is_some_and(|i| mask >> i & 1 == 1);
        match a {
            Atom::NonZero(b) => b.eval_bit(&truth),
            other => truth(other),
        }
    };
    let assignments = 0..(1u32 << vars.len());
    if all_bool {
        // One bit: some assignment satisfies every literal.
        return assignments.into_iter().any(|m| g.iter().all(|(a, t)| holds(a, m) == *t));
    }
    // Each bit position is one assignment. The zero tests must hold at every
    // position used; each nonzero test needs one position where it is 1.
    let good: Vec<u32> = assignments.filter(|m| g.iter().all(|(a, t)| *t || !holds(a, *m))).collect();
    !good.is_empty() && g.iter().filter(|(_, t)| **t).all(|(a, _)| good.iter().any(|m| holds(a, *m)))
}

/// The first case where two components differ: the guard and the two forms.
pub fn first_difference<'a>(
    l: &'a Guarded,
    r: &'a Guarded,
    guards: &Guards,
) -> Option<(Guard, &'a Lattice, &'a Lattice)> {
    for (gl, fl) in l {
        for (gr, fr) in r {
            if fl == fr {
                continue;
            }
            if let Some(g) = merge(gl, gr) {
                if guards.feasible(&g) && !equal_under(&g, fl, fr) {
                    return Some((g, fl, fr));
                }
            }
        }
    }
    None
}
