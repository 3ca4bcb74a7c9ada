//! The public executor: [`Cpu`] and its [`Algorithm`]s.

use std::fmt;
use std::mem::MaybeUninit;

use scan_core::device::{DeviceScan, Operands};
use scan_core::{blelloch, reference, Error, Result, Scan, ScanOp, ScanSpec};

use crate::blelloch::ThreadedBlocks;
use crate::{rows, sequential, tiled};

/// How a [`Cpu`] scans.
///
/// # Determinism
///
/// Integer scans (and every exactly associative operator: max, min, the
/// bitwise ones) give the same bits on every algorithm, run and thread
/// count. For floats, where grouping changes the rounding:
/// - `Sequential` and `Blelloch` group by the length alone: the same bits
///   from run to run and for every thread count;
/// - `Tiled` groups inside a tile by the tile's length alone
///   ([`tile_len`](crate::tile_len) items; a tile under 128 items is one
///   chain, so an input that short and within one tile is the sequential
///   fold), and combines the tiles' totals
///   in tile order, as one thread carrying its prefix from tile to tile
///   would, whichever predecessor a tile's look-back met: the same bits from
///   run to run and for every thread count (the look-back combines forward
///   from the prefix it meets; see `lookback.rs`).
///
/// The fused-map scans ([`Cpu::scan_mapped`], [`Cpu::scan_mapped_rows`])
/// take none of these algorithms: they cut the input into one piece per
/// thread, so their float results are the same from run to run for one
/// thread count, not across thread counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// One pass, one thread: the loop of `scan_core::reference`.
    Sequential,
    /// Blelloch's work-efficient tree scan in blocks of 4096 items, through the
    /// core's multi-block driver; blocks are scanned and fixed up in parallel.
    Blelloch,
    /// The fast path: threads over cache-sized tiles, each scanned as several
    /// independent chains (one, under 128 items) and chained to its predecessors by a look-back;
    /// large outputs are written with non-temporal stores. Items larger
    /// than [`STACK_ITEM_MAX_BYTES`](crate::STACK_ITEM_MAX_BYTES) run as
    /// [`Algorithm::Blelloch`] (the chains' bookkeeping is on the stack).
    #[default]
    Tiled,
}

impl Algorithm {
    /// Every algorithm, for tests and benchmarks that cover them all.
    pub const ALL: [Algorithm; 3] = [Algorithm::Sequential, Algorithm::Blelloch, Algorithm::Tiled];

    /// A short lower-case name (`"sequential"`, `"blelloch"`, `"tiled"`).
    pub const fn name(self) -> &'static str {
        match self {
            Algorithm::Sequential => "sequential",
            Algorithm::Blelloch => "blelloch",
            Algorithm::Tiled => "tiled",
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Runs scans on the CPU.
///
/// Every call validates its arguments and returns [`Error`] instead of
/// panicking; inputs are never modified except by the `*_in_place` calls.
/// Arguments are checked before anything is written.
///
/// ```
/// use scan_core::{ops::LinearRecurrence, ScanSpec};
/// use scan_cpu::{Algorithm, Cpu};
///
/// // h_t = a_t * h_{t-1} + b_t with h_{-1} = 0: the `.1` of an inclusive scan.
/// let ab = [(0.5f32, 1.0f32), (0.5, 1.0), (0.5, 1.0)];
/// for algorithm in Algorithm::ALL {
///     let cpu = Cpu::new().with_algorithm(algorithm).with_threads(2);
///     let h: Vec<f32> = cpu.scan::<LinearRecurrence<f32>>(&ab, ScanSpec::inclusive())?.iter().map(|p| p.1).collect();
///     assert_eq!(h, [1.0, 1.5, 1.75]);
/// }
/// # Ok::<(), scan_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Cpu {
    algorithm: Algorithm,
    threads: usize,
}

impl Default for Cpu {
    fn default() -> Self {
        Cpu::new()
    }
}

impl fmt::Display for Cpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = if self.threads == 1 { "" } else { "s" };
        write!(f, "CPU ({} scan, {} thread{s})", self.algorithm, self.threads)
    }
}

