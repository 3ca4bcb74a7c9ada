//! The `Cuda` executor: one device, one stream, the module caches, and the
//! choice of algorithm.

use std::any::TypeId;
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cudarc::driver::{sys, CudaContext, CudaSlice, CudaStream, DevicePtrMut, DeviceRepr, ValidAsZeroBits};
use scan_core::blelloch::Driver;
use scan_core::device::{DeviceScan, Operands};
use scan_core::{CudaOp, Error, Result, Scan, ScanSpec};

use crate::blelloch::GpuBlocks;
use crate::buffer::{driver_error, DeviceBuffer, Raw};
use crate::cache::{self, DiskCache};
use crate::compact::CompactKernels;
use crate::discover;
use crate::kernels::{Family, Stage};
use crate::module::{lock, Module};
use crate::nvrtc;
use crate::policy::{Algorithm, SinglePassPolicy, Tuning};
use crate::selective::SelectiveBackwardKernels;
use crate::selective::SelectiveKernel;
use crate::sharded::ShardKernelCache;
use crate::single_pass::{Carry, Segments, SinglePass};
use crate::source::ModuleSource;
use crate::span::Span;
use crate::staging::Staging;
use crate::widen::WidenKernels;

/// Where the time to get kernels ready went, since the executor was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompileStats {
    /// Modules loaded: each operator family once per executor (an operator
    /// scanned through `Device` and through `Cuda` directly shares one), a
    /// spilled module's fallback, the selective scan's, stream compaction's
    /// and shard joins' kernels.
    pub modules: u32,
    /// Of those, how many NVRTC compiled (the rest came from the disk cache).
    pub compiled: u32,
    /// Of those, how many were read from the disk cache.
    pub disk_hits: u32,
    /// Disk cache entries that could not be written (the cache only saves time).
    pub disk_write_failures: u32,
    /// Time inside NVRTC.
    pub nvrtc_time: Duration,
    /// All time spent getting modules ready: generating source, NVRTC or the
    /// disk cache, and loading into the device.
    pub total_time: Duration,
}

impl std::fmt::Display for CompileStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} module(s) ready in {:.1} ms ({} compiled by NVRTC in {:.1} ms, {} from the disk cache",
            self.modules,
            self.total_time.as_secs_f64() * 1e3,
            self.compiled,
            self.nvrtc_time.as_secs_f64() * 1e3,
            self.disk_hits
        )?;
        if self.disk_write_failures > 0 {
            write!(f, ", {} could not be written to it", self.disk_write_failures)?;
        }
        write!(f, ")")
    }
}

/// A scan executor on one NVIDIA GPU, through cudarc and NVRTC.
///
/// Operators are compiled for the device's architecture on first use and
/// cached in memory and on disk (see [`cache_dir`](crate::cache_dir)), so a
/// second process start does not compile again.
///
/// Scans run with [`Algorithm::SinglePass`] unless
/// [`with_algorithm`](Cuda::with_algorithm) says otherwise (or the operator
/// cannot: see [`algorithm_for`](Cuda::algorithm_for)).
///
/// Calls on host slices (`scan`, `scan_into`, `scan_in_place`, the rows
/// calls) return once the result is back on the host, with any failure as an
/// error. Calls on device buffers (`scan_device`, `scan_device_into`) are
/// queued on the executor's stream and return at once, like CUB's or
/// torch's: the next download or [`synchronize`](Cuda::synchronize) waits
/// for them and reports an asynchronous failure. Exceptions:
/// [`scan_segments_device_into`](Cuda::scan_segments_device_into) checks its
/// device starts, which means reading a word back (after the scan with the
/// single-pass algorithm, before it with Blelloch's), and with Blelloch's
/// algorithm [`scan_flagged_device_into`](Cuda::scan_flagged_device_into)
/// reads the flags back to cut the segments. Every operation of an executor
/// goes to its one stream, so they run in the order they are called.
///
/// # Rows and segments
///
/// Many independent scans in one call, each one launch with the
/// single-pass algorithm whatever their number and lengths (segments by
/// starts add one small launch that turns the starts into head bits): rows of equal
/// length (`scan_rows*`), rows with a stride (`scan_rows_strided*`), and
/// segments of any lengths, by starts (`scan_segments*`, CSR offsets) or by
/// head flags (`scan_flagged*`). Each has host-slice forms and
/// device-buffer forms (`*_device_into`). The layout of
/// `scan_rows_strided(input, output, 3, 4, 6, spec)` (3 rows of 4 items, 6
/// apart) over 16 items, where `-` items are neither read nor written:
///
/// ```text
/// index:  0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15
/// item:  r0 r0 r0 r0  -  - r1 r1 r1 r1  -  - r2 r2 r2 r2
///        |<-row_len->|
///        |<---- stride ---->|
/// ```
///
/// `scan_rows(input, output, rows, spec)` is the same with the rows back to
/// back (row-major `[rows, len / rows]`, stride = row length). Segments by
/// starts `[0, 3, 3, 7]` over 9 items are `0..3`, `3..3` (empty), `3..7` and
/// `7..9`; by head flags, a segment starts at every flagged item and at item
/// 0. A reverse scan runs each row or segment from its last item to its
/// first.
///
/// ```no_run
/// # fn main() -> scan_core::Result<()> {
/// use scan_core::{ops::{Add, LinearRecurrence}, ScanSpec};
/// let cuda = scan_cuda::Cuda::new()?;
/// assert_eq!(cuda.scan::<Add<i32>>(&[1, 2, 3], ScanSpec::inclusive())?, [1, 3, 6]);
/// // h_t = a_t * h_{t-1} + b_t: the second component of each pair.
/// let h = cuda.scan::<LinearRecurrence<f32>>(&[(0.5, 1.0), (0.5, 1.0)], ScanSpec::inclusive())?;
/// assert_eq!(h[1].1, 1.5);
/// println!("{}", cuda.compile_stats());
/// # Ok(()) }
/// ```
pub struct Cuda {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    name: String,
    arch: String,
    /// The compute capability as a number, e.g. 90.
    capability: u32,
    algorithm: Algorithm,
    tuning: Tuning,
    nvrtc_version: (i32, i32),
    disk: Option<DiskCache>,
    modules: Mutex<HashMap<(TypeId, Family), Arc<Module>>>,
    /// The same modules by what they were built from: two types with one
    /// source (an operator scanned through `Device`, which wraps it, and
    /// directly) share one module.
    modules_by_source: Mutex<HashMap<ModuleSource, Arc<Module>>>,
    stats: Mutex<CompileStats>,
    /// Pinned and device buffers of host scans, made at the first (host.rs).
    pub(crate) staging: Mutex<Option<Staging>>,
    /// The head bits of segments by offsets, grown as needed (rows.rs) and
    /// kept while the executor lives: 1/8 byte per item of the longest
    /// segmented scan by offsets so far.
    pub(crate) segment_bits: Mutex<Option<CudaSlice<u64>>>,
    /// The selective-scan kernel, loaded at the first (selective/forward.rs).
    pub(crate) selective: Mutex<Option<Arc<SelectiveKernel>>>,
    /// The selective scan's backward kernels, loaded at the first
    /// (selective/backward.rs).
    pub(crate) selective_backward: Mutex<Option<Arc<SelectiveBackwardKernels>>>,
    /// The selective backward's checkpoints and partial sums, grown as
    /// needed and kept while the executor lives (selective/backward.rs).
    pub(crate) selective_scratch: Mutex<Option<DeviceBuffer<f32>>>,
    /// The compaction kernels, loaded at the first use (compact.rs).
    pub(crate) compact: Mutex<Option<Arc<CompactKernels>>>,
    /// The kernels widening bf16/f16 to f32, loaded at the first use
    /// (widen.rs).
    pub(crate) widen: Mutex<Option<Arc<WidenKernels>>>,
    /// The join kernels of sharded scans, per operator (sharded.rs).
    pub(crate) shard_kernels: ShardKernelCache,
    /// Set while [`Cuda::time_replayed`] records its calls: the only
    /// recording single-pass launches accept (single_pass.rs,
    /// `refuse_recording`).
    replaying: AtomicBool,
}

