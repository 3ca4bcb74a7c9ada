//! The checker end to end, on operators lowered by the macro's own `lower`.

use std::time::{Duration, Instant};

use super::testing::op;

fn accepted(src: &str, identity: &str) {
    if let Err(msg) = op(src, identity).check() {
        panic!("rejected `{src}` with identity `{identity}`:\n{msg}");
    }
}

fn rejected(src: &str, identity: &str) -> String {
    match op(src, identity).check() {
        Ok(()) => panic!("accepted `{src}` with identity `{identity}`"),
        Err(msg) => {
            // Visible with `--nocapture`: read the messages, not only the asserts.
            eprintln!("{msg}");
            msg
        }
    }
}

/// The checker's time on an accepted operator: the least of a few runs, so
/// that a busy machine does not inflate the figure.
fn cost(o: &super::testing::Op) -> Duration {
    (0..5)
        .map(|_| {
            let start = Instant::now();
            assert_eq!(o.check(), Ok(()), "{}", o.name);
            start.elapsed()
        })
        .min()
        .unwrap_or_default()
}

/// Every rejection must name inputs and the two values they give.
fn names_a_counterexample(msg: &str) {
    assert!(msg.contains("e.g. a = ") && msg.contains(" gives ") && msg.contains(" vs "), "{msg}");
}

const ADD: &str = "fn add<T: CudaScalar>(a: T, b: T) -> T { a + b }";
const MUL: &str = "fn mul<T: CudaScalar>(a: T, b: T) -> T { a * b }";
const MAX: &str = "fn max<T: CudaScalar>(a: T, b: T) -> T { a.max(b) }";
const MIN: &str = "fn min<T: CudaScalar>(a: T, b: T) -> T { a.min(b) }";
const LINEAR: &str =
    "fn linear_recurrence<T: CudaFloat>(l: (T, T), r: (T, T)) -> (T, T) { (l.0 * r.0, r.0 * l.1 + r.1) }";
const MATMUL: &str = "fn mat_mul_2x2<T: CudaScalar>(l: [T; 4], r: [T; 4]) -> [T; 4] {
    [l[0] * r[0] + l[1] * r[2], l[0] * r[1] + l[1] * r[3], l[2] * r[0] + l[3] * r[2], l[2] * r[1] + l[3] * r[3]]
}";
const SEGMENTED_U32: &str =
    "fn seg(l: (u32, f32), r: (u32, f32)) -> (u32, f32) { (l.0 | r.0, if r.0 != 0 { r.1 } else { l.1 + r.1 }) }";
const SEGMENTED_BOOL: &str =
    "fn seg<T: CudaScalar>(l: (bool, T), r: (bool, T)) -> (bool, T) { (l.0 | r.0, if r.0 { r.1 } else { l.1 + r.1 }) }";
const BEST_PREFIX: &str = "fn best(l: (f32, f32), r: (f32, f32)) -> (f32, f32) { (l.0.max(l.1 + r.0), l.1 + r.1) }";
const BEST_PREFIX_CORE: &str =
    "fn best_prefix<T: CudaFloat>(l: (T, T), r: (T, T)) -> (T, T) { (l.0 + r.0, l.1.max(l.0 + r.1)) }";

#[test]
fn accepts_the_built_in_operators_without_opt_in() {
    accepted(ADD, "T::ZERO");
    accepted(MUL, "T::ONE");
    accepted(MAX, "T::LOWEST");
    accepted(MIN, "T::HIGHEST");
    accepted("fn and<T: CudaScalar>(a: T, b: T) -> T { a & b }", "!T::ZERO");
    accepted("fn or<T: CudaScalar>(a: T, b: T) -> T { a | b }", "T::ZERO");
    accepted("fn xor<T: CudaScalar>(a: T, b: T) -> T { a ^ b }", "T::ZERO");
    accepted(LINEAR, "(T::ONE, T::ZERO)");
    accepted(MATMUL, "[T::ONE, T::ZERO, T::ZERO, T::ONE]");
    accepted(BEST_PREFIX_CORE, "(T::ZERO, T::LOWEST)");
}