impl Cpu {
    /// The fast [`Algorithm::Tiled`] path on every available core.
    ///
    /// ```
    /// let cpu = scan_cpu::Cpu::new();
    /// assert_eq!(cpu.algorithm(), scan_cpu::Algorithm::Tiled);
    /// assert!(cpu.threads() >= 1);
    /// ```
    pub fn new() -> Self {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        Cpu { algorithm: Algorithm::default(), threads }
    }

    /// The same executor with another algorithm.
    ///
    /// ```
    /// use scan_cpu::{Algorithm, Cpu};
    /// assert_eq!(Cpu::new().with_algorithm(Algorithm::Blelloch).algorithm(), Algorithm::Blelloch);
    /// ```
    pub fn with_algorithm(mut self, algorithm: Algorithm) -> Self {
        self.algorithm = algorithm;
        self
    }

    /// The same executor on at most `threads` threads (0 counts as 1). Small
    /// inputs use fewer threads than allowed: a thread must have enough work
    /// to pay for starting it.
    ///
    /// ```
    /// assert_eq!(scan_cpu::Cpu::new().with_threads(0).threads(), 1);
    /// ```
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }

    /// The algorithm this executor runs.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// The most threads this executor uses.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Scans `input` into a new vector.
    ///
    /// ```
    /// use scan_core::{ops::Max, ScanSpec};
    /// let x = [1.0, f32::NAN, 3.0, 2.0];
    /// // f32::max semantics: NaN is ignored.
    /// assert_eq!(scan_cpu::Cpu::new().scan::<Max<f32>>(&x, ScanSpec::inclusive())?, [1.0, 1.0, 3.0, 3.0]);
    /// # Ok::<(), scan_core::Error>(())
    /// ```
    pub fn scan<Op: ScanOp>(&self, input: &[Op::Item], spec: ScanSpec) -> Result<Vec<Op::Item>> {
        let n = input.len();
        let mut out = Vec::new();
        out.try_reserve_exact(n).map_err(|_| Error::TooLarge {
            what: format!("cannot allocate an output of {n} items of {} bytes", std::mem::size_of::<Op::Item>()),
        })?;
        self.run::<Op::Item>(n).scan_into::<Op>(input, &mut out.spare_capacity_mut()[..n], spec)?;
        // SAFETY: `scan_into` returned Ok, so it initialized all `n` items
        // (zero-sized ones need no writing: any slot of an inhabited
        // zero-sized type is a valid value, and an uninhabited type's slice
        // is empty).
        unsafe { out.set_len(n) };
        Ok(out)
    }

    /// Scans `input` into `output`, which must have the same length
    /// ([`Error::LengthMismatch`] otherwise).
    ///
    /// ```
    /// use scan_core::{ops::Add, Error, ScanSpec};
    /// let cpu = scan_cpu::Cpu::new();
    /// let mut out = [0u64; 3];
    /// cpu.scan_into::<Add<u64>>(&[1, 2, 3], &mut out, ScanSpec::exclusive().reversed())?;
    /// assert_eq!(out, [5, 3, 0]);
    /// let err = cpu.scan_into::<Add<u64>>(&[1, 2], &mut out, ScanSpec::inclusive());
    /// assert!(matches!(err, Err(Error::LengthMismatch { input: 2, output: 3 })));
    /// # Ok::<(), scan_core::Error>(())
    /// ```
    pub fn scan_into<Op: ScanOp>(&self, input: &[Op::Item], output: &mut [Op::Item], spec: ScanSpec) -> Result<()> {
        DeviceScan::<Op>::scan(&self.run::<Op::Item>(input.len()), Operands::Into { src: input, dst: output }, spec)
    }

    /// Scans `data` in place.
    ///
    /// ```
    /// use scan_core::{ops::MatMul2x2, ScanSpec};
    /// let mut m = [[1, 1, 0, 1], [1, 0, 1, 1]]; // not commutative
    /// scan_cpu::Cpu::new().scan_in_place::<MatMul2x2<i32>>(&mut m, ScanSpec::inclusive())?;
    /// assert_eq!(m, [[1, 1, 0, 1], [2, 1, 1, 1]]);
    /// # Ok::<(), scan_core::Error>(())
    /// ```
    pub fn scan_in_place<Op: ScanOp>(&self, data: &mut [Op::Item], spec: ScanSpec) -> Result<()> {
        DeviceScan::<Op>::scan(&self.run::<Op::Item>(data.len()), Operands::InPlace(data), spec)
    }

    /// Scans each row of a row-major `[rows, len / rows]` buffer independently,
    /// from `input` into `output` (same length). Errors: [`Error::LengthMismatch`],
    /// and [`Error::BadShape`] when `rows` is 0 or does not divide the length.
    ///
    /// ```
    /// use scan_core::{ops::Add, ScanSpec};
    /// let mut out = [0; 6];
    /// scan_cpu::Cpu::new().scan_rows::<Add<i32>>(&[1, 2, 3, 4, 5, 6], &mut out, 2, ScanSpec::inclusive())?;
    /// assert_eq!(out, [1, 3, 6, 4, 9, 15]);
    /// # Ok::<(), scan_core::Error>(())
    /// ```
    pub fn scan_rows<Op: ScanOp>(
        &self,
        input: &[Op::Item],
        output: &mut [Op::Item],
        rows: usize,
        spec: ScanSpec,
    ) -> Result<()> {
        Error::check_lengths(input.len(), output.len())?;
        let row_len = reference::row_len(input.len(), rows)?;
        rows::scan_rows::<Op>(self, input, as_uninit(output), row_len, spec)
    }

    /// Scans each row of a row-major `[rows, len / rows]` buffer in place.
    /// [`Error::BadShape`] when `rows` is 0 or does not divide the length.
    ///
    /// ```
    /// use scan_core::{ops::Add, Error, ScanSpec};
    /// let cpu = scan_cpu::Cpu::new();
    /// let mut x = [1, 2, 3, 4, 5, 6];
    /// cpu.scan_rows_in_place::<Add<i32>>(&mut x, 3, ScanSpec::exclusive())?;
    /// assert_eq!(x, [0, 1, 0, 3, 0, 5]);
    /// assert!(matches!(cpu.scan_rows_in_place::<Add<i32>>(&mut x, 4, ScanSpec::exclusive()), Err(Error::BadShape { .. })));
    /// # Ok::<(), scan_core::Error>(())
    /// ```
    pub fn scan_rows_in_place<Op: ScanOp>(&self, data: &mut [Op::Item], rows: usize, spec: ScanSpec) -> Result<()> {
        let row_len = reference::row_len(data.len(), rows)?;
        rows::scan_rows_in_place::<Op>(self, data, row_len, spec)
    }

    /// Scans each segment of `input` on its own, into `output` (same
    /// length). `starts` are the segments' first indices: non-decreasing, at
    /// most the length; equal starts make empty segments, and CSR offsets
    /// `[0, ..., len]` work as they are. Many segments are spread over the
    /// threads, a few long ones each scanned with all of them. Errors:
    /// [`Error::LengthMismatch`], [`Error::BadSegments`] (nothing written).
    ///
    /// ```
    /// use scan_core::{ops::Add, Error, ScanSpec};
    /// let cpu = scan_cpu::Cpu::new();
    /// let mut out = [0; 6];
    /// // Ragged rows [1, 2], [], [3, 4, 5], [6] as CSR offsets:
    /// cpu.scan_segments::<Add<i32>>(&[1, 2, 3, 4, 5, 6], &mut out, &[0, 2, 2, 5, 6], ScanSpec::inclusive())?;
    /// assert_eq!(out, [1, 3, 3, 7, 12, 6]);
    /// let bad = cpu.scan_segments::<Add<i32>>(&[1, 2, 3, 4, 5, 6], &mut out, &[0, 4, 2], ScanSpec::inclusive());
    /// assert!(matches!(bad, Err(Error::BadSegments { index: 2, .. })));
    /// # Ok::<(), scan_core::Error>(())
    /// ```
    pub fn scan_segments<Op: ScanOp>(
        &self,
        input: &[Op::Item],
        output: &mut [Op::Item],
        starts: &[usize],
        spec: ScanSpec,
    ) -> Result<()> {
        rows::scan_segments::<Op>(self, input, output, starts, spec)
    }

    /// Scans `rows` rows of `row_len` items whose starts are `stride` items
    /// apart (a column block of a wider matrix, a padded layout), from
    /// `input` into `output` (same length), without copying them out; items
    /// between rows are not touched. Errors: [`Error::LengthMismatch`],
    /// [`Error::BadStride`].
    ///
    /// ```
    /// use scan_core::{ops::Add, ScanSpec};
    /// // The first 2 columns of a 3 x 3 matrix.
    /// let m = [1, 2, 3, 4, 5, 6, 7, 8, 9];
    /// let mut out = [0; 9];
    /// scan_cpu::Cpu::new().scan_rows_strided::<Add<i32>>(&m, &mut out, 3, 2, 3, ScanSpec::inclusive())?;
    /// assert_eq!(out, [1, 3, 0, 4, 9, 0, 7, 15, 0]);
    /// # Ok::<(), scan_core::Error>(())
    /// ```
    pub fn scan_rows_strided<Op: ScanOp>(
        &self,
        input: &[Op::Item],
        output: &mut [Op::Item],
        rows: usize,
        row_len: usize,
        stride: usize,
        spec: ScanSpec,
    ) -> Result<()> {
        rows::scan_rows_strided::<Op>(self, input, output, rows, row_len, stride, spec)
    }

    /// [`Cpu::scan_segments`] in place.
    pub fn scan_segments_in_place<Op: ScanOp>(
        &self,
        data: &mut [Op::Item],
        starts: &[usize],
        spec: ScanSpec,
    ) -> Result<()> {
        rows::scan_segments_in_place::<Op>(self, data, starts, spec)
    }

    /// The items of `values` whose flag in `keep` is set, in order (stream
    /// compaction: `Iterator::filter` with the predicate's results given as
    /// flags), filtered in contiguous parts on this executor's threads.
    /// `values` and `keep` must have the same length
    /// ([`Error::WrongShape`] otherwise).
    ///
    /// ```
    /// let kept = scan_cpu::Cpu::new().compact(&[10, 11, 12, 13], &[true, false, false, true])?;
    /// assert_eq!(kept, [10, 13]);
    /// # Ok::<(), scan_core::Error>(())
    /// ```
    pub fn compact<T: Copy + Send + Sync>(&self, values: &[T], keep: &[bool]) -> Result<Vec<T>> {
        crate::compact::compact(values, keep, self.threads)
    }

    /// Scans each segment on its own, a segment starting at every item whose
    /// head flag is set (and at item 0); one flag per item
    /// ([`Error::WrongShape`] otherwise; [`Error::LengthMismatch`] when
    /// `output` is not as long as `input`).
    ///
    /// ```
    /// use scan_core::{ops::Add, ScanSpec};
    /// let mut x = [1, 2, 3, 4, 5];
    /// let heads = [false, false, true, false, true];
    /// scan_cpu::Cpu::new().scan_flagged_in_place::<Add<i32>>(&mut x, &heads, ScanSpec::exclusive())?;
    /// assert_eq!(x, [0, 1, 0, 3, 0]);
    /// # Ok::<(), scan_core::Error>(())
    /// ```
    pub fn scan_flagged<Op: ScanOp>(
        &self,
        input: &[Op::Item],
        output: &mut [Op::Item],
        heads: &[bool],
        spec: ScanSpec,
    ) -> Result<()> {
        // The trait's default: the heads' starts, then this executor's segments.
        Scan::<Op>::scan_flagged(self, input, output, heads, spec)
    }

    /// [`Cpu::scan_flagged`] in place.
    pub fn scan_flagged_in_place<Op: ScanOp>(
        &self,
        data: &mut [Op::Item],
        heads: &[bool],
        spec: ScanSpec,
    ) -> Result<()> {
        Scan::<Op>::scan_flagged_in_place(self, data, heads, spec)
    }

    /// How to run a scan whose whole output holds `len` items of `T`: this
    /// executor's algorithm, except that items past
    /// [`STACK_ITEM_MAX_BYTES`](crate::STACK_ITEM_MAX_BYTES) take Blelloch's
    /// path instead of the tiled one (whose bookkeeping is on the stack).
    pub(crate) fn run<T>(&self, len: usize) -> Run {
        let algorithm = match self.algorithm {
            Algorithm::Tiled if std::mem::size_of::<T>() > crate::STACK_ITEM_MAX_BYTES => Algorithm::Blelloch,
            algorithm => algorithm,
        };
        Run { algorithm, threads: self.threads, stream: tiled::should_stream::<T>(len) }
    }
}

