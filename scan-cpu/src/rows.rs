//! Batched scans: a row-major `[rows, row_len]` buffer, each row independent.
//!
//! Many rows: the rows are split over the threads, each row scanned on one
//! thread. Few long rows: the rows are scanned one after another, each on all
//! threads. The algorithm is the executor's either way.

use std::mem::MaybeUninit;

use scan_core::{Result, ScanOp, ScanSpec};

use crate::cpu::Run;
use crate::{parallel, Cpu};

/// Rows of at least this many bytes are long enough to be split over threads.
const LONG_ROW_BYTES: usize = 1 << 20;

/// How to spread `rows` rows of `row_len` items over the threads: `true` to
/// scan the rows one after another, each with all threads.
fn within_rows<T>(run: &Run, rows: usize, row_len: usize) -> bool {
    // Splitting rows over threads balances badly when there are few of them
    // (3 rows on 2 threads: one thread does 2), and costs nothing when many.
    rows < 4 * run.threads && row_len.saturating_mul(std::mem::size_of::<T>()) >= LONG_ROW_BYTES
}

pub(crate) fn scan_rows<Op: ScanOp>(
    cpu: &Cpu,
    input: &[Op::Item],
    output: &mut [MaybeUninit<Op::Item>],
    row_len: usize,
    spec: ScanSpec,
) -> Result<()> {
    if row_len == 0 {
        return Ok(());
    }
    let run = cpu.run::<Op::Item>(input.len());
    let rows = input.len() / row_len;
    if within_rows::<Op::Item>(&run, rows, row_len) {
        for (x, out) in input.chunks_exact(row_len).zip(output.chunks_exact_mut(row_len)) {
            run.scan_into::<Op>(x, out, spec)?;
        }
        return Ok(());
    }
    let one_thread = Run { threads: 1, ..run };
    let mut work: Vec<_> = input.chunks_exact(row_len).zip(output.chunks_exact_mut(row_len)).collect();
    let mut result = Ok(());
    let failed = std::sync::Mutex::new(&mut result);
    parallel::for_each_part(&mut work, run.threads, |part| {
        for (x, out) in part.iter_mut() {
            if let Err(e) = one_thread.scan_into::<Op>(x, out, spec) {
                if let Ok(mut slot) = failed.lock() {
                    **slot = Err(e);
                }
                return;
            }
        }
    });
    result
}

pub(crate) fn scan_rows_in_place<Op: ScanOp>(
    cpu: &Cpu,
    data: &mut [Op::Item],
    row_len: usize,
    spec: ScanSpec,
) -> Result<()> {
    if row_len == 0 {
        return Ok(());
    }
    let run = cpu.run::<Op::Item>(data.len());
    let rows = data.len() / row_len;
    if within_rows::<Op::Item>(&run, rows, row_len) {
        for row in data.chunks_exact_mut(row_len) {
            run.scan_in_place::<Op>(row, spec)?;
        }
        return Ok(());
    }
    let one_thread = Run { threads: 1, ..run };
    let mut work: Vec<&mut [Op::Item]> = data.chunks_exact_mut(row_len).collect();
    let mut result = Ok(());
    let failed = std::sync::Mutex::new(&mut result);
    parallel::for_each_part(&mut work, run.threads, |part| {
        for row in part.iter_mut() {
            if let Err(e) = one_thread.scan_in_place::<Op>(row, spec) {
                if let Ok(mut slot) = failed.lock() {
                    **slot = Err(e);
                }
                return;
            }
        }
    });
    result
}