#[test]
fn accepts_concrete_scalar_operators() {
    accepted("fn add(a: i32, b: i32) -> i32 { a.wrapping_add(b) }", "0");
    accepted("fn mul(a: u64, b: u64) -> u64 { a.wrapping_mul(b) }", "1");
    accepted("fn max(a: f32, b: f32) -> f32 { a.max(b) }", "f32::NEG_INFINITY");
    accepted("fn max(a: i32, b: i32) -> i32 { a.max(b) }", "i32::MIN");
    accepted("fn max(a: u32, b: u32) -> u32 { a.max(b) }", "0");
    accepted("fn min(a: f64, b: f64) -> f64 { a.min(b) }", "f64::INFINITY");
    accepted("fn min(a: u32, b: u32) -> u32 { a.min(b) }", "u32::MAX");
    accepted("fn and(a: u32, b: u32) -> u32 { a & b }", "u32::MAX");
    accepted("fn and(a: bool, b: bool) -> bool { a && b }", "true");
    accepted("fn or(a: bool, b: bool) -> bool { a || b }", "false");
    accepted("fn ne(a: bool, b: bool) -> bool { a != b }", "false");
    accepted("fn eq(a: bool, b: bool) -> bool { a == b }", "true");
    // Complex multiplication.
    accepted(
        "fn cmul(l: (f64, f64), r: (f64, f64)) -> (f64, f64) { (l.0 * r.0 - l.1 * r.1, l.0 * r.1 + l.1 * r.0) }",
        "(1.0, 0.0)",
    );
    // Min-plus best suffix, with the min written as a method on an expression.
    accepted(
        "fn ms(l: (f64, f64), r: (f64, f64)) -> (f64, f64) { ((l.0 + r.1).min(r.0), l.1 + r.1) }",
        "(f64::INFINITY, 0.0)",
    );
    accepted("fn xor(a: u64, b: u64) -> u64 { a ^ b }", "0");
}

#[test]
fn accepts_the_segmented_sum_by_splitting_on_its_flag() {
    accepted(SEGMENTED_U32, "(0, 0.0)");
    accepted(SEGMENTED_BOOL, "(false, T::ZERO)");
}

#[test]
fn accepts_the_best_prefix_monoid_with_identity_neg_inf_zero() {
    accepted(BEST_PREFIX, "(f32::NEG_INFINITY, 0.0)");
}

#[test]
fn accepts_richer_forms_of_the_fragment() {
    // Affine maps compose (a 1-D linear recurrence written the other way round).
    accepted("fn aff(l: (f64, f64), r: (f64, f64)) -> (f64, f64) { (r.0 * l.0, r.0 * l.1 + r.1) }", "(1.0, 0.0)");
    // Tropical matrix product (max-plus 2x2).
    accepted(
        "fn trop(l: [f64; 4], r: [f64; 4]) -> [f64; 4] {
            [(l[0] + r[0]).max(l[1] + r[2]), (l[0] + r[1]).max(l[1] + r[3]),
             (l[2] + r[0]).max(l[3] + r[2]), (l[2] + r[1]).max(l[3] + r[3])]
        }",
        "[0.0, f64::NEG_INFINITY, f64::NEG_INFINITY, 0.0]",
    );
    // let bindings, mul_add, and constant scaling by a negative number twice.
    accepted("fn s(a: f64, b: f64) -> f64 { let t = -(-a); t.mul_add(1.0, b) }", "0.0");
    // (min, max) pairs; count with a sum.
    accepted(
        "fn mm(l: (f32, f32, u32), r: (f32, f32, u32)) -> (f32, f32, u32) { (l.0.min(r.0), l.1.max(r.1), l.2 + r.2) }",
        "(f32::INFINITY, f32::NEG_INFINITY, 0)",
    );
    // Division by a constant is exact over the reals.
    accepted("fn half(a: f64, b: f64) -> f64 { (a * 2.0 + b * 2.0) / 2.0 }", "0.0");
}

