//! Scans through fused maps (`scan_core::maps`) on the GPU: the single-pass
//! kernel lifts each position's item from one to three input arrays as it
//! loads a tile and projects each result as it stores one
//! (kernels/maps.cuh), so nothing in between is stored or moved.
//!
//! One module per (operator, maps, input arrays), built on first use like
//! the rows and segments modules.

use std::any::TypeId;

use cudarc::driver::CudaStream;
use scan_core::maps::{CudaMaps, Inputs};
use scan_core::{reference, CudaOp, CudaType, Error, Result, ScanSpec};

use crate::buffer::DeviceBuffer;
use crate::cuda::Cuda;
use crate::kernels::Family;
use crate::single_pass::Segments;
use crate::source::ModuleSource;

mod sealed {
    pub trait Sealed {}
}

/// The device arrays a mapped scan reads, item `i` of each together: one
/// [`DeviceBuffer`], or a tuple of two or three (owned or borrowed) of one
/// length. The GPU counterpart of `scan_core::maps::Inputs`.
pub trait DeviceInputs: sealed::Sealed {
    /// What the lift reads at one position: `A`, `(A, B)` or `(A, B, C)`.
    type Item: CudaType;
    /// Names the arrays' element types (one module per combination).
    #[doc(hidden)]
    type Key: 'static;
    /// The CUDA types of the arrays, in order.
    #[doc(hidden)]
    fn array_types() -> Vec<String>;
    /// The sizes in bytes of the arrays' elements, in order (the fused
    /// kernels' policy: how many positions a vector holds).
    #[doc(hidden)]
    fn array_sizes() -> Vec<usize>;
    /// The arrays' common length, after checking that each belongs to
    /// `cuda`'s context: [`Error::WrongShape`] names the first array
    /// whose length differs from the first one's.
    #[doc(hidden)]
    fn checked_len(&self, cuda: &Cuda) -> Result<usize>;
    /// The arrays' device addresses, 0 past the last.
    #[doc(hidden)]
    fn addresses(&self, stream: &CudaStream) -> [u64; 3];
}

impl<T: DeviceInputs> sealed::Sealed for &T {}
impl<T: DeviceInputs> DeviceInputs for &T {
    type Item = T::Item;
    type Key = T::Key;
    fn array_types() -> Vec<String> {
        T::array_types()
    }
    fn array_sizes() -> Vec<usize> {
        T::array_sizes()
    }
    fn checked_len(&self, cuda: &Cuda) -> Result<usize> {
        (**self).checked_len(cuda)
    }
    fn addresses(&self, stream: &CudaStream) -> [u64; 3] {
        (**self).addresses(stream)
    }
}

impl<A: CudaType> sealed::Sealed for DeviceBuffer<A> {}
impl<A: CudaType> DeviceInputs for DeviceBuffer<A> {
    type Item = A;
    type Key = (A,);
    fn array_types() -> Vec<String> {
        vec![A::c_name()]
    }
    fn array_sizes() -> Vec<usize> {
        vec![std::mem::size_of::<A>()]
    }
    fn checked_len(&self, cuda: &Cuda) -> Result<usize> {
        cuda.check_buffer(self, "inputs")?;
        Ok(self.len())
    }
    fn addresses(&self, stream: &CudaStream) -> [u64; 3] {
        [self.device_ptr(stream), 0, 0]
    }
}

