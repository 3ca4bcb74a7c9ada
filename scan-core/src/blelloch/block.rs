//! Blelloch's scan of one block on the host.
//!
//! The classic trace, for addition:
//!
//! ```
//! use scan_core::{blelloch::block, ops::Add, ScanSpec};
//!
//! let mut tree = [3, 1, 7, 0, 4, 1, 6, 3];
//! block::up_sweep::<Add<i32>>(&mut tree)?;
//! assert_eq!(tree, [3, 4, 7, 11, 4, 5, 6, 25]); // the root holds the total
//! block::down_sweep::<Add<i32>>(&mut tree)?;  // clears the root, hands prefixes down
//! assert_eq!(tree, [0, 3, 4, 11, 11, 15, 16, 22]);
//! assert!(block::up_sweep::<Add<i32>>(&mut [1, 2, 3]).is_err()); // not a power of two
//!
//! let mut scratch = Vec::new();
//! let mut x = [3, 1, 7, 0, 4, 1, 6, 3];
//! let total = block::scan_block::<Add<i32>>(&mut x, ScanSpec::inclusive(), &mut scratch);
//! assert_eq!(x, [3, 4, 11, 11, 15, 16, 22, 25]);
//! assert_eq!(total, 25);
//! # Ok::<(), scan_core::Error>(())
//! ```

use crate::{Error, Result, ScanOp, ScanSpec};

/// A tree of `n` slots, as the sweeps take: none, or a power of two
/// ([`Error::WrongShape`] naming `tree` otherwise).
fn check_tree(n: usize) -> Result<()> {
    if n == 0 || n.is_power_of_two() {
        return Ok(());
    }
    Err(Error::WrongShape {
        argument: "tree".into(),
        expected: "a power of two items, or none (scan_block pads any length)".into(),
        found: format!("{n} items"),
    })
}

/// Builds the tree of partial combinations in place; the last slot ends up
/// holding the combination of the whole slice. [`Error::WrongShape`] (and
/// nothing changed) unless `tree.len()` is zero or a power of two:
/// [`scan_block`] pads any length for you.
pub fn up_sweep<Op: ScanOp>(tree: &mut [Op::Item]) -> Result<()> {
    check_tree(tree.len())?;
    sweep_up::<Op>(tree);
    Ok(())
}

/// [`up_sweep`] on a checked tree.
fn sweep_up<Op: ScanOp>(tree: &mut [Op::Item]) {
    let n = tree.len();
    let mut d = 1;
    while d < n {
        for k in (0..n).step_by(2 * d) {
            tree[k + 2 * d - 1] = Op::combine(tree[k + d - 1], tree[k + 2 * d - 1]);
        }
        d *= 2;
    }
}

/// Clears the root to the identity and hands the prefixes down the tree built by
/// [`up_sweep`], leaving the exclusive scan. The left child receives its
/// parent's prefix; the right child `prefix ∘ left subtree`, in that order.
/// [`Error::WrongShape`] (and nothing changed) unless `tree.len()` is zero
/// or a power of two.
pub fn down_sweep<Op: ScanOp>(tree: &mut [Op::Item]) -> Result<()> {
    check_tree(tree.len())?;
    sweep_down::<Op>(tree);
    Ok(())
}

/// [`down_sweep`] on a checked tree.
fn sweep_down<Op: ScanOp>(tree: &mut [Op::Item]) {
    let n = tree.len();
    if n == 0 {
        return;
    }
    tree[n - 1] = Op::identity();
    let mut d = n / 2;
    while d >= 1 {
        for k in (0..n).step_by(2 * d) {
            let left = tree[k + d - 1];
            let prefix = tree[k + 2 * d - 1];
            tree[k + d - 1] = prefix;
            tree[k + 2 * d - 1] = Op::combine(prefix, left);
        }
        d /= 2;
    }
}

