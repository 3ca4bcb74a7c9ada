//! The evaluator: the IR applied to symbolic operands, one guarded normal
//! form per scalar component; branches on conditions split the cases.

use super::*;

pub(super) fn merge(a: &Guard, b: &Guard) -> Option<Guard> {
    let mut g = a.clone();
    for (k, v) in b {
        match g.get(k) {
            Some(old) if old != v => return None,
            _ => {
                g.insert(k.clone(), *v);
            }
        }
    }
    Some(g)
}

/// The cap on paths through branches, to bound compile time.
pub(super) const MAX_PATHS: usize = 256;

pub(super) fn zip2(a: &Guarded, b: &Guarded, span: Span, f: impl Fn(&Lattice, &Lattice) -> R<Lattice>) -> R<Guarded> {
    let mut out = Vec::new();
    for (ga, la) in a {
        for (gb, lb) in b {
            if let Some(g) = merge(ga, gb) {
                out.push((g, f(la, lb)?));
            }
        }
    }
    if out.len() > MAX_PATHS {
        return outside("too many paths through its branches", span);
    }
    Ok(out)
}

pub(super) fn map1(a: &Guarded, f: impl Fn(&Lattice) -> R<Lattice>) -> R<Guarded> {
    a.iter().map(|(g, l)| Ok((g.clone(), f(l)?))).collect()
}

/// Evaluates a body symbolically: `params` are the left and right operands;
/// `floats` names the type parameters that are floats ([`Floats`]).
pub fn eval(e: &Expr, params: &[Sym; 2], guards: &Guards, floats: &Floats) -> R<Sym> {
    Eval { params, locals: Vec::new(), guards, floats }.expr(e)
}

/// Evaluates a closed expression (the identity).
pub fn eval_closed(e: &Expr, guards: &Guards, floats: &Floats) -> R<Sym> {
    let none = [Sym::Tuple(Vec::new()), Sym::Tuple(Vec::new())];
    Eval { params: &none, locals: Vec::new(), guards, floats }.expr(e)
}

pub(super) struct Eval<'p> {
    params: &'p [Sym; 2],
    locals: Vec<(String, Sym)>,
    guards: &'p Guards,
    floats: &'p Floats,
}

/// Why an infinity met arithmetic on a type that has none.
const WRAPPING_BOUND: &str = "an integer `MIN`/`MAX` (or `T::LOWEST`/`T::HIGHEST` of a `T` that may be an integer) \
                              in arithmetic or a comparison: the checker takes them as -inf/+inf, which they are \
                              under `max`/`min` only; `+`, `-`, `*` and casts treat them as the finite bounds they \
                              are, and wrap (`-1 + i32::MIN` is `i32::MAX`), and `x > i32::MIN` is false at `x = MIN`";

/// `Max` or `Min` when `if cond { then } else { otherwise }` picks the larger
/// or the smaller of the two values `cond` compares (`if l.1 > r.1 { l.1 }
/// else { r.1 }`), which it does at a tie too; scalars only.
fn extremum(cond: &Expr, then: &Expr, otherwise: &Expr) -> Option<Method> {
    let ExprKind::Binary(op, l, r) = &cond.kind else { return None };
    let greater = match op {
        BinOp::Gt | BinOp::Ge => true,
        BinOp::Lt | BinOp::Le => false,
        _ => return None,
    };
    if !matches!(then.ty, Ty::Scalar(_) | Ty::Param(_) | Ty::Field { .. }) {
        return None;
    }
    let larger = if same_value(then, l) && same_value(otherwise, r) {
        greater
    } else if same_value(then, r) && same_value(otherwise, l) {
        !greater
    } else {
        return None;
    };
    Some(if larger { Method::Max } else { Method::Min })
}

/// Whether two expressions are one value by their form: the same operand,
/// binding, constant or literal, through the same fields.
fn same_value(a: &Expr, b: &Expr) -> bool {
    match (&a.kind, &b.kind) {
        (ExprKind::Param(i), ExprKind::Param(j)) => i == j,
        (ExprKind::Local(x), ExprKind::Local(y)) => x == y,
        (ExprKind::Lit(x), ExprKind::Lit(y)) => x == y,
        (ExprKind::Const { name: x, .. }, ExprKind::Const { name: y, .. }) => x == y,
        (ExprKind::Field(x, m), ExprKind::Field(y, n)) => m == n && same_value(x, y),
        _ => false,
    }
}

/// `Ok` unless one of `xs` is a whole infinity and values of `ty` have none
/// (so that it came from an integer bound).
fn finite_unless_float(floats: &Floats, ty: &Ty, xs: &[&Guarded], span: Span) -> R<()> {
    if floats.has_infinities(ty) || xs.iter().all(|x| x.iter().all(|(_, l)| !l.is_inf())) {
        Ok(())
    } else {
        outside(WRAPPING_BOUND, span)
    }
}

