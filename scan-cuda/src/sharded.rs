//! Scans of one sequence split into shards, one per rank
//! (kernels/shard.cuh, kernels/reduce.cuh). What joins the shards is one
//! item per rank: each rank's total in scan order, gathered in rank order
//! (one NCCL all-gather of one item per rank, or nothing to move when the
//! ranks share a GPU). Each rank combines the totals met before it in scan
//! order into its carry. Operands keep their order throughout, so
//! non-commutative operators are exact. Two ways, by the executor's
//! algorithm for the operator:
//!
//! * single-pass: reduce, gather, then scan from the carry (the single-pass
//!   kernel starts from a carry item): each shard read twice, written once;
//!   the rank met last in scan order skips the reduce;
//! * Blelloch: scan, take the total from the last output, gather, then
//!   combine the carry into every output: read twice, written twice.
//!
//! Two ways to run it: [`ShardGroup`], one process driving every rank (one
//! GPU each through NCCL, or several ranks on one GPU), and [`NcclRank`],
//! one process per rank joined by an [`NcclId`].

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use cudarc::driver::{result, CudaFunction, CudaModule, LaunchConfig, PushKernelArg};
use scan_core::{CudaOp, Error, Result, ScanSpec};

use crate::blelloch::grid;
use crate::buffer::{driver_error, vec_written_by, DeviceBuffer};
use crate::cuda::Cuda;
use crate::kernels::lookup;
use crate::module::lock;
use crate::nccl::{self, Comm, NcclId};
use crate::single_pass::{Carry, Segments};
use crate::source::{items_have_bytes, kernel_files};

const SOURCES: [(&str, &str); 4] = [
    ("util.cuh", include_str!("../kernels/util.cuh")),
    ("warp.cuh", include_str!("../kernels/warp.cuh")),
    ("reduce.cuh", include_str!("../kernels/reduce.cuh")),
    ("shard.cuh", include_str!("../kernels/shard.cuh")),
];

const TOTAL: &str = "shard_total";
const CARRY: &str = "shard_carry";
const APPLY: &str = "shard_apply";
const REDUCE_BLOCKS: [&str; 2] = ["shard_reduce_blocks", "shard_reduce_blocks_reverse"];
const REDUCE_PARTIALS: [&str; 2] = ["shard_reduce_partials", "shard_reduce_partials_reverse"];

/// Threads per block of the carry's grid-stride loop, and its blocks at most
/// (a few waves of any GPU).
const APPLY_THREADS: u32 = 256;
const APPLY_MAX_BLOCKS: usize = 8192;

/// Warps per block of the reduction, and its blocks at most (each folds a
/// contiguous range of tiles; about as many as an H200 holds at once, so
/// one wave).
const REDUCE_WARPS: u32 = 8;
const REDUCE_MAX_BLOCKS: usize = 1024;

/// Items a lane of the reduction loads at once (reduce.cuh's
/// `ReduceUnit`): a 16-byte vector's worth when items divide 16.
fn reduce_unit(item: usize) -> usize {
    if 16 % item == 0 {
        16 / item
    } else {
        1
    }
}

/// Rows of 32 lanes per warp and tile of the reduction: about 64 bytes in
/// flight per lane, at least one row.
fn reduce_rows(item: usize) -> usize {
    (64 / (reduce_unit(item) * item)).clamp(1, 4)
}

fn source<Op: CudaOp>() -> Result<String> {
    items_have_bytes::<Op>()?;
    let op = Op::cuda_source();
    let name = &op.name;
    let mut code = format!("// ---- operator `{name}` ----\n{}\n\n", op.code);
    code.push_str(&kernel_files(&SOURCES));
    let item = format!("{name}::Item");
    let rows = reduce_rows(std::mem::size_of::<Op::Item>());
    let threads = 32 * REDUCE_WARPS;
    code.push_str(&format!(
        "// ---- instantiations ----\n\
         extern \"C\" __global__ void {TOTAL}(const {item}* last_out, const {item}* last_in,\n\
         \x20   unsigned long long len, int inclusive, {item}* total) {{\n\
         \x20 scan::shard_total<{name}>(last_out, last_in, len, inclusive != 0, total);\n\
         }}\n\
         extern \"C\" __global__ void {CARRY}(const {item}* totals, long long first, long long step,\n\
         \x20   unsigned long long count, {item}* carry) {{\n\
         \x20 scan::shard_carry<{name}>(totals, first, step, count, carry);\n\
         }}\n\
         extern \"C\" __global__ void __launch_bounds__({APPLY_THREADS}) {APPLY}({item}* data,\n\
         \x20   unsigned long long len, const {item}* carry) {{\n\
         \x20 scan::shard_apply<{name}>(data, len, carry);\n\
         }}\n"
    ));
    for (reverse, (blocks, partials)) in REDUCE_BLOCKS.iter().zip(REDUCE_PARTIALS).enumerate() {
        let op = if reverse == 1 { format!("scan::Flipped<{name}>") } else { name.clone() };
        code.push_str(&format!(
            "extern \"C\" __global__ void __launch_bounds__({threads}) {blocks}(const {item}* src,\n\
             \x20   unsigned long long len, {item}* partials) {{\n\
             \x20 scan::reduce_blocks<{op}, {REDUCE_WARPS}, {rows}>(src, len, partials);\n\
             }}\n\
             extern \"C\" __global__ void {partials}(const {item}* partials, unsigned long long count,\n\
             \x20   {item}* total) {{\n\
             \x20 scan::reduce_partials<{op}>(partials, count, total);\n\
             }}\n"
        ));
    }
    Ok(code)
}

