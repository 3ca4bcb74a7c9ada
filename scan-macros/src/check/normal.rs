//! Symbolic evaluation of an operator body: the IR, applied to symbolic
//! operands, becomes one normal form per scalar component of the result.
//!
//! Each component is a list of guarded forms `(guard, form)`: a branch on a
//! condition the checker can reason about (`if r.0 != 0 { .. } else { .. }`)
//! splits the cases, and the guard records which truth values led there.
//! Two components are equal when, for every combination of guards that can
//! hold at once ([`feasible`]), the forms are equal.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

use proc_macro2::Span;

use super::bits::BitForm;
use super::linear;
use super::poly::{Atom, CmpOp, Poly, Var, VarKind};
use super::rational::{Overflow, Rat};
use super::tropical::{LatError, Lattice};
use crate::ir::{BinOp, ConstName, Expr, ExprKind, Lit, Member, Method, ParamConst, Scalar, ScalarConst, Ty, UnOp};

/// Why a body (or identity) is outside the symbolic fragment, and where.
#[derive(Clone, Debug)]
pub struct Outside {
    pub why: String,
    pub span: Span,
}

type R<T> = Result<T, Outside>;

fn outside<T>(why: impl Into<String>, span: Span) -> R<T> {
    Err(Outside { why: why.into(), span })
}

fn lat_err(e: LatError, span: Span) -> Outside {
    let why = match e {
        LatError::Overflow => "numbers too large for exact arithmetic",
        LatError::Undefined => "`inf - inf` or `0 * inf`, which has no value",
        LatError::TooLarge => "a `max`/`min` form too large to normalize",
    };
    Outside { why: why.into(), span }
}

fn ovf(span: Span) -> impl Fn(Overflow) -> Outside {
    move |_| Outside { why: "numbers too large for exact arithmetic".into(), span }
}

/// The truth values of conditions on one path through the body's branches.
pub type Guard = BTreeMap<Atom, bool>;

/// A scalar component: the form on each feasible path.
pub type Guarded = Vec<(Guard, Lattice)>;

/// A symbolic value, shaped like the item type.
#[derive(Clone, Debug)]
pub enum Sym {
    Leaf(Guarded),
    Tuple(Vec<Sym>),
    Array(Vec<Sym>),
    Struct(Vec<(String, Sym)>),
}

impl Sym {
    fn plain(l: Lattice) -> Sym {
        Sym::Leaf(vec![(Guard::new(), l)])
    }

    /// The scalar components with their paths (`.0`, `[2]`, `.name`), in order.
    pub fn leaves(&self) -> Vec<(String, &Guarded)> {
        let mut out = Vec::new();
        self.collect("", &mut out);
        out
    }

    fn collect<'s>(&'s self, path: &str, out: &mut Vec<(String, &'s Guarded)>) {
        match self {
            Sym::Leaf(g) => out.push((path.to_string(), g)),
            Sym::Tuple(xs) => xs.iter().enumerate().for_each(|(i, x)| x.collect(&format!("{path}.{i}"), out)),
            Sym::Array(xs) => xs.iter().enumerate().for_each(|(i, x)| x.collect(&format!("{path}[{i}]"), out)),
            Sym::Struct(fs) => fs.iter().for_each(|(n, x)| x.collect(&format!("{path}.{n}"), out)),
        }
    }
}

/// The input variables: names (`b.1`) and kinds, indexed by `Var::id`.
#[derive(Default)]
pub struct Vars {
    pub names: Vec<String>,
}

/// The item type with a struct's fields filled in and sorted by name.
///
/// The macro does not see a user struct's declaration (`Ty::Struct` may list
/// no fields): the fields are those the body builds or reads, which are all
/// the checker needs to state the laws.
pub fn resolve_item(item: &Ty, body: &Expr) -> Ty {
    match item {
        Ty::Struct { name, fields } => {
            let mut fields = fields.clone();
            collect_fields(body, &mut fields);
            fields.sort_by(|a, b| a.0.cmp(&b.0));
            fields.dedup_by(|a, b| a.0 == b.0);
            Ty::Struct { name: name.clone(), fields }
        }
        other => other.clone(),
    }
}

