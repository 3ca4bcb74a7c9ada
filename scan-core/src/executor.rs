//! [`Scan`]: the calls every executor offers, so that code written once runs
//! on any of them.

use crate::{Result, ScanOp, ScanSpec};

/// An executor of scans of `Op`: `scan_cpu::Cpu` and the facade's `Device`
/// for every [`ScanOp`] (on a GPU, `Device` returns
/// [`Error::NotCuda`](crate::Error::NotCuda) for an operator without CUDA
/// source), `scan_cuda::Cuda` for every [`CudaOp`](crate::CudaOp).
///
/// Each executor also has these calls as inherent methods, generic over the
/// operator (`cpu.scan::<Add<i32>>(..)`); the trait is for code that takes
/// "any executor" and is written once:
///
/// ```
/// use scan_core::{ops::Add, Scan, ScanSpec};
///
/// fn running_totals<E: Scan<Add<u64>>>(executor: &E, x: &[u64]) -> scan_core::Result<Vec<u64>> {
///     executor.scan(x, ScanSpec::inclusive())
/// }
///
/// // Any executor: here a sequential one, written in a few lines.
/// struct Sequential;
/// impl<Op: scan_core::ScanOp> Scan<Op> for Sequential {
///     fn scan_into(&self, input: &[Op::Item], output: &mut [Op::Item], spec: ScanSpec) -> scan_core::Result<()> {
///         scan_core::Error::check_lengths(input.len(), output.len())?;
///         output.copy_from_slice(&scan_core::reference::scan::<Op>(input, spec));
///         Ok(())
///     }
/// }
/// assert_eq!(running_totals(&Sequential, &[1, 2, 3])?, [1, 3, 6]);
/// # Ok::<(), scan_core::Error>(())
/// ```
///
/// Only [`Scan::scan_into`] is required; the other calls have default
/// implementations through it, which executors replace with their own.
pub trait Scan<Op: ScanOp> {
    /// Scans `input` into `output`, which must have the same length
    /// ([`Error::LengthMismatch`](crate::Error::LengthMismatch) otherwise).
    fn scan_into(&self, input: &[Op::Item], output: &mut [Op::Item], spec: ScanSpec) -> Result<()>;

    /// Scans `input` into a new vector.
    fn scan(&self, input: &[Op::Item], spec: ScanSpec) -> Result<Vec<Op::Item>> {
        let mut output = input.to_vec();
        self.scan_into(input, &mut output, spec)?;
        Ok(output)
    }

    /// Scans `data` in place.
    fn scan_in_place(&self, data: &mut [Op::Item], spec: ScanSpec) -> Result<()> {
        let input = data.to_vec();
        self.scan_into(&input, data, spec)
    }

    /// Scans each row of a row-major `[rows, len / rows]` buffer
    /// independently, from `input` into `output` (same length). Errors:
    /// [`Error::LengthMismatch`](crate::Error::LengthMismatch), and
    /// [`Error::BadShape`](crate::Error::BadShape) when `rows` is 0 or does
    /// not divide the length.
    fn scan_rows(&self, input: &[Op::Item], output: &mut [Op::Item], rows: usize, spec: ScanSpec) -> Result<()> {
        crate::Error::check_lengths(input.len(), output.len())?;
        let row_len = crate::reference::row_len(input.len(), rows)?;
        if row_len == 0 {
            return Ok(());
        }
        for (x, y) in input.chunks_exact(row_len).zip(output.chunks_exact_mut(row_len)) {
            self.scan_into(x, y, spec)?;
        }
        Ok(())
    }

    /// Scans `rows` rows of `row_len` items whose starts are `stride` items
    /// apart (a column block of a wider matrix, a padded layout), from
    /// `input` into `output` (same length); items between rows are not
    /// touched. Errors: [`Error::LengthMismatch`](crate::Error::LengthMismatch),
    /// [`Error::BadStride`](crate::Error::BadStride).
    fn scan_rows_strided(
        &self,
        input: &[Op::Item],
        output: &mut [Op::Item],
        rows: usize,
        row_len: usize,
        stride: usize,
        spec: ScanSpec,
    ) -> Result<()> {
        crate::Error::check_lengths(input.len(), output.len())?;
        for r in crate::reference::strided_rows(input.len(), rows, row_len, stride)? {
            self.scan_into(&input[r.clone()], &mut output[r], spec)?;
        }
        Ok(())
    }

    /// Scans each segment of `input` on its own, into `output` (same
    /// length). `starts` are the segments' first indices, non-decreasing and
    /// at most the length; equal starts make empty segments, and CSR offsets
    /// `[0, ..., len]` work as they are ([`reference::segments`](crate::reference::segments)).
    /// Errors: [`Error::LengthMismatch`](crate::Error::LengthMismatch),
    /// [`Error::BadSegments`](crate::Error::BadSegments); nothing is written
    /// then.
    fn scan_segments(
        &self,
        input: &[Op::Item],
        output: &mut [Op::Item],
        starts: &[usize],
        spec: ScanSpec,
    ) -> Result<()> {
        crate::Error::check_lengths(input.len(), output.len())?;
        for r in crate::reference::segments(input.len(), starts)? {
            self.scan_into(&input[r.clone()], &mut output[r], spec)?;
        }
        Ok(())
    }

    /// [`Scan::scan_segments`] in place.
    fn scan_segments_in_place(&self, data: &mut [Op::Item], starts: &[usize], spec: ScanSpec) -> Result<()> {
        let input = data.to_vec();
        self.scan_segments(&input, data, starts, spec)
    }

    /// Scans each segment on its own, a segment starting at every item whose
    /// head flag is set (and at item 0): one flag per item
    /// ([`Error::WrongShape`](crate::Error::WrongShape) otherwise;
    /// [`Error::LengthMismatch`](crate::Error::LengthMismatch) when `output`
    /// is not as long as `input`).
    fn scan_flagged(&self, input: &[Op::Item], output: &mut [Op::Item], heads: &[bool], spec: ScanSpec) -> Result<()> {
        let starts = crate::reference::starts_of_heads(heads, input.len())?;
        self.scan_segments(input, output, &starts, spec)
    }

    /// [`Scan::scan_flagged`] in place.
    fn scan_flagged_in_place(&self, data: &mut [Op::Item], heads: &[bool], spec: ScanSpec) -> Result<()> {
        let starts = crate::reference::starts_of_heads(heads, data.len())?;
        self.scan_segments_in_place(data, &starts, spec)
    }

    /// Scans each row of a row-major `[rows, len / rows]` buffer in place
    /// ([`Error::BadShape`](crate::Error::BadShape) when `rows` is 0 or does
    /// not divide the length).
    fn scan_rows_in_place(&self, data: &mut [Op::Item], rows: usize, spec: ScanSpec) -> Result<()> {
        let input = data.to_vec();
        self.scan_rows(&input, data, rows, spec)
    }
}