/// Queued work ends before the executor's modules are unloaded and its
/// scratch freed (an unload with launches pending is not defined to wait).
impl Drop for Cuda {
    fn drop(&mut self) {
        let _ = self.stream.synchronize();
    }
}

impl std::fmt::Debug for Cuda {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cuda({} #{}, {}, {})", self.name, self.ctx.ordinal(), self.arch, self.algorithm)
    }
}

impl std::fmt::Display for Cuda {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (CUDA device {}, {})", self.name, self.ctx.ordinal(), self.arch)
    }
}

fn unavailable(reason: impl Into<String>) -> Error {
    Error::CudaUnavailable { reason: reason.into() }
}

impl Cuda {
    /// Opens CUDA device 0. Never panics: without a driver, a GPU or NVRTC it
    /// returns [`Error::CudaUnavailable`] saying what is missing.
    pub fn new() -> Result<Cuda> {
        Self::with_device(0)
    }

    /// Opens CUDA device `ordinal`.
    pub fn with_device(ordinal: usize) -> Result<Cuda> {
        // cudarc's loader panics when a library is missing: look first, and
        // catch a panic anyway in case a symbol is missing from an old library.
        // SAFETY: only tries to dlopen libcuda by its candidate names.
        let driver_present = || catch_unwind(|| unsafe { sys::is_culib_present() }).unwrap_or(false);
        if !driver_present() {
            let search = discover::preload("cuda");
            if !driver_present() {
                return Err(unavailable(format!(
                    "no CUDA driver library was found ({}); install the NVIDIA driver on a machine with an NVIDIA \
                     GPU, or use the CPU backend (`Device::auto()` falls back to it)",
                    search.describe("cuda")
                )));
            }
        }
        let nvrtc_version = nvrtc::version()?;
        let opened = catch_unwind(AssertUnwindSafe(|| -> std::result::Result<_, String> {
            let count = CudaContext::device_count().map_err(|e| format!("cuInit/cuDeviceGetCount failed ({e})"))?;
            if count <= 0 {
                return Err("the CUDA driver sees no GPU".into());
            }
            if ordinal >= count as usize {
                return Err(format!("there is no CUDA device {ordinal}: the driver sees {count}"));
            }
            let ctx = CudaContext::new(ordinal)
                .map_err(|e| format!("creating a context on device {ordinal} failed ({e})"))?;
            let (major, minor) =
                ctx.compute_capability().map_err(|e| format!("reading the compute capability failed ({e})"))?;
            let name = ctx.name().unwrap_or_else(|_| "CUDA device".into());
            Ok((ctx, major, minor, name))
        }));
        let (ctx, major, minor, name) = match opened {
            Ok(Ok(v)) => v,
            Ok(Err(reason)) => return Err(unavailable(format!("{reason}; use the CPU backend instead"))),
            Err(_) => return Err(unavailable("the CUDA driver library is incomplete or too old (cudarc panicked)")),
        };
        // Freed memory kept for the next allocations (pool.rs). Not fatal:
        // without it allocations are slower, not wrong.
        if let Ok(total) = ctx.total_mem() {
            let _ = crate::pool::retain_at_least(&ctx, crate::pool::default_retained(total));
        }
        let stream = ctx.default_stream();
        Ok(Cuda {
            ctx,
            stream,
            name,
            arch: format!("sm_{major}{minor}"),
            capability: (major * 10 + minor) as u32,
            algorithm: Algorithm::default(),
            tuning: Tuning::default(),
            nvrtc_version,
            disk: cache::default_dir().map(DiskCache::new),
            modules: Mutex::new(HashMap::new()),
            modules_by_source: Mutex::new(HashMap::new()),
            stats: Mutex::new(CompileStats::default()),
            staging: Mutex::new(None),
            segment_bits: Mutex::new(None),
            selective: Mutex::new(None),
            selective_backward: Mutex::new(None),
            selective_scratch: Mutex::new(None),
            compact: Mutex::new(None),
            widen: Mutex::new(None),
            shard_kernels: Mutex::new(HashMap::new()),
            replaying: AtomicBool::new(false),
        })
    }

    /// The same executor scanning with `algorithm`.
    ///
    /// ```no_run
    /// # fn main() -> scan_core::Result<()> {
    /// use scan_cuda::{Algorithm, Cuda};
    /// let cuda = Cuda::new()?.with_algorithm(Algorithm::Blelloch);
    /// assert_eq!(cuda.algorithm(), Algorithm::Blelloch);
    /// # Ok(()) }
    /// ```
    pub fn with_algorithm(mut self, algorithm: Algorithm) -> Cuda {
        self.algorithm = algorithm;
        self
    }

    /// The compute capability as a number, e.g. 90.
    pub(crate) fn capability(&self) -> u32 {
        self.capability
    }

