//! The single-threaded host backend of the Blelloch driver.

use std::cell::RefCell;

use super::{block, driver::BlockBackend};
use crate::{Error, Result, ScanOp, ScanSpec};

/// Runs the Blelloch driver on host slices, one block after another.
///
/// Other backends parallelise the same two steps; this one is their model.
#[derive(Debug)]
pub struct SliceBackend<T = ()> {
    block_len: usize,
    scratch: RefCell<Vec<T>>,
}

impl<T> SliceBackend<T> {
    /// A backend whose blocks hold `block_len` items, at least 2 (the
    /// driver scans the blocks' totals with the same blocks: blocks of one
    /// item would never reduce them).
    pub fn new(block_len: usize) -> Self {
        SliceBackend { block_len: block_len.max(2), scratch: RefCell::new(Vec::new()) }
    }
}

/// A host scratch buffer of `len` identities, or [`Error::TooLarge`] when the
/// allocation fails (instead of aborting the process).
pub fn host_scratch<Op: ScanOp>(len: usize) -> Result<Vec<Op::Item>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| Error::TooLarge { what: format!("cannot allocate {len} items of scratch on the host") })?;
    v.resize(len, Op::identity());
    Ok(v)
}

/// Block `b` of `data[..len]` in scan order, as a range of buffer indices:
/// for a reverse scan, block 0 is the last `block_len` items. A block past
/// the end is empty.
///
/// ```
/// use scan_core::{blelloch::block_range, ScanSpec};
/// assert_eq!(block_range(1, 4, 10, ScanSpec::inclusive()), 4..8);
/// assert_eq!(block_range(2, 4, 10, ScanSpec::inclusive().reversed()), 0..2);
/// assert!(block_range(5, 4, 10, ScanSpec::inclusive().reversed()).is_empty());
/// ```
pub fn block_range(b: usize, block_len: usize, len: usize, spec: ScanSpec) -> std::ops::Range<usize> {
    // (A block past the end is empty: at `len`, or at 0 in reverse.)
    let start = b.saturating_mul(block_len).min(len);
    let end = start.saturating_add(block_len).min(len);
    if spec.is_reverse() {
        len - end..len - start
    } else {
        start..end
    }
}

impl<Op: ScanOp> BlockBackend<Op> for SliceBackend<Op::Item> {
    type Buf = [Op::Item];
    type Scratch = Vec<Op::Item>;

    fn block_len(&self) -> usize {
        self.block_len
    }

    fn buf_len(&self, buf: &[Op::Item]) -> usize {
        buf.len()
    }

    fn alloc(&self, len: usize) -> Result<Vec<Op::Item>> {
        host_scratch::<Op>(len)
    }

    fn scan_blocks(
        &self,
        src: Option<&[Op::Item]>,
        dst: &mut [Op::Item],
        len: usize,
        spec: ScanSpec,
        mut totals: Option<&mut [Op::Item]>,
    ) -> Result<()> {
        let mut scratch = self.scratch.borrow_mut();
        block::reserve_block_scratch::<Op>(&mut scratch, self.block_len.min(len))?;
        for b in 0..len.div_ceil(self.block_len) {
            let range = block_range(b, self.block_len, len, spec);
            if let Some(src) = src {
                dst[range.clone()].copy_from_slice(&src[range.clone()]);
            }
            let total = block::scan_block::<Op>(&mut dst[range], spec, &mut scratch);
            if let Some(totals) = totals.as_deref_mut() {
                totals[b] = total;
            }
        }
        Ok(())
    }

    fn add_prefixes(&self, data: &mut [Op::Item], len: usize, spec: ScanSpec, prefixes: &[Op::Item]) -> Result<()> {
        for (b, &prefix) in prefixes.iter().enumerate().take(len.div_ceil(self.block_len)).skip(1) {
            for x in &mut data[block_range(b, self.block_len, len, spec)] {
                *x = Op::combine(prefix, *x);
            }
        }
        Ok(())
    }
}
