//! `Device`: run scans on the GPU when CUDA works, on the CPU otherwise.

use scan_core::{CudaOp, Result, Scan, ScanSpec};
use scan_cpu::Cpu;
use scan_cuda::Cuda;

/// Where scans run, chosen once; [`Display`](std::fmt::Display) says which
/// and why.
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

impl Device {
    /// CUDA device 0 when a driver, a GPU and NVRTC are all there; the CPU
    /// otherwise (the reason is kept for [`Display`](std::fmt::Display)).
    /// `SCAN_DEVICE=cpu` forces the CPU.
    pub fn auto() -> Device {
        if std::env::var("SCAN_DEVICE").is_ok_and(|v| v.eq_ignore_ascii_case("cpu")) {
            return Device { backend: Backend::Cpu(Cpu::new()), why: "SCAN_DEVICE=cpu".into() };
        }
        match Cuda::new() {
            Ok(cuda) => Device { backend: Backend::Cuda(Box::new(cuda)), why: "CUDA works".into() },
            Err(e) => Device { backend: Backend::Cpu(Cpu::new()), why: e.to_string() },
        }
    }

    /// The CPU.
    pub fn cpu() -> Device {
        Device { backend: Backend::Cpu(Cpu::new()), why: "asked for the CPU".into() }
    }

    /// CUDA device 0, or the error saying why not.
    pub fn cuda() -> Result<Device> {
        Ok(Device { backend: Backend::Cuda(Box::new(Cuda::new()?)), why: "asked for CUDA".into() })
    }

    /// True when scans run on a GPU.
    pub fn is_cuda(&self) -> bool {
        matches!(self.backend, Backend::Cuda(_))
    }

    /// The CUDA executor, when scans run on a GPU.
    pub fn as_cuda(&self) -> Option<&Cuda> {
        match &self.backend {
            Backend::Cuda(cuda) => Some(cuda),
            Backend::Cpu(_) => None,
        }
    }

    /// Why this device was chosen.
    pub fn reason(&self) -> &str {
        &self.why
    }

    /// Scans `input` into a new vector.
    pub fn scan<Op: CudaOp>(&self, input: &[Op::Item], spec: ScanSpec) -> Result<Vec<Op::Item>> {
        match &self.backend {
            Backend::Cuda(cuda) => cuda.scan::<Op>(input, spec),
            Backend::Cpu(cpu) => cpu.scan::<Op>(input, spec),
        }
    }

    /// Scans `input` into `output`, which must have the same length.
    pub fn scan_into<Op: CudaOp>(&self, input: &[Op::Item], output: &mut [Op::Item], spec: ScanSpec) -> Result<()> {
        match &self.backend {
            Backend::Cuda(cuda) => cuda.scan_into::<Op>(input, output, spec),
            Backend::Cpu(cpu) => cpu.scan_into::<Op>(input, output, spec),
        }
    }

    /// Scans `data` in place.
    pub fn scan_in_place<Op: CudaOp>(&self, data: &mut [Op::Item], spec: ScanSpec) -> Result<()> {
        match &self.backend {
            Backend::Cuda(cuda) => cuda.scan_in_place::<Op>(data, spec),
            Backend::Cpu(cpu) => cpu.scan_in_place::<Op>(data, spec),
        }
    }

    /// Scans each row of a row-major `[rows, input.len() / rows]` buffer from
    /// `input` into `output` (same length). Errors: [`Error::LengthMismatch`](crate::Error::LengthMismatch),
    /// and [`Error::BadShape`](crate::Error::BadShape) when `rows` is 0 or does
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
    pub fn scan_rows<Op: CudaOp>(
        &self,
        input: &[Op::Item],
        output: &mut [Op::Item],
        rows: usize,
        spec: ScanSpec,
    ) -> Result<()> {
        match &self.backend {
            Backend::Cuda(cuda) => cuda.scan_rows::<Op>(input, output, rows, spec),
            Backend::Cpu(cpu) => cpu.scan_rows::<Op>(input, output, rows, spec),
        }
    }

    /// Scans each row of a row-major `[rows, data.len() / rows]` buffer in
    /// place. [`Error::BadShape`](crate::Error::BadShape) when `rows` is 0 or
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
    pub fn scan_rows_in_place<Op: CudaOp>(&self, data: &mut [Op::Item], rows: usize, spec: ScanSpec) -> Result<()> {
        match &self.backend {
            Backend::Cuda(cuda) => cuda.scan_rows_in_place::<Op>(data, rows, spec),
            Backend::Cpu(cpu) => cpu.scan_rows_in_place::<Op>(data, rows, spec),
        }
    }
}

impl<Op: CudaOp> Scan<Op> for Device {
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
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.backend {
            Backend::Cuda(cuda) => write!(f, "CUDA: {cuda}"),
            Backend::Cpu(cpu) => write!(f, "{cpu} ({})", self.why),
        }
    }
}
