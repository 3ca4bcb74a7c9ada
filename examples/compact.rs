//! Stream compaction, the scan's classic use: keep the items that pass a
//! predicate, in order. An exclusive sum of the keep-flags gives each kept
//! item its output position, and the last position plus the last flag is the
//! output length; then every kept item is written to its place (a scatter).
//!
//! Two forms, both checked against `Iterator::filter`, each timed (the
//! median of 15 runs after a first, or of 21 on the GPU) beside a copy of
//! the same items measured the same way in the same run:
//!
//! * the textbook one spelled out (`Compactor` below): the flags and the
//!   scatter here on the CPU, the scan on the best backend this machine has
//!   (`Device::auto()`), so on a GPU it includes moving the flags and
//!   positions over the bus;
//! * the library's `compact`: `Cpu::compact` on the CPU, and on a GPU
//!   `Cuda::compact_device_into` on device-resident items and flags (each
//!   tile's kept items counted, the counts scanned, then every tile places
//!   its kept items: the flags read twice, the kept items once), timed with
//!   CUDA events against a device copy of the items.
//!
//! `cargo run --release --example compact`

use std::time::Instant;

use scan::ops::Add;
use scan::{Cpu, Device, ScanSpec};

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
    // Bytes a compaction must move at least: the items read, the kept items written.
    let bytes = (4 * n + 4 * want.len()) as f64;

    // The textbook form.
    let (mut compactor, mut got) = (Compactor::default(), Vec::new());
    compactor.compact(&device, &items, keep, &mut got)?;
    assert_eq!(got, want, "compaction differs from Iterator::filter");
    let mut copy = vec![0.0f32; n];
    let copy_best = median_of(REPS, || copy.copy_from_slice(&items));
    std::hint::black_box(&copy);
    let best = median_of(REPS, || compactor.compact(&device, &items, keep, &mut got).expect("checked above"));
    report(
        "flags, scan on the backend, scatter on the CPU, against a copy on one thread",
        want.len(),
        n,
        bytes,
        best,
        (8 * n) as f64 / copy_best,
    );

    // The library's compaction on the CPU, against a copy split over the
    // same threads (one thread's copy would flatter it).
    let cpu = Cpu::new();
    let flags: Vec<bool> = items.iter().map(|&x| keep(x)).collect();
    assert_eq!(cpu.compact(&items, &flags)?, want, "Cpu::compact differs from Iterator::filter");
    let piece = n.div_ceil(cpu.threads().max(1)).max(1);
    let copy_threads_best = median_of(REPS, || {
        std::thread::scope(|s| {
            for (o, i) in copy.chunks_mut(piece).zip(items.chunks(piece)) {
                s.spawn(move || o.copy_from_slice(i));
            }
        })
    });
    std::hint::black_box(&copy);
    let best = median_of(REPS, || drop(std::hint::black_box(cpu.compact(&items, &flags).expect("checked above"))));
    report(
        &format!("Cpu::compact ({cpu}), flags given, against a copy on {} threads", cpu.threads()),
        want.len(),
        n,
        bytes,
        best,
        (8 * n) as f64 / copy_threads_best,
    );

    // And on the GPU, on device-resident items and flags.
    if let Some(cuda) = device.as_cuda() {
        let dev_items = cuda.upload(&items)?;
        let dev_flags = cuda.upload(&flags)?;
        let mut out = cuda.alloc::<f32>(n)?;
        let kept = cuda.compact_device_into(&dev_items, &dev_flags, &mut out)?;
        assert_eq!(out.download_prefix(kept)?, want, "Cuda::compact_device_into differs from Iterator::filter");
        let mut copy = cuda.alloc::<f32>(n)?;
        let (mut copy_times, mut times) = (Vec::new(), Vec::new());
        for _ in 0..21 {
            copy_times.push(cuda.time(|| copy.copy_from(&dev_items))?.1);
            times.push(cuda.time(|| cuda.compact_device_into(&dev_items, &dev_flags, &mut out))?.1);
        }
        let median = |mut v: Vec<f32>| {
            v.sort_by(f32::total_cmp);
            v[v.len() / 2]
        };
        let (copy_ms, ms) = (median(copy_times), median(times));
        let copy_rate = (8 * n) as f64 / (f64::from(copy_ms) * 1e-3);
        report(
            "Cuda::compact_device_into, items and flags on the GPU",
            kept,
            n,
            bytes,
            f64::from(ms) * 1e-3,
            copy_rate,
        );
    }
    Ok(())
}

/// Timed runs per CPU figure.
const REPS: usize = 15;

/// The median of `reps` runs of `f` after a first, in seconds.
fn median_of(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    let mut times: Vec<f64> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[reps / 2]
}

fn report(what: &str, kept: usize, n: usize, bytes: f64, seconds: f64, copy_rate: f64) {
    let rate = bytes / seconds;
    println!(
        "{what}: kept {kept} of {n} items (checked against Iterator::filter) in {:.3} ms = {:.1} GB/s (items + kept \
         bytes); a copy of the items in the same run: {:.1} GB/s; ratio {:.2}",
        seconds * 1e3,
        rate / 1e9,
        copy_rate / 1e9,
        rate / copy_rate
    );
}