/// Integer bounds are -inf/+inf under `max`/`min` only: met by `+`, `-`,
/// `*`, `abs` or a cast they are the finite bounds they are, and wrap. An
/// integer best prefix with `(0, i32::MIN)` was "proven" (`l.0 + i32::MIN`
/// taken as -inf) and scanned wrong: `(-1, 5) ∘ e = (-1, i32::MAX)`. Float
/// infinities, and the bounds of a `T: CudaFloat`, keep their arithmetic.
#[test]
fn integer_bounds_in_arithmetic_are_not_infinities() {
    let best_i32 = "fn best(l: (i32, i32), r: (i32, i32)) -> (i32, i32) { (l.0 + r.0, l.1.max(l.0 + r.1)) }";
    let msg = rejected(best_i32, "(0, i32::MIN)");
    assert!(msg.contains("wrap") && msg.contains("assume_associative"), "{msg}");
    let generic = "fn best<T: CudaScalar>(l: (T, T), r: (T, T)) -> (T, T) { (l.0 + r.0, l.1.max(l.0 + r.1)) }";
    let msg = rejected(generic, "(T::ZERO, T::LOWEST)");
    assert!(msg.contains("wrap"), "{msg}");
    // Each accepted before: `+` of `u32::MAX`, `*` of `i64::MIN`, and
    // `i32::MIN as f64` taken as -inf (it is -2^31: `max(a.0, -2^31)` is
    // not `a.0` below it).
    for (src, identity) in [
        ("fn f(l: (u32, u32), r: (u32, u32)) -> (u32, u32) { (l.0 + r.0, l.1.min(l.0 + r.1)) }", "(0, u32::MAX)"),
        ("fn f(l: (i64, i64), r: (i64, i64)) -> (i64, i64) { (l.0 + r.0, l.1.max(l.0 + r.1 * 1)) }", "(0, i64::MIN)"),
        (
            "fn f(l: (f64, i32), r: (f64, i32)) -> (f64, i32) { (l.0.max(r.0), l.1.max(r.1)) }",
            "(i32::MIN as f64, i32::MIN)",
        ),
    ] {
        let msg = rejected(src, identity);
        assert!(msg.contains("wrap"), "{src}: {msg}");
    }
    // Still proven: the bounds under max/min alone, float infinities in
    // arithmetic, and a float parameter's bounds (also in a where clause).
    accepted("fn max(a: i32, b: i32) -> i32 { a.max(b) }", "i32::MIN");
    accepted(
        "fn f(l: (i64, u32), r: (i64, u32)) -> (i64, u32) { (l.0.max(r.0), l.1.min(r.1)) }",
        "(i64::MIN, u32::MAX)",
    );
    accepted(
        "fn best(l: (f32, f32), r: (f32, f32)) -> (f32, f32) { (l.0 + r.0, l.1.max(l.0 + r.1)) }",
        "(0.0, f32::NEG_INFINITY)",
    );
    accepted(BEST_PREFIX_CORE, "(T::ZERO, T::LOWEST)");
    accepted(
        "fn best<T>(l: (T, T), r: (T, T)) -> (T, T) where T: CudaFloat { (l.0 + r.0, l.1.max(l.0 + r.1)) }",
        "(T::ZERO, T::LOWEST)",
    );
}

#[test]
fn accepts_branches_on_linear_comparisons() {
    // A maximum written as a branch, paired with a count.
    accepted(
        "fn count_max(l: (u32, i64), r: (u32, i64)) -> (u32, i64) { (l.0 + r.0, if l.1 > r.1 { l.1 } else { r.1 }) }",
        "(0, i64::MIN)",
    );
    // Ties broken towards the left, through casts, `abs` of unsigned values and a nested `if`.
    accepted(
        "fn max_clamped(a: u32, b: u32) -> u32 {
            let fa = a as f64;
            let fb = b as f64;
            if fa.abs() > fb.abs() { a } else if fa == fb { a } else { b }
        }",
        "0",
    );
    // The same with `max` on the tie.
    let o = op(
        "fn max_clamped(a: u32, b: u32) -> u32 {
            let fa = a as f64;
            let fb = b as f64;
            if fa.abs() > fb.abs() { a } else if fa < fb { b } else { a.max(b) }
        }",
        "0",
    );
    eprintln!("checker cost max_clamped: {:.3} ms", cost(&o).as_secs_f64() * 1e3);
    // A segmented sum whose flag counts segment starts; lets in both branches.
    let o = op(
        "fn counted_segments(l: (u32, f64), r: (u32, f64)) -> (u32, f64) {
            if r.0 > 0 { let n = l.0 + r.0; (n, r.1) } else { let n = l.0; (n, l.1 + r.1) }
        }",
        "(0, 0.0)",
    );
    eprintln!("checker cost counted_segments: {:.3} ms", cost(&o).as_secs_f64() * 1e3);

    // argmax on (value, index) pairs, the later index on ties.
    accepted(
        "fn argmax(l: (f32, u32), r: (f32, u32)) -> (f32, u32) { if r.0 >= l.0 { r } else { l } }",
        "(f32::NEG_INFINITY, 0)",
    );
}

#[test]
fn a_branch_that_breaks_associativity_is_rejected() {
    // Keeps the right operand only when it is larger by more than 1: not associative.
    let msg = rejected("fn f(a: f64, b: f64) -> f64 { if b > a + 1.0 { b } else { a } }", "f64::NEG_INFINITY");
    assert!(msg.contains("when "), "{msg}");
    names_a_counterexample(&msg);
}

