//! Batched scans: a row-major `[rows, row_len]` buffer, each row independent,
//! and segments of any lengths (by starts or head flags), each independent.
//!
//! Many rows: the rows are split over the threads, each row scanned on one
//! thread. Few long rows: the rows are scanned one after another, each on all
//! threads. Segments alike, by their count. The algorithm is the executor's
//! either way.

use std::mem::MaybeUninit;

use scan_core::{reference, Error, Result, ScanOp, ScanSpec};

use crate::cpu::{as_uninit, is_zero_sized, Run};
use crate::{parallel, Cpu};

/// Rows of at least this many bytes are long enough to be split over threads.
const LONG_ROW_BYTES: usize = 1 << 20;

/// How to spread `rows` rows of `row_len` items over the threads: `true` to
/// scan the rows one after another, each with all threads.
fn within_rows<T>(run: &Run, rows: usize, row_len: usize) -> bool {
    // Splitting rows over threads balances badly when there are few of them
    // (3 rows on 2 threads: one thread does 2), and costs nothing when many.
    rows < run.threads.saturating_mul(4) && row_len.saturating_mul(std::mem::size_of::<T>()) >= LONG_ROW_BYTES
}

pub(crate) fn scan_rows<Op: ScanOp>(
    cpu: &Cpu,
    input: &[Op::Item],
    output: &mut [MaybeUninit<Op::Item>],
    row_len: usize,
    spec: ScanSpec,
) -> Result<()> {
    // (Zero-sized items: nothing to write, and their rows may be as many as
    // a `usize` counts.)
    if row_len == 0 || is_zero_sized::<Op::Item>() {
        return Ok(());
    }
    let (run, within, block) = plan_rows::<Op::Item>(cpu, input.len(), row_len);
    let work = input.chunks(block).zip(output.chunks_mut(block)).collect();
    run_each(run, within, work, |run, (x, out)| {
        x.chunks_exact(row_len)
            .zip(out.chunks_exact_mut(row_len))
            .try_for_each(|(x, out)| run.scan_into::<Op>(x, out, spec))
    })
}

pub(crate) fn scan_rows_in_place<Op: ScanOp>(
    cpu: &Cpu,
    data: &mut [Op::Item],
    row_len: usize,
    spec: ScanSpec,
) -> Result<()> {
    if row_len == 0 || is_zero_sized::<Op::Item>() {
        return Ok(());
    }
    let (run, within, block) = plan_rows::<Op::Item>(cpu, data.len(), row_len);
    let work = data.chunks_mut(block).collect();
    run_each(run, within, work, |run, rows: &mut &mut [Op::Item]| {
        rows.chunks_exact_mut(row_len).try_for_each(|row| run.scan_in_place::<Op>(row, spec))
    })
}

/// How `len` items in rows of `row_len` are spread: the run, whether each
/// row takes all threads (few long rows), and the items of one piece of
/// work: a row when rows take all threads, else an equal share of whole rows
/// per thread (one piece per thread, not one per row: a million rows of 16
/// items would otherwise cost a million pieces of bookkeeping).
fn plan_rows<T>(cpu: &Cpu, len: usize, row_len: usize) -> (Run, bool, usize) {
    let run = cpu.run::<T>(len);
    let rows = len / row_len;
    let within = within_rows::<T>(&run, rows, row_len);
    let rows_per_piece = if within { 1 } else { rows.div_ceil(run.threads.max(1)).max(1) };
    (run, within, rows_per_piece * row_len)
}

/// Runs `scan` on every segment of `work` (`len` items in all): one after
/// another, each on all threads, when they are fewer than 4 per thread;
/// otherwise spread over the threads, one thread per segment.
fn for_each_segment<T, W: Send>(
    cpu: &Cpu,
    len: usize,
    work: Vec<W>,
    scan: impl Fn(&Run, &mut W) -> Result<()> + Sync,
) -> Result<()> {
    let run = cpu.run::<T>(len);
    let within = work.len() < run.threads.saturating_mul(4);
    run_each(run, within, work, scan)
}

