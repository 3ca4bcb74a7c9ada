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
    Error::check_one_per("keep", keep.len(), "`values`", values.len())?;
    let threads = threads.min(values.len() / MIN_ITEMS_PER_THREAD).max(1);
    let per_part = values.len().div_ceil(threads).max(1);
    // (items, kept items) of each part.
    let mut parts: Vec<(std::ops::Range<usize>, usize)> =
        (0..values.len()).step_by(per_part).map(|start| (start..(start + per_part).min(values.len()), 0)).collect();
    for_each_part(&mut parts, threads, |mine| {
        for (items, kept) in mine {
            *kept = count_set(&keep[items.clone()]);
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
                fill(&values[items.clone()], &keep[items.clone()], stretch);
            }
        });
    }
    // SAFETY: every part wrote its whole stretch (`fill` writes its kept
    // items to consecutive slots from the first, as many as the count above
    // made the stretch; a disagreement would panic on an index, not leave a
    // slot unwritten), and the stretches tile 0 .. total.
    unsafe { out.set_len(total) };
    Ok(out)
}

/// How many of `flags` are set: bytes of 0 or 1 summed in u8 lanes, 255 at
/// a time so that no lane overflows, which vectorises (`filter().count()`
/// did not: 5 ms for 2^24 flags on 2 threads, against 1).
fn count_set(flags: &[bool]) -> usize {
    flags.chunks(255).map(|c| usize::from(c.iter().fold(0u8, |a, &k| a + u8::from(k)))).sum()
}

/// The bits of 8 flags (bytes of 0 or 1, the first in the lowest byte): bit
/// i is flag i. The multiplication moves byte i's bit to bit 56 + i and
/// every other product to a bit of its own, so nothing carries.
fn mask8(word: u64) -> u64 {
    word.wrapping_mul(0x0102_0408_1020_4080) >> 56
}

/// Writes the kept items of `values` to `out`, which holds exactly as many.
/// 64 flags at a time become a mask (8 bytes a multiplication), and only the
/// kept items' positions are visited (trailing zeros), so the time goes with
/// the kept items and no branch depends on a single flag; a chunk kept
/// whole is copied in a row. Writing every item to the next free slot,
/// which only a kept item claims, a flag at a time, took 1.6 ms for 2^22 f32
/// on this machine's 2 threads whatever the flags; this takes 0.8 (3% kept
/// at random) to 1.4 (70%). (Writing branch free only the chunks with many
/// kept items was slower on those too: 1.70 ms against 1.24 at half kept.)
fn fill<T: Copy>(values: &[T], keep: &[bool], out: &mut [std::mem::MaybeUninit<T>]) {
    let mut next = 0;
    let mut values = values.chunks_exact(64);
    let mut flags = keep.chunks_exact(64);
    for (items, flags) in values.by_ref().zip(flags.by_ref()) {
        let mut mask = 0u64;
        for (i, word) in flags.chunks_exact(8).enumerate() {
            let bytes: [u8; 8] = std::array::from_fn(|j| u8::from(word[j]));
            mask |= mask8(u64::from_le_bytes(bytes)) << (8 * i);
        }
        let kept = mask.count_ones();
        if kept == 64 {
            for (slot, &x) in out[next..next + 64].iter_mut().zip(items) {
                slot.write(x);
            }
            next += 64;
        } else {
            while mask != 0 {
                out[next].write(items[mask.trailing_zeros() as usize]);
                next += 1;
                mask &= mask - 1;
            }
        }
    }
    for (&x, &k) in values.remainder().iter().zip(flags.remainder()) {
        if k {
            out[next].write(x);
            next += 1;
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
    fn eight_flags_make_their_eight_bits() {
        for bits in 0u64..256 {
            let word = u64::from_le_bytes(std::array::from_fn(|i| ((bits >> i) & 1) as u8));
            assert_eq!(mask8(word), bits, "flags {bits:08b}");
        }
    }

    #[test]
    fn every_chunk_kind_and_tail_keeps_its_items_in_order() {
        // Chunks of 64 kept whole, none kept, one kept at either end, dense
        // and sparse ones, then tails of every length below a chunk.
        let mut flags = vec![true; 64];
        flags.extend([false; 64]);
        flags.extend((0..64).map(|i| i == 0));
        flags.extend((0..64).map(|i| i == 63));
        flags.extend((0..64).map(|i| i % 7 != 3));
        flags.extend((0..64).map(|i| i % 13 == 5));
        for tail in 0..64 {
            let mut keep = flags.clone();
            keep.extend((0..tail).map(|i| i % 3 != 1));
            let values: Vec<u32> = (0..keep.len() as u32).collect();
            let want: Vec<u32> = values.iter().zip(&keep).filter(|&(_, &k)| k).map(|(&x, _)| x).collect();
            assert_eq!(count_set(&keep), want.len(), "tail {tail}: count");
            assert_eq!(compact(&values, &keep, 1).unwrap(), want, "tail {tail}");
        }
    }

    #[test]
    fn mismatched_lengths_are_an_error() {
        assert!(matches!(compact(&[1, 2, 3], &[true], 2), Err(Error::WrongShape { .. })));
    }
}
