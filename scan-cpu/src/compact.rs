//! Stream compaction on the CPU: the items whose flag is set, in order.
//! Contiguous parts are filtered on their own threads and joined in order.

use scan_core::{Error, Result};

use crate::parallel::for_each_part;

/// Items per thread below which more threads cost more than they save.
const MIN_ITEMS_PER_THREAD: usize = 1 << 16;

/// The items of `values` whose flag in `keep` is set, in order, on up to
/// `threads` threads: each contiguous part counts its kept items, then
/// writes them straight into its own stretch of the output.
pub(crate) fn compact<T: Copy + Send + Sync>(values: &[T], keep: &[bool], threads: usize) -> Result<Vec<T>> {
    Error::check_lengths(values.len(), keep.len())?;
    let threads = threads.min(values.len() / MIN_ITEMS_PER_THREAD).max(1);
    let per_part = values.len().div_ceil(threads).max(1);
    // (items, kept items) of each part.
    let mut parts: Vec<(std::ops::Range<usize>, usize)> =
        (0..values.len()).step_by(per_part).map(|start| (start..(start + per_part).min(values.len()), 0)).collect();
    for_each_part(&mut parts, threads, |mine| {
        for (items, kept) in mine {
            *kept = keep[items.clone()].iter().filter(|&&k| k).count();
        }
    });
    let total: usize = parts.iter().map(|(_, kept)| kept).sum();
    let mut out: Vec<T> = Vec::new();
    out.try_reserve_exact(total)
        .map_err(|_| Error::TooLarge { what: format!("cannot allocate {total} kept items") })?;
    {
        // Each part's stretch of the output, in order.
        let mut rest = &mut out.spare_capacity_mut()[..total];
        let mut jobs = Vec::with_capacity(parts.len());
        for (items, kept) in parts {
            let (stretch, after) = rest.split_at_mut(kept);
            rest = after;
            jobs.push((items, stretch));
        }
        for_each_part(&mut jobs, threads, |mine| {
            for (items, stretch) in mine {
                fill_branch_free(&values[items.clone()], &keep[items.clone()], stretch);
            }
        });
    }
    // SAFETY: every part wrote its whole stretch (fill_branch_free writes
    // every slot: its kept items, which the count above says fill it), and
    // the stretches tile 0 .. total.
    unsafe { out.set_len(total) };
    Ok(out)
}

/// Writes the kept items of `values` to `out`, which holds exactly as many,
/// without a branch per item: every item is written to the next free slot,
/// which only a kept item claims, so unpredictable flags cost no
/// mispredictions; the loop ends when the last slot is claimed, so no write
/// lands past `out`.
fn fill_branch_free<T: Copy>(values: &[T], keep: &[bool], out: &mut [std::mem::MaybeUninit<T>]) {
    if out.is_empty() {
        return;
    }
    let mut next = 0;
    for (&x, &k) in values.iter().zip(keep) {
        out[next].write(x);
        next += usize::from(k);
        if next == out.len() {
            break;
        }
    }
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
