//! Stream compaction on the CPU: the items whose flag is set, in order.
//! Contiguous parts are filtered on their own threads and joined in order.

use scan_core::{Error, Result};

use crate::parallel::for_each_part;

/// Items per thread below which more threads cost more than they save.
const MIN_ITEMS_PER_THREAD: usize = 1 << 16;

/// The items of `values` whose flag in `keep` is set, in order, on up to
/// `threads` threads.
pub(crate) fn compact<T: Copy + Send + Sync>(values: &[T], keep: &[bool], threads: usize) -> Result<Vec<T>> {
    Error::check_lengths(values.len(), keep.len())?;
    let filter = filter_branch_free::<T>;
    let threads = threads.min(values.len() / MIN_ITEMS_PER_THREAD).max(1);
    if threads == 1 {
        return Ok(filter(values, keep));
    }
    let per_part = values.len().div_ceil(threads);
    let mut parts: Vec<(usize, Vec<T>)> = (0..threads).map(|p| (p * per_part, Vec::new())).collect();
    for_each_part(&mut parts, threads, |mine| {
        for (start, kept) in mine {
            let end = (*start + per_part).min(values.len());
            *kept = filter(&values[*start..end], &keep[*start..end]);
        }
    });
    Ok(parts.into_iter().flat_map(|(_, kept)| kept).collect())
}

/// `values` where `keep` is set, without a branch per item: every item is
/// written to the next free slot, which only a kept item claims, so the
/// unpredictable flags of a typical filter cost no mispredictions.
fn filter_branch_free<T: Copy>(values: &[T], keep: &[bool]) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(values.len());
    let slots = out.as_mut_ptr();
    let mut kept = 0;
    for (&x, &k) in values.iter().zip(keep) {
        // SAFETY: `kept` counts the kept items before this one, so it is at
        // most this item's index, below `values.len()`, the capacity.
        unsafe { slots.add(kept).write(x) };
        kept += usize::from(k);
    }
    // SAFETY: slots 0 .. kept were written above (each by the kept item
    // that claimed it, the last write to it), and kept <= the capacity.
    unsafe { out.set_len(kept) };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compaction_equals_filter_on_any_thread_count() {
        for n in [0, 1, 2, 1000, MIN_ITEMS_PER_THREAD * 3 + 7] {
            let values: Vec<u64> = (0..n as u64).collect();
            let keep: Vec<bool> = values.iter().map(|&x| (x * 2654435761) % 7 < 3).collect();
            let want: Vec<u64> = values.iter().copied().filter(|&x| (x * 2654435761) % 7 < 3).collect();
            for threads in [1, 2, 3, 8] {
                assert_eq!(compact(&values, &keep, threads).unwrap(), want, "n {n}, {threads} threads");
            }
        }
    }

    #[test]
    fn mismatched_lengths_are_an_error() {
        assert!(matches!(compact(&[1, 2, 3], &[true], 2), Err(Error::LengthMismatch { input: 3, output: 1 })));
    }
}
