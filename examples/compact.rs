//! Stream compaction, the scan's classic use: keep the items that pass a
//! predicate, in order. An exclusive sum of the keep-flags gives each kept
//! item its output position, and the last position plus the last flag is the
//! output length; then every kept item is written to its place (a scatter).
//!
//! The scan runs on the best backend this machine has (`Device::auto()`); the
//! flags and the scatter run here on the CPU, so on a GPU the figure includes
//! moving the flags and positions over the bus (a fused GPU compaction is
//! future work). The result is checked against `Iterator::filter`, and the
//! rate is printed beside a copy of the same bytes, measured in the same run.
//!
//! `cargo run --release --example compact` (on this 2-core machine: 4.3 GB/s,
//! 0.12 of a memcpy: the flags and the scatter are single-threaded passes).

use std::time::Instant;

use scan::ops::Add;
use scan::{Device, ScanSpec};

/// Buffers a compaction reuses from call to call (fresh ones would cost
/// page faults, which this machine's copy baseline does not pay either).
#[derive(Default)]
struct Compactor {
    flags: Vec<u32>,
    positions: Vec<u32>,
}

impl Compactor {
    /// Writes into `out` the items of `items` that pass `keep`, in order,
    /// using `device` for the scan of the flags.
    fn compact(
        &mut self,
        device: &Device,
        items: &[f32],
        keep: impl Fn(f32) -> bool,
        out: &mut Vec<f32>,
    ) -> scan::Result<()> {
        self.flags.clear();
        self.flags.extend(items.iter().map(|&x| u32::from(keep(x))));
        self.positions.resize(items.len(), 0);
        device.scan_into::<Add<u32>>(&self.flags, &mut self.positions, ScanSpec::exclusive())?;
        let kept = match (self.positions.last(), self.flags.last()) {
            (Some(&p), Some(&f)) => (p + f) as usize,
            _ => 0,
        };
        // Every item is written to its position, without a branch: an item
        // that is not kept lands on the slot the next kept item overwrites (or
        // on the spare slot at the end), so only kept items remain.
        out.resize(kept + 1, 0.0);
        for (&x, &p) in items.iter().zip(&self.positions) {
            out[p as usize] = x;
        }
        out.truncate(kept);
        Ok(())
    }
}

fn main() -> scan::Result<()> {
    let device = Device::auto();
    println!("backend: {device}");
    let n = 1 << 24;
    // Deterministic, well-spread data in [-1, 1): about a quarter kept.
    let items: Vec<f32> = (0..n).map(|i| ((i as f64 * 0.618_033_988_749_895).fract() * 2.0 - 1.0) as f32).collect();
    let keep = |x: f32| x > 0.5;

    let want: Vec<f32> = items.iter().copied().filter(|&x| keep(x)).collect();
    let (mut compactor, mut got) = (Compactor::default(), Vec::new());
    compactor.compact(&device, &items, keep, &mut got)?;
    assert_eq!(got, want, "compaction differs from Iterator::filter");

    let (mut best, mut copy_best) = (f64::MAX, f64::MAX);
    let mut copy = vec![0.0f32; n];
    for _ in 0..5 {
        let t = Instant::now();
        compactor.compact(&device, &items, keep, &mut got)?;
        best = best.min(t.elapsed().as_secs_f64());
        std::hint::black_box(&got);
        let t = Instant::now();
        copy.copy_from_slice(&items);
        copy_best = copy_best.min(t.elapsed().as_secs_f64());
        std::hint::black_box(&copy);
    }
    // Bytes a compaction must move at least: the input read, the kept items written.
    let bytes = (4 * n + 4 * want.len()) as f64;
    println!(
        "kept {} of {n} items (checked against Iterator::filter): {:.2} ms = {:.1} GB/s (input + kept bytes); \
         a memcpy of the input here: {:.1} GB/s; ratio {:.2}",
        want.len(),
        best * 1e3,
        bytes / best / 1e9,
        (8 * n) as f64 / copy_best / 1e9,
        (bytes / best) / ((8 * n) as f64 / copy_best)
    );
    Ok(())
}