    /// The algorithm this executor asks for.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// The same executor with the single-pass kernels' policy overridden
    /// (threads, items per thread, status layout) or the adversarial schedule
    /// switched on; see [`Tuning`]. A shape the kernels cannot run is an
    /// [`Error::BadTuning`] at the first scan. A shape override also drops
    /// the deterministic default of 4-byte items' plain scans (see
    /// [`with_deterministic`](Cuda::with_deterministic), which sets the mode
    /// either way).
    ///
    /// ```no_run
    /// # fn main() -> scan_core::Result<()> {
    /// use scan_cuda::{Cuda, Tuning};
    /// let cuda = Cuda::new()?.with_tuning(Tuning::default().threads(512).items_per_thread(8));
    /// # Ok(()) }
    /// ```
    pub fn with_tuning(mut self, tuning: Tuning) -> Cuda {
        if tuning.shape() != self.tuning.shape() {
            // Modules built for the old shape do not fit the new one. Their
            // queued launches finish before they are unloaded (a failure
            // here shows at the next call on the stream).
            let _ = self.synchronize();
            self.modules.get_mut().unwrap_or_else(|p| p.into_inner()).clear();
            self.modules_by_source.get_mut().unwrap_or_else(|p| p.into_inner()).clear();
        }
        self.tuning = tuning;
        self
    }

    /// The same executor with run-to-run deterministic plain single-pass
    /// scans (`true`) or the free look-back (`false`). Unset, plain scans of
    /// 4-byte items (f32, i32, u32 ...) are deterministic, as their fastest
    /// shape (0.92 of a copy for f32 add on the H200, against 0.84 for the
    /// free look-back), unless a [`Tuning`] sets a shape
    /// ([`Tuning::overrides_shape`]: then the shape is taken as set, with the
    /// free look-back); other items take the free look-back.
    ///
    /// A decoupled look-back combines a tile's predecessors as far back as
    /// it finds one that already knows its prefix, which depends on timing,
    /// so float sums can differ in the last bits from run to run (integers
    /// never do). Deterministic scans group the predecessors in fixed groups
    /// instead (`SinglePassPolicy::deterministic`): the same grouping in
    /// every run, on the same GPU and build, whatever the scheduling. This
    /// covers consecutive rows of whole tiles too (the row length a
    /// multiple of the rows kernel's tile, 4096 for 4-byte items: the plain
    /// code path, and deterministic by default for 4-byte items). Rows of
    /// at most one tile (4096 f32 items), strided or not, are deterministic
    /// whatever this says: a block scans each row of more than half a tile
    /// alone, and a shorter row spans at most two tiles, the second's
    /// look-back stopping at the first, which holds the row's head. Fused maps (`scan_mapped` ...) are covered when
    /// this is `true`; unset, bf16/f16 sums through `WidenNarrow` and the
    /// f32 recurrence through `Recurrence` take fixed groups where the GPU
    /// has the shared memory for their shape (the recurrence: not on sm_70,
    /// sm_75, sm_80 or sm_87; see the README's determinism table). Other
    /// rows and segmented scans are not covered. The Blelloch algorithm is
    /// deterministic anyway.
    ///
    /// ```no_run
    /// # fn main() -> scan_core::Result<()> {
    /// use scan_core::{ops::Add, ScanSpec};
    /// let cuda = scan_cuda::Cuda::new()?.with_deterministic(true);
    /// let x: Vec<f32> = (0..1 << 20).map(|i| (i as f32).sin()).collect();
    /// let a = cuda.scan::<Add<f32>>(&x, ScanSpec::inclusive())?;
    /// assert_eq!(a, cuda.scan::<Add<f32>>(&x, ScanSpec::inclusive())?);
    /// # Ok(()) }
    /// ```
    pub fn with_deterministic(self, deterministic: bool) -> Cuda {
        let tuning = self.tuning.deterministic(deterministic);
        self.with_tuning(tuning)
    }

    /// The tuning overrides in force.
    pub fn tuning(&self) -> Tuning {
        self.tuning
    }

    /// The algorithm scans of `Op` run with on this executor and, when it is
    /// not the one asked for, why (an item too large for the single-pass
    /// kernels, an old GPU). Builds `Op`'s module if needed.
    pub fn algorithm_for<Op: CudaOp>(&self) -> Result<(Algorithm, Option<String>)> {
        let module = self.module::<Op>()?;
        Ok(match module.plan(self.algorithm) {
            Ok(_) => (Algorithm::SinglePass, None),
            Err(why) => (Algorithm::Blelloch, why.map(str::to_string)),
        })
    }

