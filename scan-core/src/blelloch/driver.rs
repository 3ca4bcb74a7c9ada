//! The multi-block driver: scan blocks, scan their totals, propagate.

use std::borrow::BorrowMut;

use crate::device::{DeviceScan, Operands};
use crate::{Error, Result, ScanOp, ScanSpec};

/// What a backend provides so that [`scan_in_place`] and [`scan_into`] can run on it.
///
/// Blocks are numbered in *scan order*: for a reverse scan, block 0 holds the
/// last `block_len()` items of the buffer. Totals and prefixes are indexed by
/// that number, so the driver itself never looks at the direction.
pub trait BlockBackend<Op: ScanOp> {
    /// A buffer of items the backend works on (`[T]` on the host, a device
    /// span on the GPU).
    type Buf: ?Sized;
    /// An owned scratch buffer, for the block totals.
    type Scratch: BorrowMut<Self::Buf>;

    /// How many items one block scans.
    fn block_len(&self) -> usize;

    /// How many items `buf` holds.
    fn buf_len(&self, buf: &Self::Buf) -> usize;

    /// Allocates a scratch buffer of `len` items (contents unspecified).
    fn alloc(&self, len: usize) -> Result<Self::Scratch>;

    /// Scans each block of the first `len` items as `spec` says, reading them
    /// from `src` (or, when `src` is `None`, from `dst` itself: in place) and
    /// writing the results to `dst`; when `totals` is given, writes the
    /// combination of block `b`'s items to `totals[b]`. The driver has checked
    /// that every buffer holds at least `len` items.
    fn scan_blocks(
        &self,
        src: Option<&Self::Buf>,
        dst: &mut Self::Buf,
        len: usize,
        spec: ScanSpec,
        totals: Option<&mut Self::Buf>,
    ) -> Result<()>;

    /// Replaces every item `x` of block `b` of the first `len` items of `data`
    /// with `combine(prefixes[b], x)`. `prefixes[0]` is the identity, so a
    /// backend may skip block 0.
    fn add_prefixes(&self, data: &mut Self::Buf, len: usize, spec: ScanSpec, prefixes: &Self::Buf) -> Result<()>;
}

/// Scans the first `len` items of `data` in place, any length, on any backend.
///
/// One block is scanned directly. Otherwise: scan every block and collect the
/// block totals; exclusive-scan the totals with this same driver (so the
/// recursion is `log_block(len)` deep); combine each block with its prefix.
/// `len` past the end of `data` is an [`Error::WrongShape`].
///
/// ```
/// use scan_core::{blelloch::{scan_in_place, SliceBackend}, ops::Add, reference, ScanSpec};
///
/// let backend = SliceBackend::new(4); // tiny blocks: three levels for 50 items
/// let mut x: Vec<u64> = (1..=50).collect();
/// let expected = reference::scan::<Add<u64>>(&x, ScanSpec::inclusive());
/// scan_in_place::<Add<u64>, _>(&backend, &mut x[..], 50, ScanSpec::inclusive()).unwrap();
/// assert_eq!(x, expected);
/// ```
pub fn scan_in_place<Op, B>(backend: &B, data: &mut B::Buf, len: usize, spec: ScanSpec) -> Result<()>
where
    Op: ScanOp,
    B: BlockBackend<Op>,
{
    check_len(len, backend.buf_len(data), "data")?;
    run::<Op, B>(backend, None, data, len, spec)
}

/// Scans the first `len` items of `input` into `output`; `input` is not
/// modified, and every one of the first `len` items of `output` is written.
///
/// ```
/// use scan_core::{blelloch::{scan_into, SliceBackend}, ops::Add, reference, ScanSpec};
///
/// let backend = SliceBackend::new(4);
/// let x: Vec<i64> = (1..=50).collect();
/// let mut out = vec![-1; 50];
/// scan_into::<Add<i64>, _>(&backend, &x[..], &mut out[..], 50, ScanSpec::exclusive().reversed()).unwrap();
/// assert_eq!(out, reference::scan::<Add<i64>>(&x, ScanSpec::exclusive().reversed()));
/// ```
pub fn scan_into<Op, B>(backend: &B, input: &B::Buf, output: &mut B::Buf, len: usize, spec: ScanSpec) -> Result<()>
where
    Op: ScanOp,
    B: BlockBackend<Op>,
{
    check_len(len, backend.buf_len(input), "input")?;
    check_len(len, backend.buf_len(output), "output")?;
    run::<Op, B>(backend, Some(input), output, len, spec)
}

/// The multi-block driver over backend `B`, as a [`DeviceScan`]: the whole
/// of each buffer is scanned.
///
/// ```
/// use scan_core::blelloch::{Driver, SliceBackend};
/// use scan_core::device::{DeviceScan, Operands};
/// use scan_core::{ops::Add, ScanSpec};
///
/// let mut x = [1u32, 2, 3, 4, 5];
/// DeviceScan::<Add<u32>>::scan(&Driver(SliceBackend::new(2)), Operands::InPlace(&mut x[..]), ScanSpec::exclusive())?;
/// assert_eq!(x, [0, 1, 3, 6, 10]);
/// # Ok::<(), scan_core::Error>(())
/// ```
#[derive(Debug)]
pub struct Driver<B>(pub B);

impl<Op: ScanOp, B: BlockBackend<Op>> DeviceScan<Op> for Driver<B> {
    type Buf = B::Buf;

    fn len(&self, buf: &B::Buf) -> usize {
        self.0.buf_len(buf)
    }

    fn scan(&self, operands: Operands<'_, B::Buf>, spec: ScanSpec) -> Result<()> {
        let len = <Self as DeviceScan<Op>>::checked_len(self, &operands)?;
        match operands {
            Operands::InPlace(data) => run::<Op, B>(&self.0, None, data, len, spec),
            Operands::Into { src, dst } => run::<Op, B>(&self.0, Some(src), dst, len, spec),
        }
    }
}

/// [`Error::WrongShape`] naming `buffer` unless it holds the `len` items
/// to scan.
fn check_len(len: usize, buf_len: usize, buffer: &str) -> Result<()> {
    if len > buf_len {
        return Err(Error::WrongShape {
            argument: buffer.into(),
            expected: format!("at least `len` = {len} items"),
            found: format!("{buf_len} items"),
        });
    }
    Ok(())
}

fn run<Op, B>(backend: &B, src: Option<&B::Buf>, dst: &mut B::Buf, len: usize, spec: ScanSpec) -> Result<()>
where
    Op: ScanOp,
    B: BlockBackend<Op>,
{
    // Zero-sized items are all the one value of their type: nothing to
    // write, where a loop over 2^64 of them in blocks would not end.
    if std::mem::size_of::<Op::Item>() == 0 {
        return Ok(());
    }
    let block = backend.block_len();
    if len <= block {
        return backend.scan_blocks(src, dst, len, spec, None);
    }
    // Blocks of one item would hand the recursion as many totals as items,
    // forever (a stack overflow): such a backend cannot run this driver.
    if block < 2 {
        return Err(Error::BadTuning(format!(
            "a Blelloch backend's blocks must hold at least 2 items to scan {len} items; this one holds {block}"
        )));
    }
    let blocks = len.div_ceil(block);
    let mut totals = backend.alloc(blocks)?;
    backend.scan_blocks(src, dst, len, spec, Some(totals.borrow_mut()))?;
    run::<Op, B>(backend, None, totals.borrow_mut(), blocks, ScanSpec::exclusive())?;
    backend.add_prefixes(dst, len, spec, totals.borrow_mut())
}