#[test]
fn rejects_sub_with_the_design_message() {
    let msg = rejected("fn sub(a: f32, b: f32) -> f32 { a - b }", "0.0");
    assert!(msg.contains("`sub` is not associative: (a ∘ b) ∘ c = a - b - c, but a ∘ (b ∘ c) = a - b + c"), "{msg}");
    assert!(msg.contains("e.g. a = 0, b = 0, c = 1 gives -1 vs 1"), "{msg}");
}

#[test]
fn rejects_each_non_associative_body_with_a_counterexample() {
    for (src, identity, forms) in [
        ("fn avg(a: f32, b: f32) -> f32 { (a + b) / 2.0 }", "0.0", "a/4 + b/4 + c/2"),
        ("fn f(a: i32, b: i32) -> i32 { a * b + 1 }", "0", "a*b*c + c + 1"),
        ("fn f(a: i32, b: i32) -> i32 { 2 * a + b }", "0", "4*a + 2*b + c"),
        ("fn f(a: f32, b: f32) -> f32 { a.max(b) + 1.0 }", "f32::NEG_INFINITY", "max(a + 2, b + 2, c + 1)"),
        ("fn f(l: (f32, f32), r: (f32, f32)) -> (f32, f32) { (l.0 + r.0, l.1 * r.0) }", "(0.0, 1.0)", "component .1"),
        ("fn f(a: u32, b: u32) -> u32 { a | b ^ 1 }", "0", "^"),
    ] {
        let msg = rejected(src, identity);
        assert!(msg.contains("is not associative"), "{msg}");
        assert!(msg.contains(forms), "{src}: expected `{forms}` in {msg}");
        names_a_counterexample(&msg);
    }
}

#[test]
fn rejects_wrong_identities_with_a_counterexample() {
    let msg = rejected("fn add(a: i32, b: i32) -> i32 { a + b }", "1");
    assert!(msg.contains("`1` is not an identity of `add`: e ∘ a = a + 1, not a"), "{msg}");
    assert!(msg.contains("e.g. a = 0 gives 1 vs 0"), "{msg}");
    let msg = rejected("fn max(a: f32, b: f32) -> f32 { a.max(b) }", "0.0");
    assert!(msg.contains("`0.0` is not an identity of `max`: e ∘ a = max(a, 0), not a"), "{msg}");
    assert!(msg.contains("e.g. a = -1 gives 0 vs -1"), "{msg}");
    // Only the right identity law fails here: e ∘ a = a, a ∘ e = 0.
    let msg = rejected("fn right(a: f64, b: f64) -> f64 { a * b * b }", "0.0");
    names_a_counterexample(&msg);
    let msg = rejected(BEST_PREFIX, "(0.0, 0.0)");
    assert!(msg.contains("component .0"), "{msg}");
    names_a_counterexample(&msg);
}

#[test]
fn a_wrong_segmented_sum_is_rejected_with_its_branch_condition() {
    // Resets on the left flag instead of the right one.
    let msg = rejected(
        "fn seg(l: (u32, f32), r: (u32, f32)) -> (u32, f32) { (l.0 | r.0, if l.0 != 0 { r.1 } else { l.1 + r.1 }) }",
        "(0, 0.0)",
    );
    assert!(msg.contains("when "), "{msg}");
    names_a_counterexample(&msg);
}

#[test]
fn outside_the_fragment_needs_assume_associative() {
    // Associative over the reals (1/x adds) but a division by a variable.
    let src = "fn harmonic(a: f64, b: f64) -> f64 { a * b / (a + b) }";
    let msg = rejected(src, "f64::INFINITY");
    assert!(msg.contains("cannot prove `harmonic` associative: the body uses division by a non-constant"), "{msg}");
    assert!(msg.contains("assume_associative"), "{msg}");
    let mut o = op(src, "f64::INFINITY");
    o.assume = true;
    // The identity inf: inf * b / (inf + b) has no value, so it is sampled too
    // and not provable; with the opt-in both laws pass.
    assert_eq!(o.check(), Ok(()));
    // log-sum-exp is associative over the reals; exp/ln are outside.
    let mut lse = op("fn lse(a: f64, b: f64) -> f64 { (a.exp() + b.exp()).ln() }", "f64::NEG_INFINITY");
    let msg = lse.check().expect_err("needs the opt-in");
    assert!(msg.contains("`exp`"), "{msg}");
    lse.assume = true;
    assert_eq!(lse.check(), Ok(()));
}