impl<Op: ScanOp> Scan<Op> for Cpu {
    fn scan_into(&self, input: &[Op::Item], output: &mut [Op::Item], spec: ScanSpec) -> Result<()> {
        Cpu::scan_into::<Op>(self, input, output, spec)
    }
    fn scan(&self, input: &[Op::Item], spec: ScanSpec) -> Result<Vec<Op::Item>> {
        Cpu::scan::<Op>(self, input, spec)
    }
    fn scan_in_place(&self, data: &mut [Op::Item], spec: ScanSpec) -> Result<()> {
        Cpu::scan_in_place::<Op>(self, data, spec)
    }
    fn scan_rows(&self, input: &[Op::Item], output: &mut [Op::Item], rows: usize, spec: ScanSpec) -> Result<()> {
        Cpu::scan_rows::<Op>(self, input, output, rows, spec)
    }
    fn scan_rows_in_place(&self, data: &mut [Op::Item], rows: usize, spec: ScanSpec) -> Result<()> {
        Cpu::scan_rows_in_place::<Op>(self, data, rows, spec)
    }
    fn scan_segments(
        &self,
        input: &[Op::Item],
        output: &mut [Op::Item],
        starts: &[usize],
        spec: ScanSpec,
    ) -> Result<()> {
        Cpu::scan_segments::<Op>(self, input, output, starts, spec)
    }
    fn scan_segments_in_place(&self, data: &mut [Op::Item], starts: &[usize], spec: ScanSpec) -> Result<()> {
        Cpu::scan_segments_in_place::<Op>(self, data, starts, spec)
    }
    fn scan_rows_strided(
        &self,
        input: &[Op::Item],
        output: &mut [Op::Item],
        rows: usize,
        row_len: usize,
        stride: usize,
        spec: ScanSpec,
    ) -> Result<()> {
        Cpu::scan_rows_strided::<Op>(self, input, output, rows, row_len, stride, spec)
    }
}

