//! log-add-exp, `ln(e^a + e^b)`: the scan behind log-space cumulative sums
//! (probabilities, attention normalizers) without overflow.
//!
//! It is associative over the reals, but `exp`/`ln` lie outside the symbolic
//! checker's fragment, so the operator opts in with `assume_associative` (the
//! macro then samples it and generates a property test).
//!
//! Prints the generated CUDA, scans pseudo-random log-weights on the CPU and checks
//! each prefix against `ln` of the running sum of the weights.
//!
//! `cargo run --example op_logaddexp`

use scan::{scan_op, Cpu, CudaOp, ScanSpec};

/// `ln(e^a + e^b)`, computed as `max + ln(1 + e^-|a-b|)`; identity `-inf`.
#[scan_op(identity = f64::NEG_INFINITY, assume_associative)]
pub fn log_add_exp(a: f64, b: f64) -> f64 {
    let m = a.max(b);
    if m == f64::NEG_INFINITY {
        m
    } else {
        m + (-(a - b).abs()).exp().ln_1p()
    }
}

pub fn main() -> scan::Result<()> {
    println!("{}", LogAddExp::cuda_source().code);

    let n = 50_000;
    // Deterministic, well-spread weights in [0.01, 10).
    let weights: Vec<f64> = (0..n).map(|i| 0.01 + 9.99 * (i as f64 * 0.618_033_988_749_895).fract()).collect();
    let logs: Vec<f64> = weights.iter().map(|w| w.ln()).collect();
    let out = Cpu::new().scan::<LogAddExp>(&logs, ScanSpec::inclusive())?;

    // Each combine is accurate to a few ulps of its result; errors add up
    // along a chain of at most log2(n)..n combines: 1e-9 relative is generous
    // for n = 5e4 and still far below any real mistake.
    let bound = 1e-9;
    let mut sum = 0.0f64;
    let mut worst = 0.0f64;
    for (i, w) in weights.iter().enumerate() {
        sum += w;
        let err = (out[i] - sum.ln()).abs() / sum.ln().abs().max(1.0);
        assert!(err <= bound, "prefix {i}: {} vs ln(sum) = {} (relative error {err})", out[i], sum.ln());
        worst = worst.max(err);
    }
    assert_eq!(LogAddExp::combine_identity_check(), (1.5, 1.5));
    println!("// {n} log-weights: max relative error {worst:.3e} (bound {bound:e})");
    Ok(())
}

impl LogAddExp {
    /// `-inf` really is the identity on both sides (here for 1.5).
    fn combine_identity_check() -> (f64, f64) {
        use scan::ScanOp;
        (Self::combine(Self::identity(), 1.5), Self::combine(1.5, Self::identity()))
    }
}