impl Eval<'_> {
    fn leaf(&mut self, e: &Expr) -> R<Guarded> {
        match self.expr(e)? {
            Sym::Leaf(g) => Ok(g),
            _ => outside("a tuple, array or struct where a number is expected", e.span),
        }
    }

    fn expr(&mut self, e: &Expr) -> R<Sym> {
        let span = e.span;
        let lat = |r: Result<Lattice, LatError>| r.map_err(|x| lat_err(x, span));
        Ok(match &e.kind {
            ExprKind::Param(i) => match self.params.get(*i) {
                Some(p) => p.clone(),
                None => return outside("an operand index out of range", span),
            },
            ExprKind::Local(name) => match self.locals.iter().rev().find(|(n, _)| n == name) {
                Some((_, v)) => v.clone(),
                None => return outside(format!("the unknown local `{name}`"), span),
            },
            ExprKind::Lit(l) => Sym::plain(lit(l, span)?),
            ExprKind::Const { name, value } => match const_value(name, value, &e.ty) {
                Ok(ConstVal::NegInf) => Sym::plain(Lattice::neg_inf()),
                Ok(ConstVal::PosInf) => Sym::plain(Lattice::pos_inf()),
                Ok(ConstVal::Lit(l)) => Sym::plain(lit(&l, span)?),
                Err(why) => return outside(why, span),
            },
            ExprKind::Field(base, m) => {
                let v = self.expr(base)?;
                match (v, m) {
                    (Sym::Tuple(mut xs) | Sym::Array(mut xs), Member::Index(i)) if *i < xs.len() => xs.swap_remove(*i),
                    (Sym::Struct(fs), Member::Named(n)) => match fs.into_iter().find(|(f, _)| f == n) {
                        Some((_, v)) => v,
                        None => return outside(format!("the unknown field `{n}`"), span),
                    },
                    _ => return outside("a field the item type does not have", span),
                }
            }
            ExprKind::Unary(UnOp::Neg, x) => {
                let ty = x.ty.clone();
                let x = self.leaf(x)?;
                finite_unless_float(self.floats, &ty, &[&x], span)?;
                Sym::Leaf(map1(&x, |l| lat(l.neg()))?)
            }
            ExprKind::Unary(UnOp::Not, x) => {
                let (ty, o) = (x.ty.clone(), ones(&x.ty));
                let x = self.leaf(x)?;
                Sym::Leaf(map1(&x, |l| Ok(bits_value(to_bits(l, &ty, span)?.not(o), &ty)))?)
            }
            ExprKind::Binary(op, l, r) => {
                let operand_ty = l.ty.or_seen(&r.ty).clone();
                let (a, b) = (self.leaf(l)?, self.leaf(r)?);
                // Also in comparisons: `x > i32::MIN` is false at `x = MIN`,
                // never for -inf. (`==` on seen integers compares bits, where
                // `u32::MAX` is exactly all ones and signed bounds are refused.)
                let arithmetic = matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div);
                let ordered = matches!(op, BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge);
                let opaque_eq = matches!(op, BinOp::Eq | BinOp::Ne) && operand_ty.is_opaque_scalar();
                if arithmetic || ordered || opaque_eq {
                    finite_unless_float(self.floats, &operand_ty, &[&a, &b], span)?;
                }
                Sym::Leaf(zip2(&a, &b, span, |x, y| binary(*op, x, y, &operand_ty, span))?)
            }
            ExprKind::Method(m, recv, args) => {
                let ty = args.iter().fold(&recv.ty, |t, a| t.or_seen(&a.ty)).clone();
                let x = self.leaf(recv)?;
                let args: Vec<Guarded> = args.iter().map(|a| self.leaf(a)).collect::<R<_>>()?;
                if matches!(m, Method::Abs | Method::MulAdd) {
                    let all: Vec<&Guarded> = std::iter::once(&x).chain(&args).collect();
                    finite_unless_float(self.floats, &ty, &all, span)?;
                }
                match (m, &args[..]) {
                    (Method::Max, [y]) => Sym::Leaf(zip2(&x, y, span, |a, b| Ok(a.maximum(b)))?),
                    (Method::Min, [y]) => Sym::Leaf(zip2(&x, y, span, |a, b| lat(a.minimum(b)))?),
                    (Method::Abs, []) => Sym::Leaf(map1(&x, |a| lat(a.abs()))?),
                    (Method::MulAdd, [y, z]) => {
                        let xy = zip2(&x, y, span, |a, b| mul(a, b, span))?;
                        Sym::Leaf(zip2(&xy, z, span, |a, b| lat(a.add(b)))?)
                    }
                    (Method::Max | Method::Min | Method::Abs | Method::MulAdd, _) => {
                        return outside("a method call with the wrong number of arguments", span)
                    }
                    (other, _) => return outside(format!("`{}`", other.name()), span),
                }
            }
            ExprKind::Cast(x, to) => {
                let from = &x.ty;
                let exact = match (from, to) {
                    (_, Scalar::F32 | Scalar::F64) => true,
                    (Ty::Scalar(Scalar::Bool), _) => true,
                    (Ty::Scalar(f), t) if f.is_int() && t.is_int() => widens(*f, *t),
                    _ => false,
                };
                if !exact {
                    return outside("a cast that can change the value (float to integer, or narrowing)", span);
                }
                let value = self.expr(x)?;
                if let Sym::Leaf(v) = &value {
                    finite_unless_float(self.floats, from, &[v], span)?;
                }
                value
            }
            ExprKind::If { cond, then, otherwise } if extremum(cond, then, otherwise).is_some() => {
                // `if a > b { a } else { b }` is `a.max(b)` at a tie too, so
                // no comparison is evaluated: one with an integer bound would
                // be refused (`x > i32::MIN` is false at `x = MIN`, never at -inf).
                let (x, y) = (self.leaf(then)?, self.leaf(otherwise)?);
                match extremum(cond, then, otherwise) {
                    Some(Method::Max) => Sym::Leaf(zip2(&x, &y, span, |a, b| Ok(a.maximum(b)))?),
                    _ => Sym::Leaf(zip2(&x, &y, span, |a, b| lat(a.minimum(b)))?),
                }
            }
            ExprKind::If { cond, then, otherwise } => {
                let c = self.leaf(cond)?;
                let (t, f) = (self.expr(then)?, self.expr(otherwise)?);
                let mut cases: Vec<(Guard, bool)> = Vec::new();
                for (gc, lc) in &c {
                    let bits = to_bits(lc, &BOOL, span)?;
                    let free: Vec<Atom> = bits.atoms().into_iter().filter(|a| !gc.contains_key(*a)).cloned().collect();
                    if free.len() > 8 {
                        return outside("a condition with too many parts", span);
                    }
                    for mask in 0..(1u32 << free.len()) {
                        let mut g = gc.clone();
                        for (i, a) in free.iter().enumerate() {
                            g.insert(a.clone(), mask >> i & 1 == 1);
                        }
                        if !self.guards.feasible(&g) {
                            continue;
                        }
                        let truth = bits.eval_bit(&|a: &Atom| g.get(a).copied().unwrap_or(false));
                        cases.push((g, truth));
                    }
                }
                select(&cases, &t, &f, span, self.guards)?
            }
            ExprKind::Let { name, value, body, .. } => {
                let v = self.expr(value)?;
                self.locals.push((name.clone(), v));
                let out = self.expr(body);
                self.locals.pop();
                out?
            }
            ExprKind::Tuple(xs) => Sym::Tuple(xs.iter().map(|x| self.expr(x)).collect::<R<_>>()?),
            ExprKind::Array(xs) => Sym::Array(xs.iter().map(|x| self.expr(x)).collect::<R<_>>()?),
            ExprKind::Struct { fields, .. } => {
                // Fields by name, so that `{ sum, count }` and `{ count, sum }` compare.
                let mut fs: Vec<(String, Sym)> =
                    fields.iter().map(|(n, x)| Ok((n.clone(), self.expr(x)?))).collect::<R<_>>()?;
                fs.sort_by(|a, b| a.0.cmp(&b.0));
                Sym::Struct(fs)
            }
        })
    }
}

