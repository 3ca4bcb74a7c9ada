//! Backward passes: the gradients of a scan's inputs from the gradient of
//! its outputs, computed by scans too, on any executor.
//!
//! For the linear recurrence `h_t = a_t h_{t-1} + b_t` (from `h_{-1} = 0`),
//! with `gh_t = dL/dh_t` the gradient arriving at each output, the total
//! gradient of `h_t` flows back through every later step:
//!
//! ```text
//! g_t = gh_t + a_{t+1} g_{t+1}        (g_{T-1} = gh_{T-1})
//! dL/db_t = g_t,    dL/da_t = g_t h_{t-1}   (h_{-1} = 0)
//! ```
//!
//! `g` is the same recurrence run from the end, on the pairs
//! `(a_{t+1}, gh_t)`: a reverse inclusive scan of [`LinearRecurrence`].

use crate::ops::LinearRecurrence;
use crate::{CudaFloat, Error, Result, Scan, ScanSpec};

/// `(dL/da, dL/db)` of `h_t = a_t h_{t-1} + b_t` given `a`, the forward
/// outputs `h` and `dh = dL/dh`, all of one length; one reverse scan on
/// `executor` (a `Cpu`, a `Cuda` or a `Device`).
///
/// ```
/// use scan_core::backward::linear_recurrence_backward;
/// use scan_core::ops::LinearRecurrence;
/// # struct Seq;
/// # impl scan_core::Scan<LinearRecurrence<f64>> for Seq {
/// #     fn scan_into(&self, x: &[(f64, f64)], out: &mut [(f64, f64)], spec: scan_core::ScanSpec) -> scan_core::Result<()> {
/// #         out.copy_from_slice(&scan_core::reference::scan::<LinearRecurrence<f64>>(x, spec)); Ok(())
/// #     }
/// # }
/// # let executor = Seq; // any executor: scan_cpu::Cpu::new(), a Cuda, a Device
/// // h = (1, 1.5, 1.75) from a = 0.5, b = 1; L = h_2 alone.
/// let (a, h, dh) = ([0.5, 0.5, 0.5], [1.0, 1.5, 1.75], [0.0, 0.0, 1.0]);
/// let (da, db) = linear_recurrence_backward(&executor, &a, &h, &dh)?;
/// assert_eq!(db, [0.25, 0.5, 1.0]); // dh_2/db_t = a^(2 - t)
/// assert_eq!(da, [0.0, 0.5, 1.5]); // g_t h_(t-1)
/// # Ok::<(), scan_core::Error>(())
/// ```
pub fn linear_recurrence_backward<T, E>(executor: &E, a: &[T], h: &[T], dh: &[T]) -> Result<(Vec<T>, Vec<T>)>
where
    T: CudaFloat,
    E: Scan<LinearRecurrence<T>> + ?Sized,
{
    Error::check_one_per("h", h.len(), "`a`", a.len())?;
    Error::check_one_per("dh", dh.len(), "`a`", a.len())?;
    let n = a.len();
    // (a_{t+1}, gh_t); the last step has no successor (any coefficient).
    let pairs: Vec<(T, T)> = (0..n).map(|t| (if t + 1 < n { a[t + 1] } else { T::ZERO }, dh[t])).collect();
    let g = executor.scan(&pairs, ScanSpec::inclusive().reversed())?;
    let db: Vec<T> = g.iter().map(|&(_, g)| g).collect();
    let da: Vec<T> = (0..n).map(|t| if t == 0 { T::ZERO } else { db[t] * h[t - 1] }).collect();
    Ok((da, db))
}
