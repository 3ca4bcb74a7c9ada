//! The first-order linear recurrence `h_t = a_t * h_{t-1} + b_t` (the core of
//! state-space models such as Mamba) as a scan over `(a, b)` pairs.
//!
//! Prints the operator's generated CUDA, scans pseudo-random pairs on the CPU, and
//! checks every `h_t` against a sequential f64 evaluation.
//!
//! `cargo run --example op_linear_recurrence`

use scan::{scan_op, Cpu, CudaOp, ScanSpec};

/// Composes `h -> a1 h + b1` then `h -> a2 h + b2`: `(a1 a2, a2 b1 + b2)`.
#[scan_op(identity = (1.0, 0.0))]
pub fn linear_recurrence(l: (f32, f32), r: (f32, f32)) -> (f32, f32) {
    (l.0 * r.0, r.0 * l.1 + r.1)
}

pub fn main() -> scan::Result<()> {
    println!("{}", LinearRecurrence::cuda_source().code);

    let n = 1 << 16;
    // Deterministic, well-spread data: a in [0.5, 1), b in [-1, 1).
    let u = |i: usize| (i as f64 * 0.618_033_988_749_895).fract();
    let pairs: Vec<(f32, f32)> =
        (0..n).map(|i| ((0.5 + 0.5 * u(i)) as f32, (2.0 * u(7 * i + 3) - 1.0) as f32)).collect();
    let out = Cpu::new().scan::<LinearRecurrence>(&pairs, ScanSpec::inclusive())?;

    // |h| <= sum |b| a^k <= 1 / (1 - max a) stays small; each combine rounds
    // a few times, so f32 results stay within a small multiple of f32::EPSILON
    // times the magnitudes summed (here below ~1000).
    let bound = 1e-3;
    let mut h = 0.0f64;
    let mut worst = 0.0f64;
    for (&(a, b), got) in pairs.iter().zip(&out) {
        h = a as f64 * h + b as f64;
        let err = (got.1 as f64 - h).abs();
        assert!(err <= bound, "h = {h}, scan gave {} (error {err} > {bound})", got.1);
        worst = worst.max(err);
    }
    println!("// {n} steps: max |h_scan - h_f64| = {worst:.3e} (bound {bound:e})");
    Ok(())
}
