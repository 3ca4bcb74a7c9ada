//! `Device`: run scans on the GPU when CUDA works, on the CPU otherwise.

use std::any::TypeId;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, OnceLock};

use scan_core::maps::CudaMaps;
use scan_core::selective::backward::SsmGrads;
use scan_core::selective::{SelectiveScan, SsmInput, SsmOutput};
use scan_core::{CudaOp, CudaSource, Error, Result, Scan, ScanOp, ScanSpec};
use scan_cpu::{Cpu, SelectiveCheckpoints};
use scan_cuda::cudarc::driver::CudaContext;
use scan_cuda::{Cuda, DeviceSelectiveScan, HostInputs, SelectiveSaved};

/// Where scans run, chosen once; [`Display`](std::fmt::Display) says which
/// and why.
///
/// It takes any [`ScanOp`]: on the CPU every operator runs; on the GPU, an
/// operator with CUDA source (every `#[scan_op]` operator, see
/// [`ScanOp::cuda_source_if_any`]), and any other is an
/// [`Error::NotCuda`].
///
/// ```
/// use scan::{ops::Add, Device, ScanSpec};
/// # fn main() -> scan::Result<()> {
/// let device = Device::cpu();
/// println!("running on {device}");
/// assert_eq!(device.scan::<Add<u32>>(&[1, 2, 3], ScanSpec::inclusive())?, [1, 3, 6]);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Device {
    backend: Backend,
    why: String,
}

#[derive(Debug)]
enum Backend {
    Cuda(Box<Cuda>),
    Cpu(Cpu),
}

/// What [`Device::selective_scan_for_training`] keeps for
/// [`Device::selective_scan_backward_saved`]: the arguments (borrowed), and
/// on a GPU their device copy and the states the forward saved (see
/// `scan::cuda::SelectiveSaved`; about twice `u`'s size at 16 states), on
/// the CPU the states before every 64 steps
/// ([`SelectiveCheckpoints`]; 1/64 of the
/// (batch, dim, L, N) states, up to 8 times that where blocks of rows hold
/// fewer than 8 rows: a block keeps 8 lanes' states; for f32 activations
/// only: with bf16 or f16 ones the CPU's backward recomputes every state).
#[derive(Debug)]
pub struct SavedForward<'a, T = f32> {
    args: SelectiveScan<'a, T>,
    on_device: Option<Box<OnDevice>>,
    on_cpu: Option<SelectiveCheckpoints>,
}

/// A saved forward's device side: the arguments' copy, the saved states,
/// and the CUDA context they live in.
#[derive(Debug)]
struct OnDevice {
    inputs: DeviceSelectiveScan,
    saved: SelectiveSaved,
    context: Arc<CudaContext>,
}

impl<T> SavedForward<'_, T> {
    /// Whether the forward saved states that the backward will reuse
    /// (false where the backward computes them itself).
    pub fn holds_states(&self) -> bool {
        self.on_device.as_ref().is_some_and(|kept| kept.saved.holds_states())
            || self.on_cpu.as_ref().is_some_and(SelectiveCheckpoints::holds_states)
    }
}

impl Device {
    /// CUDA device 0 when a driver, a GPU and NVRTC are all there; the CPU
    /// otherwise (the reason is kept for [`Display`](std::fmt::Display)).
    /// `SCAN_DEVICE=cpu` forces the CPU (spaces around it and case aside);
    /// another value is not understood, and the reason says so.
    ///
    /// ```
    /// use scan::{ops::Add, Device, ScanSpec};
    /// # fn main() -> scan::Result<()> {
    /// let device = Device::auto();
    /// // e.g. "CPU (tiled scan, 2 threads) (CUDA is not available: no CUDA driver library was found ...)"
    /// println!("backend: {device}");
    /// assert_eq!(device.is_cuda(), device.as_cuda().is_some());
    /// if !device.is_cuda() {
    ///     assert!(!device.reason().is_empty()); // why not the GPU
    /// }
    /// assert_eq!(device.scan::<Add<u32>>(&[1, 2, 3], ScanSpec::inclusive())?, [1, 3, 6]);
    /// # Ok(()) }
    /// ```
    pub fn auto() -> Device {
        // A value that is not UTF-8 is not `cpu` either: shown lossily in
        // the reason rather than taken as unset.
        let asked = std::env::var_os("SCAN_DEVICE").map(|v| v.to_string_lossy().into_owned());
        let asked = asked.as_deref().map(str::trim).filter(|v| !v.is_empty());
        if asked.is_some_and(|v| v.eq_ignore_ascii_case("cpu")) {
            return Device { backend: Backend::Cpu(Cpu::new()), why: "SCAN_DEVICE=cpu".into() };
        }
        let ignored =
            asked.map_or(String::new(), |v| format!(" (SCAN_DEVICE={v:?} ignored: only `cpu` is understood)"));
        match Cuda::new() {
            Ok(cuda) => Device { backend: Backend::Cuda(Box::new(cuda)), why: format!("CUDA works{ignored}") },
            Err(e) => Device { backend: Backend::Cpu(Cpu::new()), why: format!("{e}{ignored}") },
        }
    }

