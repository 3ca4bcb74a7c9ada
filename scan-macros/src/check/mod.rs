//! Compile-time verification of the monoid laws (associativity and identity).
//!
//! Interface used by the rest of the macro:
//!
//! * [`check`]: `Ok(())` when both laws are proven symbolically, or when the
//!   body is outside the decidable fragment, sampling found no violation and the
//!   user wrote `assume_associative`; otherwise a `syn::Error` at the user's fn
//!   (or identity) that prints both normal forms / a counterexample.
//! * [`property_test`]: with `assume_associative`, the tokens of a `#[test]`
//!   that checks both laws on random inputs in the user's crate (a generic
//!   operator at `T = f64`, when its bounds allow).
//!
//! How a law is decided, step by step:
//!
//! 1. [`normal`] evaluates both sides on symbolic operands (`a`, `b`, `c`, one
//!    variable per scalar component) into normal forms: polynomials with exact
//!    rational coefficients ([`poly`]), `max`/`min` with `+` distributing over
//!    them and `±inf` ([`tropical`]), the Boolean-ring form of `& | ^ !` ([`bits`]),
//!    case splits on flag tests and linear comparisons, impossible cases
//!    dropped ([`linear`]). Equal forms for every component: proven.
//! 2. Different forms: [`counterexample`] searches small exact inputs
//!    ([`sample`], over the rationals). Found: a compile error showing both
//!    forms and the inputs.
//! 3. Outside the fragment (division by a variable, `exp`, `ln`, float
//!    comparisons, ...) or forms the checker cannot show equal: the same search
//!    in `f64` on a wider mix of inputs, forgiving rounding. A violation is an
//!    error; otherwise the operator needs `assume_associative`.
//!
//! Everything is over the reals (integers: over the unbounded integers), so
//! floating-point rounding and integer wrap-around are never violations.

mod bits;
mod case;
mod counterexample;
mod linear;
mod normal;
mod poly;
mod property;
mod rational;
mod report;
mod sample;
#[cfg(test)]
pub(crate) mod testing;
mod tropical;

use proc_macro2::{Ident, Span, TokenStream};

use crate::ir;
use counterexample::{close_or_exact, exact, search, Found, Law};
use normal::{first_difference, Guard, Guards, Sym, Vars};
use report::Printer;
use sample::{Ext, Num};

/// Everything the checker needs to know about one operator.
pub struct OpDef<'a> {
    /// The user's fn name (`linear_recurrence`).
    pub fn_name: &'a Ident,
    /// The generated operator type (`LinearRecurrence`).
    pub type_name: &'a Ident,
    /// The item type (both parameters and the result).
    pub item: &'a ir::Ty,
    /// The body, with `ExprKind::Param(0)` the left and `Param(1)` the right operand.
    pub body: &'a ir::Expr,
    /// The identity expression.
    pub identity: &'a ir::Expr,
    /// The identity's span, for errors about the identity.
    pub identity_span: Span,
    /// `#[scan_op(..., assume_associative)]` was written.
    pub assume_associative: bool,
    /// The type parameters, when the property test can instantiate each at
    /// `f64` (see [`f64_params`]); `None`: no property test. Empty for a
    /// non-generic operator.
    pub f64_params: Option<Vec<String>>,
    /// The type parameters bounded by `CudaFloat` (see [`float_params`]).
    pub float_params: Vec<String>,
}

pub use property::{f64_params, float_params};

