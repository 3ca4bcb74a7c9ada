//! A GPU call timed beside a device copy of the bytes it counts, in the same
//! process: one call between two events (the host's work before the launch
//! included) and back to back ([`CALLS`] calls between two events, per call:
//! the host's work for a call overlaps the previous call's kernel).

use scan_cuda::{Cuda, DeviceBuffer};

/// Calls between two events in the back-to-back measure.
pub const CALLS: usize = 10;

/// Medians of a copy of `bytes` (read and written: `bytes / 2` each way) and
/// of the call, in ms.
pub struct AgainstCopy {
    pub bytes: usize,
    pub copy_ms: f64,
    pub call_ms: f64,
    pub copies_ms: f64,
    pub calls_ms: f64,
}

impl AgainstCopy {
    /// GB/s of `bytes` moved in `ms`.
    pub fn gbps(&self, ms: f64) -> f64 {
        self.bytes as f64 / ms / 1e6
    }
}

fn median(mut v: Vec<f32>) -> f64 {
    v.sort_by(f32::total_cmp);
    f64::from(v[v.len() / 2])
}

/// One untimed copy first (every caller has run the call, checked, before;
/// the copy had no warm-up: its first run, timed, could pay for first
/// touches and setup), then `reps` copies and calls interleaved, one between
/// two events each; then `reps` of each back to back.
pub fn against_copy(
    cuda: &Cuda,
    bytes: usize,
    reps: usize,
    mut call: impl FnMut() -> scan::Result<()>,
) -> scan::Result<AgainstCopy> {
    let src: DeviceBuffer<u8> = cuda.alloc(bytes / 2)?;
    let mut dst: DeviceBuffer<u8> = cuda.alloc(bytes / 2)?;
    dst.copy_from(&src)?;
    cuda.synchronize()?;
    let (mut copy_ms, mut call_ms) = (Vec::with_capacity(reps), Vec::with_capacity(reps));
    let (mut copies_ms, mut calls_ms) = (Vec::with_capacity(reps), Vec::with_capacity(reps));
    for _ in 0..reps {
        copy_ms.push(cuda.time(|| dst.copy_from(&src))?.1);
        call_ms.push(cuda.time(&mut call)?.1);
    }
    for _ in 0..reps {
        copies_ms.push(cuda.time(|| (0..CALLS).try_for_each(|_| dst.copy_from(&src)))?.1 / CALLS as f32);
        calls_ms.push(cuda.time(|| (0..CALLS).try_for_each(|_| call()))?.1 / CALLS as f32);
    }
    Ok(AgainstCopy {
        bytes,
        copy_ms: median(copy_ms),
        call_ms: median(call_ms),
        copies_ms: median(copies_ms),
        calls_ms: median(calls_ms),
    })
}