    /// The CPU.
    ///
    /// ```
    /// let device = scan::Device::cpu();
    /// assert!(!device.is_cuda() && device.as_cuda().is_none());
    /// assert_eq!(device.reason(), "asked for the CPU");
    /// ```
    pub fn cpu() -> Device {
        Device { backend: Backend::Cpu(Cpu::new()), why: "asked for the CPU".into() }
    }

    /// CUDA device 0, or the error saying why not: without a driver, a GPU
    /// or libnvrtc, [`Error::CudaUnavailable`] with what was looked for and
    /// where.
    ///
    /// ```
    /// use scan::{Device, Error};
    /// match Device::cuda() {
    ///     Ok(device) => assert!(device.is_cuda()),
    ///     Err(Error::CudaUnavailable { reason }) => println!("no GPU: {reason}"),
    ///     Err(other) => panic!("{other}"),
    /// }
    /// ```
    pub fn cuda() -> Result<Device> {
        Ok(Device { backend: Backend::Cuda(Box::new(Cuda::new()?)), why: "asked for CUDA".into() })
    }

    /// True when scans run on a GPU.
    pub fn is_cuda(&self) -> bool {
        matches!(self.backend, Backend::Cuda(_))
    }

    /// The CUDA executor, when scans run on a GPU: for its own calls
    /// (device buffers, staged transfers, timing).
    ///
    /// ```no_run
    /// # fn main() -> scan::Result<()> {
    /// let device = scan::Device::auto();
    /// if let Some(cuda) = device.as_cuda() {
    ///     let on_gpu = cuda.upload(&vec![1.0f32; 1 << 20])?;
    ///     assert_eq!(cuda.download(&on_gpu)?.len(), 1 << 20);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn as_cuda(&self) -> Option<&Cuda> {
        match &self.backend {
            Backend::Cuda(cuda) => Some(cuda),
            Backend::Cpu(_) => None,
        }
    }

    /// Why this device was chosen: the CUDA error that sent
    /// [`Device::auto`] to the CPU, `SCAN_DEVICE=cpu`, or the constructor
    /// asked for.
    ///
    /// ```
    /// let device = scan::Device::auto();
    /// println!("scans run on {} because: {}", if device.is_cuda() { "a GPU" } else { "the CPU" }, device.reason());
    /// ```
    pub fn reason(&self) -> &str {
        &self.why
    }

    /// Scans `input` into a new vector; `input` is left as it was. Errors:
    /// [`Error::TooLarge`] where the output cannot be
    /// allocated, and on a GPU an operator without generated CUDA
    /// ([`Error::NotCuda`]: a hand-written `ScanOp`
    /// rather than a built-in or `#[scan_op]` one).
    ///
    /// ```
    /// use scan::{ops::{Add, Max}, Device, ScanSpec};
    /// # fn main() -> scan::Result<()> {
    /// let device = Device::auto(); // the GPU where there is one, else the CPU
    /// let x = [3, 1, 7, 0, 4, 1, 6, 3];
    /// assert_eq!(device.scan::<Add<i32>>(&x, ScanSpec::inclusive())?, [3, 4, 11, 11, 15, 16, 22, 25]);
    /// assert_eq!(device.scan::<Add<i32>>(&x, ScanSpec::exclusive())?, [0, 3, 4, 11, 11, 15, 16, 22]);
    /// assert_eq!(device.scan::<Max<i32>>(&x, ScanSpec::inclusive().reversed())?, [7, 7, 7, 6, 6, 6, 6, 3]);
    /// # Ok(()) }
    /// ```
    pub fn scan<Op: ScanOp>(&self, input: &[Op::Item], spec: ScanSpec) -> Result<Vec<Op::Item>> {
        match &self.backend {
            Backend::Cuda(cuda) => {
                has_cuda::<Op>()?;
                cuda.scan::<OnGpu<Op>>(input, spec)
            }
            Backend::Cpu(cpu) => cpu.scan::<Op>(input, spec),
        }
    }

    /// Scans `input` into `output`, which must have the same length
    /// ([`Error::LengthMismatch`] otherwise,
    /// and `output` is left as it was).
    ///
    /// ```
    /// use scan::{ops::Add, Device, Error, ScanSpec};
    /// # fn main() -> scan::Result<()> {
    /// let device = Device::cpu();
    /// let mut out = [0u64; 4];
    /// device.scan_into::<Add<u64>>(&[1, 2, 3, 4], &mut out, ScanSpec::inclusive())?;
    /// assert_eq!(out, [1, 3, 6, 10]);
    /// let mut short = [0u64; 3];
    /// let e = device.scan_into::<Add<u64>>(&[1, 2, 3, 4], &mut short, ScanSpec::inclusive());
    /// assert!(matches!(e, Err(Error::LengthMismatch { .. })));
    /// # Ok(()) }
    /// ```
    pub fn scan_into<Op: ScanOp>(&self, input: &[Op::Item], output: &mut [Op::Item], spec: ScanSpec) -> Result<()> {
        match &self.backend {
            Backend::Cuda(cuda) => {
                has_cuda::<Op>()?;
                cuda.scan_into::<OnGpu<Op>>(input, output, spec)
            }
            Backend::Cpu(cpu) => cpu.scan_into::<Op>(input, output, spec),
        }
    }

    /// Scans `data` in place.
    ///
    /// ```
    /// use scan::{ops::Add, Device, ScanSpec};
    /// # fn main() -> scan::Result<()> {
    /// let mut data = [1.0f32, 2.0, 3.0, 4.0];
    /// Device::cpu().scan_in_place::<Add<f32>>(&mut data, ScanSpec::inclusive().reversed())?;
    /// assert_eq!(data, [10.0, 9.0, 7.0, 4.0]);
    /// # Ok(()) }
    /// ```
    pub fn scan_in_place<Op: ScanOp>(&self, data: &mut [Op::Item], spec: ScanSpec) -> Result<()> {
        match &self.backend {
            Backend::Cuda(cuda) => {
                has_cuda::<Op>()?;
                cuda.scan_in_place::<OnGpu<Op>>(data, spec)
            }
            Backend::Cpu(cpu) => cpu.scan_in_place::<Op>(data, spec),
        }
    }

    /// Scans each row of a row-major `[rows, input.len() / rows]` buffer from
    /// `input` into `output` (same length). Errors: [`Error::LengthMismatch`],
    /// and [`Error::BadShape`] when `rows` is 0 or does
    /// not divide the length.
    ///
    /// ```
    /// use scan::{ops::Add, Device, ScanSpec};
    /// # fn main() -> scan::Result<()> {
    /// let mut out = [0; 6];
    /// Device::cpu().scan_rows::<Add<i32>>(&[1, 2, 3, 4, 5, 6], &mut out, 2, ScanSpec::inclusive())?;
    /// assert_eq!(out, [1, 3, 6, 4, 9, 15]);
    /// # Ok(()) }
    /// ```
    pub fn scan_rows<Op: ScanOp>(
        &self,
        input: &[Op::Item],
        output: &mut [Op::Item],
        rows: usize,
        spec: ScanSpec,
    ) -> Result<()> {
        match &self.backend {
            Backend::Cuda(cuda) => {
                has_cuda::<Op>()?;
                cuda.scan_rows::<OnGpu<Op>>(input, output, rows, spec)
            }
            Backend::Cpu(cpu) => cpu.scan_rows::<Op>(input, output, rows, spec),
        }
    }

    /// Scans each row of a row-major `[rows, data.len() / rows]` buffer in
    /// place. [`Error::BadShape`] when `rows` is 0 or
    /// does not divide the length.
    ///
    /// ```
    /// use scan::{ops::Add, Device, ScanSpec};
    /// # fn main() -> scan::Result<()> {
    /// let mut x = [1, 2, 3, 4, 5, 6];
    /// Device::cpu().scan_rows_in_place::<Add<i32>>(&mut x, 3, ScanSpec::exclusive())?;
    /// assert_eq!(x, [0, 1, 0, 3, 0, 5]);
    /// # Ok(()) }
    /// ```
    pub fn scan_rows_in_place<Op: ScanOp>(&self, data: &mut [Op::Item], rows: usize, spec: ScanSpec) -> Result<()> {
        match &self.backend {
            Backend::Cuda(cuda) => {
                has_cuda::<Op>()?;
                cuda.scan_rows_in_place::<OnGpu<Op>>(data, rows, spec)
            }
            Backend::Cpu(cpu) => cpu.scan_rows_in_place::<Op>(data, rows, spec),
        }
    }

    /// Scans each segment of `input` on its own, into `output` (same
    /// length); `starts` as for [`Cpu::scan_segments`]. On a GPU the default
    /// single-pass algorithm scans all the segments in one launch (Blelloch's
    /// scans them one by one).
    ///
    /// ```
    /// use scan::{ops::Add, Device, ScanSpec};
    /// # fn main() -> scan::Result<()> {
    /// let mut out = [0; 5];
    /// Device::cpu().scan_segments::<Add<i32>>(&[1, 2, 3, 4, 5], &mut out, &[0, 2], ScanSpec::inclusive())?;
    /// assert_eq!(out, [1, 3, 3, 7, 12]);
    /// # Ok(()) }
    /// ```
    pub fn scan_segments<Op: ScanOp>(
        &self,
        input: &[Op::Item],
        output: &mut [Op::Item],
        starts: &[usize],
        spec: ScanSpec,
    ) -> Result<()> {
        match &self.backend {
            Backend::Cuda(cuda) => {
                has_cuda::<Op>()?;
                Scan::<OnGpu<Op>>::scan_segments(cuda.as_ref(), input, output, starts, spec)
            }
            Backend::Cpu(cpu) => cpu.scan_segments::<Op>(input, output, starts, spec),
        }
    }

    /// Scans `rows` rows of `row_len` items, `stride` items apart, as
    /// [`Cpu::scan_rows_strided`]. On a GPU the default single-pass
    /// algorithm scans all the rows in one launch (Blelloch's, one by one).
    /// The items between rows are left as they were in `output`.
    ///
    /// ```
    /// use scan::{ops::Add, Device, ScanSpec};
    /// # fn main() -> scan::Result<()> {
    /// // Two rows of 2 items, 3 apart: the third item of each is padding.
    /// let input = [1, 2, 99, 3, 4];
    /// let mut out = [0; 5];
    /// Device::cpu().scan_rows_strided::<Add<i32>>(&input, &mut out, 2, 2, 3, ScanSpec::inclusive())?;
    /// assert_eq!(out, [1, 3, 0, 3, 7]);
    /// # Ok(()) }
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
        match &self.backend {
            Backend::Cuda(cuda) => {
                has_cuda::<Op>()?;
                Scan::<OnGpu<Op>>::scan_rows_strided(cuda.as_ref(), input, output, rows, row_len, stride, spec)
            }
            Backend::Cpu(cpu) => cpu.scan_rows_strided::<Op>(input, output, rows, row_len, stride, spec),
        }
    }

    /// [`Device::scan_segments`] in place.
    ///
    /// ```
    /// use scan::{ops::Add, Device, ScanSpec};
    /// # fn main() -> scan::Result<()> {
    /// let mut data = [1, 2, 3, 4, 5];
    /// Device::cpu().scan_segments_in_place::<Add<i32>>(&mut data, &[0, 3], ScanSpec::exclusive())?;
    /// assert_eq!(data, [0, 1, 3, 0, 4]);
    /// # Ok(()) }
    /// ```
    pub fn scan_segments_in_place<Op: ScanOp>(
        &self,
        data: &mut [Op::Item],
        starts: &[usize],
        spec: ScanSpec,
    ) -> Result<()> {
        match &self.backend {
            Backend::Cuda(cuda) => {
                has_cuda::<Op>()?;
                Scan::<OnGpu<Op>>::scan_segments_in_place(cuda.as_ref(), data, starts, spec)
            }
            Backend::Cpu(cpu) => cpu.scan_segments_in_place::<Op>(data, starts, spec),
        }
    }

    /// Scans each segment on its own, a segment starting at every item whose
    /// head flag is set (and at item 0); as [`Cpu::scan_flagged`].
    ///
    /// ```
    /// use scan::{ops::Add, Device, ScanSpec};
    /// # fn main() -> scan::Result<()> {
    /// let mut out = [0; 5];
    /// let heads = [false, false, true, false, true];
    /// Device::cpu().scan_flagged::<Add<i32>>(&[1, 2, 3, 4, 5], &mut out, &heads, ScanSpec::inclusive())?;
    /// assert_eq!(out, [1, 3, 3, 7, 5]);
    /// # Ok(()) }
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

    /// [`Device::scan_flagged`] in place.
    ///
    /// ```
    /// use scan::{ops::Max, Device, ScanSpec};
    /// # fn main() -> scan::Result<()> {
    /// let mut data = [4, 1, 9, 2, 3];
    /// Device::cpu().scan_flagged_in_place::<Max<i32>>(&mut data, &[true, false, false, true, false], ScanSpec::inclusive())?;
    /// assert_eq!(data, [4, 4, 9, 2, 3]);
    /// # Ok(()) }
    /// ```
    pub fn scan_flagged_in_place<Op: ScanOp>(
        &self,
        data: &mut [Op::Item],
        heads: &[bool],
        spec: ScanSpec,
    ) -> Result<()> {
        Scan::<Op>::scan_flagged_in_place(self, data, heads, spec)
    }
}