/// Runs `scan` on every piece of `work`: one after another, each with all of
/// `run`'s threads (`within`), or spread over the threads, one thread per
/// piece. The first error wins.
fn run_each<W: Send>(
    run: Run,
    within: bool,
    mut work: Vec<W>,
    scan: impl Fn(&Run, &mut W) -> Result<()> + Sync,
) -> Result<()> {
    if within {
        return work.iter_mut().try_for_each(|piece| scan(&run, piece));
    }
    let one_thread = Run { threads: 1, ..run };
    let mut result = Ok(());
    let failed = std::sync::Mutex::new(&mut result);
    parallel::for_each_part(&mut work, run.threads, |part| {
        for piece in part.iter_mut() {
            if let Err(e) = scan(&one_thread, piece) {
                if let Ok(mut slot) = failed.lock() {
                    **slot = Err(e);
                }
                return;
            }
        }
    });
    result
}

/// Scans `rows` rows of `row_len` items, `stride` apart (see
/// [`reference::strided_rows`]), from `input` into `output`; the items
/// between rows are not touched, and nothing is written on an error.
pub(crate) fn scan_rows_strided<Op: ScanOp>(
    cpu: &Cpu,
    input: &[Op::Item],
    output: &mut [Op::Item],
    rows: usize,
    row_len: usize,
    stride: usize,
    spec: ScanSpec,
) -> Result<()> {
    Error::check_lengths(input.len(), output.len())?;
    if is_zero_sized::<Op::Item>() {
        // The check alone: listing as many rows as a `usize` counts would not fit.
        return reference::check_strided(input.len(), rows, row_len, stride);
    }
    let ranges = reference::strided_rows(input.len(), rows, row_len, stride)?;
    let mut work = Vec::with_capacity(ranges.len());
    let (mut rest, mut at) = (output, 0);
    for r in ranges {
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(r.start - at);
        let (out, tail) = tail.split_at_mut(r.len());
        (rest, at) = (tail, r.end);
        work.push((&input[r], out));
    }
    for_each_segment::<Op::Item, _>(cpu, rows * row_len, work, |run, (x, out)| {
        run.scan_into::<Op>(x, as_uninit(out), spec)
    })
}

/// Scans each segment of `input` (by `starts`, see
/// [`reference::segments`]) into `output`; nothing is written on an error.
pub(crate) fn scan_segments<Op: ScanOp>(
    cpu: &Cpu,
    input: &[Op::Item],
    output: &mut [Op::Item],
    starts: &[usize],
    spec: ScanSpec,
) -> Result<()> {
    Error::check_lengths(input.len(), output.len())?;
    let ranges = reference::segments(input.len(), starts)?;
    let mut work = Vec::with_capacity(ranges.len());
    let mut rest = output;
    for r in ranges {
        let (out, tail) = std::mem::take(&mut rest).split_at_mut(r.len());
        rest = tail;
        work.push((&input[r], out));
    }
    for_each_segment::<Op::Item, _>(cpu, input.len(), work, |run, (x, out)| {
        run.scan_into::<Op>(x, as_uninit(out), spec)
    })
}

/// [`scan_segments`] in place.
pub(crate) fn scan_segments_in_place<Op: ScanOp>(
    cpu: &Cpu,
    data: &mut [Op::Item],
    starts: &[usize],
    spec: ScanSpec,
) -> Result<()> {
    let len = data.len();
    let ranges = reference::segments(len, starts)?;
    let mut work = Vec::with_capacity(ranges.len());
    let mut rest = data;
    for r in ranges {
        let (seg, tail) = std::mem::take(&mut rest).split_at_mut(r.len());
        rest = tail;
        work.push(seg);
    }
    for_each_segment::<Op::Item, _>(cpu, len, work, |run, seg| run.scan_in_place::<Op>(seg, spec))
}