pub(super) fn widens(from: Scalar, to: Scalar) -> bool {
    use Scalar::*;
    from == to || matches!((from, to), (I32, I64) | (U32, U64) | (U32, I64))
}

pub(super) fn lit(l: &Lit, span: Span) -> R<Lattice> {
    Ok(match l {
        Lit::Bool(b) => Lattice::constant(Rat::int(*b as i128)),
        Lit::Int(n) => Lattice::constant(Rat::int(*n)),
        Lit::Float(x) if *x == f64::INFINITY => Lattice::pos_inf(),
        Lit::Float(x) if *x == f64::NEG_INFINITY => Lattice::neg_inf(),
        Lit::Float(x) => Lattice::constant(Rat::from_f64(*x).map_err(ovf(span))?),
    })
}

pub(super) fn mul(a: &Lattice, b: &Lattice, span: Span) -> R<Lattice> {
    match a.mul(b) {
        Some(r) => r.map_err(|e| lat_err(e, span)),
        // No max-plus form: the product of the two forms as atoms is still a
        // sound normal form (equal forms are equal functions).
        None => Ok(from_poly(to_poly(a, span)?.mul(&to_poly(b, span)?).map_err(ovf(span))?)),
    }
}

pub(super) fn binary(op: BinOp, a: &Lattice, b: &Lattice, ty: &Ty, span: Span) -> R<Lattice> {
    let lat = |r: Result<Lattice, LatError>| r.map_err(|x| lat_err(x, span));
    let float = matches!(ty, Ty::Scalar(s) if s.is_float());
    let bits = |f: fn(&BitForm, &BitForm) -> BitForm| -> R<Lattice> {
        Ok(bits_value(f(&to_bits(a, ty, span)?, &to_bits(b, ty, span)?), ty))
    };
    match op {
        BinOp::Add => lat(a.add(b)),
        BinOp::Sub => lat(a.sub(b)),
        BinOp::Mul => mul(a, b, span),
        BinOp::Div => match b.as_const() {
            // Dividing by a constant is multiplying by its inverse, over the reals.
            Some(c) if float && !c.is_zero() => {
                let inv = Rat::ONE.div(c).unwrap_or(Ok(Rat::ZERO)).map_err(ovf(span))?;
                lat(a.scale(inv))
            }
            _ if float => outside("division by a non-constant", span),
            _ => outside("division, which rounds on integers", span),
        },
        BinOp::Rem => outside("`%`", span),
        BinOp::BitAnd | BinOp::And => bits(BitForm::and),
        BinOp::BitOr | BinOp::Or => bits(BitForm::or),
        BinOp::BitXor => bits(BitForm::xor),
        BinOp::Eq | BinOp::Ne => {
            let ne = if float || ty.is_opaque_scalar() {
                prop(Atom::Cmp(CmpOp::Ne, Box::new(lat(a.sub(b))?)))
            } else if *ty == BOOL {
                // On booleans `!=` is `^`: the value itself, not a proposition about it.
                from_bits(to_bits(a, ty, span)?.xor(&to_bits(b, ty, span)?), 1)
            } else {
                let d = to_bits(a, ty, span)?.xor(&to_bits(b, ty, span)?);
                prop(Atom::NonZero(Box::new(d)))
            };
            if op == BinOp::Ne {
                Ok(ne)
            } else {
                not_bool(&ne, span)
            }
        }
        BinOp::Lt => Ok(prop(Atom::Cmp(CmpOp::Lt, Box::new(lat(a.sub(b))?)))),
        BinOp::Gt => Ok(prop(Atom::Cmp(CmpOp::Lt, Box::new(lat(b.sub(a))?)))),
        BinOp::Le => Ok(prop(Atom::Cmp(CmpOp::Le, Box::new(lat(a.sub(b))?)))),
        BinOp::Ge => Ok(prop(Atom::Cmp(CmpOp::Le, Box::new(lat(b.sub(a))?)))),
    }
}