impl<Op: ScanOp> DeviceScan<Op> for Run {
    type Buf = [Op::Item];

    fn len(&self, buf: &[Op::Item]) -> usize {
        buf.len()
    }

    fn scan(&self, operands: Operands<'_, [Op::Item]>, spec: ScanSpec) -> Result<()> {
        <Self as DeviceScan<Op>>::checked_len(self, &operands)?;
        match operands {
            Operands::InPlace(data) => self.scan_in_place::<Op>(data, spec),
            Operands::Into { src, dst } => self.scan_into::<Op>(src, as_uninit(dst), spec),
        }
    }
}

/// Views initialized items as possibly uninitialized ones, to share one code
/// path with outputs that are still uninitialized.
pub(crate) fn as_uninit<T>(items: &mut [T]) -> &mut [MaybeUninit<T>] {
    // SAFETY: `MaybeUninit<T>` has the layout of `T`; every writer behind this
    // view writes initialized items only, so `items` stays initialized.
    unsafe { &mut *(items as *mut [T] as *mut [MaybeUninit<T>]) }
}

/// One scan's settings: the executor's, plus whether to write the output with
/// non-temporal stores (decided from the size of the whole output, which for
/// a batched scan is larger than one row). Runs any of the three algorithms
/// behind the algorithm-neutral [`DeviceScan`] contract.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Run {
    pub algorithm: Algorithm,
    pub threads: usize,
    pub stream: bool,
}