    /// The single-pass shape `Op`'s segment scans by offsets
    /// ([`scan_segments`](Cuda::scan_segments)) run with on this GPU, or
    /// `None` when they run Blelloch's scans: for 4-byte items
    /// [`SinglePassPolicy::for_segment_heads`]' long runs, or
    /// [`SinglePassPolicy::for_segments`]' shorter ones where the long runs
    /// spill for `Op` (the driver reports local memory). Builds the module
    /// if needed.
    ///
    /// ```no_run
    /// # fn main() -> scan_core::Result<()> {
    /// use scan_core::ops::Add;
    /// let cuda = scan_cuda::Cuda::new()?;
    /// if let Some(policy) = cuda.offsets_policy::<Add<f32>>()? {
    ///     println!("segments by offsets: {} items per thread", policy.items_per_thread);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn offsets_policy<Op: CudaOp>(&self) -> Result<Option<SinglePassPolicy>> {
        if self.module::<Op>()?.plan(self.algorithm).is_err() {
            return Ok(None);
        }
        Ok(self.module_of::<Op>(Family::Offsets)?.plan(self.algorithm).ok())
    }

    /// The device's name, e.g. "NVIDIA H200".
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The architecture modules are compiled for, e.g. `"sm_90"`.
    pub fn arch(&self) -> &str {
        &self.arch
    }

    /// NVRTC's version as (major, minor).
    pub fn nvrtc_version(&self) -> (i32, i32) {
        self.nvrtc_version
    }

    /// The disk cache folder in use, if any.
    pub fn cache_dir(&self) -> Option<&Path> {
        self.disk.as_ref().map(DiskCache::dir)
    }

    /// The cudarc context, for interoperating with a user's own cudarc code.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The stream every launch goes to.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Waits for all queued work and reports any asynchronous failure.
    pub fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().map_err(|e| driver_error("synchronize", e))
    }

    /// Time spent getting kernels ready so far.
    pub fn compile_stats(&self) -> CompileStats {
        *lock(&self.stats)
    }

    /// Compiles (or loads from the caches) `Op`'s kernels now, so that the
    /// first scan does not pay for it.
    pub fn prepare<Op: CudaOp>(&self) -> Result<()> {
        self.module::<Op>().map(|_| ())
    }

    /// Runs `work` between two timing events on the stream and returns its
    /// result with the device time between them, in milliseconds. Whatever
    /// `work` queued has finished when this returns, on an error too.
    pub fn time<R>(&self, work: impl FnOnce() -> Result<R>) -> Result<(R, f32)> {
        let event = || self.ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT));
        let (start, end) = (event(), event());
        let (start, end) = (start.map_err(|e| driver_error("event", e))?, end.map_err(|e| driver_error("event", e))?);
        start.record(&self.stream).map_err(|e| driver_error("event record", e))?;
        let finished = work().and_then(|out| {
            end.record(&self.stream).map_err(|e| driver_error("event record", e))?;
            end.synchronize().map_err(|e| driver_error("event synchronize", e))?;
            Ok(out)
        });
        let out = finished.inspect_err(|_| {
            // `work` may have queued copies or launches on buffers the
            // caller frees once this returns: wait for them first (an error
            // of this wait says nothing the first error does not).
            let _ = self.stream.synchronize();
        })?;
        let ms = start.elapsed_ms(&end).map_err(|e| driver_error("event elapsed", e))?;
        Ok((out, ms))
    }

    /// The same executor on a CUDA stream of its own instead of the
    /// context's default stream, so that its work can run beside other
    /// streams' and be recorded into a CUDA graph
    /// ([`time_replayed`](Cuda::time_replayed); a graph cannot capture the
    /// legacy default stream).
    ///
    /// Every launch and copy of this executor goes to that one stream, which
    /// orders them. cudarc's per-buffer events are switched off for the
    /// executor's context handle (they order one buffer's uses across
    /// streams, and a graph cannot capture waits on events recorded outside
    /// it), so a buffer of this executor that work on another stream also
    /// touches needs that stream synchronized by hand, as in plain cudarc.
    /// Buffers made before the switch live on the default stream, and this
    /// executor's calls refuse them (their copies and their free would not
    /// wait for its scans): make them with the executor it returns.
    ///
    /// A graph recorded on this stream by the caller (cudarc's
    /// `begin_capture`) takes Blelloch scans and single-pass scans of one
    /// tile; a single-pass scan of more than one tile refuses with
    /// [`Error::Unsupported`], queuing nothing: its tile statuses carry a
    /// per-launch number that a replay would repeat. Repeated scans are timed
    /// with [`time_replayed`](Cuda::time_replayed), which is safe.
    ///
    /// ```no_run
    /// # fn main() -> scan_core::Result<()> {
    /// use scan_cuda::Cuda;
    /// let cuda = Cuda::new()?.with_own_stream()?;
    /// assert!(!cuda.stream().cu_stream().is_null());
    /// # Ok(()) }
    /// ```
    pub fn with_own_stream(mut self) -> Result<Cuda> {
        // What the default stream holds of this executor's finishes first:
        // the new stream does not wait for the legacy default stream.
        self.synchronize()?;
        // Scratch made so far was allocated on the default stream, where a
        // later growth would free it, in that stream's order only: while
        // this executor's kernels on the new stream still use it (a
        // helper's review). Dropped now, while nothing uses it; the next
        // uses make it again, on the new stream.
        for module in self.modules.get_mut().unwrap_or_else(|p| p.into_inner()).values() {
            *lock(&module.tile_state) = Default::default();
        }
        *self.segment_bits.get_mut().unwrap_or_else(|p| p.into_inner()) = None;
        *self.selective_scratch.get_mut().unwrap_or_else(|p| p.into_inner()) = None;
        // SAFETY: `Cuda::new` retains the primary context in a handle of its
        // own, so this switches off the events of this executor's buffers
        // only; each is used on this executor's one stream (the doc above
        // says what sharing one with another stream needs).
        unsafe { self.ctx.disable_event_tracking() };
        self.stream = self.ctx.new_stream().map_err(|e| driver_error("creating a stream", e))?;
        Ok(self)
    }

    /// Device milliseconds per call of `work`, with no host cost between
    /// calls: `calls` calls recorded into a CUDA graph, the graph replayed
    /// between two events, the median of `replays` replays divided by
    /// `calls`. This is how a CUDA-graph user (or `torch.cuda.CUDAGraph`)
    /// runs small scans, where the host's launch costs would otherwise be
    /// most of the time.
    ///
    /// For benchmarks: `work` must queue the same launches on every call (a
    /// scan of the same sizes), after one call outside the graph that gets
    /// kernels and scratch ready. A replay repeats the recorded tile-status
    /// epochs, which is safe because every recorded scan rewrites every
    /// status of its size with a new epoch before the next one runs: hence
    /// at least two calls. The executor needs a stream of its own
    /// ([`with_own_stream`](Cuda::with_own_stream)), and no other thread may
    /// use it meanwhile: a recording belongs to the stream, so another
    /// thread's launches would be recorded instead of run, and a scratch it
    /// grows would leave the graph's kernels with the freed one.
    pub fn time_replayed(&self, calls: usize, replays: usize, mut work: impl FnMut() -> Result<()>) -> Result<f32> {
        if calls < 2 || replays == 0 {
            return Err(Error::Other(format!(
                "time_replayed needs at least 2 calls and 1 replay, not {calls} and {replays}"
            )));
        }
        if self.stream.cu_stream().is_null() {
            return Err(Error::Unsupported(
                "a CUDA graph cannot record the default stream: time_replayed needs Cuda::with_own_stream".into(),
            ));
        }
        work()?;
        self.synchronize()?;
        let mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
        self.stream.begin_capture(mode).map_err(|e| driver_error("beginning a graph capture", e))?;
        // Single-pass launches refuse a recording unless it is this one.
        self.replaying.store(true, Ordering::Relaxed);
        let recorded = catch_unwind(AssertUnwindSafe(|| (0..calls).try_for_each(|_| work())));
        self.replaying.store(false, Ordering::Relaxed);
        // End the capture on every path, a panic in `work` included, so that
        // the stream is usable again.
        let graph = self.stream.end_capture(sys::CUgraphInstantiate_flags(0));
        let recorded = recorded.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        recorded?;
        let graph = graph
            .map_err(|e| driver_error("ending a graph capture", e))?
            .ok_or_else(|| Error::Other("the graph capture recorded nothing".into()))?;
        let replay = || graph.launch().map_err(|e| driver_error("graph launch", e));
        graph.upload().map_err(|e| driver_error("graph upload", e))?;
        replay()?;
        self.synchronize()?;
        // (Grown as the replays run: `replays` is the caller's, unbounded.)
        let mut ms = Vec::new();
        for _ in 0..replays {
            ms.push(self.time(replay)?.1 / calls as f32);
        }
        ms.sort_by(f32::total_cmp);
        Ok(ms[ms.len() / 2])
    }

    fn check_fits<T>(&self, len: usize) -> Result<usize> {
        let size = std::mem::size_of::<T>();
        let bytes = len.checked_mul(size).ok_or_else(|| Error::TooLarge {
            what: format!("{len} items of {size} bytes overflow the address space"),
        })?;
        let free_bytes = || self.ctx.mem_get_info().map(|(free, _)| free).map_err(|e| driver_error("cuMemGetInfo", e));
        let mut free = free_bytes()?;
        if bytes > free {
            // What the pool keeps (pool.rs) is not counted free: release it
            // (after the queued frees) and look again.
            self.stream.synchronize().map_err(|e| driver_error("synchronising", e))?;
            crate::pool::release_unused(&self.ctx)?;
            free = free_bytes()?;
        }
        if bytes > free {
            return Err(Error::TooLarge {
                what: format!(
                    "{len} items need {:.2} GiB of GPU memory but {:.2} GiB are free on {}; scan in pieces or use the \
                     CPU backend",
                    bytes as f64 / (1u64 << 30) as f64,
                    free as f64 / (1u64 << 30) as f64,
                    self.name
                ),
            });
        }
        Ok(bytes)
    }

    /// A device buffer of `len` items, every byte zero (so every item is the
    /// all-zero `T`: `0`, `0.0`, `false`, and aggregates of those).
    ///
    /// `T` must be valid as all-zero bytes ([`ValidAsZeroBits`], implemented by
    /// cudarc for the scalars, tuples and arrays; for your own `#[repr(C)]`
    /// struct of such fields, `unsafe impl scan_cuda::ValidAsZeroBits for S {}`),
    /// because the buffer can be downloaded before anything is written to it.
    ///
    /// ```no_run
    /// # fn main() -> scan_core::Result<()> {
    /// let cuda = scan_cuda::Cuda::new()?;
    /// assert_eq!(cuda.alloc::<(f32, bool)>(2)?.download()?, [(0.0, false); 2]);
    /// # Ok(()) }
    /// ```
    pub fn alloc<T: Copy + ValidAsZeroBits>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        let mut buf = self.alloc_unwritten::<T>(len)?;
        if !buf.is_empty() {
            self.stream.memset_zeros(&mut buf.slice).map_err(|e| driver_error("zero fill", e))?;
        }
        Ok(buf)
    }

    /// A device buffer of `len` items with unspecified contents. Only for
    /// buffers that are completely written (an upload, a scan's output)
    /// before anything reads them as `T`.
    pub(crate) fn alloc_unwritten<T: Copy>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        if len == 0 {
            let slice = self.stream.null::<Raw<T>>().map_err(|e| driver_error("allocation", e))?;
            return Ok(DeviceBuffer { slice });
        }
        self.check_fits::<T>(len)?;
        // SAFETY: nothing reads these bytes as `T` before they are written:
        // see this function's contract, kept by its callers.
        let slice = unsafe { self.stream.alloc::<Raw<T>>(len) }.map_err(|e| driver_error("allocation", e))?;
        Ok(DeviceBuffer { slice })
    }

    /// Copies `items` to a new device buffer; complete when this returns.
    /// Inputs of [`STAGED_TRANSFER_BYTES`](crate::STAGED_TRANSFER_BYTES) or
    /// more travel in chunks through the executor's page-locked staging
    /// buffers (those of [`scan_into`](Cuda::scan_into)), at about the host
    /// link's speed; smaller ones are one driver copy.
    pub fn upload<T: Copy>(&self, items: &[T]) -> Result<DeviceBuffer<T>> {
        // Every item is written by the copy below, which is complete (also
        // from page-locked memory, which a copy reads after its call) before
        // the borrow of `items` ends.
        let mut buf = self.alloc_unwritten::<T>(items.len())?;
        self.upload_into(items, &mut buf)?;
        Ok(buf)
    }

    pub(crate) fn check_buffer<T: Copy>(&self, buf: &DeviceBuffer<T>, argument: &str) -> Result<()> {
        if buf.stream().context().cu_ctx() != self.ctx.cu_ctx() {
            return Err(Error::Other(format!(
                "`{argument}` is a device buffer of another CUDA device or context than this executor's"
            )));
        }
        // A buffer's own copies and its free run on the stream it was made
        // on (`download`, `drop`); a stream of its own does not wait for
        // another, so scanning a buffer of another stream here would race
        // them (a helper's review: a download read the data before the
        // scan, and a drop freed it while the scan ran).
        if buf.stream().cu_stream() != self.stream.cu_stream() {
            return Err(Error::Other(format!(
                "`{argument}` is a device buffer of another CUDA stream than this executor's (one made before \
                 `with_own_stream`, or by another executor with a stream of its own): its copies and its free \
                 would not wait for this executor's scans; make it with this executor (`upload`, `alloc`)"
            )));
        }
        Ok(())
    }

    /// Scans `input` on the GPU into a new vector: see
    /// [`scan_into`](Cuda::scan_into).
    pub fn scan<Op: CudaOp>(&self, input: &[Op::Item], spec: ScanSpec) -> Result<Vec<Op::Item>> {
        // An output the host cannot hold is an error, as on the CPU, not an
        // abort (a helper's review).
        let n = input.len();
        let mut output = Vec::new();
        output.try_reserve_exact(n).map_err(|_| Error::TooLarge {
            what: format!("cannot allocate an output of {n} items of {} bytes", std::mem::size_of::<Op::Item>()),
        })?;
        output.resize(n, Op::identity());
        self.scan_host::<Op>(Some(input), &mut output, spec)?;
        Ok(output)
    }

    /// Scans host `input` into `output` (same length) on the GPU.
    ///
    /// The items travel in chunks through reused page-locked buffers, and the
    /// copy in, the scan and the copy out of different chunks overlap (each
    /// chunk's scan starts from the running total of the chunks before it),
    /// so a long scan runs at about the host link's speed; see
    /// [`transfer_rates`](Cuda::transfer_rates). Data already on the device
    /// is scanned with [`scan_device_into`](Cuda::scan_device_into) instead,
    /// without crossing the link.
    ///
    /// The executor keeps the staging buffers for its next calls: four
    /// chunks' worth (up to 64 MiB) each of page-locked host memory and of
    /// device memory, both ways (up to 256 MiB in all, sized by the largest
    /// call so far; chunks are an eighth of the input, 4 to 16 MiB).
    pub fn scan_into<Op: CudaOp>(&self, input: &[Op::Item], output: &mut [Op::Item], spec: ScanSpec) -> Result<()> {
        self.scan_host::<Op>(Some(input), output, spec)
    }

    /// Scans host `data` in place on the GPU, staged like
    /// [`scan_into`](Cuda::scan_into).
    pub fn scan_in_place<Op: CudaOp>(&self, data: &mut [Op::Item], spec: ScanSpec) -> Result<()> {
        self.scan_host::<Op>(None, data, spec)
    }

    /// Scans a device buffer in place. Queued on the stream: returns at once
    /// (see [`Cuda`] on when failures show).
    pub fn scan_device<Op: CudaOp>(&self, buf: &mut DeviceBuffer<Op::Item>, spec: ScanSpec) -> Result<()> {
        self.check_buffer(buf, "buf")?;
        let len = buf.len();
        let ptr = buf.device_ptr_mut(&self.stream);
        self.scan_raw::<Op>(None, ptr, len, 1, spec)
    }

    /// Scans `input` into `output` (same length), both on the device, reading
    /// `input` once and writing every item of `output` once (no copy first);
    /// `input` is not modified. Queued on the stream: returns at once (see
    /// [`Cuda`] on when failures show).
    pub fn scan_device_into<Op: CudaOp>(
        &self,
        input: &DeviceBuffer<Op::Item>,
        output: &mut DeviceBuffer<Op::Item>,
        spec: ScanSpec,
    ) -> Result<()> {
        self.check_buffer(input, "input")?;
        self.check_buffer(output, "output")?;
        Error::check_lengths(input.len(), output.len())?;
        let src = input.device_ptr(&self.stream);
        let dst = output.device_ptr_mut(&self.stream);
        self.scan_raw::<Op>(Some(src), dst, input.len(), 1, spec)
    }

    /// Scans a user's own cudarc slice in place (items that are
    /// `cudarc::driver::DeviceRepr`, such as `f32` or `u64`), and waits for
    /// the scan: the slice may be used on another stream next.
    pub fn scan_slice<Op>(&self, slice: &mut CudaSlice<Op::Item>, spec: ScanSpec) -> Result<()>
    where
        Op: CudaOp,
        Op::Item: DeviceRepr,
    {
        if slice.context().cu_ctx() != self.ctx.cu_ctx() {
            return Err(Error::Other("this cudarc slice belongs to another CUDA device or context".into()));
        }
        let len = slice.len();
        let (ptr, sync) = slice.device_ptr_mut(&self.stream);
        let queued = self.scan_raw::<Op>(None, ptr, len, 1, spec);
        drop(sync);
        // Wait on every path: a failure may follow launches already queued.
        let synced = self.synchronize();
        queued.and(synced)
    }

    /// Queues the scans of `rows` rows of `row_len` items each, `stride`
    /// items apart (use `row_len` for consecutive rows), from `src` into
    /// `dst` (or in place when `src` is `None`), on the stream, with this
    /// executor's algorithm: the single-pass scan does every row in one
    /// launch, Blelloch's runs one scan per row. The caller has checked that
    /// the buffers hold `(rows - 1) * stride + row_len` items. Does not wait:
    /// callers that hand results to the host wait through their download.
    pub(crate) fn scan_raw<Op: CudaOp>(
        &self,
        src: Option<u64>,
        dst: u64,
        row_len: usize,
        rows: usize,
        spec: ScanSpec,
    ) -> Result<()> {
        self.scan_rows_raw::<Op>(src, dst, rows, row_len, row_len, spec)
    }

    /// [`scan_raw`](Cuda::scan_raw) with a row stride.
    pub(crate) fn scan_rows_raw<Op: CudaOp>(
        &self,
        src: Option<u64>,
        dst: u64,
        rows: usize,
        row_len: usize,
        stride: usize,
        spec: ScanSpec,
    ) -> Result<()> {
        if row_len == 0 || rows == 0 {
            return Ok(());
        }
        let len = rows
            .checked_mul(row_len)
            .ok_or_else(|| Error::TooLarge { what: format!("{rows} rows of {row_len} items") })?;
        let module = self.module::<Op>()?;
        let size = std::mem::size_of::<Op::Item>() as u64;
        match module.plan(self.algorithm) {
            Ok(_) if rows == 1 => {
                self.single_pass(&module)?.launch(src.unwrap_or(dst), dst, len, Segments::Whole, spec)
            }
            Ok(_) => {
                let rows_module = self.module_of::<Op>(Family::Rows)?;
                let single_pass = self.single_pass(&rows_module)?;
                // By row length (Segments::for_rows): rows of one tile a
                // block each (kernels/row_tiles.cuh); consecutive rows of
                // whole tiles the plain code path, each row's first tile
                // starting afresh (kernels/heads.cuh); others segmented.
                let segments = Segments::for_rows(single_pass.policy.tile(), row_len, stride);
                single_pass.launch(src.unwrap_or(dst), dst, len, segments, spec)
            }
            // A fallback was reported once, when the module was built.
            Err(_) => {
                let blelloch = Driver(GpuBlocks { stream: &self.stream, module: &module });
                for r in 0..rows as u64 {
                    let offset = r * stride as u64 * size;
                    let mut out = Span { ptr: dst + offset, len: row_len };
                    let operands = match src {
                        Some(src) => Operands::Into { src: &Span { ptr: src + offset, len: row_len }, dst: &mut out },
                        None => Operands::InPlace(&mut out),
                    };
                    DeviceScan::<Op>::scan(&blelloch, operands, spec)?;
                }
                Ok(())
            }
        }
    }

    /// The single-pass scan of `module` on this executor's stream, in the
    /// tile shape the module was built for (each family has its own:
    /// `SinglePassPolicy::for_segments`, `for_maps`). Callers check first
    /// that the executor runs single-pass scans of this operator
    /// (`Module::plan` of its plain module); a module without single-pass
    /// kernels here is an internal error, never a launch in the wrong shape.
    pub(crate) fn single_pass<'a>(&'a self, module: &'a Module) -> Result<SinglePass<'a>> {
        let policy = module.plan(self.algorithm).map_err(|why| {
            Error::Other(format!(
                "internal: a single-pass launch of a module without single-pass kernels ({})",
                why.unwrap_or("the executor runs Blelloch's algorithm")
            ))
        })?;
        let chaos = self.tuning.adversarial_seed();
        let recordable = self.replaying.load(Ordering::Relaxed);
        Ok(SinglePass { stream: &self.stream, module, policy, chaos, carry: Carry::default(), recordable })
    }

    /// The kernels `slot` holds, or, the first time, the module compiled
    /// from the source `code` returns (through [`Cuda::load_cached`]) with
    /// its functions looked up by `functions`; kept in `slot` for the
    /// executor's later calls. `code` runs only then: building a module's
    /// source took 10 us (the selective scan's), a cost every call paid
    /// while it was built before the look-up.
    pub(crate) fn kernels_once<K>(
        &self,
        slot: &Mutex<Option<Arc<K>>>,
        code: impl FnOnce() -> String,
        name: &str,
        functions: impl Fn(Arc<cudarc::driver::CudaModule>) -> Result<K>,
    ) -> Result<Arc<K>> {
        let mut slot = lock(slot);
        if let Some(k) = slot.as_ref() {
            return Ok(k.clone());
        }
        let kernels = self.load_cached(&code(), name, Instant::now(), |cubin| {
            let module = self
                .context()
                .load_module(cudarc::nvrtc::Ptx::from_binary(cubin))
                .map_err(|e| driver_error("module load", e))?;
            functions(module)
        })?;
        let kernels = Arc::new(kernels);
        *slot = Some(kernels.clone());
        Ok(kernels)
    }

    /// Loads the module compiled from `code` with `load`: its CUBIN from the
    /// disk cache (an entry `load` rejects counts as corrupt), else from
    /// NVRTC (then cached). Counts the work in the compile statistics, from
    /// `started`.
    pub(crate) fn load_cached<M>(
        &self,
        code: &str,
        name: &str,
        started: Instant,
        load: impl Fn(Vec<u8>) -> Result<M>,
    ) -> Result<M> {
        let key = cache::key(code, &nvrtc::options(), &self.arch, self.nvrtc_version);
        let mut stats = CompileStats::default();
        let mut module = None;
        if let Some(cubin) = self.disk.as_ref().and_then(|d| d.get(key)) {
            module = load(cubin).ok();
            stats.disk_hits += module.is_some() as u32;
        }
        let module = match module {
            Some(m) => m,
            None => {
                let t = Instant::now();
                let cubin = nvrtc::compile_cubin(code, name, &self.arch)?;
                stats.nvrtc_time += t.elapsed();
                stats.compiled += 1;
                if let Some(disk) = &self.disk {
                    if let Err(e) = disk.put(key, &cubin) {
                        stats.disk_write_failures += 1;
                        disk.warn_once(&e);
                    }
                }
                load(cubin)?
            }
        };
        let mut all = lock(&self.stats);
        all.modules += 1;
        all.compiled += stats.compiled;
        all.disk_hits += stats.disk_hits;
        all.disk_write_failures += stats.disk_write_failures;
        all.nvrtc_time += stats.nvrtc_time;
        all.total_time += started.elapsed();
        Ok(module)
    }

    /// `Op`'s kernels for one sequence: from memory, else the disk cache,
    /// else NVRTC.
    pub(crate) fn module<Op: CudaOp>(&self) -> Result<Arc<Module>> {
        self.module_of::<Op>(Family::Whole)
    }

    /// `Op`'s kernels of `family`, as [`module`](Cuda::module).
    pub(crate) fn module_of<Op: CudaOp>(&self, family: Family) -> Result<Arc<Module>> {
        self.module_keyed((TypeId::of::<Op>(), family), || {
            ModuleSource::family_of::<Op>(self.capability, self.tuning, family)
        })
    }

    /// The module filed under `id` (a type naming what it instantiates, and
    /// its family): from memory, by `id` or else by the source `source()`
    /// gives (another type's module of the same source), else built from
    /// that source through the disk cache or NVRTC.
    pub(crate) fn module_keyed(
        &self,
        id: (TypeId, Family),
        source: impl FnOnce() -> Result<ModuleSource>,
    ) -> Result<Arc<Module>> {
        let family = id.1;
        if let Some(m) = lock(&self.modules).get(&id) {
            return Ok(m.clone());
        }
        let started = Instant::now();
        let mut source = source()?;
        if let Some(m) = lock(&self.modules_by_source).get(&source) {
            let m = m.clone();
            lock(&self.modules).insert(id, m.clone());
            return Ok(m);
        }
        let built_from = source.clone();
        let mut module =
            self.load_cached(&source.code, &source.op_name, started, |cubin| Module::load(&self.ctx, &source, cubin))?;
        // Long runs that spilled for this operator: the shorter ones
        // (ModuleSource::fallback), also through the disk cache.
        if let Some(fallback) = source.fallback.take() {
            if module.spills()? {
                module = self.load_cached(&fallback.code, &fallback.op_name, Instant::now(), |cubin| {
                    Module::load(&self.ctx, &fallback, cubin)
                })?;
                source = *fallback;
            }
        }
        if let (Family::Whole, Err(Some(why))) = (family, module.plan(self.algorithm)) {
            // Once per operator and executor: the user asked for the fast path.
            eprintln!("scan-cuda: `{}` runs the Blelloch scan instead of the single-pass scan: {why}", source.op_name);
        }
        let module = Arc::new(module);
        lock(&self.modules).insert(id, module.clone());
        lock(&self.modules_by_source).insert(built_from, module.clone());
        Ok(module)
    }
}