/// Compiles `Op`'s join kernels for `arch` (e.g. `"sm_90"`) with NVRTC and
/// returns the CUBIN; needs libnvrtc, no GPU.
pub fn compile_shard_for_arch<Op: CudaOp>(arch: &str) -> Result<Vec<u8>> {
    crate::nvrtc::compile_cubin(&source::<Op>()?, "shard", arch)
}

/// ptxas' report (registers, spills) of `Op`'s join kernels for `arch`.
pub fn ptxas_report_shard<Op: CudaOp>(arch: &str) -> Result<String> {
    crate::nvrtc::ptxas_report(&source::<Op>()?, "shard", arch)
}

/// One operator's join kernels (the module must outlive the functions).
pub(crate) struct ShardKernels {
    _module: Arc<CudaModule>,
    total: CudaFunction,
    carry: CudaFunction,
    apply: CudaFunction,
    /// Forward, then reverse (the flipped operator).
    reduce_blocks: [CudaFunction; 2],
    reduce_partials: [CudaFunction; 2],
}

/// The join kernels of each operator an executor has used.
pub(crate) type ShardKernelCache = Mutex<HashMap<TypeId, Arc<ShardKernels>>>;

/// One rank's part of a scan: its input (`None`: in place) and output.
#[derive(Clone, Copy)]
struct Part {
    src: Option<u64>,
    dst: u64,
    len: usize,
}

/// A rank's place: `rank` of `world`.
#[derive(Clone, Copy)]
struct Role {
    rank: usize,
    world: usize,
}

impl Role {
    /// The totals this rank's carry folds, in scan order, as (first, step,
    /// count): ranks 0..rank forward, world-1 down to rank+1 in reverse.
    fn carry_range(self, spec: ScanSpec) -> (i64, i64, usize) {
        if spec.is_reverse() {
            (self.world as i64 - 1, -1, self.world - 1 - self.rank)
        } else {
            (0, 1, self.rank)
        }
    }

    /// Whether no rank's carry needs this rank's total (met last in scan order).
    fn is_last(self, spec: ScanSpec) -> bool {
        if spec.is_reverse() {
            self.rank == 0
        } else {
            self.rank + 1 == self.world
        }
    }
}

/// What one rank needs for one scan, made before anything is queued (so
/// that a failure, such as an out-of-memory or a compile error, leaves no
/// collective half-queued): the kernels, whether the executor reduces first,
/// and its scratch: one item for the last input, one for the carry, then the
/// totals of all ranks (rank r's at offset r), then the reduction's partials.
struct Prepared {
    kernels: Arc<ShardKernels>,
    reduces_first: bool,
    _scratch: DeviceBuffer<u8>,
    slots: Slots,
}

/// The device addresses in a [`Prepared`]'s scratch.
#[derive(Clone, Copy)]
struct Slots {
    last_in: u64,
    carry: u64,
    totals: u64,
    partials: u64,
}

impl Cuda {
    /// `Op`'s join kernels, compiled once per executor.
    fn shard_kernels<Op: CudaOp>(&self) -> Result<Arc<ShardKernels>> {
        let mut cache = lock(&self.shard_kernels);
        if let Some(k) = cache.get(&TypeId::of::<Op>()) {
            return Ok(k.clone());
        }
        let kernels = self.load_cached(&source::<Op>()?, "shard", Instant::now(), |cubin| {
            let module = self
                .context()
                .load_module(cudarc::nvrtc::Ptx::from_binary(cubin))
                .map_err(|e| driver_error("module load", e))?;
            Ok(ShardKernels {
                total: lookup(&module, TOTAL)?,
                carry: lookup(&module, CARRY)?,
                apply: lookup(&module, APPLY)?,
                reduce_blocks: [lookup(&module, REDUCE_BLOCKS[0])?, lookup(&module, REDUCE_BLOCKS[1])?],
                reduce_partials: [lookup(&module, REDUCE_PARTIALS[0])?, lookup(&module, REDUCE_PARTIALS[1])?],
                _module: module,
            })
        })?;
        let kernels = Arc::new(kernels);
        cache.insert(TypeId::of::<Op>(), kernels.clone());
        Ok(kernels)
    }