/// Verifies the monoid laws; see the module docs. Both laws are checked and
/// both errors reported together.
pub fn check(op: &OpDef) -> syn::Result<()> {
    let item = normal::resolve_item(op.item, op.body);
    let op = &OpDef { item: &item, f64_params: op.f64_params.clone(), float_params: op.float_params.clone(), ..*op };
    // One set of decided guards per operator, shared by both laws.
    let guards = normal::Guards::default();
    let errors: Vec<syn::Error> =
        [associativity(op, &guards), identity(op, &guards)].into_iter().filter_map(Result::err).collect();
    match errors.into_iter().reduce(|mut a, b| {
        a.combine(b);
        a
    }) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The property test generated for `assume_associative` operators.
pub fn property_test(op: &OpDef) -> TokenStream {
    if op.assume_associative {
        property::laws_test(op)
    } else {
        TokenStream::new()
    }
}

/// Starts the second line of a message (rustc indents it under the first).
const INDENT: &str = "\n";

/// Where symbolic evaluation of one law ended.
enum Symbolic {
    Proven,
    /// Forms differ: the message's first part (`(a ∘ b) ∘ c = .., but ..`),
    /// and the case it holds in (empty: always).
    Differs(String, Guard),
}

/// Compares the components of two symbolic results; `lhs`/`rhs` name the sides.
fn compare(vars: &Vars, item: &ir::Ty, sides: (&Sym, &Sym), names: (&str, &str), guards: &Guards) -> Symbolic {
    let ((left, right), (lhs, rhs)) = (sides, names);
    let p = Printer { names: &vars.names };
    let (ls, rs) = (left.leaves(), right.leaves());
    // Leaf by leaf, by path: values of two shapes (fields in two orders, or
    // missing) are never the same value.
    if ls.len() != rs.len() || ls.iter().zip(&rs).any(|((a, _), (b, _))| a != b) {
        let paths =
            |xs: &[(String, &normal::Guarded)]| xs.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>().join(", ");
        return Symbolic::Differs(
            format!("{lhs} has the components [{}], but {rhs} has [{}]", paths(&ls), paths(&rs)),
            Guard::new(),
        );
    }
    for ((path, l), (_, r)) in ls.into_iter().zip(rs) {
        if let Some((guard, fl, fr)) = first_difference(l, r, guards) {
            let mut at = String::new();
            if !matches!(item, ir::Ty::Scalar(_)) && !item.is_opaque_scalar() {
                at.push_str(&format!("in component {path}, "));
            }
            if !guard.is_empty() {
                at.push_str(&format!("when {}, ", p.guard(&guard)));
            }
            let (fl, fr) = (p.lattice(fl), p.lattice(fr));
            return Symbolic::Differs(format!("{at}{lhs} = {fl}, but {rhs} = {fr}"), guard);
        }
    }
    Symbolic::Proven
}

/// Both sides of associativity, evaluated symbolically and compared.
fn associativity_forms(op: &OpDef, guards: &Guards) -> Result<Symbolic, normal::Outside> {
    let mut vars = Vars::default();
    let floats = normal::Floats(op.float_params.clone());
    let (a, b, c) = (vars.operand("a", op.item), vars.operand("b", op.item), vars.operand("c", op.item));
    let ab = normal::eval(op.body, &[a.clone(), b.clone()], guards, &floats)?;
    let bc = normal::eval(op.body, &[b, c.clone()], guards, &floats)?;
    let left = normal::eval(op.body, &[ab, c], guards, &floats)?;
    let right = normal::eval(op.body, &[a, bc], guards, &floats)?;
    Ok(compare(&vars, op.item, (&left, &right), ("(a ∘ b) ∘ c", "a ∘ (b ∘ c)"), guards))
}

fn associativity(op: &OpDef, guards: &Guards) -> syn::Result<()> {
    let law = Law::Assoc { body: op.body };
    let symbolic = associativity_forms(op, guards);
    let name = op.fn_name;
    let span = name.span();
    let why = match symbolic {
        Ok(Symbolic::Proven) => return Ok(()),
        Ok(Symbolic::Differs(forms, case)) => match counterexample_in(op.item, law, &case) {
            Some(found) => {
                let msg = format!("`{name}` is not associative: {forms}{INDENT}e.g. {}", example(&found, law));
                return Err(syn::Error::new(span, msg));
            }
            None => (format!("forms the checker cannot show equal ({forms})"), span),
        },
        Err(outside) => (outside.why, outside.span),
    };
    let bad = format!("`{name}` is not associative");
    sampled(op, law, (span, why.1), &bad, &format!("cannot prove `{name}` associative"), &why.0)
}

fn identity(op: &OpDef, guards: &Guards) -> syn::Result<()> {
    let name = op.fn_name;
    let span = op.identity_span;
    let shown = match report::written(op.identity) {
        Some(s) => format!("`{s}`"),
        None => "the identity".to_string(),
    };
    let bad = format!("{shown} is not an identity of `{name}`");
    for left in [true, false] {
        let law = Law::Identity { body: op.body, identity: op.identity, left };
        let symbolic = (|| {
            let mut vars = Vars::default();
            let floats = normal::Floats(op.float_params.clone());
            let a = vars.operand("a", op.item);
            let e = normal::eval_closed(op.identity, guards, &floats)?;
            let operands = if left { [e, a.clone()] } else { [a.clone(), e] };
            let side = normal::eval(op.body, &operands, guards, &floats)?;
            let lhs = if left { "e ∘ a" } else { "a ∘ e" };
            Ok::<_, normal::Outside>(compare(&vars, op.item, (&side, &a), (lhs, "a"), guards))
        })();
        let why = match symbolic {
            Ok(Symbolic::Proven) => continue,
            Ok(Symbolic::Differs(forms, case)) => match counterexample_in(op.item, law, &case) {
                Some(found) => {
                    let forms = forms.replace(", but a = ", ", not ");
                    return Err(syn::Error::new(span, format!("{bad}: {forms}{INDENT}e.g. {}", example(&found, law))));
                }
                None => (format!("forms the checker cannot show equal ({forms})"), span),
            },
            Err(outside) => (outside.why, outside.span),
        };
        sampled(op, law, (span, why.1), &bad, &format!("cannot prove {shown} an identity of `{name}`"), &why.0)?;
    }
    Ok(())
}

/// Decides a law the symbolic check could not, by sampling in `f64`. A
/// violation is reported at `spans.0` (the fn or identity); the need for
/// `assume_associative` at `spans.1`, the token outside the fragment.
fn sampled(op: &OpDef, law: Law, spans: (Span, Span), bad: &str, unproven: &str, why: &str) -> syn::Result<()> {
    // Bodies with `exp`, `ln`, ... are sampled at moderate magnitudes only
    // (`exp(1e8)` saturates f64) and compared more loosely: their f64 values
    // cannot be rechecked exactly.
    let approximate = normal::transcendental(op.body);
    let tol = if approximate { 1e-6 } else { 1e-9 };
    let (found, evaluated) = search::<f64>(op.item, law, !approximate, &close_or_exact(law, tol, approximate));
    if let Some(found) = found {
        let msg = format!(
            "{bad}: e.g. {}{INDENT}(found on sampled inputs; the body uses {why}, outside what the checker proves symbolically)",
            example(&found, law)
        );
        return Err(syn::Error::new(spans.0, msg));
    }
    if op.assume_associative {
        return Ok(());
    }
    let seen = if evaluated == 0 {
        "no sampled input could be evaluated".to_string()
    } else {
        format!("{evaluated} sampled inputs show no violation")
    };
    Err(syn::Error::new(
        spans.1,
        format!(
            "{unproven}: the body uses {why}, outside what the checker decides symbolically ({seen}){INDENT}\
             if the laws hold over the reals, write `#[scan_op(..., assume_associative)]`, \
             which also generates a property test of both laws"
        ),
    ))
}

/// `a = 0, b = 0, c = 1 gives -1 vs 1`.
/// The first counterexample in `case` (the guard the message names), so
/// that the example illustrates the case it follows; else the first at all.
fn counterexample_in(item: &ir::Ty, law: Law, case: &Guard) -> Option<Found<Ext>> {
    if !case.is_empty() {
        let in_case = |operands: &[sample::Value<Ext>], l: &sample::Value<Ext>, r: &sample::Value<Ext>| {
            match case::holds(case, &case::assignment(operands)) {
                Some(false) => Some(true), // outside the case: not the example wanted
                _ => exact(operands, l, r),
            }
        };
        if let (Some(found), _) = search::<Ext>(item, law, false, &in_case) {
            return Some(found);
        }
    }
    search::<Ext>(item, law, false, &exact).0
}

fn example<N: Num>(found: &Found<N>, law: Law) -> String {
    let names: &[&str] = match law {
        Law::Assoc { .. } => &["a", "b", "c"],
        Law::Identity { .. } => &["a"],
    };
    let inputs: Vec<String> = names.iter().zip(&found.operands).map(|(n, v)| format!("{n} = {v}")).collect();
    format!("{} gives {} vs {}", inputs.join(", "), found.left, found.right)
}

#[cfg(test)]
mod tests;
