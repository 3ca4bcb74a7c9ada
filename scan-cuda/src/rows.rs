//! Many scans at once: rows (equal lengths, consecutive or strided) and
//! segments (by starts or by head flags), from host slices or device buffers.
//!
//! With the single-pass algorithm each call is one launch, whatever the
//! number and the lengths of the rows or segments (plus, for segments given
//! by starts, one small launch that turns them into head flags). The kernel
//! goes by the row length, in the rows module's tiles (4096 items for f32):
//!
//! * rows of more than half a tile and at most one: a block per row, nothing
//!   shared between blocks (kernels/row_tiles.cuh);
//! * consecutive rows of two or more whole tiles: the plain single-pass scan,
//!   each row's first tile starting afresh (kernels/heads.cuh, `TileRows`);
//! * any other rows and every segment: tiles cover the items regardless of
//!   where rows start, each tile scanning its rows or segments on their own
//!   with a look-back that stops at a segment's head (heads.cuh).
//!
//! With Blelloch's, each row or segment is one scan.
//!
//! The layouts are pictured in the docs of [`Cuda`] ("Rows and segments").

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg};
use scan_core::{reference, CudaOp, Error, Result, ScanSpec};

use crate::blelloch::grid;
use crate::buffer::{driver_error, DeviceBuffer};
use crate::cuda::Cuda;
use crate::kernels::{Family, Stage};
use crate::module::lock;
use crate::single_pass::Segments;

impl Cuda {
    /// Scans each row of a row-major `[rows, input.len() / rows]` buffer
    /// from `input` into `output` (same length) on the GPU, every row in one
    /// launch. Errors: [`Error::LengthMismatch`], and [`Error::BadShape`] when
    /// `rows` is 0 or does not divide the length. See the [module
    /// docs](crate::Cuda#rows-and-segments) for the layout.
    ///
    /// The buffers cross the host link once each way; data already on the
    /// device is scanned with [`scan_rows_device_into`](Cuda::scan_rows_device_into).
    ///
    /// ```no_run
    /// # fn main() -> scan_core::Result<()> {
    /// use scan_core::{ops::Add, ScanSpec};
    /// let cuda = scan_cuda::Cuda::new()?;
    /// let mut out = [0; 6];
    /// cuda.scan_rows::<Add<i32>>(&[1, 2, 3, 4, 5, 6], &mut out, 2, ScanSpec::inclusive())?;
    /// assert_eq!(out, [1, 3, 6, 4, 9, 15]);
    /// # Ok(()) }
    /// ```
    pub fn scan_rows<Op: CudaOp>(
        &self,
        input: &[Op::Item],
        output: &mut [Op::Item],
        rows: usize,
        spec: ScanSpec,
    ) -> Result<()> {
        Error::check_lengths(input.len(), output.len())?;
        reference::row_len(input.len(), rows)?;
        if rows == 1 {
            return self.scan_into::<Op>(input, output, spec);
        }
        if input.is_empty() {
            return Ok(());
        }
        let dev_in = self.upload(input)?;
        // Every item is written by the out-of-place scan before the download.
        let mut dev_out = self.alloc_unwritten::<Op::Item>(input.len())?;
        self.scan_rows_device_into::<Op>(&dev_in, &mut dev_out, rows, spec)?;
        self.download_into(&dev_out, output)
    }

    /// Scans each row of a row-major `[rows, data.len() / rows]` host buffer
    /// in place on the GPU. [`Error::BadShape`] when `rows` is 0 or does not
    /// divide the length.
    ///
    /// ```no_run
    /// # fn main() -> scan_core::Result<()> {
    /// use scan_core::{ops::Add, ScanSpec};
    /// let cuda = scan_cuda::Cuda::new()?;
    /// let mut x = [1, 2, 3, 4, 5, 6];
    /// cuda.scan_rows_in_place::<Add<i32>>(&mut x, 3, ScanSpec::exclusive())?;
    /// assert_eq!(x, [0, 1, 0, 3, 0, 5]);
    /// # Ok(()) }
    /// ```
    pub fn scan_rows_in_place<Op: CudaOp>(&self, data: &mut [Op::Item], rows: usize, spec: ScanSpec) -> Result<()> {
        reference::row_len(data.len(), rows)?;
        if rows == 1 {
            return self.scan_in_place::<Op>(data, spec);
        }
        if data.is_empty() {
            return Ok(());
        }
        let mut buf = self.upload(data)?;
        self.scan_rows_device::<Op>(&mut buf, rows, spec)?;
        self.download_into(&buf, data)
    }