impl Run {
    /// Scans `input` into `output` (same length, possibly uninitialized),
    /// initializing every item of `output` when it returns `Ok` (writing
    /// nothing for zero-sized items, whose slots are valid as they are).
    pub fn scan_into<Op: ScanOp>(
        &self,
        input: &[Op::Item],
        output: &mut [MaybeUninit<Op::Item>],
        spec: ScanSpec,
    ) -> Result<()> {
        debug_assert_eq!(input.len(), output.len());
        if is_zero_sized::<Op::Item>() {
            // Nothing to write: a zero-sized slot holds the value it is read as.
            return Ok(());
        }
        match self.algorithm {
            // A tiled scan of one short tile is this fold, bit for bit
            // (tiled::is_sequential_fold), without the tile's bookkeeping:
            // rows of 16 f32 items went from 0.11 to about 1.2 of a memcpy.
            Algorithm::Sequential => sequential::scan_into::<Op>(input, output, spec),
            Algorithm::Tiled if tiled::is_sequential_fold::<Op::Item>(input.len()) => {
                sequential::scan_into::<Op>(input, output, spec)
            }
            Algorithm::Blelloch => {
                for (slot, &x) in output.iter_mut().zip(input) {
                    slot.write(x);
                }
                // SAFETY: every item was just initialized.
                let output = unsafe { &mut *(output as *mut [MaybeUninit<Op::Item>] as *mut [Op::Item]) };
                self.scan_in_place::<Op>(output, spec)?;
            }
            // SAFETY: `input` is readable and `output` writable for their common
            // length, and they do not overlap (one is borrowed mutably).
            Algorithm::Tiled => unsafe {
                let bufs = tiled::Buffers { src: input.as_ptr(), dst: output.as_mut_ptr().cast(), len: input.len() };
                tiled::scan::<Op>(bufs, spec, self.threads, self.stream);
            },
        }
        Ok(())
    }