#[test]
fn outside_the_fragment_a_sampled_violation_is_an_error_even_with_the_opt_in() {
    let mut o = op("fn f(a: f64, b: f64) -> f64 { (a.exp() + b).ln() }", "0.0");
    o.assume = true;
    let msg = o.check().expect_err("not associative");
    assert!(msg.contains("`f` is not associative: e.g. a = "), "{msg}");
    assert!(msg.contains("found on sampled inputs"), "{msg}");
    let mut o = op("fn f(a: f64, b: f64) -> f64 { if a < b { a - b } else { b - a } }", "0.0");
    o.assume = true;
    names_a_counterexample(&o.check().expect_err("not associative"));
}

#[test]
fn property_test_is_generated_only_with_the_opt_in_and_concrete_types() {
    let mut o = op("fn lse(a: f64, b: f64) -> f64 { (a.exp() + b.exp()).ln() }", "f64::NEG_INFINITY");
    assert!(super::property_test(&o.def()).is_empty());
    o.assume = true;
    let tokens = super::property_test(&o.def()).to_string();
    assert!(tokens.contains("__scan_op_laws_of_lse"), "{tokens}");
    assert!(tokens.contains(":: scan_core :: ScanOp"), "{tokens}");
    // Parses as an item.
    syn::parse_str::<syn::ItemFn>(&tokens).expect("a test fn");
    // A user struct: the fields come from the body; their scalars from rustc.
    let mut s = op(
        "fn count_sum(l: Tally, r: Tally) -> Tally { Tally { count: l.count + r.count, sum: l.sum + r.sum } }",
        "Tally { sum: 0.0, count: 0 }",
    );
    assert_eq!(s.check(), Ok(()), "struct fields are compared by name");
    // `self::Tally` is `Tally` (it was "expected self::Tally, found Tally").
    accepted(
        "fn count(l: self::Tally, r: self::Tally) -> self::Tally { Tally { count: l.count + r.count } }",
        "self::Tally { count: 0 }",
    );
    s.assume = true;
    let tokens = super::property_test(&s.def()).to_string();
    assert!(tokens.contains("Tally { count : __small (& mut rng) , sum : __small (& mut rng) }"), "{tokens}");
    // A generic operator bound by `CudaScalar` only: tested at `T = f64`.
    let mut g = op(SEGMENTED_BOOL, "(false, T::ZERO)");
    g.assume = true;
    let tokens = super::property_test(&g.def()).to_string();
    assert!(tokens.contains("type __Op = Seg < f64 >"), "{tokens}");
    assert!(tokens.contains("rng . range_f64 (- 4.0 , 4.0)"), "{tokens}");
    syn::parse_str::<syn::ItemFn>(&tokens).expect("a test fn");
    // A bound of the user's own may exclude f64: no test.
    let src = "fn seg<T: CudaScalar + MyBound>(l: (bool, T), r: (bool, T)) -> (bool, T) { (l.0 | r.0, if r.0 { r.1 } else { l.1 + r.1 }) }";
    let mut u = op(src, "(false, T::ZERO)");
    u.assume = true;
    assert!(super::property_test(&u.def()).is_empty(), "`MyBound` may exclude f64");
}

/// Compile-time cost: the checker on each built-in stays far below 50 ms.
/// Prints the figures (`cargo test -p scan-macros checker_cost -- --nocapture`).
#[test]
fn checker_cost_per_built_in_is_under_50_ms() {
    let cases = [
        ("add", ADD, "T::ZERO"),
        ("mul", MUL, "T::ONE"),
        ("max", MAX, "T::LOWEST"),
        ("min", MIN, "T::HIGHEST"),
        ("and", "fn and<T: CudaScalar>(a: T, b: T) -> T { a & b }", "!T::ZERO"),
        ("or", "fn or<T: CudaScalar>(a: T, b: T) -> T { a | b }", "T::ZERO"),
        ("xor", "fn xor<T: CudaScalar>(a: T, b: T) -> T { a ^ b }", "T::ZERO"),
        ("linear_recurrence", LINEAR, "(T::ONE, T::ZERO)"),
        ("mat_mul_2x2", MATMUL, "[T::ONE, T::ZERO, T::ZERO, T::ONE]"),
        ("segmented_add", SEGMENTED_BOOL, "(false, T::ZERO)"),
        ("best_prefix", BEST_PREFIX_CORE, "(T::ZERO, T::LOWEST)"),
    ];
    for (name, src, identity) in cases {
        let each = cost(&op(src, identity));
        eprintln!("checker cost {name:>18}: {:>8.3} ms", each.as_secs_f64() * 1e3);
        assert!(each < Duration::from_millis(50), "{name}: {each:?}");
    }
}