impl Device {
    /// Mamba's selective scan ([`selective`](crate::selective) has the
    /// definition and the argument layouts): on the GPU when this device is
    /// one (`Cuda::selective_scan`, one kernel launch), else on the CPU
    /// (`Cpu::selective_scan`). bf16 or f16 activations (`T`) are read into
    /// f32 exactly; the GPU kernel reads f32, so there they are uploaded at
    /// their own width and widened on the device. A wrong shape is an
    /// [`Error::WrongShape`] naming the argument.
    ///
    /// ```
    /// use scan::selective::{Projection, SelectiveScan, SsmShape};
    /// # fn main() -> scan::Result<()> {
    /// let shape = SsmShape { batch: 1, dim: 1, len: 2, state: 1 };
    /// let b = Projection::Fixed(&[1.0]);
    /// let args = SelectiveScan::new(shape, &[1.0, 1.0], &[1.0, 1.0], &[0.0], b, b);
    /// // A = 0 keeps the state: x = 1, then 2.
    /// assert_eq!(scan::Device::cpu().selective_scan(&args)?.out, [1.0, 2.0]);
    /// # Ok(()) }
    /// ```
    pub fn selective_scan<T: SsmInput>(&self, args: &SelectiveScan<'_, T>) -> Result<SsmOutput> {
        match &self.backend {
            Backend::Cuda(cuda) => cuda.selective_scan(args),
            Backend::Cpu(cpu) => cpu.selective_scan(args),
        }
    }