/// Tuples of buffers, owned or borrowed: `$b` is the buffer type of each
/// element type.
macro_rules! device_tuple {
    ($(($($t:ident $i:tt),+) as $b:ident),+) => {$(
        impl<$($t: CudaType),+> sealed::Sealed for ($(device_tuple!(@buf $b $t),)+) {}
        impl<$($t: CudaType),+> DeviceInputs for ($(device_tuple!(@buf $b $t),)+) {
            type Item = ($($t,)+);
            type Key = ($($t,)+);
            fn array_types() -> Vec<String> {
                vec![$($t::c_name()),+]
            }
            fn array_sizes() -> Vec<usize> {
                vec![$(std::mem::size_of::<$t>()),+]
            }
            fn checked_len(&self, cuda: &Cuda) -> Result<usize> {
                let lens = [$({ cuda.check_buffer(&self.$i, concat!("inputs.", stringify!($i)))?; self.$i.len() }),+];
                for (i, &l) in lens.iter().enumerate().skip(1) {
                    Error::check_one_per(&format!("inputs.{i}"), l, "inputs.0", lens[0])?;
                }
                Ok(lens[0])
            }
            fn addresses(&self, stream: &CudaStream) -> [u64; 3] {
                let mut out = [0; 3];
                $(out[$i] = self.$i.device_ptr(stream);)+
                out
            }
        }
    )+};
    (@buf owned $t:ident) => { DeviceBuffer<$t> };
    (@buf borrowed $t:ident) => { &DeviceBuffer<$t> };
}

device_tuple!(
    (A 0, B 1) as owned,
    (A 0, B 1, C 2) as owned,
    (A 0, B 1) as borrowed,
    (A 0, B 1, C 2) as borrowed
);

/// Host arrays a mapped scan reads (`scan_core::maps::Inputs`) that can be
/// uploaded as [`DeviceInputs`] of the same items.
pub trait HostInputs: Inputs + sealed::Sealed {
    /// The uploaded arrays.
    #[doc(hidden)]
    type Device: DeviceInputs<Item = Self::Item>;
    /// Uploads every array (lengths are checked first).
    #[doc(hidden)]
    fn upload(&self, cuda: &Cuda) -> Result<Self::Device>;
}

impl<A: CudaType + Sync> sealed::Sealed for &[A] {}
impl<A: CudaType + Sync> HostInputs for &[A] {
    type Device = DeviceBuffer<A>;
    fn upload(&self, cuda: &Cuda) -> Result<DeviceBuffer<A>> {
        cuda.upload(self)
    }
}

impl<A: CudaType + Sync, B: CudaType + Sync> sealed::Sealed for (&[A], &[B]) {}
impl<A: CudaType + Sync, B: CudaType + Sync> HostInputs for (&[A], &[B]) {
    type Device = (DeviceBuffer<A>, DeviceBuffer<B>);
    fn upload(&self, cuda: &Cuda) -> Result<Self::Device> {
        self.checked_len()?;
        Ok((cuda.upload(self.0)?, cuda.upload(self.1)?))
    }
}

impl<A: CudaType + Sync, B: CudaType + Sync, C: CudaType + Sync> sealed::Sealed for (&[A], &[B], &[C]) {}
impl<A: CudaType + Sync, B: CudaType + Sync, C: CudaType + Sync> HostInputs for (&[A], &[B], &[C]) {
    type Device = (DeviceBuffer<A>, DeviceBuffer<B>, DeviceBuffer<C>);
    fn upload(&self, cuda: &Cuda) -> Result<Self::Device> {
        self.checked_len()?;
        Ok((cuda.upload(self.0)?, cuda.upload(self.1)?, cuda.upload(self.2)?))
    }
}

impl Cuda {
    /// [`Error::Unsupported`] on an executor that runs Blelloch's algorithm,
    /// whose kernels have no maps: before anything is uploaded or compiled,
    /// and for empty inputs too, so that the answer does not depend on the
    /// length.
    fn check_maps_run(&self) -> Result<()> {
        if self.algorithm() == crate::Algorithm::Blelloch {
            return Err(Error::Unsupported(
                "fused maps run inside the single-pass kernel, and this executor runs Blelloch's algorithm \
                 (Cuda::with_algorithm(Algorithm::SinglePass), the default, runs them)"
                    .into(),
            ));
        }
        Ok(())
    }