/// The sampled path (bodies outside the fragment, with the opt-in) costs more:
/// a few thousand evaluations. Printed for the record; bounded loosely.
#[test]
fn checker_cost_of_sampled_operators() {
    let cases = [
        ("log_add_exp", "fn log_add_exp(a: f64, b: f64) -> f64 { (a.exp() + b.exp()).ln() }", "f64::NEG_INFINITY"),
        ("harmonic", "fn harmonic(a: f64, b: f64) -> f64 { a * b / (a + b) }", "f64::INFINITY"),
        (
            "count_sum",
            "fn count_sum(l: Tally, r: Tally) -> Tally { Tally { count: l.count + r.count, sum: l.sum + r.sum } }",
            "Tally { sum: 0.0, count: 0 }",
        ),
    ];
    for (name, src, identity) in cases {
        let mut o = op(src, identity);
        o.assume = true;
        let t = cost(&o);
        eprintln!("checker cost {name:>18}: {:>8.3} ms", t.as_secs_f64() * 1e3);
        assert!(t < Duration::from_millis(500), "{name}: {t:?}");
    }
}

/// Larger items stay cheap: the 3x3 max-plus (tropical) matrix product, and the
/// 3x3 ordinary one, 27 variables each.
#[test]
fn three_by_three_matrix_products_are_proven_quickly() {
    let entry = |i: usize, j: usize, tropical: bool| {
        let terms: Vec<String> = (0..3)
            .map(|k| {
                if tropical {
                    format!("(l[{}] + r[{}])", 3 * i + k, 3 * k + j)
                } else {
                    format!("l[{}] * r[{}]", 3 * i + k, 3 * k + j)
                }
            })
            .collect();
        if tropical {
            format!("{}.max({}).max({})", terms[0], terms[1], terms[2])
        } else {
            terms.join(" + ")
        }
    };
    for tropical in [true, false] {
        let entries: Vec<String> = (0..9).map(|n| entry(n / 3, n % 3, tropical)).collect();
        let src = format!("fn m(l: [f64; 9], r: [f64; 9]) -> [f64; 9] {{ [{}] }}", entries.join(", "));
        let (one, zero) = if tropical { ("0.0", "f64::NEG_INFINITY") } else { ("1.0", "0.0") };
        let identity: Vec<&str> = (0..9).map(|n| if n % 4 == 0 { one } else { zero }).collect();
        let t = cost(&op(&src, &format!("[{}]", identity.join(", "))));
        eprintln!(
            "checker cost 3x3 {}: {:.3} ms",
            if tropical { "max-plus" } else { "ordinary" },
            t.as_secs_f64() * 1e3
        );
        assert!(t < Duration::from_millis(50), "{t:?}");
    }
}

/// The example after "when <case>, ..." is one of the case's inputs (it used
/// to be the first failing input of any case: `b = (0, 0)` under
/// `b.0 != 0`).
#[test]
fn the_example_lies_in_the_case_the_message_names() {
    use super::{associativity_forms, case, counterexample::Law, counterexample_in, normal::Guards, Symbolic};
    let cases = [
        ("fn f(l: (u32, f32), r: (u32, f32)) -> (u32, f32) { (l.0 | r.0, if r.0 == 0 { l.1 + r.1 } else { r.1 * 2.0 }) }", "(0, 0.0)"),
        ("fn f(a: f64, b: f64) -> f64 { if a > b { a - 1.0 } else { b } }", "f64::NEG_INFINITY"),
        ("fn f(l: (bool, i32), r: (bool, i32)) -> (bool, i32) { (l.0 || r.0, if l.0 && !r.0 { l.1 } else { l.1 + r.1 }) }", "(false, 0)"),
        ("fn f(l: (bool, f32), r: (bool, f32)) -> (bool, f32) { (l.0 && r.0, if l.0 { r.1 } else { l.1.max(r.1) }) }", "(true, f32::NEG_INFINITY)"),
        ("fn f(a: f64, b: f64) -> f64 { if b > a + 1.0 { b } else { a } }", "f64::NEG_INFINITY"),
    ];
    for (src, identity) in cases {
        let o = op(src, identity);
        let def = o.def();
        let Ok(Symbolic::Differs(forms, guard)) = associativity_forms(&def, &Guards::default()) else {
            panic!("{src}: expected a symbolic difference");
        };
        assert!(!guard.is_empty(), "{src}: {forms}");
        let found = counterexample_in(def.item, Law::Assoc { body: def.body }, &guard).expect("an example");
        assert_eq!(case::holds(&guard, &case::assignment(&found.operands)), Some(true), "{src}: {forms}");
        // And the whole message says so.
        let msg = rejected(src, identity);
        assert!(msg.contains("when ") && msg.contains("e.g. "), "{msg}");
    }
}