fn collect_fields(e: &Expr, out: &mut Vec<(String, Ty)>) {
    let mut add = |n: &String, t: &Ty| {
        if !out.iter().any(|(m, _)| m == n) {
            out.push((n.clone(), t.clone()));
        }
    };
    match &e.kind {
        ExprKind::Struct { fields, .. } => fields.iter().for_each(|(n, x)| add(n, &x.ty)),
        ExprKind::Field(base, Member::Named(n)) if matches!(base.kind, ExprKind::Param(_)) => add(n, &e.ty),
        _ => {}
    }
    match &e.kind {
        ExprKind::Field(x, _) | ExprKind::Unary(_, x) | ExprKind::Cast(x, _) => collect_fields(x, out),
        ExprKind::Binary(_, a, b) => [a, b].into_iter().for_each(|x| collect_fields(x, out)),
        ExprKind::Method(_, r, args) => std::iter::once(&**r).chain(args).for_each(|x| collect_fields(x, out)),
        ExprKind::If { cond, then, otherwise } => {
            [cond, then, otherwise].into_iter().for_each(|x| collect_fields(x, out))
        }
        ExprKind::Let { value, body, .. } => [value, body].into_iter().for_each(|x| collect_fields(x, out)),
        ExprKind::Tuple(xs) | ExprKind::Array(xs) => xs.iter().for_each(|x| collect_fields(x, out)),
        ExprKind::Struct { fields, .. } => fields.iter().for_each(|(_, x)| collect_fields(x, out)),
        ExprKind::Param(_) | ExprKind::Local(_) | ExprKind::Lit(_) | ExprKind::Const { .. } => {}
    }
}

/// Whether the body calls a function the exact arithmetic cannot evaluate
/// (`exp`, `ln`, `sqrt`, ...): its sampled values are only approximations.
pub fn transcendental(e: &Expr) -> bool {
    fn sub<'e>(xs: &mut impl Iterator<Item = &'e Expr>) -> bool {
        xs.any(transcendental)
    }
    match &e.kind {
        ExprKind::Method(m, r, args) => !m.spec().exact || sub(&mut std::iter::once(&**r).chain(args)),
        ExprKind::Field(x, _) | ExprKind::Unary(_, x) | ExprKind::Cast(x, _) => transcendental(x),
        ExprKind::Binary(_, a, b) => transcendental(a) || transcendental(b),
        ExprKind::If { cond, then, otherwise } => sub(&mut [&**cond, &**then, &**otherwise].into_iter()),
        ExprKind::Let { value, body, .. } => transcendental(value) || transcendental(body),
        ExprKind::Tuple(xs) | ExprKind::Array(xs) => sub(&mut xs.iter()),
        ExprKind::Struct { fields, .. } => sub(&mut fields.iter().map(|(_, x)| x)),
        ExprKind::Param(_) | ExprKind::Local(_) | ExprKind::Lit(_) | ExprKind::Const { .. } => false,
    }
}

/// What the checker knows about a scalar type's values.
pub fn kind_of(ty: &Ty) -> VarKind {
    match ty {
        Ty::Scalar(Scalar::Bool) => VarKind::Bool,
        Ty::Scalar(Scalar::I32 | Scalar::I64) => VarKind::Signed,
        Ty::Scalar(Scalar::U32 | Scalar::U64) => VarKind::Unsigned,
        _ => VarKind::Real,
    }
}

const BOOL: Ty = Ty::Scalar(Scalar::Bool);

/// `1` (bit 0) for booleans, all bits for integers: the mask of "true"/"all".
fn ones(ty: &Ty) -> i128 {
    if matches!(ty, Ty::Scalar(Scalar::Bool)) {
        1
    } else {
        -1
    }
}