    /// A rank's kernels and scratch for scanning `Op` among `world` ranks.
    /// Whether it reduces first: when this executor scans `Op` with the
    /// single-pass kernels (which start from a carry).
    fn prepare_shard<Op: CudaOp>(&self, world: usize) -> Result<Prepared> {
        let kernels = self.shard_kernels::<Op>()?;
        let reduces_first = self.module::<Op>()?.plan(self.algorithm()).is_ok();
        let item = std::mem::size_of::<Op::Item>();
        let items = world.checked_add(2 + REDUCE_MAX_BLOCKS);
        let bytes = items
            .and_then(|n| n.checked_mul(item))
            .ok_or_else(|| Error::TooLarge { what: format!("the scratch of {world} ranks") })?;
        // Every slot is written before it is read (a total, the carry, the
        // saved input and the partials each by the launch before its reader).
        let mut scratch = self.alloc_unwritten::<u8>(bytes)?;
        let base = scratch.device_ptr_mut(self.stream());
        let at = |items: usize| base + (items * item) as u64;
        let slots = Slots { last_in: at(0), carry: at(1), totals: at(2), partials: at(2 + world) };
        Ok(Prepared { kernels, reduces_first, _scratch: scratch, slots })
    }

    /// Before the gather: queues what puts this rank's scan-order total at
    /// its place in `slots.totals` (and, scanning before the gather, the
    /// scan).
    fn shard_before<Op: CudaOp>(&self, p: &Prepared, part: Part, spec: ScanSpec, role: Role) -> Result<()> {
        let (k, s) = (&*p.kernels, p.slots);
        let total = s.totals + (role.rank * std::mem::size_of::<Op::Item>()) as u64;
        if p.reduces_first {
            // Nobody needs the last rank's total: the identity, unread.
            let len = if role.is_last(spec) { 0 } else { part.len };
            self.reduce_into::<Op>(k, part.src.unwrap_or(part.dst), len, spec.is_reverse(), s.partials, total)
        } else {
            self.scan_part::<Op>(k, part, spec, s.last_in, total)
        }
    }

    /// After the gather: the scan from the carry, or the carry combined into
    /// the scanned part.
    fn shard_after<Op: CudaOp>(&self, p: &Prepared, part: Part, spec: ScanSpec, role: Role) -> Result<()> {
        let (k, s) = (&*p.kernels, p.slots);
        let (first, step, count) = role.carry_range(spec);
        // The carry, folded once into its slot (0: none).
        let from = if count == 0 || part.len == 0 {
            0
        } else {
            let (count, totals, carry) = (count as u64, s.totals, s.carry);
            let mut launch = self.stream().launch_builder(&k.carry);
            launch.arg(&totals).arg(&first).arg(&step).arg(&count).arg(&carry);
            // SAFETY: `totals` holds `world` items, of which the kernel reads
            // `count` from `first` by `step`, all within; `carry` one item.
            unsafe { launch.launch(one_thread()) }.map_err(|e| driver_error("launch of a shard's carry", e))?;
            s.carry
        };
        if !p.reduces_first {
            return self.carry_into_part(k, part.dst, part.len, from);
        }
        let module = self.module::<Op>()?;
        let mut scan = self.single_pass(&module)?;
        scan.carry = Carry { from, to: 0 };
        scan.launch(part.src.unwrap_or(part.dst), part.dst, part.len, Segments::Whole, spec)
    }

    /// Queues the fold of `src[..len]` under `Op` (in reverse order when
    /// `reverse`) into the one item at `total`, through `partials`
    /// ([`REDUCE_MAX_BLOCKS`] items).
    fn reduce_into<Op: CudaOp>(
        &self,
        k: &ShardKernels,
        src: u64,
        len: usize,
        reverse: bool,
        partials: u64,
        total: u64,
    ) -> Result<()> {
        let item = std::mem::size_of::<Op::Item>();
        let tile = REDUCE_WARPS as usize * reduce_rows(item) * 32 * reduce_unit(item);
        let blocks = len.div_ceil(tile).min(REDUCE_MAX_BLOCKS);
        let len64 = len as u64;
        if blocks > 0 {
            let cfg = LaunchConfig {
                grid_dim: (grid(blocks)?, 1, 1),
                block_dim: (32 * REDUCE_WARPS, 1, 1),
                shared_mem_bytes: 0,
            };
            let mut launch = self.stream().launch_builder(&k.reduce_blocks[reverse as usize]);
            launch.arg(&src).arg(&len64).arg(&partials);
            // SAFETY: `src` holds `len` items; `partials` one item per block
            // (at most REDUCE_MAX_BLOCKS).
            unsafe { launch.launch(cfg) }.map_err(|e| driver_error("launch of a shard's reduction", e))?;
        }
        let count = blocks as u64;
        let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
        let mut launch = self.stream().launch_builder(&k.reduce_partials[reverse as usize]);
        launch.arg(&partials).arg(&count).arg(&total);
        // SAFETY: `partials` holds the `count` items written above; `total`
        // one item.
        unsafe { launch.launch(cfg) }.map(|_| ()).map_err(|e| driver_error("launch of a shard's reduction", e))
    }