#[test]
fn integer_bounds_in_struct_fields_are_not_infinities() {
    // The macro never sees a struct's declaration: `best` is an `i32` by the
    // identity's `i32::MIN`, `total` (an untyped `0`) is unseen. rustc makes
    // both operands of `+` one type, so `l.total + r.best` is an `i32` sum
    // that wraps (it was taken for a float sum with -inf, and proven).
    let best =
        "fn best(l: Best, r: Best) -> Best { Best { total: l.total + r.total, best: l.best.max(l.total + r.best) } }";
    let msg = rejected(best, "Best { total: 0, best: i32::MIN }");
    assert!(msg.contains("wrap") && msg.contains("assume_associative"), "{msg}");
    // The fields in the other order, and a cast of the bound.
    let swapped =
        "fn best(l: Best, r: Best) -> Best { Best { best: l.best.max(r.best + l.total), total: r.total + l.total } }";
    assert!(rejected(swapped, "Best { best: i32::MIN, total: 0 }").contains("wrap"));
    let cast = "fn m(l: M, r: M) -> M { M { x: l.x.max(r.x), y: (l.x as f64).max(r.y) } }";
    assert!(rejected(cast, "M { x: i32::MIN, y: f64::NEG_INFINITY }").contains("wrap"));
    // Still proven: the same on floats, and integer bounds under max alone.
    accepted(best, "Best { total: 0.0, best: f32::NEG_INFINITY }");
    accepted("fn m(l: M, r: M) -> M { M { n: l.n + r.n, hi: l.hi.max(r.hi) } }", "M { n: 0, hi: i64::MIN }");
}

#[test]
fn integer_bounds_in_comparisons_are_not_infinities() {
    // Each was proven, and scanned wrong: `x > i32::MIN` is false at
    // `x = MIN` but true of every x against -inf (a helper's review:
    // -2147483647, -1, 1 gave 1 one way and -2147483647 the other).
    for (src, identity) in [
        ("fn r(a: i32, b: i32) -> i32 { if a > i32::MIN { a + b } else { b } }", "0"),
        ("fn r(a: u32, b: u32) -> u32 { if b < u32::MAX { a.max(b) } else { a } }", "0"),
        ("fn r<T: CudaScalar>(a: T, b: T) -> T { if a > T::LOWEST { a + b } else { b } }", "T::ZERO"),
        ("fn r(l: S, r: S) -> S { S { x: if l.x > i64::MIN { l.x + r.x } else { r.x } } }", "S { x: 0 }"),
        ("fn r(a: i32, b: i32) -> i32 { if a.min(i32::MIN) < a { a + b } else { b } }", "0"),
    ] {
        let msg = rejected(src, identity);
        assert!(msg.contains("comparison") || msg.contains("gives"), "{src}: {msg}");
    }
    // A branch that picks the larger or smaller of what it compares is
    // `max`/`min` at a tie too, so a bound identity still proves it.
    accepted(
        "fn m(l: (u32, i64), r: (u32, i64)) -> (u32, i64) { (l.0 + r.0, if l.1 > r.1 { l.1 } else { r.1 }) }",
        "(0, i64::MIN)",
    );
    accepted("fn m(a: u32, b: u32) -> u32 { if a <= b { a } else { b } }", "u32::MAX");
    accepted("fn m(a: i32, b: i32) -> i32 { if b < a { a } else { b } }", "i32::MIN");
    // Float infinities are values: `inf == a` is false for a finite `a`
    // (it was folded to true, which made this a left projection).
    accepted("fn f(a: f32, b: f32) -> f32 { if f32::INFINITY == a { a } else { a + b } }", "0.0");
}