    /// Scans `data` in place.
    pub fn scan_in_place<Op: ScanOp>(&self, data: &mut [Op::Item], spec: ScanSpec) -> Result<()> {
        if is_zero_sized::<Op::Item>() {
            return Ok(());
        }
        match self.algorithm {
            Algorithm::Sequential => {
                reference::scan_in_place::<Op>(data, spec);
            }
            // As in `scan_into`.
            Algorithm::Tiled if tiled::is_sequential_fold::<Op::Item>(data.len()) => {
                reference::scan_in_place::<Op>(data, spec);
            }
            Algorithm::Blelloch => {
                let backend = ThreadedBlocks::<Op::Item>::new(self.threads);
                blelloch::scan_in_place::<Op, _>(&backend, data, data.len(), spec)?;
            }
            // SAFETY: `data` is readable and writable; src == dst is allowed.
            Algorithm::Tiled => unsafe {
                let ptr = data.as_mut_ptr();
                tiled::scan::<Op>(
                    tiled::Buffers { src: ptr, dst: ptr, len: data.len() },
                    spec,
                    self.threads,
                    self.stream,
                );
            },
        }
        Ok(())
    }
}

/// Whether `T` takes no bytes. Then every item of a scan is the one value of
/// its type (a slice of an uninhabited type is empty), and the scan has
/// nothing to compute: a fold of `usize::MAX` of them would not end, and the
/// tiled path would ask for more tile slots than memory holds.
pub(crate) fn is_zero_sized<T>() -> bool {
    std::mem::size_of::<T>() == 0
}