impl Vars {
    /// A symbolic operand of type `ty` named `base`: one fresh variable per scalar.
    pub fn operand(&mut self, base: &str, ty: &Ty) -> Sym {
        match ty {
            Ty::Scalar(_) | Ty::Param(_) | Ty::Field { .. } => {
                let id = self.names.len() as u16;
                self.names.push(base.to_string());
                Sym::plain(Lattice::atom(Atom::Var(Var { id, kind: kind_of(ty) })))
            }
            Ty::Tuple(ts) => {
                Sym::Tuple(ts.iter().enumerate().map(|(i, t)| self.operand(&format!("{base}.{i}"), t)).collect())
            }
            Ty::Array(t, n) => Sym::Array((0..*n).map(|i| self.operand(&format!("{base}[{i}]"), t)).collect()),
            Ty::Struct { fields, .. } => {
                Sym::Struct(fields.iter().map(|(n, t)| (n.clone(), self.operand(&format!("{base}.{n}"), t))).collect())
            }
        }
    }
}

/// A constant's value as the checker models it.
#[derive(Clone, Debug, PartialEq)]
pub enum ConstVal {
    NegInf,
    PosInf,
    Lit(Lit),
}

/// Integer `MIN`/`MAX` are the bottom and top of the type's range, and act as
/// `-inf`/`+inf` under `max`/`min` (the checker works over the unbounded
/// integers); float `MIN`/`MAX` are ordinary finite numbers. Signed `MAX` and
/// `MIN` are not all ones or zero bitwise, so only unsigned `MAX` keeps its
/// bits.
pub fn const_value(name: &ConstName, value: &Option<Lit>, ty: &Ty) -> Result<ConstVal, String> {
    type C = ScalarConst;
    let int = matches!(ty, Ty::Scalar(s) if s.is_int());
    let unsigned = matches!(ty, Ty::Scalar(Scalar::U32 | Scalar::U64));
    match name {
        ConstName::Scalar(_, C::NegInfinity) | ConstName::Param(_, ParamConst::Lowest) => return Ok(ConstVal::NegInf),
        ConstName::Scalar(_, C::Infinity) | ConstName::Param(_, ParamConst::Highest) => return Ok(ConstVal::PosInf),
        ConstName::Scalar(_, C::Min) if int && !unsigned => return Ok(ConstVal::NegInf),
        ConstName::Scalar(_, C::Min) if unsigned => return Ok(ConstVal::Lit(Lit::Int(0))),
        ConstName::Scalar(_, C::Max) if int => return Ok(ConstVal::PosInf),
        ConstName::Scalar(_, C::Nan) => return Err(format!("`{name}`, which is not a real number")),
        _ => {}
    }
    match value {
        Some(v) => Ok(ConstVal::Lit(v.clone())),
        None => Err(format!("the constant `{name}`, whose value the checker does not know")),
    }
}