/// `if` on every case: `then`'s leaves where the condition holds, `otherwise`'s elsewhere.
pub(super) fn select(cases: &[(Guard, bool)], t: &Sym, f: &Sym, span: Span, guards: &Guards) -> R<Sym> {
    Ok(match (t, f) {
        (Sym::Leaf(a), Sym::Leaf(b)) => {
            let mut out = Vec::new();
            for (g, truth) in cases {
                for (gb, l) in if *truth { a } else { b } {
                    if let Some(m) = merge(g, gb) {
                        if guards.feasible(&m) {
                            out.push((m, l.clone()));
                        }
                    }
                }
            }
            if out.len() > MAX_PATHS {
                return outside("too many paths through its branches", span);
            }
            Sym::Leaf(out)
        }
        (Sym::Tuple(a), Sym::Tuple(b)) if a.len() == b.len() => {
            Sym::Tuple(a.iter().zip(b).map(|(x, y)| select(cases, x, y, span, guards)).collect::<R<_>>()?)
        }
        (Sym::Array(a), Sym::Array(b)) if a.len() == b.len() => {
            Sym::Array(a.iter().zip(b).map(|(x, y)| select(cases, x, y, span, guards)).collect::<R<_>>()?)
        }
        (Sym::Struct(a), Sym::Struct(b)) if a.len() == b.len() => Sym::Struct(
            a.iter()
                .zip(b)
                .map(|((n, x), (m, y))| {
                    if n != m {
                        return outside("branches that build the struct's fields in different orders", span);
                    }
                    Ok((n.clone(), select(cases, x, y, span, guards)?))
                })
                .collect::<R<_>>()?,
        ),
        _ => return outside("branches of different shapes", span),
    })
}