    /// [`Device::selective_scan`] into the vectors of `output`, resized to
    /// the results' lengths: on a GPU (`Cuda::selective_scan_into`) the
    /// results land in host memory written before, which a loop reusing one
    /// `output` step after step gets faster than new vectors; on the CPU the
    /// same as assigning [`Device::selective_scan`]'s result.
    ///
    /// ```
    /// use scan::selective::{Projection, SelectiveScan, SsmOutput, SsmShape};
    /// # fn main() -> scan::Result<()> {
    /// let device = scan::Device::cpu();
    /// let shape = SsmShape { batch: 1, dim: 1, len: 2, state: 1 };
    /// let b = Projection::Fixed(&[1.0]);
    /// let mut output = SsmOutput { out: Vec::new(), last_state: None };
    /// for step in 0..3 {
    ///     let u = [step as f32, 1.0];
    ///     let args = SelectiveScan::new(shape, &u, &[1.0, 1.0], &[0.0], b, b);
    ///     device.selective_scan_into(&args, &mut output)?;
    ///     assert_eq!(output.out, [step as f32, step as f32 + 1.0]);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn selective_scan_into<T: SsmInput>(&self, args: &SelectiveScan<'_, T>, output: &mut SsmOutput) -> Result<()> {
        match &self.backend {
            Backend::Cuda(cuda) => cuda.selective_scan_into(args, output),
            Backend::Cpu(cpu) => {
                *output = cpu.selective_scan(args)?;
                Ok(())
            }
        }
    }

    /// The backward pass of [`Device::selective_scan`] (mamba_ssm's
    /// `selective_scan_bwd`; `scan::selective::backward` has the formulas):
    /// given `dout` = dL/d`out`, the gradients of every argument, the
    /// optional ones where the argument is given. On a GPU,
    /// `Cuda::selective_scan_backward` (two or three kernels, then the
    /// partial sums; states recomputed, every sum in a fixed order: bitwise
    /// the same from run to run) for a
    /// state size N up to `scan::cuda::SELECTIVE_BACKWARD_MAX_STATE`, and the
    /// CPU's backward past it; on the CPU, `Cpu::selective_scan_backward`
    /// (in f32; `scan::selective::backward::reference_backward` is the f64
    /// reference). bf16 and f16 activations are read exactly as the forward
    /// reads them (widened on the device where the GPU runs the backward,
    /// on the host where the CPU does);
    /// the gradients are f32 whatever their type. Errors: the argument
    /// checks of the forward, and [`Error::WrongShape`] for `dout`.
    ///
    /// ```
    /// use scan::selective::{Projection, SelectiveScan, SsmShape};
    /// # fn main() -> scan::Result<()> {
    /// // One step, N = 1: out = C dt B u with dt = 0.5, B = C = 1: dL/du = 0.5.
    /// let shape = SsmShape { batch: 1, dim: 1, len: 1, state: 1 };
    /// let one = Projection::Fixed(&[1.0]);
    /// let args = SelectiveScan::new(shape, &[2.0], &[0.5], &[-1.0], one, one);
    /// let g = scan::Device::cpu().selective_scan_backward(&args, &[1.0])?;
    /// assert_eq!(g.du, [0.5]);
    /// # Ok(()) }
    /// ```
    pub fn selective_scan_backward<T: SsmInput>(&self, args: &SelectiveScan<'_, T>, dout: &[f32]) -> Result<SsmGrads> {
        match &self.backend {
            Backend::Cuda(cuda) if args.shape.state <= scan_cuda::SELECTIVE_BACKWARD_MAX_STATE => {
                cuda.selective_scan_backward(args, dout)
            }
            Backend::Cuda(_) => cpu_backward(&Cpu::new(), args, dout),
            Backend::Cpu(cpu) => cpu_backward(cpu, args, dout),
        }
    }

    /// The forward of a training step: [`Device::selective_scan`]'s output,
    /// and what [`Device::selective_scan_backward_saved`] needs to follow
    /// it. On a GPU (state size N up to
    /// `scan::cuda::SELECTIVE_BACKWARD_MAX_STATE`) that is the arguments
    /// already on the device and the states the forward saved as it ran
    /// (`Cuda::run_selective_saving`), so that the backward uploads only
    /// `dout` and recomputes no states where they were saved; the output is
    /// then the one `Cuda::run_selective_saving` documents (the forward's
    /// tile kernel, where the backward runs by tiles). On the CPU it is
    /// `Cpu::selective_scan_saving`: for f32 activations the states before
    /// every 64 steps are kept ([`SelectiveCheckpoints`]; none where the
    /// rows are cut into ranges; none for bf16/f16, whose backward
    /// recomputes them), and the backward, `Cpu::selective_scan_backward_saved`,
    /// gives [`Device::selective_scan_backward`]'s gradients bit for bit. On
    /// a GPU past that N it keeps the arguments only, and the backward is
    /// [`Device::selective_scan_backward`]'s.
    ///
    /// The saved forward borrows `args`' arrays, so they cannot change
    /// before the backward.
    ///
    /// ```
    /// use scan::selective::{Projection, SelectiveScan, SsmShape};
    /// # fn main() -> scan::Result<()> {
    /// let device = scan::Device::cpu();
    /// let shape = SsmShape { batch: 1, dim: 1, len: 1, state: 1 };
    /// let one = Projection::Fixed(&[1.0]);
    /// let args = SelectiveScan::new(shape, &[2.0], &[0.5], &[-1.0], one, one);
    /// let (forward, saved) = device.selective_scan_for_training(&args)?;
    /// assert_eq!(forward.out, [1.0]); // C dt B u = 0.5 x 2
    /// assert!(saved.holds_states()); // the CPU kept the states before every 64 steps
    /// let grads = device.selective_scan_backward_saved(&saved, &[1.0])?;
    /// assert_eq!(grads.du, [0.5]);
    /// # Ok(()) }
    /// ```
    pub fn selective_scan_for_training<'a, T: SsmInput>(
        &self,
        args: &SelectiveScan<'a, T>,
    ) -> Result<(SsmOutput, SavedForward<'a, T>)> {
        if let Backend::Cuda(cuda) = &self.backend {
            if args.shape.state <= scan_cuda::SELECTIVE_BACKWARD_MAX_STATE {
                let mut inputs = cuda.upload_selective(args)?;
                let saved = cuda.run_selective_saving(&mut inputs)?;
                let out = cuda.download_selective(&inputs)?;
                let on_device = OnDevice { inputs, saved, context: cuda.context().clone() };
                return Ok((out, SavedForward { args: *args, on_device: Some(Box::new(on_device)), on_cpu: None }));
            }
        }
        if let (Backend::Cpu(cpu), Some(f32_args)) = (&self.backend, args.as_f32()) {
            let (out, kept) = cpu.selective_scan_saving(&f32_args)?;
            return Ok((out, SavedForward { args: *args, on_device: None, on_cpu: Some(kept) }));
        }
        Ok((self.selective_scan(args)?, SavedForward { args: *args, on_device: None, on_cpu: None }))
    }

    /// The backward of a training step after
    /// [`Device::selective_scan_for_training`], on this device: the same
    /// gradients as [`Device::selective_scan_backward`] of the same
    /// arguments (on a GPU bit for bit: the saved states are the ones the
    /// backward would compute). A `saved` from another device works too:
    /// the backward then starts from the arguments it borrows. Errors:
    /// [`Error::WrongShape`] for `dout`, and those
    /// of the backward on this device.
    pub fn selective_scan_backward_saved<T: SsmInput>(
        &self,
        saved: &SavedForward<'_, T>,
        dout: &[f32],
    ) -> Result<SsmGrads> {
        match (&self.backend, &saved.on_device, &saved.on_cpu, saved.args.as_f32()) {
            // Device memory of this executor's context only.
            (Backend::Cuda(cuda), Some(kept), _, _) if Arc::ptr_eq(&kept.context, cuda.context()) => {
                // (The backward checks dout's length against the shape.)
                let dout = cuda.upload(dout)?;
                cuda.download_grads(&cuda.run_selective_backward_saved(&kept.inputs, &dout, &kept.saved)?)
            }
            // (States are kept on the CPU for f32 arguments only.)
            (Backend::Cpu(cpu), _, Some(kept), Some(args)) => cpu.selective_scan_backward_saved(&args, kept, dout),
            _ => self.selective_scan_backward(&saved.args, dout),
        }
    }

    /// Scans through the fused maps `M` (`scan::maps`): item `i` is
    /// `M::lift` of item `i` of each input array (one slice, or a tuple of
    /// two or three), and `output[i]` is `M::project` of scanned item `i`,
    /// with nothing in between stored. Errors: [`Error::WrongShape`] when
    /// the input arrays differ in length, [`Error::LengthMismatch`] when
    /// `output` differs from them; on the GPU,
    /// [`Error::Unsupported`] when the operator has
    /// no single-pass kernels.
    ///
    /// ```
    /// use scan::maps::Recurrence;
    /// use scan::{ops::LinearRecurrence, Device, ScanSpec};
    /// # fn main() -> scan::Result<()> {
    /// let (a, b) = ([0.5f32; 3], [1.0f32; 3]);
    /// let mut h = [0.0f32; 3];
    /// Device::auto().scan_mapped::<LinearRecurrence<f32>, Recurrence, _>((&a[..], &b[..]), &mut h, ScanSpec::inclusive())?;
    /// assert_eq!(h, [1.0, 1.5, 1.75]);
    /// # Ok(()) }
    /// ```
    pub fn scan_mapped<Op: CudaOp, M: CudaMaps<Op>, I: HostInputs<Item = M::Input>>(
        &self,
        inputs: I,
        output: &mut [M::Output],
        spec: ScanSpec,
    ) -> Result<()> {
        match &self.backend {
            Backend::Cuda(cuda) => cuda.scan_mapped::<Op, M, I>(inputs, output, spec),
            Backend::Cpu(cpu) => cpu.scan_mapped::<Op, M, I>(inputs, output, spec),
        }
    }

    /// [`scan_mapped`](Device::scan_mapped) of each row of a row-major
    /// `[rows, len / rows]` layout of the inputs, each row on its own, into
    /// `output` in the same layout. Errors: those of `scan_mapped`, and
    /// [`Error::BadShape`] when `rows` is 0 or does
    /// not divide the length.
    ///
    /// ```
    /// use scan::maps::Recurrence;
    /// use scan::{ops::LinearRecurrence, Device, ScanSpec};
    /// # fn main() -> scan::Result<()> {
    /// let (a, b) = ([0.5f32; 6], [1.0f32; 6]);
    /// let mut h = [0.0f32; 6];
    /// Device::auto().scan_mapped_rows::<LinearRecurrence<f32>, Recurrence, _>((&a[..], &b[..]), &mut h, 2, ScanSpec::inclusive())?;
    /// assert_eq!(h, [1.0, 1.5, 1.75, 1.0, 1.5, 1.75]);
    /// # Ok(()) }
    /// ```
    pub fn scan_mapped_rows<Op: CudaOp, M: CudaMaps<Op>, I: HostInputs<Item = M::Input>>(
        &self,
        inputs: I,
        output: &mut [M::Output],
        rows: usize,
        spec: ScanSpec,
    ) -> Result<()> {
        match &self.backend {
            Backend::Cuda(cuda) => cuda.scan_mapped_rows::<Op, M, I>(inputs, output, rows, spec),
            Backend::Cpu(cpu) => cpu.scan_mapped_rows::<Op, M, I>(inputs, output, rows, spec),
        }
    }

    /// The items of `values` whose flag in `keep` is set, in order (stream
    /// compaction): on the GPU when this device is one (`Cuda::compact`: a
    /// count of each tile's flags, a scan of the counts, a scatter), else on
    /// the CPU (`Cpu::compact`). `values` and `keep` must have the same length.
    ///
    /// ```
    /// # fn main() -> scan::Result<()> {
    /// let kept = scan::Device::auto().compact(&[1.0f32, -2.0, 3.0], &[true, false, true])?;
    /// assert_eq!(kept, [1.0, 3.0]);
    /// # Ok(()) }
    /// ```
    pub fn compact<T: Copy + Send + Sync>(&self, values: &[T], keep: &[bool]) -> Result<Vec<T>> {
        match &self.backend {
            Backend::Cuda(cuda) => cuda.compact(values, keep),
            Backend::Cpu(cpu) => cpu.compact(values, keep),
        }
    }
}