    /// Scans through the fused maps `M` on the GPU: item `i` is
    /// `M::lift` of item `i` of each input array, and `output[i]` is
    /// `M::project` of the scanned item `i`, as `scan_core::maps::reference`
    /// defines. The arrays and `output` cross the host link once each; data
    /// already on the device is scanned with
    /// [`scan_mapped_device_into`](Cuda::scan_mapped_device_into).
    ///
    /// ```no_run
    /// # fn main() -> scan_core::Result<()> {
    /// use scan_core::maps::Recurrence;
    /// use scan_core::{ops::LinearRecurrence, ScanSpec};
    /// let cuda = scan_cuda::Cuda::new()?;
    /// let (a, b) = ([0.5f32; 3], [1.0f32; 3]);
    /// let mut h = [0.0f32; 3];
    /// cuda.scan_mapped::<LinearRecurrence<f32>, Recurrence, _>((&a[..], &b[..]), &mut h, ScanSpec::inclusive())?;
    /// assert_eq!(h, [1.0, 1.5, 1.75]);
    /// # Ok(()) }
    /// ```
    ///
    /// Errors: [`Error::WrongShape`] when the input arrays differ in length,
    /// [`Error::LengthMismatch`] when `output` differs from them, and [`Error::Unsupported`] when the operator has no
    /// single-pass kernels (items too large) or the executor runs Blelloch's
    /// algorithm: the maps run inside the single-pass kernel only.
    pub fn scan_mapped<Op: CudaOp, M: CudaMaps<Op>, I: HostInputs<Item = M::Input>>(
        &self,
        inputs: I,
        output: &mut [M::Output],
        spec: ScanSpec,
    ) -> Result<()> {
        let n = inputs.checked_len()?;
        Error::check_lengths(n, output.len())?;
        self.check_maps_run()?;
        if n == 0 {
            return Ok(());
        }
        let device = inputs.upload(self)?;
        // Every item is written by the scan before the download.
        let mut out = self.alloc_unwritten::<M::Output>(n)?;
        self.scan_mapped_device_into::<Op, M, _>(&device, &mut out, spec)?;
        self.download_into(&out, output)
    }

    /// [`scan_mapped`](Cuda::scan_mapped) on device buffers: reads each
    /// input array once and writes every item of `output` once. Queued on
    /// the stream: returns at once (see [`Cuda`] on when failures show).
    pub fn scan_mapped_device_into<Op: CudaOp, M: CudaMaps<Op>, I: DeviceInputs<Item = M::Input>>(
        &self,
        inputs: I,
        output: &mut DeviceBuffer<M::Output>,
        spec: ScanSpec,
    ) -> Result<()> {
        let n = inputs.checked_len(self)?;
        self.check_buffer(output, "output")?;
        Error::check_lengths(n, output.len())?;
        self.check_maps_run()?;
        if n == 0 {
            return Ok(());
        }
        let module = self.mapped_module::<Op, M, I>(Family::Mapped)?;
        let [in0, in1, in2] = inputs.addresses(self.stream());
        let dst = output.device_ptr_mut(self.stream());
        self.single_pass(&module)?.launch(in0, dst, n, Segments::Mapped { in1, in2 }, spec)
    }

