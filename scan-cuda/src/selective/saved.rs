//! The training forward: the selective scan's forward that also keeps what
//! the backward would otherwise recompute first, as mamba_ssm's forward
//! saves its chunk states for its backward. On the tile path
//! (backward_tiles.rs) that is the states before every 8 steps:
//! the forward's tile kernel writes them as it goes, and the backward skips
//! its checkpoint kernel, a third of its time at 8/11's shape. Elsewhere
//! nothing is saved and the backward recomputes, as
//! [`Cuda::run_selective_backward`] does.

use scan_core::selective::backward::check_dout_len;
use scan_core::selective::SsmShape;
use scan_core::{Error, Result};

use super::backward::DeviceSsmGrads;
use super::backward_tiles::checkpoints_len;
use super::forward::DeviceSelectiveScan;
use crate::buffer::DeviceBuffer;
use crate::cuda::Cuda;

/// What [`Cuda::run_selective_saving`] kept for
/// [`Cuda::run_selective_backward_saved`]: the forward states before every
/// 8 steps when the backward runs by tiles (batch x dim x ceil(L / 8) x 16
/// floats, x 8 for N up to 8: 0.4 GB at 8 x 1536 x 4096, twice `u`), else
/// nothing. It remembers which arguments it came from (the shape, the
/// options and the device buffers of the inputs that make the states), so
/// that handing it to the backward of another scan is an error; it cannot
/// see the values, so the inputs must not change in between (as with
/// PyTorch's saved tensors).
#[derive(Debug)]
pub struct SelectiveSaved {
    checkpoints: Option<DeviceBuffer<f32>>,
    warps: u32,
    from: Origin,
}

/// The arguments the saved states depend on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Origin {
    shape: SsmShape,
    softplus: bool,
    /// B's and C's groups, `None` where fixed (the fields are public: the
    /// same buffer may be handed over in another grouping).
    groups: [Option<usize>; 2],
    /// The device addresses and lengths of u, delta, A, B, delta_bias and
    /// the initial state ((0, 0) when absent).
    inputs: [(u64, usize); 6],
}

impl SelectiveSaved {
    /// Whether states were saved (the backward then skips recomputing them).
    pub fn holds_states(&self) -> bool {
        self.checkpoints.is_some()
    }

    /// The device memory it holds, in bytes.
    pub fn bytes(&self) -> usize {
        self.checkpoints.as_ref().map_or(0, |c| 4 * c.len())
    }
}

impl Cuda {
    fn origin(&self, s: &DeviceSelectiveScan) -> Origin {
        let stream = self.stream();
        let at = |x: &DeviceBuffer<f32>| (x.device_ptr(stream), x.len());
        let opt = |x: &Option<DeviceBuffer<f32>>| x.as_ref().map_or((0, 0), at);
        Origin {
            shape: s.shape,
            softplus: s.delta_softplus,
            groups: [s.b.groups, s.c.groups],
            inputs: [at(&s.u), at(&s.delta), at(&s.a), at(&s.b.data), opt(&s.delta_bias), opt(&s.initial_state)],
        }
    }

    /// The forward of a training step: [`Cuda::run_selective`]'s results
    /// (`s.out`, and `s.last_state` when kept), and what the backward needs
    /// saved ([`SelectiveSaved`]). Where the backward runs by tiles (by
    /// default at least 4096 channels, 8 < N <= 16, B and C varying and
    /// shared by every 32 channels; [`crate::Tuning::selective_backward_tiles`]),
    /// this forward is the forward's tile kernel writing the states before
    /// every 8 steps as well; elsewhere it is [`Cuda::run_selective`] and
    /// nothing is saved. The output is the tile kernel's whatever the
    /// forward's own plan ([`crate::Tuning::selective`]).
    ///
    /// Errors: those of [`Cuda::run_selective`]; a failed allocation of the
    /// saved states.
    ///
    /// ```no_run
    /// # fn main() -> scan_core::Result<()> {
    /// use scan_core::selective::{Projection, SelectiveScan, SsmShape};
    /// let cuda = scan_cuda::Cuda::new()?;
    /// let shape = SsmShape { batch: 1, dim: 32, len: 64, state: 16 };
    /// let (u, delta, a) = (vec![1.0; 32 * 64], vec![0.5; 32 * 64], vec![-1.0; 32 * 16]);
    /// let bc = vec![0.25; 16 * 64];
    /// let varying = Projection::Varying { data: &bc, groups: 1 };
    /// let args = SelectiveScan::new(shape, &u, &delta, &a, varying, varying);
    /// let mut s = cuda.upload_selective(&args)?;
    /// let saved = cuda.run_selective_saving(&mut s)?;
    /// let dout = cuda.upload(&vec![1.0; 32 * 64])?;
    /// let grads = cuda.run_selective_backward_saved(&s, &dout, &saved)?.download()?;
    /// assert_eq!(grads, cuda.run_selective_backward(&s, &dout)?.download()?);
    /// # Ok(()) }
    /// ```
    pub fn run_selective_saving(&self, s: &mut DeviceSelectiveScan) -> Result<SelectiveSaved> {
        self.check_selective(s)?;
        let mut saved = SelectiveSaved { checkpoints: None, warps: 0, from: self.origin(s) };
        self.run_selective_saving_into(s, &mut saved)?;
        Ok(saved)
    }