impl<Op: ScanOp> Scan<Op> for Device {
    fn scan_into(&self, input: &[Op::Item], output: &mut [Op::Item], spec: ScanSpec) -> Result<()> {
        Device::scan_into::<Op>(self, input, output, spec)
    }
    fn scan(&self, input: &[Op::Item], spec: ScanSpec) -> Result<Vec<Op::Item>> {
        Device::scan::<Op>(self, input, spec)
    }
    fn scan_in_place(&self, data: &mut [Op::Item], spec: ScanSpec) -> Result<()> {
        Device::scan_in_place::<Op>(self, data, spec)
    }
    fn scan_rows(&self, input: &[Op::Item], output: &mut [Op::Item], rows: usize, spec: ScanSpec) -> Result<()> {
        Device::scan_rows::<Op>(self, input, output, rows, spec)
    }
    fn scan_rows_in_place(&self, data: &mut [Op::Item], rows: usize, spec: ScanSpec) -> Result<()> {
        Device::scan_rows_in_place::<Op>(self, data, rows, spec)
    }
    fn scan_segments(
        &self,
        input: &[Op::Item],
        output: &mut [Op::Item],
        starts: &[usize],
        spec: ScanSpec,
    ) -> Result<()> {
        Device::scan_segments::<Op>(self, input, output, starts, spec)
    }
    fn scan_segments_in_place(&self, data: &mut [Op::Item], starts: &[usize], spec: ScanSpec) -> Result<()> {
        Device::scan_segments_in_place::<Op>(self, data, starts, spec)
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
        Device::scan_rows_strided::<Op>(self, input, output, rows, row_len, stride, spec)
    }
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.backend {
            Backend::Cuda(cuda) => write!(f, "CUDA: {cuda}"),
            Backend::Cpu(cpu) => write!(f, "{cpu} ({})", self.why),
        }
    }
}