    /// Queues the scan of `part` and writes its scan-order total to `total`
    /// (one item; the identity when the part is empty). `last_in` is one
    /// item of scratch.
    fn scan_part<Op: CudaOp>(
        &self,
        k: &ShardKernels,
        part: Part,
        spec: ScanSpec,
        last_in: u64,
        total: u64,
    ) -> Result<()> {
        let item = std::mem::size_of::<Op::Item>();
        let last = if spec.is_reverse() { 0 } else { part.len.saturating_sub(1) };
        let last_offset = (last * item) as u64;
        if part.len > 0 && !spec.is_inclusive() {
            // The exclusive total needs the last input, which an in-place
            // scan overwrites: keep a copy.
            let from = part.src.unwrap_or(part.dst) + last_offset;
            // A raw call, unlike cudarc's, does not make this executor's
            // context current, and the default (null) stream means the
            // legacy stream of whichever context is: in an NCCL group the
            // previous rank's, on another GPU, so the scan below could
            // overwrite `from` first (a helper's review).
            self.context().bind_to_thread().map_err(|e| driver_error("binding the context", e))?;
            // SAFETY: both addresses hold one item on this executor's device,
            // whose context is current; the copy is queued on its stream
            // before the scan that may overwrite `from`.
            unsafe { result::memcpy_dtod_async(last_in, from, item, self.stream().cu_stream()) }
                .map_err(|e| driver_error("saving a shard's last input", e))?;
        }
        self.scan_raw::<Op>(part.src, part.dst, part.len, 1, spec)?;
        let (last_out, len64, inclusive) = (part.dst + last_offset, part.len as u64, spec.is_inclusive() as i32);
        let mut launch = self.stream().launch_builder(&k.total);
        launch.arg(&last_out).arg(&last_in).arg(&len64).arg(&inclusive).arg(&total);
        // SAFETY: `last_out` and `last_in` are read only when the part is
        // non-empty (then both hold an item); `total` holds one item.
        unsafe { launch.launch(one_thread()) }.map(|_| ()).map_err(|e| driver_error("launch of a shard's total", e))
    }

    /// Queues the combination of the item at `carry` (0: none, nothing to
    /// do) in front of the `len` items at `dst`.
    fn carry_into_part(&self, k: &ShardKernels, dst: u64, len: usize, carry: u64) -> Result<()> {
        if carry == 0 || len == 0 {
            return Ok(());
        }
        let len64 = len as u64;
        let blocks = grid(len.div_ceil(APPLY_THREADS as usize).min(APPLY_MAX_BLOCKS))?;
        let cfg = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (APPLY_THREADS, 1, 1), shared_mem_bytes: 0 };
        let mut launch = self.stream().launch_builder(&k.apply);
        launch.arg(&dst).arg(&len64).arg(&carry);
        // SAFETY: `dst` holds `len` items and `carry` one.
        unsafe { launch.launch(cfg) }.map(|_| ()).map_err(|e| driver_error("launch of a shard's carry", e))
    }
}

fn one_thread() -> LaunchConfig {
    LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 }
}

enum Ranks {
    /// One GPU per rank, one NCCL communicator each, all in this process;
    /// `None` once aborted after a failed collective. (Each `Comm` holds its
    /// own handle on its stream, so the order in which the two fields drop
    /// does not matter.)
    Devices { execs: Vec<Cuda>, comms: Mutex<Option<Vec<Comm>>> },
    /// `count` ranks sharing one executor: the totals are already in one
    /// place.
    OneGpu { cuda: Box<Cuda>, count: usize },
}