impl<Op: CudaOp> Scan<Op> for Cuda {
    fn scan_into(&self, input: &[Op::Item], output: &mut [Op::Item], spec: ScanSpec) -> Result<()> {
        Cuda::scan_into::<Op>(self, input, output, spec)
    }
    fn scan(&self, input: &[Op::Item], spec: ScanSpec) -> Result<Vec<Op::Item>> {
        Cuda::scan::<Op>(self, input, spec)
    }
    fn scan_in_place(&self, data: &mut [Op::Item], spec: ScanSpec) -> Result<()> {
        Cuda::scan_in_place::<Op>(self, data, spec)
    }
    fn scan_rows(&self, input: &[Op::Item], output: &mut [Op::Item], rows: usize, spec: ScanSpec) -> Result<()> {
        Cuda::scan_rows::<Op>(self, input, output, rows, spec)
    }
    fn scan_rows_in_place(&self, data: &mut [Op::Item], rows: usize, spec: ScanSpec) -> Result<()> {
        Cuda::scan_rows_in_place::<Op>(self, data, rows, spec)
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
        Cuda::scan_rows_strided::<Op>(self, input, output, rows, row_len, stride, spec)
    }
    fn scan_segments(
        &self,
        input: &[Op::Item],
        output: &mut [Op::Item],
        starts: &[usize],
        spec: ScanSpec,
    ) -> Result<()> {
        Cuda::scan_segments::<Op>(self, input, output, starts, spec)
    }
    fn scan_segments_in_place(&self, data: &mut [Op::Item], starts: &[usize], spec: ScanSpec) -> Result<()> {
        Cuda::scan_segments_in_place::<Op>(self, data, starts, spec)
    }
    fn scan_flagged(&self, input: &[Op::Item], output: &mut [Op::Item], heads: &[bool], spec: ScanSpec) -> Result<()> {
        Cuda::scan_flagged::<Op>(self, input, output, heads, spec)
    }
    fn scan_flagged_in_place(&self, data: &mut [Op::Item], heads: &[bool], spec: ScanSpec) -> Result<()> {
        Cuda::scan_flagged_in_place::<Op>(self, data, heads, spec)
    }
}

