//! Segmented sum on `(starts_segment, value)` pairs: one scan sums many
//! variable-length segments at once (the flag restarts the sum).
//!
//! The body branches on the flag; the checker splits cases on the flags and
//! proves both laws at compile time, so no `assume_associative` is needed.
//!
//! Prints the generated CUDA, scans segments of irregular lengths on the CPU and checks each
//! running sum against a direct per-segment loop.
//!
//! `cargo run --example op_segmented_sum`

use scan::{scan_op, Cpu, CudaOp, ScanSpec};

/// A set flag on the right starts a new segment: keep only its value.
#[scan_op(identity = (false, 0))]
pub fn segmented_sum(l: (bool, i64), r: (bool, i64)) -> (bool, i64) {
    (l.0 || r.0, if r.0 { r.1 } else { l.1 + r.1 })
}

pub fn main() -> scan::Result<()> {
    println!("{}", SegmentedSum::cuda_source().code);

    let n = 100_003;
    // Segments of irregular lengths (a head where the Weyl sequence u(i)
    // falls below 0.02, about one item in 50), values in [-1000, 1000].
    let u = |i: usize| (i as f64 * 0.618_033_988_749_895).fract();
    let items: Vec<(bool, i64)> = (0..n).map(|i| (u(i) < 0.02, (i * 7919 % 2001) as i64 - 1000)).collect();
    let out = Cpu::new().scan::<SegmentedSum>(&items, ScanSpec::inclusive())?;

    let mut running = 0i64;
    let mut segments = 0;
    for (i, &(start, v)) in items.iter().enumerate() {
        if start {
            running = 0;
            segments += 1;
        }
        running += v;
        assert_eq!(out[i].1, running, "position {i}");
    }
    println!("// {n} values in {segments}+1 segments: every running sum exact");
    Ok(())
}