    /// Scans `rows` rows of `row_len` items whose starts are `stride` items
    /// apart (a column block of a wider matrix, a padded layout: see the
    /// picture in the [module docs](crate::Cuda#rows-and-segments)), from
    /// `input` into `output` (same length), in one launch. Items between the
    /// rows keep `output`'s values. Errors: [`Error::LengthMismatch`],
    /// [`Error::BadStride`].
    ///
    /// ```no_run
    /// # fn main() -> scan_core::Result<()> {
    /// use scan_core::{ops::Add, ScanSpec};
    /// let cuda = scan_cuda::Cuda::new()?;
    /// // Two rows of 2, 3 apart: items 2 and 5 are padding.
    /// let mut out = [0; 6];
    /// cuda.scan_rows_strided::<Add<i32>>(&[1, 2, 9, 3, 4, 9], &mut out, 2, 2, 3, ScanSpec::inclusive())?;
    /// assert_eq!(out, [1, 3, 0, 3, 7, 0]);
    /// # Ok(()) }
    /// ```
    pub fn scan_rows_strided<Op: CudaOp>(
        &self,
        input: &[Op::Item],
        output: &mut [Op::Item],
        rows: usize,
        row_len: usize,
        stride: usize,
        spec: ScanSpec,
    ) -> Result<()> {
        Error::check_lengths(input.len(), output.len())?;
        reference::check_strided(input.len(), rows, row_len, stride)?;
        if rows == 0 || row_len == 0 {
            return Ok(());
        }
        let dev_in = self.upload(input)?;
        // The padding between rows keeps the caller's values.
        let mut dev_out = self.upload(output)?;
        self.scan_rows_strided_device_into::<Op>(&dev_in, &mut dev_out, rows, row_len, stride, spec)?;
        self.download_into(&dev_out, output)
    }

    /// Scans each row of a row-major `[rows, buf.len() / rows]` device buffer
    /// in place, in one launch. Queued on the stream: returns at once (see
    /// [`Cuda`] on when failures show). [`Error::BadShape`] when `rows` is 0
    /// or does not divide the length.
    pub fn scan_rows_device<Op: CudaOp>(
        &self,
        buf: &mut DeviceBuffer<Op::Item>,
        rows: usize,
        spec: ScanSpec,
    ) -> Result<()> {
        self.check_buffer(buf, "buf")?;
        let row_len = reference::row_len(buf.len(), rows)?;
        let dst = buf.device_ptr_mut(self.stream());
        self.scan_rows_raw::<Op>(None, dst, rows, row_len, row_len, spec)
    }

    /// Scans each row of a row-major `[rows, input.len() / rows]` device
    /// buffer into `output` (same length), in one launch; `input` is not
    /// modified. Queued on the stream.
    ///
    /// ```no_run
    /// # fn main() -> scan_core::Result<()> {
    /// use scan_core::{ops::Add, ScanSpec};
    /// let cuda = scan_cuda::Cuda::new()?;
    /// let x = cuda.upload(&[1u32; 4096 * 64])?;
    /// let mut y = cuda.alloc::<u32>(x.len())?;
    /// cuda.scan_rows_device_into::<Add<u32>>(&x, &mut y, 64, ScanSpec::inclusive())?;
    /// assert_eq!(y.download()?[4095], 4096);
    /// # Ok(()) }
    /// ```
    pub fn scan_rows_device_into<Op: CudaOp>(
        &self,
        input: &DeviceBuffer<Op::Item>,
        output: &mut DeviceBuffer<Op::Item>,
        rows: usize,
        spec: ScanSpec,
    ) -> Result<()> {
        self.check_buffer(input, "input")?;
        self.check_buffer(output, "output")?;
        Error::check_lengths(input.len(), output.len())?;
        let row_len = reference::row_len(input.len(), rows)?;
        let src = input.device_ptr(self.stream());
        let dst = output.device_ptr_mut(self.stream());
        self.scan_rows_raw::<Op>(Some(src), dst, rows, row_len, row_len, spec)
    }