/// The bitwise form of a value of type `ty`.
fn to_bits(l: &Lattice, ty: &Ty, span: Span) -> R<BitForm> {
    let ones = ones(ty);
    if l.is_pos_inf() && matches!(ty, Ty::Scalar(Scalar::U32 | Scalar::U64)) {
        // The top of an unsigned type (`u32::MAX`) is all ones.
        return Ok(BitForm::constant(-1));
    }
    if let Some(p) = l.as_plain() {
        if let Some(c) = p.as_const() {
            if !c.is_integer() {
                return outside("a bitwise operation on a fraction", span);
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

fn from_bits(b: BitForm, ones: i128) -> Lattice {
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
fn to_poly(l: &Lattice, span: Span) -> R<Poly> {
    if let Some(p) = l.as_plain() {
        return Ok(p.clone());
    }
    if l.is_inf() {
        return outside("an infinity multiplied by a variable", span);
    }
    Ok(Poly::atom(Atom::Lat(Box::new(l.clone()))))
}

fn from_poly(p: Poly) -> Lattice {
    match p.as_atom() {
        Some(Atom::Lat(l)) => (**l).clone(),
        _ => Lattice::plain(p),
    }
}

/// A proposition as a boolean value, folding constant conditions.
fn prop(a: Atom) -> Lattice {
    let known = match &a {
        Atom::NonZero(b) => b.as_const().map(|k| k != 0),
        Atom::Cmp(op, d) => {
            if d.is_neg_inf() {
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

fn not_bool(l: &Lattice, span: Span) -> R<Lattice> {
    Ok(from_bits(to_bits(l, &BOOL, span)?.not(1), 1))
}

fn merge(a: &Guard, b: &Guard) -> Option<Guard> {
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
const MAX_PATHS: usize = 256;

fn zip2(a: &Guarded, b: &Guarded, span: Span, f: impl Fn(&Lattice, &Lattice) -> R<Lattice>) -> R<Guarded> {
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

fn map1(a: &Guarded, f: impl Fn(&Lattice) -> R<Lattice>) -> R<Guarded> {
    a.iter().map(|(g, l)| Ok((g.clone(), f(l)?))).collect()
}

/// Evaluates a body symbolically: `params` are the left and right operands.
pub fn eval(e: &Expr, params: &[Sym; 2], guards: &Guards) -> R<Sym> {
    Eval { params, locals: Vec::new(), guards }.expr(e)
}

/// Evaluates a closed expression (the identity).
pub fn eval_closed(e: &Expr, guards: &Guards) -> R<Sym> {
    let none = [Sym::Tuple(Vec::new()), Sym::Tuple(Vec::new())];
    Eval { params: &none, locals: Vec::new(), guards }.expr(e)
}

struct Eval<'p> {
    params: &'p [Sym; 2],
    locals: Vec<(String, Sym)>,
    guards: &'p Guards,
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
                let x = self.leaf(x)?;
                Sym::Leaf(map1(&x, |l| lat(l.neg()))?)
            }
            ExprKind::Unary(UnOp::Not, x) => {
                let (ty, o) = (x.ty.clone(), ones(&x.ty));
                let x = self.leaf(x)?;
                Sym::Leaf(map1(&x, |l| Ok(from_bits(to_bits(l, &ty, span)?.not(o), o)))?)
            }
            ExprKind::Binary(op, l, r) => {
                let operand_ty = l.ty.clone();
                let (a, b) = (self.leaf(l)?, self.leaf(r)?);
                Sym::Leaf(zip2(&a, &b, span, |x, y| binary(*op, x, y, &operand_ty, span))?)
            }
            ExprKind::Method(m, recv, args) => {
                let x = self.leaf(recv)?;
                let args: Vec<Guarded> = args.iter().map(|a| self.leaf(a)).collect::<R<_>>()?;
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
                self.expr(x)?
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
            ExprKind::Let { name, value, body } => {
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

fn widens(from: Scalar, to: Scalar) -> bool {
    use Scalar::*;
    from == to || matches!((from, to), (I32, I64) | (U32, U64) | (U32, I64))
}

fn lit(l: &Lit, span: Span) -> R<Lattice> {
    Ok(match l {
        Lit::Bool(b) => Lattice::constant(Rat::int(*b as i128)),
        Lit::Int(n) => Lattice::constant(Rat::int(*n)),
        Lit::Float(x) if *x == f64::INFINITY => Lattice::pos_inf(),
        Lit::Float(x) if *x == f64::NEG_INFINITY => Lattice::neg_inf(),
        Lit::Float(x) => Lattice::constant(Rat::from_f64(*x).map_err(ovf(span))?),
    })
}

fn mul(a: &Lattice, b: &Lattice, span: Span) -> R<Lattice> {
    match a.mul(b) {
        Some(r) => r.map_err(|e| lat_err(e, span)),
        // No max-plus form: the product of the two forms as atoms is still a
        // sound normal form (equal forms are equal functions).
        None => Ok(from_poly(to_poly(a, span)?.mul(&to_poly(b, span)?).map_err(ovf(span))?)),
    }
}

fn binary(op: BinOp, a: &Lattice, b: &Lattice, ty: &Ty, span: Span) -> R<Lattice> {
    let lat = |r: Result<Lattice, LatError>| r.map_err(|x| lat_err(x, span));
    let float = matches!(ty, Ty::Scalar(s) if s.is_float());
    let o = ones(ty);
    let bits = |f: fn(&BitForm, &BitForm) -> BitForm| -> R<Lattice> {
        Ok(from_bits(f(&to_bits(a, ty, span)?, &to_bits(b, ty, span)?), o))
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
fn select(cases: &[(Guard, bool)], t: &Sym, f: &Sym, span: Span, guards: &Guards) -> R<Sym> {
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

fn decide(g: &Guard) -> bool {
    let cmps = comparisons(g);
    if !cmps.is_empty() && !linear::feasible(&cmps) {
        return false;
    }
    let flags: Guard = g.iter().filter(|(a, _)| !matches!(a, Atom::Cmp(..))).map(|(a, t)| (a.clone(), *t)).collect();
    flags_feasible(&flags)
}

fn comparisons(g: &Guard) -> Vec<(CmpOp, &Lattice, bool)> {
    g.iter()
        .filter_map(|(a, t)| match a {
            Atom::Cmp(op, d) => Some((*op, &**d, *t)),
            _ => None,
        })
        .collect()
}

/// Whether two forms are equal on a path after substituting the equalities
/// its conditions imply (`a == b` on the path: `b` becomes `a`).
fn equal_under(g: &Guard, l: &Lattice, r: &Lattice) -> bool {
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

fn flags_feasible(g: &Guard) -> bool {
    let var = |a: &Atom| match a {
        Atom::Var(v) => Some(*v),
        _ => None,
    };
    let all_bool = g.keys().all(|a| match a {
        Atom::Var(v) => v.kind == VarKind::Bool,
        Atom::NonZero(b) => b.atoms().iter().all(|x| var(x).is_some_and(|v| v.kind == VarKind::Bool)),
        _ => false,
    });
    let all_int = g.keys().all(|a| match a {
        Atom::NonZero(b) => {
            b.0.iter().all(|(atoms, mask)| atoms.is_empty() || *mask == -1)
                && !matches!(b.0.get(&Vec::new()), Some(k) if *k != -1)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::testing::body;

    fn var(id: u16, kind: VarKind) -> Atom {
        Atom::Var(Var { id, kind })
    }
    fn nonzero(b: BitForm) -> Atom {
        Atom::NonZero(Box::new(b))
    }
    fn bits(a: &Atom) -> BitForm {
        let mut f = BitForm::default();
        f.0.insert(vec![a.clone()], -1);
        f
    }

    #[test]
    fn integer_flags_are_vectors_of_bits() {
        let (b, c) = (var(1, VarKind::Unsigned), var(2, VarKind::Unsigned));
        let or = bits(&b).or(&bits(&c));
        // b != 0 and (b | c) == 0: impossible.
        let g = Guard::from([(nonzero(bits(&b)), true), (nonzero(or.clone()), false)]);
        assert!(!Guards::default().feasible(&g));
        // (b | c) != 0 and c == 0: b != 0, possible.
        let g = Guard::from([(nonzero(or), true), (nonzero(bits(&c)), false)]);
        assert!(Guards::default().feasible(&g));
        // b & c == 0 with b != 0 and c != 0: different bits, possible.
        let and = bits(&b).and(&bits(&c));
        let g = Guard::from([(nonzero(and), false), (nonzero(bits(&b)), true), (nonzero(bits(&c)), true)]);
        assert!(Guards::default().feasible(&g));
    }

    #[test]
    fn boolean_flags_are_single_bits() {
        let (b, c) = (var(1, VarKind::Bool), var(2, VarKind::Bool));
        let mut and = BitForm::default();
        and.0.insert(vec![b.clone(), c.clone()], 1);
        // b && c is false, but b and c are both true: impossible for one bit.
        let g = Guard::from([(nonzero(and), false), (b, true), (c, true)]);
        assert!(!Guards::default().feasible(&g));
    }

    #[test]
    fn the_segmented_sum_splits_into_feasible_cases_only() {
        let (item, body) = body("fn seg(l: (u32, f32), r: (u32, f32)) -> (u32, f32) { (l.0 | r.0, if r.0 != 0 { r.1 } else { l.1 + r.1 }) }");
        let (mut vars, guards) = (Vars::default(), Guards::default());
        let (a, b, c) = (vars.operand("a", &item), vars.operand("b", &item), vars.operand("c", &item));
        let ab = eval(&body, &[a.clone(), b.clone()], &guards).unwrap();
        let left = eval(&body, &[ab, c.clone()], &guards).unwrap();
        let bc = eval(&body, &[b, c], &guards).unwrap();
        let right = eval(&body, &[a, bc], &guards).unwrap();
        let (l, r) = (left.leaves(), right.leaves());
        assert_eq!(l.len(), 2);
        // (a∘b)∘c: c.0 set -> c.1; else b.0 set -> b.1 + c.1; else a.1 + b.1 + c.1.
        assert_eq!(l[1].1.len(), 3);
        assert!(first_difference(l[0].1, r[0].1, &guards).is_none());
        assert!(first_difference(l[1].1, r[1].1, &guards).is_none());
    }

    #[test]
    fn struct_fields_come_from_the_body_sorted_by_name() {
        let ty = Ty::Struct { name: syn::parse_quote!(Tally), fields: Vec::new() };
        let (_, plain) = body("fn f(l: (f64, f64), r: (f64, f64)) -> (f64, f64) { (l.0 + r.0, l.1) }");
        assert_eq!(resolve_item(&ty, &plain), ty, "no struct in the body: nothing to add");
        assert!(!transcendental(&plain));
        let (_, exp) = body("fn f(a: f64, b: f64) -> f64 { (a.exp() + b).max(0.0) }");
        assert!(transcendental(&exp));
        let (_, tally) = body("fn f(l: Tally, r: Tally) -> Tally { Tally { sum: l.sum + r.sum, count: l.count } }");
        let Ty::Struct { fields, .. } = resolve_item(&ty, &tally) else { panic!("a struct") };
        let names: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["count", "sum"]);
    }

    #[test]
    fn constants_follow_the_type() {
        let i = Ty::Scalar(Scalar::I32);
        let u = Ty::Scalar(Scalar::U32);
        let f = Ty::Scalar(Scalar::F32);
        let c = |s, c| ConstName::Scalar(s, c);
        let (min, max) = (ScalarConst::Min, ScalarConst::Max);
        assert_eq!(const_value(&c(Scalar::I32, min), &Some(Lit::Int(i32::MIN as i128)), &i), Ok(ConstVal::NegInf));
        assert_eq!(const_value(&c(Scalar::U32, min), &Some(Lit::Int(0)), &u), Ok(ConstVal::Lit(Lit::Int(0))));
        assert_eq!(const_value(&c(Scalar::U32, max), &Some(Lit::Int(u32::MAX as i128)), &u), Ok(ConstVal::PosInf));
        assert_eq!(
            const_value(&c(Scalar::F32, max), &Some(Lit::Float(f32::MAX as f64)), &f),
            Ok(ConstVal::Lit(Lit::Float(f32::MAX as f64)))
        );
        let lowest = ConstName::Param("T".into(), ParamConst::Lowest);
        assert_eq!(const_value(&lowest, &None, &Ty::Param("T".into())), Ok(ConstVal::NegInf));
        let nan = const_value(&c(Scalar::F32, ScalarConst::Nan), &Some(Lit::Float(f64::NAN)), &f);
        assert_eq!(nan, Err("`f32::NAN`, which is not a real number".to_string()));
    }
}
