//! Whether concrete operands fall in a guard's case: the symbolic check
//! reports a difference "when a.0 != 0 && b.0 == 0, ...", and the example
//! that follows should be one of those inputs, not merely some input on
//! which the law fails.
//!
//! Each atom of the guard is evaluated on the operands' scalars, in the
//! order of [`super::normal::Vars`] (operand by operand, components in
//! order), exactly, in rationals. An atom that cannot be evaluated here
//! (an overflow, infinities, bits of a fraction) makes the answer unknown.

use super::bits::BitForm;
use super::normal::Guard;
use super::poly::{Atom, CmpOp, Poly};
use super::rational::Rat;
use super::sample::{Ext, Value};
use super::tropical::Lattice;

/// The operands' scalars in variable order; `None` for one that is not a
/// finite number (an infinity).
pub fn assignment(operands: &[Value<Ext>]) -> Vec<Option<Rat>> {
    let mut out = Vec::new();
    for op in operands {
        for leaf in op.leaves() {
            out.push(match leaf {
                Value::Bool(b) => Some(Rat::int(i128::from(*b))),
                Value::Num(Ext::Fin(r)) => Some(*r),
                _ => None,
            });
        }
    }
    out
}

/// `Some(true)` when every atom of `guard` has its recorded truth value on
/// these scalars, `Some(false)` when one has not, `None` when that cannot be
/// told.
pub fn holds(guard: &Guard, vars: &[Option<Rat>]) -> Option<bool> {
    let mut all = Some(true);
    for (a, want) in guard {
        match truth(a, vars) {
            Some(t) if t != *want => return Some(false),
            Some(_) => {}
            None => all = None,
        }
    }
    all
}

/// An atom used as a condition: comparisons as such, anything else true
/// when not zero.
fn truth(a: &Atom, vars: &[Option<Rat>]) -> Option<bool> {
    match a {
        Atom::Cmp(op, d) => {
            let d = lattice(d, vars)?;
            Some(match op {
                CmpOp::Lt => d.signum() < 0,
                CmpOp::Le => d.signum() <= 0,
                CmpOp::Ne => d.signum() != 0,
            })
        }
        Atom::NonZero(b) => Some(bits(b, vars)? != 0),
        other => Some(!atom(other, vars)?.is_zero()),
    }
}

fn atom(a: &Atom, vars: &[Option<Rat>]) -> Option<Rat> {
    match a {
        Atom::Var(v) => *vars.get(v.id as usize)?,
        Atom::Poly(p) => poly(p, vars),
        Atom::Bits(b) => Some(Rat::int(bits(b, vars)?)),
        Atom::Lat(l) => lattice(l, vars),
        Atom::NonZero(_) | Atom::Cmp(..) => Some(Rat::int(i128::from(truth(a, vars)?))),
    }
}

fn poly(p: &Poly, vars: &[Option<Rat>]) -> Option<Rat> {
    let mut sum = Rat::ZERO;
    for (mono, c) in &p.0 {
        let mut term = *c;
        for (a, e) in &mono.0 {
            let x = atom(a, vars)?;
            for _ in 0..*e {
                term = term.mul(x).ok()?;
            }
        }
        sum = sum.add(term).ok()?;
    }
    Some(sum)
}

/// `max` over `min`-terms; an empty `min` is +inf and an empty `max` -inf,
/// neither of which a finite comparison can use here.
fn lattice(l: &Lattice, vars: &[Option<Rat>]) -> Option<Rat> {
    let mut best: Option<Rat> = None;
    for term in &l.0 {
        let mut least: Option<Rat> = None;
        for p in term {
            let x = poly(p, vars)?;
            least = Some(least.map_or(x, |m| if x.cmp_value(m).is_lt() { x } else { m }));
        }
        let x = least?;
        best = Some(best.map_or(x, |b| if x.cmp_value(b).is_gt() { x } else { b }));
    }
    best
}

/// XOR over monomials `mask & atom & ...` of integer atoms.
fn bits(b: &BitForm, vars: &[Option<Rat>]) -> Option<i128> {
    let mut acc = 0i128;
    for (atoms, mask) in &b.0 {
        let mut m = *mask;
        for a in atoms {
            let x = atom(a, vars)?;
            if !x.is_integer() {
                return None;
            }
            m &= x.num();
        }
        acc ^= m;
    }
    Some(acc)
}
