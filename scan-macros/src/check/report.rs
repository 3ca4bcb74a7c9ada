//! Normal forms as text, for error messages: `a - b + c`, `max(a + 1, b)`,
//! `a.0*b.0*c.0`, with the input variables by name.

use super::bits::BitForm;
use super::normal::Guard;
use super::poly::{Atom, CmpOp, Mono, Poly, Var, VarKind};
use super::rational::Rat;
use super::tropical::Lattice;
use crate::ir::{Expr, ExprKind, Lit, UnOp};

/// Prints forms whose variables are named by `names[id]`.
pub struct Printer<'n> {
    pub names: &'n [String],
}

impl Printer<'_> {
    pub fn lattice(&self, l: &Lattice) -> String {
        if l.is_neg_inf() {
            return "-inf".into();
        }
        if l.is_pos_inf() {
            return "inf".into();
        }
        // The forms are sorted by structure; people read them sorted by
        // variable, constants last: `max(a + 2, b + 2, c + 1)`, `max(a, 0)`.
        let sorted = |mut xs: Vec<(bool, String)>| {
            xs.sort();
            xs.into_iter().map(|(_, s)| s).collect::<Vec<_>>()
        };
        let piece = |p: &Poly| (p.as_const().is_some(), self.poly(p));
        let terms = sorted(
            l.0.iter()
                .map(|t| match &t[..] {
                    [p] => piece(p),
                    ps => (false, format!("min({})", sorted(ps.iter().map(piece).collect()).join(", "))),
                })
                .collect(),
        );
        match &terms[..] {
            [t] => t.clone(),
            ts => format!("max({})", ts.join(", ")),
        }
    }

    pub fn poly(&self, p: &Poly) -> String {
        if p.0.is_empty() {
            return "0".into();
        }
        if let Some(a) = p.as_atom() {
            return self.atom(a, false);
        }
        let mut out = String::new();
        // Variables first in their order, the constant last: `a - b + 1`.
        let konst = p.0.get(&Mono::default());
        let terms = p.0.iter().filter(|(m, _)| !m.0.is_empty()).chain(konst.map(|c| (&EMPTY, c)));
        for (i, (m, c)) in terms.enumerate() {
            let neg = c.signum() < 0;
            let c = if neg { c.neg() } else { *c };
            out.push_str(match (i, neg) {
                (0, true) => "-",
                (0, false) => "",
                (_, true) => " - ",
                (_, false) => " + ",
            });
            out.push_str(&self.term(m, c));
        }
        out
    }

    fn term(&self, m: &Mono, c: Rat) -> String {
        if m.0.is_empty() {
            return c.to_string();
        }
        let mono: Vec<String> =
            m.0.iter()
                .map(|(a, e)| if *e == 1 { self.atom(a, true) } else { format!("{}^{e}", self.atom(a, true)) })
                .collect();
        let mono = mono.join("*");
        match (c.num(), c.den()) {
            (1, 1) => mono,
            (n, 1) => format!("{n}*{mono}"),
            (1, d) => format!("{mono}/{d}"),
            (n, d) => format!("{n}*{mono}/{d}"),
        }
    }

    fn atom(&self, a: &Atom, nested: bool) -> String {
        let paren = |s: String| if nested { format!("({s})") } else { s };
        match a {
            Atom::Var(v) => self.var(*v),
            Atom::Poly(p) => paren(self.poly(p)),
            Atom::Bits(b) => paren(self.bits(b)),
            Atom::Lat(l) => self.lattice(l),
            Atom::NonZero(b) => paren(format!("{} != 0", self.bits(b))),
            Atom::Cmp(op, d) => paren(self.cmp(*op, d, true)),
        }
    }

    fn var(&self, v: Var) -> String {
        self.names.get(v.id as usize).cloned().unwrap_or_else(|| format!("x{}", v.id))
    }

    fn cmp(&self, op: CmpOp, d: &Lattice, holds: bool) -> String {
        let rel = match (op, holds) {
            (CmpOp::Lt, true) => "<",
            (CmpOp::Lt, false) => ">=",
            (CmpOp::Le, true) => "<=",
            (CmpOp::Le, false) => ">",
            (CmpOp::Ne, true) => "!=",
            (CmpOp::Ne, false) => "==",
        };
        format!("{} {rel} 0", self.lattice(d))
    }

    pub fn bits(&self, b: &BitForm) -> String {
        if b.0.is_empty() {
            return "0".into();
        }
        // `a | b` is `a ^ b ^ a & b` in the normal form: print it as written.
        let atoms = b.atoms();
        let all_ones = b.0.iter().all(|(xs, m)| !xs.is_empty() && (*m == -1 || *m == 1));
        if atoms.len() > 1 && atoms.len() < 16 && all_ones && b.0.len() == (1usize << atoms.len()) - 1 {
            return atoms.iter().map(|a| self.atom(a, true)).collect::<Vec<_>>().join(" | ");
        }
        let terms: Vec<String> =
            b.0.iter()
                .map(|(atoms, mask)| {
                    let mut parts: Vec<String> = atoms.iter().map(|a| self.atom(a, true)).collect();
                    let boolean = !atoms.is_empty()
                        && atoms.iter().all(|a| matches!(a, Atom::Var(Var { kind: VarKind::Bool, .. })));
                    if atoms.is_empty() || !(*mask == -1 || (boolean && *mask == 1)) {
                        // `!1` reads better than `-2` for all bits but one.
                        let m = if *mask < -1 { format!("!{}", !mask) } else { mask.to_string() };
                        parts.insert(0, m);
                    }
                    parts.join(" & ")
                })
                .collect();
        terms.join(" ^ ")
    }

    /// `c.0 == 0 && b.0 != 0`.
    pub fn guard(&self, g: &Guard) -> String {
        let lits: Vec<String> = g
            .iter()
            .map(|(a, t)| match a {
                Atom::NonZero(b) => format!("{} {} 0", self.bits(b), if *t { "!=" } else { "==" }),
                Atom::Cmp(op, d) => self.cmp(*op, d, *t),
                other if *t => self.atom(other, true),
                other => format!("!{}", self.atom(other, true)),
            })
            .collect();
        lits.join(" && ")
    }
}

