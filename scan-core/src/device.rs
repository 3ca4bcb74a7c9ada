//! The device-level scan contract: a whole scan on one device (host memory
//! or a GPU's), whatever the algorithm.
//!
//! Algorithms differ in shape: Blelloch's multi-block driver recurses over
//! block totals, a single-pass look-back scan is one launch, the sequential
//! reference is a loop. Each implements [`DeviceScan`] over its own buffer
//! type, so an executor picks an algorithm and hands it the same request:
//! [`Operands`] (in place, or source into destination) and a [`ScanSpec`].
//!
//! * [`blelloch::Driver`](crate::blelloch::Driver) runs the multi-block driver
//!   over any [`BlockBackend`](crate::blelloch::BlockBackend);
//! * [`reference::Sequential`](crate::reference::Sequential) is the loop every
//!   test compares against;
//! * `scan-cpu`'s algorithms and `scan-cuda`'s single-pass kernels implement it
//!   over host slices and device spans.
//!
//! ```
//! use scan_core::blelloch::{Driver, SliceBackend};
//! use scan_core::device::{DeviceScan, Operands};
//! use scan_core::{ops::Add, reference::Sequential, ScanSpec};
//!
//! /// Generic over the algorithm: the caller decides how the scan runs.
//! fn running_total<A: DeviceScan<Add<u64>, Buf = [u64]>>(algorithm: &A, x: &[u64]) -> Vec<u64> {
//!     let mut out = vec![0; x.len()];
//!     algorithm.scan(Operands::Into { src: x, dst: &mut out }, ScanSpec::inclusive()).unwrap();
//!     out
//! }
//! let x: Vec<u64> = (1..=100).collect();
//! assert_eq!(running_total(&Driver(SliceBackend::new(8)), &x), running_total(&Sequential, &x));
//! ```

use crate::{Error, Result, ScanOp, ScanSpec};

/// What a scan reads and writes.
#[derive(Debug)]
pub enum Operands<'a, B: ?Sized> {
    /// Scan `data` in place.
    InPlace(&'a mut B),
    /// Read every item of `src` (left unchanged) and write every item of
    /// `dst`, which must have the same length.
    Into {
        /// The input, read only.
        src: &'a B,
        /// The output, every item written.
        dst: &'a mut B,
    },
}

/// A whole scan on one device, in place or out of place, for any [`ScanSpec`].
///
/// Implementations check lengths first ([`Error::LengthMismatch`]) and touch
/// nothing on error; an empty buffer is a valid, empty scan.
pub trait DeviceScan<Op: ScanOp> {
    /// The buffer type the algorithm works on (`[T]` on the host, a device
    /// span on the GPU).
    type Buf: ?Sized;

    /// How many items `buf` holds.
    fn len(&self, buf: &Self::Buf) -> usize;

    /// Scans `operands` as `spec` says.
    fn scan(&self, operands: Operands<'_, Self::Buf>, spec: ScanSpec) -> Result<()>;

    /// The number of items of `operands`, or [`Error::LengthMismatch`] when
    /// source and destination differ: the check every implementation makes
    /// before it touches either buffer.
    fn checked_len(&self, operands: &Operands<'_, Self::Buf>) -> Result<usize> {
        match operands {
            Operands::InPlace(data) => Ok(self.len(data)),
            Operands::Into { src, dst } => {
                let (n, m) = (self.len(src), self.len(dst));
                Error::check_lengths(n, m)?;
                Ok(n)
            }
        }
    }
}