/// Ranks driven from this process, scanning sequences split into shards:
/// shard r (a [`DeviceBuffer`] on rank r's device, any length, empty
/// included) holds the items after those of shards 0..r.
///
/// ```no_run
/// # fn main() -> scan_core::Result<()> {
/// use scan_core::{ops::Add, ScanSpec};
/// use scan_cuda::ShardGroup;
/// let group = ShardGroup::nccl(&[0, 1])?; // GPUs 0 and 1, through NCCL
/// let mut shards = group.scatter(&[1u64, 2, 3, 4, 5])?; // [1, 2, 3] on GPU 0, [4, 5] on GPU 1
/// group.scan_shards::<Add<u64>>(&mut shards, ScanSpec::inclusive())?;
/// assert_eq!(group.gather(&shards)?, [1, 3, 6, 10, 15]);
/// # Ok(()) }
/// ```
///
/// The exchange is one NCCL all-gather of one item per rank; everything else
/// runs on each rank's GPU. Where the ranks' executors scan the operator with
/// the single-pass kernels (the default, for items up to 128 bytes), each
/// rank reduces its shard (a read), and after the gather scans it from the
/// totals of the ranks before it in scan order (a read and a write; the rank
/// met last in scan order skips the reduction). With Blelloch's algorithm
/// each rank scans first, and after the gather combines that carry into
/// every output (a second read and write; the rank met first skips it).
///
/// Every rank folds the same totals in the same order, so integer and other
/// exact operators give the single-GPU result; float results differ from a
/// one-GPU scan's in the last bits (the grouping differs), within the same
/// rounding bound. Each operator's join kernels are compiled by NVRTC on its
/// first use (on every rank's device), as the scan kernels are.
///
/// After a collective fails, the communicators are aborted (releasing
/// streams that wait on the gather) and every later call on the group is an
/// error: make a new group.
pub struct ShardGroup {
    ranks: Ranks,
}

impl std::fmt::Debug for ShardGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.ranks {
            Ranks::Devices { execs, .. } => write!(f, "ShardGroup(NCCL, {execs:?})"),
            Ranks::OneGpu { cuda, count } => write!(f, "ShardGroup({count} ranks on {cuda:?})"),
        }
    }
}

impl ShardGroup {
    /// One rank per CUDA device in `ordinals` (distinct, in rank order),
    /// joined by NCCL (`ncclCommInitAll`), each with a default executor.
    /// Errors: no NCCL library ([`Error::NcclUnavailable`]), a device that
    /// cannot be opened, a device listed twice.
    ///
    /// NCCL reads its environment when the group is made: on a host shared
    /// with others, set `NCCL_NVLS_ENABLE=0` first (NVLink multicast can put
    /// the host's GPUs out of service); `examples/sharded.rs` does.
    pub fn nccl(ordinals: &[usize]) -> Result<ShardGroup> {
        check_distinct(ordinals)?;
        ShardGroup::nccl_with(ordinals.iter().map(|&o| Cuda::with_device(o)).collect::<Result<Vec<_>>>()?)
    }

    /// [`nccl`](ShardGroup::nccl) with executors of your own, rank r
    /// `executors[r]` (each on a device of its own), so that the ranks run
    /// the algorithm, tuning or deterministic mode you set on them.
    ///
    /// ```no_run
    /// # fn main() -> scan_core::Result<()> {
    /// use scan_cuda::{Cuda, ShardGroup};
    /// let ranks = (0..2).map(|gpu| Ok(Cuda::with_device(gpu)?.with_deterministic(true)));
    /// let group = ShardGroup::nccl_with(ranks.collect::<scan_core::Result<Vec<_>>>()?)?;
    /// # Ok(()) }
    /// ```
    pub fn nccl_with(executors: Vec<Cuda>) -> Result<ShardGroup> {
        let ordinals: Vec<usize> = executors.iter().map(|c| c.context().ordinal()).collect();
        check_distinct(&ordinals)?;
        let streams: Vec<_> = executors.iter().map(|c| c.stream().clone()).collect();
        let comms = Comm::init_all(&streams)?;
        Ok(ShardGroup { ranks: Ranks::Devices { execs: executors, comms: Mutex::new(Some(comms)) } })
    }

    /// `ranks` ranks (1 to 2^31 - 1) on `cuda`'s GPU: the same scans, with
    /// the totals gathered without copies. For a sequence kept in several
    /// buffers on one GPU, and to run the sharded algorithm where there is
    /// one GPU.
    pub fn on_one_gpu(cuda: Cuda, ranks: usize) -> Result<ShardGroup> {
        if ranks == 0 || ranks > i32::MAX as usize {
            return Err(Error::Other(format!("a shard group has 1 to 2^31 - 1 ranks, not {ranks}")));
        }
        Ok(ShardGroup { ranks: Ranks::OneGpu { cuda: Box::new(cuda), count: ranks } })
    }

    /// The number of ranks (and of shards every call takes).
    pub fn world_size(&self) -> usize {
        match &self.ranks {
            Ranks::Devices { execs, .. } => execs.len(),
            Ranks::OneGpu { count, .. } => *count,
        }
    }