static EMPTY: Mono = Mono(Vec::new());

/// An identity as the user wrote it (`0.0`, `(f32::NEG_INFINITY, 0.0)`), for
/// messages; `None` past literals, constants and their tuples/arrays/structs.
pub fn written(e: &Expr) -> Option<String> {
    let list = |xs: &[Expr]| xs.iter().map(written).collect::<Option<Vec<_>>>().map(|v| v.join(", "));
    Some(match &e.kind {
        ExprKind::Lit(Lit::Bool(b)) => b.to_string(),
        ExprKind::Lit(Lit::Int(n)) => n.to_string(),
        ExprKind::Lit(Lit::Float(x)) => format!("{x:?}"),
        ExprKind::Const { name, .. } => name.to_string(),
        ExprKind::Unary(UnOp::Neg, x) => format!("-{}", written(x)?),
        ExprKind::Unary(UnOp::Not, x) => format!("!{}", written(x)?),
        ExprKind::Tuple(xs) if xs.len() == 1 => format!("({},)", list(xs)?),
        ExprKind::Tuple(xs) => format!("({})", list(xs)?),
        ExprKind::Array(xs) => format!("[{}]", list(xs)?),
        ExprKind::Struct { name, fields } => {
            let fs: Option<Vec<String>> = fields.iter().map(|(n, x)| Some(format!("{n}: {}", written(x)?))).collect();
            format!("{} {{ {} }}", crate::lower::path_string(name), fs?.join(", "))
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        ["a", "b", "c"].map(String::from).to_vec()
    }
    fn v(id: u16) -> Lattice {
        Lattice::atom(Atom::Var(Var { id, kind: VarKind::Real }))
    }

    #[test]
    fn polynomials_read_like_the_design_example() {
        let n = names();
        let p = Printer { names: &n };
        let (a, b, c) = (v(0), v(1), v(2));
        let left = a.sub(&b).unwrap().sub(&c).unwrap();
        let right = a.sub(&b.sub(&c).unwrap()).unwrap();
        assert_eq!(p.lattice(&left), "a - b - c");
        assert_eq!(p.lattice(&right), "a - b + c");
        let prod = a.mul(&b).unwrap().unwrap().add(&Lattice::constant(Rat::int(1))).unwrap();
        assert_eq!(p.lattice(&prod), "a*b + 1");
        let half = a.scale(Rat::new(1, 2).unwrap()).unwrap().add(&b.scale(Rat::new(-3, 4).unwrap()).unwrap());
        assert_eq!(p.lattice(&half.unwrap()), "a/2 - 3*b/4");
    }

    #[test]
    fn max_min_and_infinities_print() {
        let n = names();
        let p = Printer { names: &n };
        let (a, b) = (v(0), v(1));
        let one = Lattice::constant(Rat::int(1));
        assert_eq!(p.lattice(&a.maximum(&b).add(&one).unwrap()), "max(a + 1, b + 1)");
        assert_eq!(p.lattice(&a.minimum(&b).unwrap()), "min(a, b)");
        assert_eq!(p.lattice(&Lattice::neg_inf()), "-inf");
        assert_eq!(p.lattice(&Lattice::pos_inf()), "inf");
    }

    #[test]
    fn bitwise_forms_and_guards_print() {
        let n = names();
        let p = Printer { names: &n };
        let var = |id| BitForm::atom(Atom::Var(Var { id, kind: VarKind::Unsigned }));
        assert_eq!(p.bits(&var(0).xor(&var(1))), "a ^ b");
        assert_eq!(p.bits(&var(0).and(&BitForm::constant(0xff))), "255 & a");
        assert_eq!(p.bits(&var(0).or(&var(1)).or(&var(2))), "a | b | c");
        assert_eq!(p.bits(&var(0).and(&BitForm::constant(-2))), "!1 & a");
        let mut g = Guard::new();
        g.insert(Atom::NonZero(Box::new(var(2))), false);
        assert_eq!(p.guard(&g), "c == 0");
    }
}