/// `Op` as a [`CudaOp`], through [`ScanOp::cuda_source_if_any`]; used only
/// after [`has_cuda`] said yes.
struct OnGpu<Op>(PhantomData<Op>);

impl<Op: ScanOp> ScanOp for OnGpu<Op> {
    type Item = Op::Item;
    fn identity() -> Op::Item {
        Op::identity()
    }
    fn combine(left: Op::Item, right: Op::Item) -> Op::Item {
        Op::combine(left, right)
    }
    fn cuda_source_if_any() -> Option<CudaSource> {
        Op::cuda_source_if_any()
    }
    fn multiplies_narrow_floats() -> bool {
        Op::multiplies_narrow_floats()
    }
}

impl<Op: ScanOp> CudaOp for OnGpu<Op> {
    fn cuda_source() -> CudaSource {
        // Not reached without a source (has_cuda comes first); should it be,
        // NVRTC rejects this stand-in with a message, never a panic.
        Op::cuda_source_if_any().unwrap_or_else(|| CudaSource {
            name: "scan_operator_without_cuda_source".into(),
            code: "#error \"this operator has no CUDA source\"\n".into(),
        })
    }
}

/// `Ok` when `Op` can run on the GPU, else [`Error::NotCuda`]. Asked once
/// per operator type (building the source takes microseconds, a small scan
/// on the GPU a few).
fn has_cuda<Op: ScanOp>() -> Result<()> {
    static KNOWN: OnceLock<Mutex<HashMap<TypeId, bool>>> = OnceLock::new();
    let mut known = KNOWN.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    let has = *known.entry(TypeId::of::<Op>()).or_insert_with(|| Op::cuda_source_if_any().is_some());
    if has {
        Ok(())
    } else {
        Err(Error::NotCuda { op: std::any::type_name::<Op>() })
    }
}

/// The CPU's backward of `args`: bf16 and f16 activations are widened (on
/// the host: the CPU's backward reads f32).
fn cpu_backward<T: SsmInput>(cpu: &Cpu, args: &SelectiveScan<'_, T>, dout: &[f32]) -> Result<SsmGrads> {
    match args.as_f32() {
        Some(args) => cpu.selective_scan_backward(&args, dout),
        None => cpu.selective_scan_backward(&args.widened().args(), dout),
    }
}