    /// [`scan_rows_strided`](Cuda::scan_rows_strided) on device buffers:
    /// items between rows of `output` are not touched. Queued on the stream.
    pub fn scan_rows_strided_device_into<Op: CudaOp>(
        &self,
        input: &DeviceBuffer<Op::Item>,
        output: &mut DeviceBuffer<Op::Item>,
        rows: usize,
        row_len: usize,
        stride: usize,
        spec: ScanSpec,
    ) -> Result<()> {
        self.check_buffer(input, "input")?;
        self.check_buffer(output, "output")?;
        Error::check_lengths(input.len(), output.len())?;
        reference::check_strided(input.len(), rows, row_len, stride)?;
        let src = input.device_ptr(self.stream());
        let dst = output.device_ptr_mut(self.stream());
        self.scan_rows_raw::<Op>(Some(src), dst, rows, row_len, stride, spec)
    }

    /// Scans each segment of `input` on its own, into `output` (same
    /// length), in one launch. `starts` are the segments' first indices,
    /// non-decreasing and at most the length; equal starts make empty
    /// segments, and CSR offsets `[0, ..., len]` work as they are. Errors:
    /// [`Error::LengthMismatch`], [`Error::BadSegments`] (nothing is written
    /// then).
    ///
    /// ```no_run
    /// # fn main() -> scan_core::Result<()> {
    /// use scan_core::{ops::Add, ScanSpec};
    /// let cuda = scan_cuda::Cuda::new()?;
    /// let mut out = [0; 5];
    /// cuda.scan_segments::<Add<i32>>(&[1, 2, 3, 4, 5], &mut out, &[0, 2, 2], ScanSpec::inclusive())?;
    /// assert_eq!(out, [1, 3, 3, 7, 12]);
    /// # Ok(()) }
    /// ```
    pub fn scan_segments<Op: CudaOp>(
        &self,
        input: &[Op::Item],
        output: &mut [Op::Item],
        starts: &[usize],
        spec: ScanSpec,
    ) -> Result<()> {
        Error::check_lengths(input.len(), output.len())?;
        // Checked here, so that the error names the bad start.
        reference::segments(input.len(), starts)?;
        if input.is_empty() {
            return Ok(());
        }
        let dev_in = self.upload(input)?;
        let mut dev_out = self.alloc_unwritten::<Op::Item>(input.len())?;
        let starts: Vec<u64> = starts.iter().map(|&s| s as u64).collect();
        let dev_starts = self.upload(&starts)?;
        self.scan_segments_device_into::<Op>(&dev_in, &mut dev_out, &dev_starts, spec)?;
        self.download_into(&dev_out, output)
    }

    /// [`scan_segments`](Cuda::scan_segments) in place.
    pub fn scan_segments_in_place<Op: CudaOp>(
        &self,
        data: &mut [Op::Item],
        starts: &[usize],
        spec: ScanSpec,
    ) -> Result<()> {
        reference::segments(data.len(), starts)?;
        if data.is_empty() {
            return Ok(());
        }
        let mut buf = self.upload(data)?;
        let starts: Vec<u64> = starts.iter().map(|&s| s as u64).collect();
        let dev_starts = self.upload(&starts)?;
        let dst = buf.device_ptr_mut(self.stream());
        self.scan_starts_raw::<Op>(None, dst, buf.len(), &dev_starts, spec)?;
        self.download_into(&buf, data)
    }