    /// Rank `rank`'s executor (to upload, allocate or scan on its device).
    pub fn rank(&self, rank: usize) -> Option<&Cuda> {
        match &self.ranks {
            Ranks::Devices { execs, .. } => execs.get(rank),
            Ranks::OneGpu { cuda, count } => (rank < *count).then_some(cuda),
        }
    }

    fn exec(&self, rank: usize) -> &Cuda {
        match &self.ranks {
            Ranks::Devices { execs, .. } => &execs[rank],
            Ranks::OneGpu { cuda, .. } => cuda,
        }
    }

    /// The even split of `len` items: rank r's range, the first `len %
    /// world` ranks one item longer.
    pub fn split(&self, len: usize) -> Vec<std::ops::Range<usize>> {
        even_split(len, self.world_size())
    }

    /// `items` split evenly ([`split`](ShardGroup::split)), shard r uploaded
    /// to rank r's device.
    pub fn scatter<T: Copy>(&self, items: &[T]) -> Result<Vec<DeviceBuffer<T>>> {
        self.split(items.len()).into_iter().enumerate().map(|(r, range)| self.exec(r).upload(&items[range])).collect()
    }

    /// The shards, downloaded and concatenated in rank order.
    pub fn gather<T: Copy>(&self, shards: &[DeviceBuffer<T>]) -> Result<Vec<T>> {
        self.check_shards(shards, "shards")?;
        // Each shard straight into its place (staged where large).
        vec_written_by(shards.iter().map(|s| s.len()).sum(), |mut rest| {
            for (r, shard) in shards.iter().enumerate() {
                let (place, tail) = rest.split_at_mut(shard.len());
                self.exec(r).download_uninit(shard, place)?;
                rest = tail;
            }
            Ok(())
        })
    }

    /// Scans `input` split evenly across the ranks, and returns the whole
    /// result: [`scatter`](ShardGroup::scatter),
    /// [`scan_shards`](ShardGroup::scan_shards),
    /// [`gather`](ShardGroup::gather).
    pub fn scan<Op: CudaOp>(&self, input: &[Op::Item], spec: ScanSpec) -> Result<Vec<Op::Item>> {
        let mut shards = self.scatter(input)?;
        self.scan_shards::<Op>(&mut shards, spec)?;
        self.gather(&shards)
    }

    /// Scans the sequence `shards[0]`, `shards[1]`, ... in place, shard r on
    /// rank r's device. Queued on the ranks' streams: returns once the
    /// collective is queued ([`synchronize`](ShardGroup::synchronize) waits).
    pub fn scan_shards<Op: CudaOp>(&self, shards: &mut [DeviceBuffer<Op::Item>], spec: ScanSpec) -> Result<()> {
        self.check_shards(shards, "shards")?;
        let parts = shards
            .iter_mut()
            .enumerate()
            .map(|(r, s)| Part { src: None, dst: s.device_ptr_mut(self.exec(r).stream()), len: s.len() })
            .collect();
        self.scan_parts::<Op>(parts, spec)
    }

    /// Scans the sequence of `inputs` into `outputs` (shard by shard of the
    /// same lengths), leaving the inputs as they were.
    pub fn scan_shards_into<Op: CudaOp>(
        &self,
        inputs: &[DeviceBuffer<Op::Item>],
        outputs: &mut [DeviceBuffer<Op::Item>],
        spec: ScanSpec,
    ) -> Result<()> {
        self.check_shards(inputs, "inputs")?;
        self.check_shards(outputs, "outputs")?;
        for (i, o) in inputs.iter().zip(outputs.iter()) {
            Error::check_lengths(i.len(), o.len())?;
        }
        let parts = inputs
            .iter()
            .zip(outputs.iter_mut())
            .enumerate()
            .map(|(r, (i, o))| {
                let stream = self.exec(r).stream();
                Part { src: Some(i.device_ptr(stream)), dst: o.device_ptr_mut(stream), len: i.len() }
            })
            .collect();
        self.scan_parts::<Op>(parts, spec)
    }

    /// Rows sharded by row: shard r holds whole rows of `row_len` items,
    /// each scanned on its own (no exchange: rows never span ranks).
    pub fn scan_rows_shards<Op: CudaOp>(
        &self,
        shards: &mut [DeviceBuffer<Op::Item>],
        row_len: usize,
        spec: ScanSpec,
    ) -> Result<()> {
        self.check_shards(shards, "shards")?;
        // Every shard is checked before any is scanned: an error leaves them
        // all unchanged.
        for (r, shard) in shards.iter().enumerate() {
            if !shard.is_empty() && (row_len == 0 || shard.len() % row_len != 0) {
                return Err(Error::WrongShape {
                    argument: format!("shards[{r}]"),
                    expected: format!("whole rows of row_len = {row_len} items (row_len > 0)"),
                    found: format!("{} items", shard.len()),
                });
            }
        }
        for (r, shard) in shards.iter_mut().enumerate().filter(|(_, s)| !s.is_empty()) {
            let rows = shard.len() / row_len;
            self.exec(r).scan_rows_device::<Op>(shard, rows, spec)?;
        }
        Ok(())
    }