/// Compiles `Op`'s whole module for `arch` (e.g. `"sm_90"`) with NVRTC and
/// returns the CUBIN. Needs only libnvrtc, no GPU: tests use it to check that
/// every kernel template instantiates for every operator.
///
/// ```no_run
/// use scan_core::ops::Add;
/// let cubin = scan_cuda::compile_for_arch::<Add<f32>>("sm_90").unwrap();
/// assert!(!cubin.is_empty());
/// ```
pub fn compile_for_arch<Op: CudaOp>(arch: &str) -> Result<Vec<u8>> {
    compile_with::<Op>(arch, Tuning::default())
}

/// Like [`compile_for_arch`], with the single-pass policy overridden by
/// `tuning`: tests compile every status layout and tile shape they run.
pub fn compile_with<Op: CudaOp>(arch: &str, tuning: Tuning) -> Result<Vec<u8>> {
    let source = ModuleSource::of::<Op>(capability_of(arch)?, tuning)?;
    nvrtc::compile_cubin(&source.code, &source.op_name, arch)
}

/// Compiles `Op`'s modules for rows and for segments (built on their first
/// use, apart from the module [`compile_for_arch`] builds) for `arch` and
/// returns their CUBINs. Empty for operators without single-pass kernels:
/// their rows and segments run Blelloch's kernels one scan at a time.
pub fn compile_segmented_for_arch<Op: CudaOp>(arch: &str) -> Result<Vec<Vec<u8>>> {
    compile_segmented_with::<Op>(arch, Tuning::default())
}