    /// Scans each segment on its own, a segment starting at every item whose
    /// head flag is set (and at item 0), in one launch: one flag per item
    /// ([`Error::WrongShape`] otherwise; [`Error::LengthMismatch`] when
    /// `output` is not as long as `input`).
    ///
    /// ```no_run
    /// # fn main() -> scan_core::Result<()> {
    /// use scan_core::{ops::Add, ScanSpec};
    /// let cuda = scan_cuda::Cuda::new()?;
    /// let mut out = [0; 4];
    /// cuda.scan_flagged::<Add<i32>>(&[1, 2, 3, 4], &mut out, &[false, false, true, false], ScanSpec::inclusive())?;
    /// assert_eq!(out, [1, 3, 3, 7]);
    /// # Ok(()) }
    /// ```
    pub fn scan_flagged<Op: CudaOp>(
        &self,
        input: &[Op::Item],
        output: &mut [Op::Item],
        heads: &[bool],
        spec: ScanSpec,
    ) -> Result<()> {
        Error::check_lengths(input.len(), output.len())?;
        Error::check_one_per("heads", heads.len(), "the input", input.len())?;
        if input.is_empty() {
            return Ok(());
        }
        let dev_in = self.upload(input)?;
        let mut dev_out = self.alloc_unwritten::<Op::Item>(input.len())?;
        let dev_heads = self.upload(heads)?;
        self.scan_flagged_device_into::<Op>(&dev_in, &mut dev_out, &dev_heads, spec)?;
        self.download_into(&dev_out, output)
    }

    /// [`scan_flagged`](Cuda::scan_flagged) in place.
    pub fn scan_flagged_in_place<Op: CudaOp>(
        &self,
        data: &mut [Op::Item],
        heads: &[bool],
        spec: ScanSpec,
    ) -> Result<()> {
        Error::check_one_per("heads", heads.len(), "the data", data.len())?;
        if data.is_empty() {
            return Ok(());
        }
        let mut buf = self.upload(data)?;
        let dev_heads = self.upload(heads)?;
        let dst = buf.device_ptr_mut(self.stream());
        self.scan_flags_raw::<Op>(None, dst, buf.len(), &FlagBytes::Heads(&dev_heads), spec)?;
        self.download_into(&buf, data)
    }

    /// [`scan_segments`](Cuda::scan_segments) on device buffers: `starts`
    /// (CSR offsets) on the device too. Checking them means reading one word
    /// back, so this call waits for the scan (the single-pass kernel reads
    /// the check itself; Blelloch's scans wait for the check); a bad start
    /// is an [`Error::BadSegments`] naming it, and nothing is written then.
    pub fn scan_segments_device_into<Op: CudaOp>(
        &self,
        input: &DeviceBuffer<Op::Item>,
        output: &mut DeviceBuffer<Op::Item>,
        starts: &DeviceBuffer<u64>,
        spec: ScanSpec,
    ) -> Result<()> {
        self.check_buffer(input, "input")?;
        self.check_buffer(output, "output")?;
        self.check_buffer(starts, "starts")?;
        Error::check_lengths(input.len(), output.len())?;
        if input.is_empty() {
            // Still an error for starts that an empty input cannot have.
            let starts: Vec<usize> = starts.download()?.into_iter().map(|s| s as usize).collect();
            return reference::segments(0, &starts).map(|_| ());
        }
        let src = input.device_ptr(self.stream());
        let dst = output.device_ptr_mut(self.stream());
        self.scan_starts_raw::<Op>(Some(src), dst, input.len(), starts, spec)
    }

    /// [`scan_flagged`](Cuda::scan_flagged) on device buffers: a segment
    /// starts at every item whose flag in `heads` is set, and at item 0.
    /// Queued on the stream.
    pub fn scan_flagged_device_into<Op: CudaOp>(
        &self,
        input: &DeviceBuffer<Op::Item>,
        output: &mut DeviceBuffer<Op::Item>,
        heads: &DeviceBuffer<bool>,
        spec: ScanSpec,
    ) -> Result<()> {
        self.check_buffer(input, "input")?;
        self.check_buffer(output, "output")?;
        self.check_buffer(heads, "heads")?;
        Error::check_lengths(input.len(), output.len())?;
        Error::check_one_per("heads", heads.len(), "the input", input.len())?;
        let src = input.device_ptr(self.stream());
        let dst = output.device_ptr_mut(self.stream());
        self.scan_flags_raw::<Op>(Some(src), dst, input.len(), &FlagBytes::Heads(heads), spec)
    }

