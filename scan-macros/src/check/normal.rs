//! Symbolic evaluation of an operator body: the IR, applied to symbolic
//! operands, becomes one normal form per scalar component of the result.
//!
//! Each component is a list of guarded forms `(guard, form)`: a branch on a
//! condition the checker can reason about (`if r.0 != 0 { .. } else { .. }`)
//! splits the cases, and the guard records which truth values led there.
//! Two components are equal when, for every combination of guards that can
//! hold at once (`guards.rs`), the forms are equal.
//!
//! Here: the symbolic values, their variables and constants; `eval.rs` is
//! the evaluator, `convert.rs` moves a component between its lattice, bit
//! and polynomial forms, `guards.rs` decides which guards can hold at once.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

use proc_macro2::Span;

use super::bits::BitForm;
use super::linear;
use super::poly::{Atom, CmpOp, Poly, Var, VarKind};
use super::rational::{Overflow, Rat};
use super::tropical::{LatError, Lattice};
use crate::ir::{BinOp, ConstName, Expr, ExprKind, Lit, Member, Method, ParamConst, Scalar, ScalarConst, Ty, UnOp};

mod convert;
mod eval;
mod guards;

use convert::*;
use eval::*;
pub use eval::{eval, eval_closed};

/// The type parameters known to be floats (bounded by `CudaFloat`): their
/// `T::LOWEST`/`T::HIGHEST` are -inf/+inf in arithmetic too. Every other
/// parameter may be an integer, whose bounds wrap there.
#[derive(Clone, Debug, Default)]
pub struct Floats(pub Vec<String>);

impl Floats {
    /// Whether values of `ty` may be infinite: floats and float parameters;
    /// also a struct field's type where neither the identity nor the body's
    /// result shows it (`lower::operator_body`) and no other operand does
    /// (`Ty::or_seen`): no integer bound reaches such a field, since a
    /// bound's own type (`i32::MIN`) is always seen.
    pub fn has_infinities(&self, ty: &Ty) -> bool {
        match ty {
            Ty::Scalar(s) => s.is_float(),
            Ty::Param(p) => self.0.iter().any(|f| f == p),
            Ty::Field { .. } => true,
            Ty::Tuple(_) | Ty::Array(..) | Ty::Struct { .. } => false,
        }
    }
}
pub use guards::{first_difference, Guards};

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
            collect_fields(name, body, &mut fields);
            // Nested structs sorted too: the values have every struct's
            // fields by name, and the laws compare them leaf by leaf.
            let mut fields: Vec<(String, Ty)> = fields.iter().map(|(n, t)| (n.clone(), sorted_fields(t))).collect();
            fields.sort_by(|a, b| a.0.cmp(&b.0));
            fields.dedup_by(|a, b| a.0 == b.0);
            Ty::Struct { name: name.clone(), fields }
        }
        other => sorted_fields(other),
    }
}

/// `t` with the fields of the structs inside its tuples and arrays (listed
/// by the identity's literals, `valid::fields_from_identity`) sorted by name,
/// as the checker's values have them.
fn sorted_fields(t: &Ty) -> Ty {
    match t {
        Ty::Struct { name, fields } => {
            let mut fields: Vec<(String, Ty)> = fields.iter().map(|(n, t)| (n.clone(), sorted_fields(t))).collect();
            fields.sort_by(|a, b| a.0.cmp(&b.0));
            Ty::Struct { name: name.clone(), fields }
        }
        Ty::Tuple(ts) => Ty::Tuple(ts.iter().map(sorted_fields).collect()),
        Ty::Array(t, n) => Ty::Array(Box::new(sorted_fields(t)), *n),
        other => other.clone(),
    }
}

/// The fields of the item struct `item` that the body builds (in literals of
/// that struct, not of structs inside it) or reads off an operand.
fn collect_fields(item: &syn::Path, e: &Expr, out: &mut Vec<(String, Ty)>) {
    let mut add = |n: &String, t: &Ty| {
        if !out.iter().any(|(m, _)| m == n) {
            out.push((n.clone(), t.clone()));
        }
    };
    match &e.kind {
        ExprKind::Struct { name, fields } if crate::lower::same_struct(name, item) => {
            fields.iter().for_each(|(n, x)| add(n, &x.ty))
        }
        ExprKind::Field(base, Member::Named(n)) if matches!(base.kind, ExprKind::Param(_)) => add(n, &e.ty),
        _ => {}
    }
    let mut go = |x: &Expr| collect_fields(item, x, out);
    match &e.kind {
        ExprKind::Field(x, _) | ExprKind::Unary(_, x) | ExprKind::Cast(x, _) => go(x),
        ExprKind::Binary(_, a, b) => [a, b].into_iter().for_each(|x| go(x)),
        ExprKind::Method(_, r, args) => std::iter::once(&**r).chain(args).for_each(go),
        ExprKind::If { cond, then, otherwise } => [cond, then, otherwise].into_iter().for_each(|x| go(x)),
        ExprKind::Let { value, body, .. } => [value, body].into_iter().for_each(|x| go(x)),
        ExprKind::Tuple(xs) | ExprKind::Array(xs) => xs.iter().for_each(go),
        ExprKind::Struct { fields, .. } => fields.iter().for_each(|(_, x)| go(x)),
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

/// The mask of "true"/"all bits": bit 0 for booleans; an unsigned type's
/// width (`!0u32` is 2^32 - 1, not -1, and keeps that value when widened to
/// u64, where `!` then flips 64 bits); every bit of the two's complement for
/// signed types, which sign extension keeps, and for the types the checker
/// cannot see (whose constants with the sign bit set [`convert::bits_value`]
/// keeps as bit patterns).
fn ones(ty: &Ty) -> i128 {
    match ty {
        Ty::Scalar(Scalar::Bool) => 1,
        Ty::Scalar(Scalar::U32) => u32::MAX.into(),
        Ty::Scalar(Scalar::U64) => u64::MAX.into(),
        _ => -1,
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
/// integers); in arithmetic they would wrap, so the evaluator refuses an
/// infinity there unless the type has infinities ([`Floats`]). Float
/// `MIN`/`MAX` are ordinary finite numbers. Signed `MAX` and
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
        let f = Floats::default();
        let ab = eval(&body, &[a.clone(), b.clone()], &guards, &f).unwrap();
        let left = eval(&body, &[ab, c.clone()], &guards, &f).unwrap();
        let bc = eval(&body, &[b, c], &guards, &f).unwrap();
        let right = eval(&body, &[a, bc], &guards, &f).unwrap();
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
