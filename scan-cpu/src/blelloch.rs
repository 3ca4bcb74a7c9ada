//! The Blelloch algorithm on threads: the core's multi-block driver over a
//! backend that scans blocks and adds prefixes on several threads at once.

use std::marker::PhantomData;
use std::sync::{Mutex, PoisonError};

use scan_core::blelloch::{block, block_range, host_scratch, BlockBackend};
use scan_core::{Result, ScanOp, ScanSpec};

use crate::parallel;

/// Items per block of [`Algorithm::Blelloch`](crate::Algorithm::Blelloch):
/// a block and its padded scratch stay in L1/L2. Public so that tests can
/// probe the sizes around a block.
pub const BLOCK_LEN: usize = 4096;

/// A [`BlockBackend`] over host slices whose blocks are spread over `threads`
/// threads; otherwise it does what `scan_core::blelloch::SliceBackend` does.
pub(crate) struct ThreadedBlocks<T> {
    threads: usize,
    _items: PhantomData<fn() -> T>,
}

impl<T> ThreadedBlocks<T> {
    pub fn new(threads: usize) -> Self {
        ThreadedBlocks { threads: threads.max(1), _items: PhantomData }
    }
}

/// The first `len` items of `data` cut into blocks in scan order: for a
/// reverse scan, block 0 is the last `BLOCK_LEN` items (the driver's convention,
/// `scan_core::blelloch::block_range`).
fn blocks<T>(data: &mut [T], len: usize, spec: ScanSpec) -> Vec<&mut [T]> {
    let data = &mut data[..len];
    if spec.is_reverse() {
        data.rchunks_mut(BLOCK_LEN).collect()
    } else {
        data.chunks_mut(BLOCK_LEN).collect()
    }
}

impl<Op: ScanOp> BlockBackend<Op> for ThreadedBlocks<Op::Item> {
    type Buf = [Op::Item];
    type Scratch = Vec<Op::Item>;

    fn block_len(&self) -> usize {
        BLOCK_LEN
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
        totals: Option<&mut [Op::Item]>,
    ) -> Result<()> {
        // (block, where its total goes, block index in scan order)
        type Work<'a, T> = Vec<(&'a mut [T], Option<&'a mut T>, usize)>;
        let with_index = blocks(dst, len, spec).into_iter().enumerate();
        let mut work: Work<'_, Op::Item> = match totals {
            Some(totals) => with_index.zip(totals.iter_mut()).map(|((b, blk), t)| (blk, Some(t), b)).collect(),
            None => with_index.map(|(b, blk)| (blk, None, b)).collect(),
        };
        // Every thread's scratch is reserved before any block is touched,
        // fallibly: blocks of wide items (4096 of 64 KiB is 256 MiB a
        // thread) that the host cannot hold are `Error::TooLarge` with the
        // output untouched, not an abort.
        let parts = parallel::parts(work.len(), self.threads);
        let mut scratches = Vec::with_capacity(parts);
        for _ in 0..parts {
            let mut scratch = Vec::new();
            block::reserve_block_scratch::<Op>(&mut scratch, BLOCK_LEN.min(len))?;
            scratches.push(scratch);
        }
        let scratches = Mutex::new(scratches);
        parallel::for_each_part(&mut work, self.threads, |part| {
            // One scratch a part, and never more parts than scratches.
            let taken = scratches.lock().unwrap_or_else(PoisonError::into_inner).pop();
            let mut scratch = taken.unwrap_or_default();
            for (block, total, b) in part {
                if let Some(src) = src {
                    // Copy this block's input in while it is hot in cache.
                    block.copy_from_slice(&src[block_range(*b, BLOCK_LEN, len, spec)]);
                }
                let t = block::scan_block::<Op>(block, spec, &mut scratch);
                if let Some(slot) = total {
                    **slot = t;
                }
            }
        });
        Ok(())
    }

    fn add_prefixes(&self, data: &mut [Op::Item], len: usize, spec: ScanSpec, prefixes: &[Op::Item]) -> Result<()> {
        // Block 0's prefix is the identity: skip it.
        let mut work: Vec<(&mut [Op::Item], Op::Item)> =
            blocks(data, len, spec).into_iter().zip(prefixes.iter().copied()).skip(1).collect();
        parallel::for_each_part(&mut work, self.threads, |part| {
            for (block, prefix) in part {
                for x in block.iter_mut() {
                    *x = Op::combine(*prefix, *x);
                }
            }
        });
        Ok(())
    }
}