#[test]
fn unsigned_bit_patterns_have_their_width() {
    // `!0u32` is 2^32 - 1, not -1 (which `max` dropped: e ∘ 5 gave 4294967295).
    for (src, identity) in [
        ("fn p(a: u32, b: u32) -> u32 { a.max(b).max(!0u32) }", "0"),
        ("fn p(a: u32, b: u32) -> u32 { a.max(b).max(u32::MAX | a) }", "0"),
        ("fn p(a: u64, b: u64) -> u64 { a.max(b).max(!0) }", "0"),
        ("fn q(a: u32, b: u32) -> u32 { if b < !0u32 { a } else { a.max(b) } }", "0"),
        (
            "fn q(l: (u32, f64), r: (u32, f64)) -> (u32, f64) { (l.0 | r.0, l.1 + r.1 + ((!0u32) as f64) + 1.0) }",
            "(0, 0.0)",
        ),
        // Widened, `!x` of a u32 is not `!` of the u64 (2^64 - 2^32 apart).
        (
            "fn p(l: (u32, u64), r: (u32, u64)) -> (u32, u64) { (l.0 | r.0, l.1.max(r.1).max(!(l.0 as u64) - ((!l.0) as u64))) }",
            "(0, 0)",
        ),
    ] {
        rejected(src, identity);
    }
    // Still proven: all ones as the identity of `&`, seen or generic, and flags.
    accepted("fn and(a: u32, b: u32) -> u32 { a & b }", "u32::MAX");
    accepted("fn and(a: u64, b: u64) -> u64 { a & b }", "!0");
    accepted("fn and<T: CudaScalar>(a: T, b: T) -> T { a & b }", "!T::ZERO");
    accepted(SEGMENTED_U32, "(0, 0.0)");
}

#[test]
fn a_bool_cast_to_an_integer_keeps_its_high_bits_in_tests() {
    // `r.0 as u32 == 2` is never true, so this is `if r.0 { r.1 } else
    // { l.1 - r.1 }`: the checker took `(b ^ 2) != 0` by its bit 0 and
    // called the real `else` infeasible (a helper's review).
    let src = "fn seg(l: (bool, f64), r: (bool, f64)) -> (bool, f64) {
        (l.0 | r.0, if r.0 { r.1 } else if r.0 as u32 == 2 { l.1 + r.1 } else { l.1 - r.1 })
    }";
    rejected(src, "(false, 0.0)");
    rejected(&src.replace("r.0 as u32 == 2", "((r.0 as u32) | 2) == 0"), "(false, 0.0)");
    // Bit-0 tests of flags still decide: the segmented sum.
    accepted(SEGMENTED_BOOL, "(false, T::ZERO)");
    accepted(&src.replace("r.0 as u32 == 2", "r.0 as u32 == 0"), "(false, 0.0)");
}

#[test]
fn the_lowering_s_own_bindings_cannot_be_named() {
    // A destructuring `let` bound its tuple as `tuple`, which the user's
    // `tuple` then named: the checker proved the sum in the second `let`
    // while the fn subtracts.
    let captured = "fn captured(l: (f64, f64), r: (f64, f64)) -> (f64, f64) {
        let tuple = (l.0 - r.0, l.1 - r.1);
        let (_s, _t) = (l.0 + r.0, l.1 + r.1);
        tuple
    }";
    rejected(captured, "(0.0, 0.0)");
    // A parameter named `tuple` beside a destructured one: associative.
    accepted(
        "fn f(tuple: (f64, f64), r: (f64, f64)) -> (f64, f64) { let (x, y) = r; (tuple.0 + x, tuple.1 * y) }",
        "(0.0, 1.0)",
    );
}

#[test]
fn nested_struct_fields_are_compared_by_name() {
    // The split-complex product: its identity is x = 1, y = 0. The nested
    // struct's fields kept the identity's order while the body's values had
    // them by name, so `Q { y: 1.0, x: 0.0 }` (j, not 1) was proven.
    let split = "fn split(l: P, r: P) -> P {
        P { inner: Q { x: l.inner.x * r.inner.x + l.inner.y * r.inner.y, y: l.inner.x * r.inner.y + l.inner.y * r.inner.x } }
    }";
    rejected(split, "P { inner: Q { y: 1.0, x: 0.0 } }");
    rejected(split, "P { inner: Q { x: 0.0, y: 1.0 } }");
    accepted(split, "P { inner: Q { y: 0.0, x: 1.0 } }");
    accepted(split, "P { inner: Q { x: 1.0, y: 0.0 } }");
    // A nested literal's fields are not the item's (they were collected as
    // `a.b`, `a.c`, and the true identity was refused).
    accepted(
        "fn sums(l: P, r: P) -> P { P { m: Q { b: l.m.b + r.m.b, c: l.m.c + r.m.c }, z: l.z + r.z } }",
        "P { m: Q { b: 0.0, c: 0.0 }, z: 0.0 }",
    );
}