/// Like [`compile_segmented_for_arch`], with the single-pass policy
/// overridden by `tuning`.
///
/// Each module's fallback (the shorter runs loaded where the long ones
/// spill, `SinglePassPolicy::for_segment_heads`) is compiled too, after it.
pub fn compile_segmented_with<Op: CudaOp>(arch: &str, tuning: Tuning) -> Result<Vec<Vec<u8>>> {
    let mut cubins = Vec::new();
    for family in [Family::Rows, Family::Flags, Family::Offsets] {
        let source = ModuleSource::family_of::<Op>(capability_of(arch)?, tuning, family)?;
        if source.stages().iter().any(|s| Stage::SINGLE_PASS.contains(s)) {
            cubins.push(nvrtc::compile_cubin(&source.code, &source.op_name, arch)?);
            if let Some(fallback) = &source.fallback {
                cubins.push(nvrtc::compile_cubin(&fallback.code, &fallback.op_name, arch)?);
            }
        }
    }
    Ok(cubins)
}

/// ptxas' report (registers, stack frame, spills) of `Op`'s rows and
/// segment modules for `arch` under `tuning`, one after the other, each in
/// the build that would run: a module with a fallback whose long runs use
/// local memory is reported in its fallback's shape, as the executor
/// chooses at load. Register budgets of the segmented kernels checked
/// without a GPU.
///
/// ```no_run
/// use scan_core::ops::Add;
/// let report = scan_cuda::ptxas_report_segmented_with::<Add<f32>>("sm_90", scan_cuda::Tuning::default()).unwrap();
/// assert!(report.contains("single_pass_bits_forward_inclusive"));
/// ```
pub fn ptxas_report_segmented_with<Op: CudaOp>(arch: &str, tuning: Tuning) -> Result<String> {
    let mut report = String::new();
    for family in [Family::Rows, Family::Flags, Family::Offsets] {
        let source = ModuleSource::family_of::<Op>(capability_of(arch)?, tuning, family)?;
        if source.stages().iter().any(|s| Stage::SINGLE_PASS.contains(s)) {
            let mut part = nvrtc::ptxas_report(&source.code, &source.op_name, arch)?;
            if let Some(fallback) = source.fallback.as_ref().filter(|_| nvrtc::reports_local_memory(&part)) {
                part = nvrtc::ptxas_report(&fallback.code, &fallback.op_name, arch)?;
            }
            report.push_str(&part);
            report.push('\n');
        }
    }
    Ok(report)
}

/// 90 for `"sm_90"` (or `"sm_90a"`).
pub(crate) fn capability_of(arch: &str) -> Result<u32> {
    arch.strip_prefix("sm_")
        .map(|d| d.trim_end_matches(|c: char| c.is_ascii_alphabetic()))
        .and_then(|d| d.parse().ok())
        .ok_or_else(|| Error::Other(format!("{arch:?} is not an architecture like \"sm_90\"")))
}

/// The full CUDA source of `Op`'s module (operator, templates,
/// instantiations) for sm_90 with the default policy, as NVRTC sees it.
pub fn module_source<Op: CudaOp>() -> Result<String> {
    Ok(ModuleSource::of::<Op>(90, Tuning::default())?.code)
}

#[cfg(test)]
mod tests {
    use super::CompileStats;

    #[test]
    fn compile_stats_say_when_the_disk_cache_could_not_be_written() {
        let quiet = CompileStats { modules: 3, compiled: 3, ..Default::default() };
        assert!(!quiet.to_string().contains("written"), "{quiet}");
        let failed = CompileStats { modules: 3, compiled: 3, disk_write_failures: 3, ..Default::default() };
        assert!(failed.to_string().ends_with("0 from the disk cache, 3 could not be written to it)"), "{failed}");
    }
}
