//! Stream compaction on the GPU (kernels/compact.cuh): the items whose flag
//! is set, in order. A count of each tile's flags, an inclusive scan of the
//! counts (the single-pass `Add<u64>` scan), and a scatter in which each
//! tile places its kept items; the flags are read twice, the kept items once
//! and nothing else of the items. One module for the executor, compiled on
//! first use, whatever the item type: the scatter moves an item as words.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaModule, LaunchConfig, PushKernelArg};
use scan_core::ops::Add;
use scan_core::{Error, Result, ScanSpec};

use crate::blelloch::grid;
use crate::buffer::{driver_error, DeviceBuffer};
use crate::cuda::Cuda;
use crate::kernels::{keyed, lookup};
use crate::source::kernel_files;

/// Threads per block and rows per tile: tiles of 4096 items.
const THREADS: u32 = 256;
const ROWS: u32 = 16;
const TILE: usize = (THREADS * ROWS) as usize;

/// Blocks of the grid-stride loops at most: a few waves of any GPU
/// (`Tuning::compaction_blocks` sets another bound).
const MAX_BLOCKS: usize = 4096;

const SOURCES: [(&str, &str); 2] =
    [("util.cuh", include_str!("../kernels/util.cuh")), ("compact.cuh", include_str!("../kernels/compact.cuh"))];

const COUNT: &str = "compact_count";

/// The scatter kernels by word size: an item of `size` bytes moves as
/// `size / word` words of the largest of these sizes that divides it.
const WORDS: [(usize, &str); 5] =
    [(16, "scan::Word16"), (8, "unsigned long long"), (4, "unsigned"), (2, "unsigned short"), (1, "unsigned char")];

fn scatter_name(word: usize) -> String {
    format!("compact_scatter_{word}")
}

/// The loaded kernels (the module must outlive the functions).
pub(crate) struct CompactKernels {
    _module: Arc<CudaModule>,
    count: CudaFunction,
    scatter: Vec<(usize, CudaFunction)>,
}

fn source() -> String {
    let mut code = kernel_files(&SOURCES);
    code.push_str(&format!(
        "extern \"C\" __global__ void __launch_bounds__({THREADS}) {COUNT}(\n\
         \x20   const unsigned char* flags, unsigned long long len, unsigned long long* counts) {{\n\
         \x20 scan::compact_count<{THREADS}, {ROWS}>(flags, len, counts);\n\
         }}\n"
    ));
    // A timing experiment's register bound on the scatters: blocks per SM
    // (the default leaves ptxas free: 64 registers, 4 blocks an SM for
    // 4-byte words with NVRTC 13 since 2026-12-06; before, 80 and 3).
    let var =
        crate::env::TuningVar { name: "SCAN_CUDA_COMPACT_SCATTER_BLOCKS", takes: "a number of blocks per SM, 1 to 8" };
    let bound =
        var.read(|v| v.parse::<u32>().ok().filter(|b| (1..=8).contains(b))).map_or(String::new(), |b| format!(", {b}"));
    for (word, ty) in WORDS {
        let name = scatter_name(word);
        code.push_str(&format!(
            "extern \"C\" __global__ void __launch_bounds__({THREADS}{bound}) {name}(\n\
             \x20   const {ty}* values, const unsigned char* flags, unsigned long long len,\n\
             \x20   const unsigned long long* inclusive, {ty}* out, unsigned words, unsigned long long capacity) {{\n\
             \x20 scan::compact_scatter<{THREADS}, {ROWS}, {ty}>(values, flags, len, inclusive, out, words, capacity);\n\
             }}\n"
        ));
    }
    code
}

/// The word size an item of `size` bytes moves in, and how many words (the
/// kernels count them in 32 bits: an item of 2^32 words or more is refused).
fn words_of(size: usize) -> Result<(usize, u32)> {
    let word = WORDS.iter().map(|&(w, _)| w).find(|w| size % w == 0).unwrap_or(1);
    let words = u32::try_from(size / word).map_err(|_| Error::TooLarge {
        what: format!("a compaction of items of {size} bytes (at most 2^32 - 1 words of {word} bytes)"),
    })?;
    Ok((word, words))
}

impl Cuda {
    /// The items of `values` whose flag in `keep` is set, in order (stream
    /// compaction; `Iterator::filter` with the predicate's results given as
    /// flags). `values` and `keep` must have the same length.
    ///
    /// From and to host memory: the values and flags are uploaded, and the
    /// kept items downloaded; [`Cuda::compact_device_into`] keeps all of it
    /// on the device.
    ///
    /// ```no_run
    /// # fn main() -> scan_core::Result<()> {
    /// let cuda = scan_cuda::Cuda::new()?;
    /// let kept = cuda.compact(&[10u32, 11, 12, 13], &[true, false, false, true])?;
    /// assert_eq!(kept, [10, 13]);
    /// # Ok(()) }
    /// ```
    pub fn compact<T: Copy>(&self, values: &[T], keep: &[bool]) -> Result<Vec<T>> {
        Error::check_one_per("keep", keep.len(), "`values`", values.len())?;
        let values = self.upload(values)?;
        let keep = self.upload(keep)?;
        // Only the first `kept` items are written, and only they are read.
        let mut out = self.alloc_unwritten::<T>(values.len())?;
        let kept = self.compact_device_into(&values, &keep, &mut out)?;
        self.download_prefix(&out, kept)
    }