    /// Waits until every rank's queued work is done.
    pub fn synchronize(&self) -> Result<()> {
        (0..self.world_size()).try_for_each(|r| self.exec(r).synchronize())
    }

    /// `shards` (the argument called `argument`) has one buffer per rank,
    /// each of its rank's context.
    fn check_shards<T: Copy>(&self, shards: &[DeviceBuffer<T>], argument: &str) -> Result<()> {
        let world = self.world_size();
        if shards.len() != world {
            return Err(Error::WrongShape {
                argument: argument.into(),
                expected: format!("{world} buffers, one per rank"),
                found: format!("{} buffers", shards.len()),
            });
        }
        shards.iter().enumerate().try_for_each(|(r, s)| self.exec(r).check_buffer(s, &format!("{argument}[{r}]")))
    }

    fn scan_parts<Op: CudaOp>(&self, parts: Vec<Part>, spec: ScanSpec) -> Result<()> {
        let world = self.world_size();
        let item = std::mem::size_of::<Op::Item>();
        match &self.ranks {
            Ranks::OneGpu { cuda, .. } => {
                let prepared = cuda.prepare_shard::<Op>(world)?;
                // One stream: every total is in place before any carry reads it.
                for (rank, part) in parts.iter().enumerate() {
                    cuda.shard_before::<Op>(&prepared, *part, spec, Role { rank, world })?;
                }
                for (rank, part) in parts.iter().enumerate() {
                    cuda.shard_after::<Op>(&prepared, *part, spec, Role { rank, world })?;
                }
                Ok(())
            }
            Ranks::Devices { execs, comms } => {
                let mut slot = lock(comms);
                let Some(comms) = slot.as_mut() else {
                    return Err(Error::Other(
                        "this shard group's communicators were aborted after a failed collective; make a new group"
                            .into(),
                    ));
                };
                let prepared = execs.iter().map(|cuda| cuda.prepare_shard::<Op>(world)).collect::<Result<Vec<_>>>()?;
                for (rank, ((cuda, part), p)) in execs.iter().zip(&parts).zip(&prepared).enumerate() {
                    cuda.shard_before::<Op>(p, *part, spec, Role { rank, world })?;
                }
                let gathered = nccl::group(|| {
                    for (rank, comm) in comms.iter_mut().enumerate() {
                        // SAFETY: rank r's totals hold `world` items on its
                        // device; the scratch outlives the queued gather (it
                        // is freed in stream order).
                        unsafe { comm.all_gather_in_place(prepared[rank].slots.totals, item, rank)? };
                    }
                    Ok(())
                });
                if let Err(e) = gathered {
                    // Gathers queued before the failure wait for the others:
                    // abort, so that those streams go on.
                    slot.take().into_iter().flatten().for_each(Comm::abort);
                    return Err(e);
                }
                for (rank, ((cuda, part), p)) in execs.iter().zip(&parts).zip(&prepared).enumerate() {
                    cuda.shard_after::<Op>(p, *part, spec, Role { rank, world })?;
                }
                Ok(())
            }
        }
    }
}

/// Distinct device ordinals, at least one.
fn check_distinct(ordinals: &[usize]) -> Result<()> {
    if ordinals.is_empty() {
        return Err(Error::Other("a shard group needs at least one device".into()));
    }
    for (i, o) in ordinals.iter().enumerate() {
        if ordinals[..i].contains(o) {
            return Err(Error::Other(format!(
                "CUDA device {o} is listed twice: NCCL takes one rank per device (use ShardGroup::on_one_gpu for \
                 several ranks on one GPU)"
            )));
        }
    }
    Ok(())
}

/// One rank of a group of processes, one process per rank (each with its
/// GPU), joined through an [`NcclId`] that rank 0 makes and hands to the
/// others (a file, an environment variable: see `examples/sharded.rs`).
/// Every rank calls the same scans (the same operator and spec) in the same
/// order, each with its shard: the gather pairs the ranks' calls in order, and
/// NCCL has no timeout, so a rank that fails or skips a call before the
/// gather leaves the others waiting in it (end those processes). Calls from
/// several threads on one rank take turns.
///
/// ```no_run
/// # fn main() -> scan_core::Result<()> {
/// use scan_core::{ops::Add, ScanSpec};
/// use scan_cuda::{Cuda, NcclId, NcclRank};
/// let (rank, world) = (0, 2);
/// let id: NcclId = std::env::var("SCAN_NCCL_ID").unwrap().parse()?; // made by rank 0 with NcclId::new()
/// let me = NcclRank::join(Cuda::with_device(rank)?, rank, world, &id)?;
/// let mut shard = me.cuda().upload(&[1u32, 2, 3])?;
/// me.scan_shard::<Add<u32>>(&mut shard, ScanSpec::inclusive())?;
/// # Ok(()) }
/// ```
pub struct NcclRank {
    cuda: Cuda,
    comm: Mutex<Comm>,
    rank: usize,
    world: usize,
}