    /// Queues the segmented scan of `len` items from `src` (or in place) to
    /// `dst`, segments beginning at the device `starts`, and checks them:
    /// waits for the stream and reads one word back. Single-pass: the starts
    /// become head bits (1/8 byte per item) and the scan is queued behind
    /// them at once, reading the check itself (it writes nothing after a bad
    /// start, kernels/heads.cuh `BitHeads::refused`), so the one wait comes
    /// after the scan and no round trip to the host separates the two
    /// kernels. Blelloch: head flags, checked before its scans are queued.
    fn scan_starts_raw<Op: CudaOp>(
        &self,
        src: Option<u64>,
        dst: u64,
        len: usize,
        starts: &DeviceBuffer<u64>,
        spec: ScanSpec,
    ) -> Result<()> {
        match self.module::<Op>()?.plan(self.algorithm()) {
            Ok(_) => {
                // One spare word past the one holding the last item, which
                // BitHeads reads (kernels/heads.cuh).
                let words = len / 64 + 2;
                // The executor's bits, grown as needed and kept, where each
                // call allocated and freed them before: on the H200 offsets
                // at 2^28 ran at 3.2 TB/s in a process of their own and at
                // 2.74 after other scans, while flags (no allocation) did not
                // move, so the allocation is the suspect. Held until the
                // check is read, and every call that uses them is queued on
                // this one stream, so a later call zeroes them only after
                // this scan has read them.
                // (The module first: a first call compiles it, and other
                // threads' calls need not wait for that behind the lock.)
                let module = self.module_of::<Op>(Family::Offsets)?;
                let mut scratch = lock(&self.segment_bits);
                if !scratch.as_ref().is_some_and(|s| s.len() > words) {
                    *scratch = None; // freed in stream order, after the launches that used it
                    *scratch = Some(
                        self.stream()
                            .alloc_zeros::<u64>(words + 1)
                            .map_err(|e| driver_error("segment bits allocation", e))?,
                    );
                }
                let heads = scratch.as_mut().ok_or_else(|| Error::Other("internal: no segment bits".into()))?;
                self.heads_from_starts::<Op>(starts, len, heads, words, Stage::SegmentBits)?;
                let (bits_ptr, sync) = heads.device_ptr(self.stream());
                drop(sync);
                self.single_pass(&module)?.launch(
                    src.unwrap_or(dst),
                    dst,
                    len,
                    Segments::Bits { bits: bits_ptr },
                    spec,
                )?;
                self.check_starts(starts, len, heads, words)
            }
            Err(_) => {
                let words = len.div_ceil(8);
                let mut flags = self
                    .stream()
                    .alloc_zeros::<u64>(words + 1)
                    .map_err(|e| driver_error("segment heads allocation", e))?;
                self.heads_from_starts::<Op>(starts, len, &mut flags, words, Stage::SegmentFlags)?;
                self.check_starts(starts, len, &flags, words)?;
                self.scan_flags_raw::<Op>(src, dst, len, &FlagBytes::Owned(flags), spec)
            }
        }
    }