/// Makes room in `scratch` for [`scan_block`] of blocks of up to `block_len`
/// items (the next power of two), so that the scan itself never allocates:
/// a scratch the host cannot allocate is [`Error::TooLarge`], not an abort.
///
/// ```
/// use scan_core::blelloch::block::{reserve_block_scratch, scan_block};
/// use scan_core::{ops::Add, ScanSpec};
/// let mut scratch = Vec::new();
/// reserve_block_scratch::<Add<u32>>(&mut scratch, 5).unwrap();
/// assert!(scratch.capacity() >= 8);
/// let mut data = [1u32, 2, 3, 4, 5];
/// assert_eq!(scan_block::<Add<u32>>(&mut data, ScanSpec::inclusive(), &mut scratch), 15);
/// assert_eq!(data, [1, 3, 6, 10, 15]);
/// ```
pub fn reserve_block_scratch<Op: ScanOp>(scratch: &mut Vec<Op::Item>, block_len: usize) -> Result<()> {
    if std::mem::size_of::<Op::Item>() == 0 || block_len == 0 {
        return Ok(());
    }
    let want = block_len.checked_next_power_of_two().ok_or_else(|| too_large(block_len))?;
    scratch.clear();
    scratch.try_reserve_exact(want).map_err(|_| too_large(want))
}

fn too_large(items: usize) -> Error {
    Error::TooLarge { what: format!("cannot allocate a Blelloch block scratch of {items} items on the host") }
}

/// Scans `data` (any length) in place with Blelloch's algorithm and returns the
/// combination of all items. The items are copied, in scan order, into
/// `scratch` padded with the identity to a power of two, swept, and written back.
pub fn scan_block<Op: ScanOp>(data: &mut [Op::Item], spec: ScanSpec, scratch: &mut Vec<Op::Item>) -> Op::Item {
    let n = data.len();
    // Zero-sized items are all the one value of their type: nothing to
    // sweep (and past 2^63 of them no power of two holds them).
    if n == 0 || std::mem::size_of::<Op::Item>() == 0 {
        return Op::identity();
    }
    scratch.clear();
    if spec.is_reverse() {
        scratch.extend(data.iter().rev().copied());
    } else {
        scratch.extend_from_slice(data);
    }
    scratch.resize(n.next_power_of_two(), Op::identity());
    // (A power of two by construction.)
    sweep_up::<Op>(scratch);
    let total = scratch[scratch.len() - 1];
    sweep_down::<Op>(scratch);
    let write = |slot: &mut Op::Item, exclusive: Op::Item| {
        *slot = if spec.is_inclusive() { Op::combine(exclusive, *slot) } else { exclusive };
    };
    if spec.is_reverse() {
        data.iter_mut().rev().zip(scratch.iter()).for_each(|(slot, &e)| write(slot, e));
    } else {
        data.iter_mut().zip(scratch.iter()).for_each(|(slot, &e)| write(slot, e));
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::Add;

    #[test]
    fn a_scratch_the_host_cannot_hold_is_too_large_not_an_abort() {
        let mut scratch = vec![7u64; 3];
        // No power of two holds it.
        let e = reserve_block_scratch::<Add<u64>>(&mut scratch, usize::MAX).unwrap_err();
        assert!(matches!(e, Error::TooLarge { .. }), "{e:?}");
        // 2^60 items of 8 bytes: past what any allocator gives.
        let e = reserve_block_scratch::<Add<u64>>(&mut scratch, 1 << 60).unwrap_err();
        assert!(matches!(e, Error::TooLarge { .. }), "{e:?}");
        // A block that fits gets room for its power of two, and the scan
        // that follows does not grow it.
        reserve_block_scratch::<Add<u64>>(&mut scratch, 4097).unwrap();
        let room = scratch.capacity();
        assert!(room >= 8192);
        let mut data: Vec<u64> = (1..=4097).collect();
        assert_eq!(scan_block::<Add<u64>>(&mut data, ScanSpec::inclusive(), &mut scratch), 4097 * 4098 / 2);
        assert_eq!(scratch.capacity(), room);
    }
}