impl std::fmt::Debug for NcclRank {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NcclRank({} of {}, {:?})", self.rank, self.world, self.cuda)
    }
}

impl NcclRank {
    /// Joins the group of `id` as rank `rank` of `world`, on `cuda`'s GPU.
    /// Blocks until every rank has joined (`ncclCommInitRank`).
    pub fn join(cuda: Cuda, rank: usize, world: usize, id: &NcclId) -> Result<NcclRank> {
        if rank >= world {
            return Err(Error::Other(format!("rank {rank} is not below the world size {world}")));
        }
        let comm = Comm::join(cuda.stream(), rank, world, id)?;
        Ok(NcclRank { cuda, comm: Mutex::new(comm), rank, world })
    }

    /// This rank's executor.
    pub fn cuda(&self) -> &Cuda {
        &self.cuda
    }

    /// This rank's index.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn world_size(&self) -> usize {
        self.world
    }

    /// This rank's part of scanning the sequence of every rank's shard in
    /// rank order, in place (a collective: every rank calls it). Queued on
    /// the executor's stream.
    pub fn scan_shard<Op: CudaOp>(&self, shard: &mut DeviceBuffer<Op::Item>, spec: ScanSpec) -> Result<()> {
        self.cuda.check_buffer(shard, "shard")?;
        let part = Part { src: None, dst: shard.device_ptr_mut(self.cuda.stream()), len: shard.len() };
        self.scan_part::<Op>(part, spec)
    }

    /// [`scan_shard`](NcclRank::scan_shard) from `input` into `output` (same
    /// length), leaving `input` as it was.
    pub fn scan_shard_into<Op: CudaOp>(
        &self,
        input: &DeviceBuffer<Op::Item>,
        output: &mut DeviceBuffer<Op::Item>,
        spec: ScanSpec,
    ) -> Result<()> {
        self.cuda.check_buffer(input, "input")?;
        self.cuda.check_buffer(output, "output")?;
        Error::check_lengths(input.len(), output.len())?;
        let stream = self.cuda.stream();
        let part = Part { src: Some(input.device_ptr(stream)), dst: output.device_ptr_mut(stream), len: input.len() };
        self.scan_part::<Op>(part, spec)
    }

    fn scan_part<Op: CudaOp>(&self, part: Part, spec: ScanSpec) -> Result<()> {
        // One collective at a time: two threads' gathers could otherwise pair
        // up in different orders in different processes.
        let mut comm = lock(&self.comm);
        let item = std::mem::size_of::<Op::Item>();
        let prepared = self.cuda.prepare_shard::<Op>(self.world)?;
        let role = Role { rank: self.rank, world: self.world };
        self.cuda.shard_before::<Op>(&prepared, part, spec, role)?;
        // SAFETY: `totals` holds `world` items on this rank's device, freed
        // in stream order after the gather.
        unsafe { comm.all_gather_in_place(prepared.slots.totals, item, self.rank)? };
        self.cuda.shard_after::<Op>(&prepared, part, spec, role)
    }
}

/// `len` items split into `world` consecutive ranges, the first `len % world`
/// one item longer than the others.
fn even_split(len: usize, world: usize) -> Vec<std::ops::Range<usize>> {
    let (base, extra) = (len / world, len % world);
    let mut start = 0;
    (0..world)
        .map(|r| {
            let end = start + base + usize::from(r < extra);
            let range = start..end;
            start = end;
            range
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_even_split_covers_every_item_once_in_order() {
        assert_eq!(even_split(10, 3), [0..4, 4..7, 7..10]);
        assert_eq!(even_split(2, 4), [0..1, 1..2, 2..2, 2..2]);
        assert_eq!(even_split(0, 2), [0..0, 0..0]);
    }

    #[test]
    fn a_group_without_devices_or_with_one_twice_is_an_error_before_any_device_opens() {
        let twice = ShardGroup::nccl(&[0, 1, 0]).unwrap_err().to_string();
        assert!(twice.contains("device 0 is listed twice"), "{twice}");
        assert!(ShardGroup::nccl(&[]).is_err());
    }
}