    /// Writes the items of `values` whose flag in `keep` is set, in order, to
    /// the start of `out`, and returns how many there are; `out` must hold
    /// at least that many (its other items are left as they were). `values`
    /// and `keep` must have the same length.
    ///
    /// Three launches, then one wait for the device, to read the count: the
    /// flags are read twice, each kept item once, nothing else of `values`.
    /// When the kept items would not fit `out`, the last launch writes
    /// nothing (it reads the count first), and the call returns
    /// [`Error::LengthMismatch`] with `out` as it was.
    ///
    /// ```no_run
    /// # fn main() -> scan_core::Result<()> {
    /// let cuda = scan_cuda::Cuda::new()?;
    /// let values = cuda.upload(&[1.5f32, -2.0, 3.0, -4.0])?;
    /// let keep = cuda.upload(&[true, false, true, false])?;
    /// let mut out = cuda.alloc::<f32>(4)?;
    /// let kept = cuda.compact_device_into(&values, &keep, &mut out)?;
    /// assert_eq!(out.download()?[..kept], [1.5, 3.0]);
    /// # Ok(()) }
    /// ```
    pub fn compact_device_into<T: Copy>(
        &self,
        values: &DeviceBuffer<T>,
        keep: &DeviceBuffer<bool>,
        out: &mut DeviceBuffer<T>,
    ) -> Result<usize> {
        self.check_buffer(values, "values")?;
        self.check_buffer(keep, "keep")?;
        self.check_buffer(out, "out")?;
        Error::check_one_per("keep", keep.len(), "`values`", values.len())?;
        let len = values.len();
        if len == 0 {
            return Ok(0);
        }
        let kernels = self.compact_kernels()?;
        let stream = self.stream();
        let tiles = len.div_ceil(TILE);
        // Every count is written by the count kernel.
        let mut counts = self.alloc_unwritten::<u64>(tiles)?;
        let len64 = len as u64;
        let flags = keep.device_ptr(stream);
        let blocks = grid(tiles.min(self.tuning().compaction_grid().unwrap_or(MAX_BLOCKS)))?;
        let cfg = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 };
        {
            let counts_ptr = counts.device_ptr_mut(stream);
            let mut launch = stream.launch_builder(&kernels.count);
            launch.arg(&flags).arg(&len64).arg(&counts_ptr);
            // SAFETY: `flags` holds `len` bytes and `counts` one u64 per tile
            // of TILE items; the kernel reads and writes only those.
            unsafe { launch.launch(cfg) }.map_err(|e| driver_error("launch of the compaction count", e))?;
        }
        self.scan_device::<Add<u64>>(&mut counts, ScanSpec::inclusive())?;
        // The scatter, queued at once: it reads the count itself and writes
        // nothing if the kept items would not fit `out` (reading the count
        // here first cost a wait for the device and an idle GPU until the
        // launch).
        let (word, words) = words_of(std::mem::size_of::<T>())?;
        if words == 0 {
            // Zero-sized items: nothing to move, only the count to learn
            // (the scatter would read and write a word of each).
            let kept = counts.download_last()?.unwrap_or(0);
            return usize::try_from(kept)
                .ok()
                .filter(|&kept| kept <= out.len())
                .ok_or(Error::LengthMismatch { input: kept as usize, output: out.len() });
        }
        let scatter = keyed(&kernels.scatter, &word, "a compaction scatter")?;
        let src = values.device_ptr(stream);
        let inclusive = counts.device_ptr(stream);
        let capacity = out.len() as u64;
        let dst = out.device_ptr_mut(stream);
        let mut launch = stream.launch_builder(scatter);
        launch.arg(&src).arg(&flags).arg(&len64).arg(&inclusive).arg(&dst).arg(&words).arg(&capacity);
        // SAFETY: `values` holds `len` items of `words` words each, `flags`
        // `len` bytes, `inclusive` the tiles' inclusive counts; the kernel
        // writes kept items to places below the count, which it checks is at
        // most `capacity`, the items `out` holds.
        unsafe { launch.launch(cfg) }.map_err(|e| driver_error("launch of the compaction scatter", e))?;
        let kept = usize::try_from(counts.download_last()?.unwrap_or(0))
            .map_err(|_| Error::Other("internal: the compaction count does not fit usize".into()))?;
        if kept > out.len() {
            return Err(Error::LengthMismatch { input: kept, output: out.len() });
        }
        Ok(kept)
    }

    /// The compaction kernels, loaded once per executor.
    fn compact_kernels(&self) -> Result<Arc<CompactKernels>> {
        self.kernels_once(&self.compact, source, "compact", |module| {
            let count = lookup(&module, COUNT)?;
            let scatter = WORDS
                .iter()
                .map(|&(word, _)| Ok((word, lookup(&module, &scatter_name(word))?)))
                .collect::<Result<_>>()?;
            Ok(CompactKernels { _module: module, count, scatter })
        })
    }
}

/// Compiles the compaction kernels for `arch` (e.g. `"sm_90"`) with NVRTC
/// and returns the CUBIN; needs libnvrtc, no GPU.
pub fn compile_compact_for_arch(arch: &str) -> Result<Vec<u8>> {
    crate::nvrtc::compile_cubin(&source(), "compact", arch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_move_as_the_widest_word_that_divides_them() {
        assert_eq!(words_of(4).unwrap(), (4, 1));
        assert_eq!(words_of(12).unwrap(), (4, 3));
        assert_eq!(words_of(16).unwrap(), (16, 1));
        assert_eq!(words_of(24).unwrap(), (8, 3));
        assert_eq!(words_of(3).unwrap(), (1, 3));
        assert_eq!(words_of(2).unwrap(), (2, 1));
        assert_eq!(words_of(0).unwrap().1, 0);
        // 2^32 words of 16 bytes: past the kernels' u32 count, an error (it wrapped to 0).
        if let Some(size) = 16usize.checked_mul(1 << 31).and_then(|s| s.checked_mul(2)) {
            assert!(matches!(words_of(size), Err(Error::TooLarge { .. })));
            assert_eq!(words_of(size - 16).unwrap(), (16, u32::MAX));
        }
    }
}