    /// [`scan_mapped`](Cuda::scan_mapped) of each row of a row-major
    /// `[rows, len / rows]` layout of the inputs, each row on its own, into
    /// `output` in the same layout, every row in one launch: the fused form
    /// of [`scan_rows`](Cuda::scan_rows), as `scan_core::maps::reference_rows`
    /// defines. The arrays and `output` cross the host link once each; data
    /// already on the device is scanned with
    /// [`scan_mapped_rows_device_into`](Cuda::scan_mapped_rows_device_into).
    ///
    /// ```no_run
    /// # fn main() -> scan_core::Result<()> {
    /// use scan_core::maps::Recurrence;
    /// use scan_core::{ops::LinearRecurrence, ScanSpec};
    /// let cuda = scan_cuda::Cuda::new()?;
    /// let (a, b) = ([0.5f32; 6], [1.0f32; 6]);
    /// let mut h = [0.0f32; 6];
    /// cuda.scan_mapped_rows::<LinearRecurrence<f32>, Recurrence, _>((&a[..], &b[..]), &mut h, 2, ScanSpec::inclusive())?;
    /// assert_eq!(h, [1.0, 1.5, 1.75, 1.0, 1.5, 1.75]);
    /// # Ok(()) }
    /// ```
    ///
    /// Errors: those of [`scan_mapped`](Cuda::scan_mapped), and
    /// [`Error::BadShape`] when `rows` is 0 or does not divide the length.
    pub fn scan_mapped_rows<Op: CudaOp, M: CudaMaps<Op>, I: HostInputs<Item = M::Input>>(
        &self,
        inputs: I,
        output: &mut [M::Output],
        rows: usize,
        spec: ScanSpec,
    ) -> Result<()> {
        let n = inputs.checked_len()?;
        Error::check_lengths(n, output.len())?;
        reference::row_len(n, rows)?;
        self.check_maps_run()?;
        if n == 0 {
            return Ok(());
        }
        let device = inputs.upload(self)?;
        // Every item is written by the scan before the download.
        let mut out = self.alloc_unwritten::<M::Output>(n)?;
        self.scan_mapped_rows_device_into::<Op, M, _>(&device, &mut out, rows, spec)?;
        self.download_into(&out, output)
    }

    /// [`scan_mapped_rows`](Cuda::scan_mapped_rows) on device buffers, in
    /// one launch: consecutive rows of whole tiles of the fused kernels run
    /// the plain code path, each row's first tile starting afresh
    /// (kernels/heads.cuh, `TileRows`); other rows are segments of the
    /// scan (`RowHeads`). Queued on the stream.
    pub fn scan_mapped_rows_device_into<Op: CudaOp, M: CudaMaps<Op>, I: DeviceInputs<Item = M::Input>>(
        &self,
        inputs: I,
        output: &mut DeviceBuffer<M::Output>,
        rows: usize,
        spec: ScanSpec,
    ) -> Result<()> {
        let n = inputs.checked_len(self)?;
        self.check_buffer(output, "output")?;
        Error::check_lengths(n, output.len())?;
        let row_len = reference::row_len(n, rows)?;
        self.check_maps_run()?;
        if n == 0 {
            return Ok(());
        }
        if rows == 1 {
            return self.scan_mapped_device_into::<Op, M, I>(inputs, output, spec);
        }
        // Rows of whole tiles (of the rows-of-tiles kernel, whose policy is
        // the plain mapped kernel's) take the plain path; other rows are
        // segments. The policy is computed, not the module built, to choose.
        let tile_rows = ModuleSource::mapped_policy::<Op, M>(
            self.capability(),
            self.tuning(),
            &I::array_sizes(),
            Family::MappedTileRows,
        )?
        .is_some_and(|p| row_len % p.tile() == 0);
        let family = if tile_rows { Family::MappedTileRows } else { Family::MappedRows };
        let module = self.mapped_module::<Op, M, I>(family)?;
        let [in0, in1, in2] = inputs.addresses(self.stream());
        let dst = output.device_ptr_mut(self.stream());
        let row_len = row_len as u64;
        let segments = if tile_rows {
            Segments::MappedTileRows { in1, in2, row_len }
        } else {
            Segments::MappedRows { in1, in2, row_len }
        };
        self.single_pass(&module)?.launch(in0, dst, n, segments, spec)
    }

