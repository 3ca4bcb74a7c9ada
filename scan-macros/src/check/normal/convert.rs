//! Conversions between the normal forms a component can take: the lattice
//! form, bit vectors (for `& | ^ !`) and polynomials (for `+ - *`).

use super::*;

/// The bitwise form of a value of type `ty`.
pub(super) fn to_bits(l: &Lattice, ty: &Ty, span: Span) -> R<BitForm> {
    let ones = ones(ty);
    let unsigned = matches!(ty, Ty::Scalar(Scalar::U32 | Scalar::U64));
    if l.is_pos_inf() && unsigned {
        // The top of an unsigned type (`u32::MAX`) is all its ones.
        return Ok(BitForm::constant(ones));
    }
    if let Some(p) = l.as_plain() {
        if let Some(c) = p.as_const() {
            if !c.is_integer() {
                return outside("a bitwise operation on a fraction", span);
            }
            // Over the unbounded integers an unsigned difference may be
            // negative (`0 - 1`); its bits are those of the wrapped value.
            if unsigned && !(0..=ones).contains(&c.num()) {
                return outside("a bitwise operation on an unsigned value that wrapped", span);
            }
            return Ok(BitForm::constant(c.num()));
        }
        let atom = match p.as_atom() {
            Some(Atom::Bits(b)) => return Ok((**b).clone()),
            Some(a) => a.clone(),
            None => Atom::Poly(Box::new(p.clone())),
        };
        let mut f = BitForm::default();
        f.0.insert(vec![atom], ones);
        return Ok(f);
    }
    if l.is_inf() {
        return outside("a bitwise operation on an infinite value", span);
    }
    let mut f = BitForm::default();
    f.0.insert(vec![Atom::Lat(Box::new(l.clone()))], ones);
    Ok(f)
}

/// The value of a bitwise result of type `ty`. A constant with its sign bit
/// set, of a type the checker cannot see, stays a bit pattern: as a signed
/// integer it is negative, as an unsigned one near the top (`!0` is -1 or
/// 2^32 - 1), so only bitwise operations may use its value (`a & !T::ZERO`
/// is `a` either way); elsewhere it is an unknown.
pub(super) fn bits_value(b: BitForm, ty: &Ty) -> Lattice {
    if ty.is_opaque_scalar() && b.as_const().is_some_and(|k| k < 0) {
        return Lattice::atom(Atom::Bits(Box::new(b)));
    }
    from_bits(b, ones(ty))
}

pub(super) fn from_bits(b: BitForm, ones: i128) -> Lattice {
    if let Some(k) = b.as_const() {
        return Lattice::constant(Rat::int(k));
    }
    if b.0.len() == 1 {
        if let Some((atoms, mask)) = b.0.iter().next() {
            if atoms.len() == 1 && *mask == ones {
                return match &atoms[0] {
                    Atom::Poly(p) => Lattice::plain((**p).clone()),
                    Atom::Lat(l) => (**l).clone(),
                    a => Lattice::atom(a.clone()),
                };
            }
        }
    }
    Lattice::atom(Atom::Bits(Box::new(b)))
}

/// A polynomial view of a form `*` cannot distribute over: the form as an atom.
pub(super) fn to_poly(l: &Lattice, span: Span) -> R<Poly> {
    if let Some(p) = l.as_plain() {
        return Ok(p.clone());
    }
    if l.is_inf() {
        return outside("an infinity multiplied by a variable", span);
    }
    Ok(Poly::atom(Atom::Lat(Box::new(l.clone()))))
}

pub(super) fn from_poly(p: Poly) -> Lattice {
    match p.as_atom() {
        Some(Atom::Lat(l)) => (**l).clone(),
        _ => Lattice::plain(p),
    }
}

/// A proposition as a boolean value, folding constant conditions.
pub(super) fn prop(a: Atom) -> Lattice {
    let known = match &a {
        Atom::NonZero(b) => b.as_const().map(|k| k != 0),
        Atom::Cmp(op, d) => {
            // `d < 0`, `d <= 0` or `d != 0`: -inf satisfies each, +inf only `!=`.
            if d.is_neg_inf() || (d.is_pos_inf() && *op == CmpOp::Ne) {
                Some(true)
            } else if d.is_pos_inf() {
                Some(false)
            } else {
                d.as_const().map(|c| match op {
                    CmpOp::Lt => c.signum() < 0,
                    CmpOp::Le => c.signum() <= 0,
                    CmpOp::Ne => c.signum() != 0,
                })
            }
        }
        _ => None,
    };
    match known {
        Some(t) => Lattice::constant(Rat::int(t as i128)),
        None => Lattice::atom(a),
    }
}

pub(super) fn not_bool(l: &Lattice, span: Span) -> R<Lattice> {
    Ok(from_bits(to_bits(l, &BOOL, span)?.not(1), 1))
}