    /// Zeroes the first `words` 64-bit words of `heads` and sets the heads of
    /// device `starts` in them by `stage` (a flag byte per item, or a bit),
    /// and the word after them to the check: 0, or `!i` for the first bad
    /// start `i` (kernels/segments.cuh). Queued;
    /// [`check_starts`](Cuda::check_starts) reads the check.
    fn heads_from_starts<Op: CudaOp>(
        &self,
        starts: &DeviceBuffer<u64>,
        len: usize,
        heads: &mut CudaSlice<u64>,
        words: usize,
        stage: Stage,
    ) -> Result<()> {
        let stream = self.stream();
        if heads.len() < words + 1 {
            return Err(Error::Other("internal: segment heads buffer too short".into()));
        }
        stream.memset_zeros(&mut heads.slice_mut(..words + 1)).map_err(|e| driver_error("segment heads zeroing", e))?;
        if starts.is_empty() {
            return Ok(());
        }
        // The check kernels are item-independent; each family that uses one
        // has it.
        let family = if stage == Stage::SegmentBits { Family::Offsets } else { Family::Flags };
        let module = self.module_of::<Op>(family)?;
        let kernel = module
            .kernels
            .get(stage, ScanSpec::inclusive())
            .ok_or_else(|| Error::Other(format!("internal: the module has no {stage:?} kernel")))?;
        let count = starts.len() as u64;
        let len64 = len as u64;
        let starts_ptr = starts.device_ptr(stream);
        let (heads_ptr, sync) = heads.device_ptr_mut(stream);
        drop(sync);
        let check_ptr = heads_ptr + 8 * words as u64;
        let blocks = starts.len().div_ceil(256).min(4096);
        let cfg = LaunchConfig { grid_dim: (grid(blocks)?, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        let mut launch = stream.launch_builder(kernel);
        launch.arg(&starts_ptr).arg(&count).arg(&len64).arg(&heads_ptr).arg(&check_ptr);
        // SAFETY: `starts` holds `count` u64s; `heads` holds `words` + 1
        // 64-bit words: a byte per item (flags, `words` >= len / 8) or a bit
        // per item (`words` >= len / 64 + 1), then the check word, and the
        // kernels write only the heads of starts below len and the check.
        // Both live until the stream has run the kernel (`heads` is freed in
        // stream order).
        unsafe { launch.launch(cfg) }.map_err(|e| driver_error("launch of the segment heads kernel", e))?;
        Ok(())
    }

    /// Waits for the stream and reads the check word of `heads` (after its
    /// `words` words of heads, [`heads_from_starts`](Cuda::heads_from_starts)):
    /// a bad start is [`Error::BadSegments`], named as the host check names it.
    fn check_starts(&self, starts: &DeviceBuffer<u64>, len: usize, heads: &CudaSlice<u64>, words: usize) -> Result<()> {
        if starts.is_empty() {
            return Ok(()); // nothing was checked: nothing to wait for
        }
        let check = self
            .stream()
            .clone_dtoh(&heads.slice(words..words + 1))
            .map_err(|e| driver_error("download of the segment starts' check", e))?[0];
        if check == 0 {
            return Ok(());
        }
        let host: Vec<usize> = starts.download()?.into_iter().map(|s| s as usize).collect();
        reference::segments(len, &host)?;
        Err(Error::Other(format!("internal: start {} was reported bad but checks out", !check)))
    }

    /// Queues the segmented scan of `len` items from `src` (or in place) to
    /// `dst`, segments starting at nonzero `flags` bytes.
    fn scan_flags_raw<Op: CudaOp>(
        &self,
        src: Option<u64>,
        dst: u64,
        len: usize,
        flags: &FlagBytes,
        spec: ScanSpec,
    ) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        let module = self.module::<Op>()?;
        let flags_ptr = flags.ptr(self.stream());
        match module.plan(self.algorithm()) {
            Ok(_) => {
                let module = self.module_of::<Op>(Family::Flags)?;
                self.single_pass(&module)?.launch(
                    src.unwrap_or(dst),
                    dst,
                    len,
                    Segments::Flags { flags: flags_ptr },
                    spec,
                )
            }
            Err(_) => {
                // Blelloch: one scan per segment, found from the flags.
                let bytes: Vec<u8> = match flags {
                    FlagBytes::Owned(f) => {
                        let words = self.stream().clone_dtoh(f).map_err(|e| driver_error("download", e))?;
                        words.iter().flat_map(|w| w.to_le_bytes()).collect()
                    }
                    FlagBytes::Heads(heads) => heads.download()?.into_iter().map(u8::from).collect(),
                };
                let size = std::mem::size_of::<Op::Item>() as u64;
                let mut start = 0usize;
                for end in (1..=len).filter(|&i| i == len || bytes[i] != 0) {
                    let offset = start as u64 * size;
                    self.scan_raw::<Op>(src.map(|s| s + offset), dst + offset, end - start, 1, spec)?;
                    start = end;
                }
                Ok(())
            }
        }
    }
}

/// Head flags on the device, one byte per item: made by a call (freed in
/// stream order after it), or the caller's.
enum FlagBytes<'a> {
    /// A byte per item in 64-bit words (heads_from_starts).
    Owned(CudaSlice<u64>),
    Heads(&'a DeviceBuffer<bool>),
}

impl FlagBytes<'_> {
    fn ptr(&self, stream: &CudaStream) -> u64 {
        match self {
            FlagBytes::Owned(f) => {
                let (ptr, sync) = f.device_ptr(stream);
                drop(sync);
                ptr
            }
            FlagBytes::Heads(heads) => heads.device_ptr(stream),
        }
    }
}