    /// [`Cuda::run_selective_saving`] into the memory of earlier saved
    /// states, as a training loop calls it step after step: the states of
    /// `s` replace what `saved` held, in the same device buffer when the
    /// size is the same (no allocation), else in a new one. Afterwards
    /// `saved` belongs to `s` only.
    ///
    /// Errors: those of [`Cuda::run_selective_saving`]. After an error,
    /// `saved` holds no states (the backward then recomputes them).
    ///
    /// ```no_run
    /// # fn main() -> scan_core::Result<()> {
    /// # use scan_core::selective::{Projection, SelectiveScan, SsmShape};
    /// # let cuda = scan_cuda::Cuda::new()?;
    /// # let shape = SsmShape { batch: 1, dim: 32, len: 64, state: 16 };
    /// # let (u, delta, a) = (vec![1.0; 32 * 64], vec![0.5; 32 * 64], vec![-1.0; 32 * 16]);
    /// # let bc = vec![0.25; 16 * 64];
    /// # let varying = Projection::Varying { data: &bc, groups: 1 };
    /// # let args = SelectiveScan::new(shape, &u, &delta, &a, varying, varying);
    /// let mut s = cuda.upload_selective(&args)?;
    /// let dout = cuda.upload(&vec![1.0; 32 * 64])?;
    /// let mut saved = cuda.run_selective_saving(&mut s)?;
    /// for _step in 0..3 {
    ///     // ... new inputs into `s` ...
    ///     cuda.run_selective_saving_into(&mut s, &mut saved)?;
    ///     let grads = cuda.run_selective_backward_saved(&s, &dout, &saved)?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn run_selective_saving_into(&self, s: &mut DeviceSelectiveScan, saved: &mut SelectiveSaved) -> Result<()> {
        self.check_selective(s)?;
        // Taken out until the forward has written them, so that an error
        // leaves no stale states behind.
        let kept = saved.checkpoints.take();
        let from = self.origin(s);
        match self.backward_tiles_plan(s) {
            Some(warps) => {
                let len = checkpoints_len(s.shape, warps);
                let mut checkpoints = match kept {
                    // (Not a buffer of another executor's context.)
                    Some(c) if c.len() == len && self.check_buffer(&c, "checkpoints").is_ok() => c,
                    _ => self.alloc_unwritten(len)?,
                };
                self.run_selective_forward_saving(s, warps, &mut checkpoints)?;
                *saved = SelectiveSaved { checkpoints: Some(checkpoints), warps, from };
            }
            None => {
                self.run_selective(s)?;
                *saved = SelectiveSaved { checkpoints: None, warps: 0, from };
            }
        }
        Ok(())
    }

    /// [`Cuda::run_selective_backward`] with what
    /// [`Cuda::run_selective_saving`] saved from the forward of the same `s`
    /// (its inputs unchanged since): the same gradients, bit for bit (the
    /// saved states are the ones the backward would compute), without
    /// recomputing the states where they were saved.
    ///
    /// Errors: those of [`Cuda::run_selective_backward`];
    /// [`Error::WrongShape`] naming `saved` when it comes from the forward of
    /// other arguments (another shape, another grouping of B or C, other
    /// options, other device buffers or lengths).
    pub fn run_selective_backward_saved(
        &self,
        s: &DeviceSelectiveScan,
        dout: &DeviceBuffer<f32>,
        saved: &SelectiveSaved,
    ) -> Result<DeviceSsmGrads> {
        self.check_selective(s)?;
        self.check_buffer(dout, "dout")?;
        check_dout_len(s.shape, dout.len())?;
        if saved.from != self.origin(s) {
            let form = |g: Option<usize>| {
                g.map_or("fixed".to_string(), |g| format!("varying in {g} group{}", if g == 1 { "" } else { "s" }))
            };
            let describe = |o: &Origin| {
                let [b, c] = o.groups;
                format!("{:?}, B {}, C {}, delta_softplus {}", o.shape, form(b), form(c), o.softplus)
            };
            return Err(Error::WrongShape {
                argument: "saved".into(),
                expected: format!("the states saved by the forward of these arguments ({})", describe(&self.origin(s))),
                found: format!("states saved by the forward of other arguments ({})", describe(&saved.from)),
            });
        }
        if let Some(checkpoints) = &saved.checkpoints {
            // (Saved by another executor's forward of buffers at the same
            // addresses: not this context's memory.)
            self.check_buffer(checkpoints, "saved (its states)")?;
        }
        match (self.backward_tiles_plan(s), &saved.checkpoints) {
            (Some(warps), Some(checkpoints)) if warps == saved.warps => {
                self.run_selective_backward_tiles(s, dout, warps, Some(checkpoints))
            }
            // Nothing saved for this plan (or the tuning changed since):
            // recompute.
            _ => self.run_selective_backward(s, dout),
        }
    }
}