    /// The module of `Op` through the maps `M` from the arrays `I`, of
    /// `family` (`Mapped`, `MappedRows` or `MappedTileRows`), compiled on first use;
    /// [`Error::Unsupported`] when its scans cannot run the single-pass
    /// kernel.
    fn mapped_module<Op: CudaOp, M: CudaMaps<Op>, I: DeviceInputs<Item = M::Input>>(
        &self,
        family: Family,
    ) -> Result<std::sync::Arc<crate::module::Module>> {
        let (arrays, sizes) = (I::array_types(), I::array_sizes());
        let id = (TypeId::of::<(Op, M, I::Key)>(), family);
        let module = self.module_keyed(id, || {
            ModuleSource::mapped_of::<Op, M>(self.capability(), self.tuning(), &arrays, &sizes, family)
        })?;
        if let Err(why) = module.plan(self.algorithm()) {
            return Err(Error::Unsupported(format!(
                "fused maps run inside the single-pass kernel, and this scan cannot use it: {}",
                why.unwrap_or("the executor runs Blelloch's algorithm")
            )));
        }
        Ok(module)
    }
}

/// Compiles the module of `Op` scanned through the maps `M` from the arrays
/// `I` (e.g. `(DeviceBuffer<f32>, DeviceBuffer<f32>)`) for `arch` (e.g.
/// `"sm_90"`) with NVRTC, with the single-pass policy overridden by `tuning`,
/// and returns the CUBIN. Needs only libnvrtc, no GPU.
///
/// ```no_run
/// use scan_core::{maps::Recurrence, ops::LinearRecurrence};
/// use scan_cuda::{compile_mapped_with, DeviceBuffer, Tuning};
/// type Arrays = (DeviceBuffer<f32>, DeviceBuffer<f32>);
/// let cubin = compile_mapped_with::<LinearRecurrence<f32>, Recurrence, Arrays>("sm_90", Tuning::default()).unwrap();
/// assert!(!cubin.is_empty());
/// ```
pub fn compile_mapped_with<Op: CudaOp, M: CudaMaps<Op>, I: DeviceInputs<Item = M::Input>>(
    arch: &str,
    tuning: crate::Tuning,
) -> Result<Vec<u8>> {
    let source = mapped_source::<Op, M, I>(arch, tuning, Family::Mapped)?;
    if source.single_pass.is_err() {
        return Err(Error::Unsupported(format!("`{}` has no single-pass kernels for fused maps", source.op_name)));
    }
    crate::nvrtc::compile_cubin(&source.code, &source.op_name, arch)
}

/// ptxas' report on the kernels of the module [`compile_mapped_with`]
/// compiles (registers, stack frame and spills of each), from NVRTC alone:
/// the tests check with it that fused kernels keep their registers.
pub fn ptxas_report_mapped<Op: CudaOp, M: CudaMaps<Op>, I: DeviceInputs<Item = M::Input>>(
    arch: &str,
    tuning: crate::Tuning,
) -> Result<String> {
    let source = mapped_source::<Op, M, I>(arch, tuning, Family::Mapped)?;
    crate::nvrtc::ptxas_report(&source.code, &source.op_name, arch)
}

/// ptxas' report on the kernels of rows through the maps `M`
/// ([`Cuda::scan_mapped_rows`]: rows as segments, and rows of whole tiles),
/// as [`ptxas_report_mapped`] for one sequence.
pub fn ptxas_report_mapped_rows<Op: CudaOp, M: CudaMaps<Op>, I: DeviceInputs<Item = M::Input>>(
    arch: &str,
    tuning: crate::Tuning,
) -> Result<String> {
    let mut report = String::new();
    for family in [Family::MappedRows, Family::MappedTileRows] {
        let source = mapped_source::<Op, M, I>(arch, tuning, family)?;
        report.push_str(&crate::nvrtc::ptxas_report(&source.code, &source.op_name, arch)?);
    }
    Ok(report)
}

/// The source of `family`'s module of `Op` through `M` from the arrays `I`,
/// for `arch`.
fn mapped_source<Op: CudaOp, M: CudaMaps<Op>, I: DeviceInputs<Item = M::Input>>(
    arch: &str,
    tuning: crate::Tuning,
    family: Family,
) -> Result<ModuleSource> {
    let capability = crate::cuda::capability_of(arch)?;
    ModuleSource::mapped_of::<Op, M>(capability, tuning, &I::array_types(), &I::array_sizes(), family)
}
