//! The sequential scans every test compares against: the obvious loops.

use crate::device::{DeviceScan, Operands};
use crate::{Error, Result, ScanOp, ScanSpec};

/// Scans `input` into a new vector.
///
/// ```
/// use scan_core::{ops::Add, reference, ScanSpec};
/// let x = [3, 1, 7, 0];
/// assert_eq!(reference::scan::<Add<i32>>(&x, ScanSpec::inclusive()), [3, 4, 11, 11]);
/// assert_eq!(reference::scan::<Add<i32>>(&x, ScanSpec::exclusive()), [0, 3, 4, 11]);
/// assert_eq!(reference::scan::<Add<i32>>(&x, ScanSpec::inclusive().reversed()), [11, 8, 7, 0]);
/// ```
pub fn scan<Op: ScanOp>(input: &[Op::Item], spec: ScanSpec) -> Vec<Op::Item> {
    let mut out = input.to_vec();
    scan_in_place::<Op>(&mut out, spec);
    out
}

/// Scans `input` into `output`, which must have the same length.
pub fn scan_into<Op: ScanOp>(input: &[Op::Item], output: &mut [Op::Item], spec: ScanSpec) -> Result<()> {
    Error::check_lengths(input.len(), output.len())?;
    output.copy_from_slice(input);
    scan_in_place::<Op>(output, spec);
    Ok(())
}

/// Scans `data` in place and returns the total of all items.
pub fn scan_in_place<Op: ScanOp>(data: &mut [Op::Item], spec: ScanSpec) -> Op::Item {
    let mut acc = Op::identity();
    let mut step = |x: &mut Op::Item| {
        let next = Op::combine(acc, *x);
        *x = if spec.is_inclusive() { next } else { acc };
        acc = next;
    };
    if spec.is_reverse() {
        data.iter_mut().rev().for_each(&mut step);
    } else {
        data.iter_mut().for_each(&mut step);
    }
    acc
}

/// The combination of all items in order (the identity when empty).
pub fn reduce<Op: ScanOp>(input: &[Op::Item]) -> Op::Item {
    input.iter().fold(Op::identity(), |acc, &x| Op::combine(acc, x))
}

/// Scans each of `rows` equal rows of a row-major `[rows, len / rows]` buffer.
pub fn scan_rows<Op: ScanOp>(input: &[Op::Item], rows: usize, spec: ScanSpec) -> Result<Vec<Op::Item>> {
    let row_len = row_len(input.len(), rows)?;
    let mut out = input.to_vec();
    if row_len > 0 {
        for row in out.chunks_exact_mut(row_len) {
            scan_in_place::<Op>(row, spec);
        }
    }
    Ok(out)
}

/// The index ranges of `rows` rows of `row_len` items whose starts are
/// `stride` items apart, in a buffer of `len` items, or
/// [`Error::BadStride`] when they do not fit. Rows of no items are listed
/// as none (there is nothing in them to scan); they must still start within
/// the buffer, except with a stride of 0, where any number of them fits.
///
/// ```
/// use scan_core::reference::strided_rows;
/// assert_eq!(strided_rows(10, 3, 2, 4).unwrap(), [0..2, 4..6, 8..10]);
/// assert!(strided_rows(10, 3, 2, 5).is_err()); // the last row would end at 12
/// assert!(strided_rows(10, 2, 4, 3).is_err()); // rows would overlap
/// assert!(strided_rows(0, usize::MAX, 0, 0).unwrap().is_empty());
/// ```
pub fn strided_rows(len: usize, rows: usize, row_len: usize, stride: usize) -> Result<Vec<std::ops::Range<usize>>> {
    check_strided(len, rows, row_len, stride)?;
    if row_len == 0 {
        return Ok(Vec::new());
    }
    Ok((0..rows).map(|r| r * stride..r * stride + row_len).collect())
}

/// [`strided_rows`]'s check alone, without listing the rows: `rows` rows of
/// `row_len` items, `stride` apart, fit in `len` items without overlapping,
/// or [`Error::BadStride`].
///
/// ```
/// use scan_core::reference::check_strided;
/// assert!(check_strided(10, 3, 2, 4).is_ok());
/// assert!(check_strided(10, 2, 4, 3).is_err()); // rows would overlap
/// ```
pub fn check_strided(len: usize, rows: usize, row_len: usize, stride: usize) -> Result<()> {
    let bad = || Error::BadStride { rows, row_len, stride, len };
    if rows == 0 {
        return Ok(());
    }
    let end = (rows - 1).checked_mul(stride).and_then(|s| s.checked_add(row_len)).ok_or_else(bad)?;
    if (rows > 1 && stride < row_len) || end > len {
        return Err(bad());
    }
    Ok(())
}

/// Scans `rows` strided rows (see [`strided_rows`]); the items between rows
/// are copied unchanged.
pub fn scan_rows_strided<Op: ScanOp>(
    input: &[Op::Item],
    rows: usize,
    row_len: usize,
    stride: usize,
    spec: ScanSpec,
) -> Result<Vec<Op::Item>> {
    let mut out = input.to_vec();
    for r in strided_rows(input.len(), rows, row_len, stride)? {
        scan_in_place::<Op>(&mut out[r], spec);
    }
    Ok(out)
}

/// The segments of `len` items that `starts` describes, as index ranges in
/// order: `[0, starts[0])` (empty when `starts[0] == 0`), then
/// `[starts[k], starts[k + 1])`, and the last up to `len`. Equal starts make
/// empty segments, so CSR offsets (`[0, ..., len]`) and bare starts both work.
/// [`Error::BadSegments`] unless `starts` is non-decreasing and at most `len`.
///
/// ```
/// use scan_core::reference::segments;
/// assert_eq!(segments(5, &[0, 2, 2, 5]).unwrap(), [0..0, 0..2, 2..2, 2..5, 5..5]);
/// assert_eq!(segments(5, &[3]).unwrap(), [0..3, 3..5]);
/// assert!(segments(5, &[3, 1]).is_err());
/// assert!(segments(5, &[6]).is_err());
/// ```
pub fn segments(len: usize, starts: &[usize]) -> Result<Vec<std::ops::Range<usize>>> {
    let mut ranges = Vec::with_capacity(starts.len() + 1);
    let mut previous = 0;
    for (index, &start) in starts.iter().enumerate() {
        if start < previous || start > len {
            return Err(Error::BadSegments { index, start, previous, len });
        }
        ranges.push(previous..start);
        previous = start;
    }
    ranges.push(previous..len);
    Ok(ranges)
}

/// The segment starts that head flags describe: every index whose flag is set
/// ([`Error::WrongShape`] unless there is one flag per item).
pub fn starts_of_heads(heads: &[bool], len: usize) -> Result<Vec<usize>> {
    Error::check_one_per("heads", heads.len(), "the input", len)?;
    Ok(heads.iter().enumerate().filter_map(|(i, &h)| h.then_some(i)).collect())
}

/// Scans each segment of `input` on its own (see [`segments`] for `starts`).
///
/// ```
/// use scan_core::{ops::Add, reference, ScanSpec};
/// let out = reference::scan_segments::<Add<i32>>(&[1, 2, 3, 4, 5], &[0, 2], ScanSpec::inclusive()).unwrap();
/// assert_eq!(out, [1, 3, 3, 7, 12]);
/// ```
pub fn scan_segments<Op: ScanOp>(input: &[Op::Item], starts: &[usize], spec: ScanSpec) -> Result<Vec<Op::Item>> {
    let mut out = input.to_vec();
    for r in segments(input.len(), starts)? {
        scan_in_place::<Op>(&mut out[r], spec);
    }
    Ok(out)
}

/// The length of one row of a `[rows, len / rows]` buffer, or [`Error::BadShape`].
pub fn row_len(len: usize, rows: usize) -> Result<usize> {
    if rows == 0 || len % rows != 0 {
        return Err(Error::BadShape { len, rows });
    }
    Ok(len / rows)
}

/// The sequential loop as a [`DeviceScan`] over host slices: the algorithm
/// every other one is compared against.
///
/// ```
/// use scan_core::device::{DeviceScan, Operands};
/// use scan_core::{ops::Add, reference::Sequential, ScanSpec};
///
/// let mut out = [0; 3];
/// DeviceScan::<Add<i32>>::scan(&Sequential, Operands::Into { src: &[1, 2, 3], dst: &mut out }, ScanSpec::inclusive())?;
/// assert_eq!(out, [1, 3, 6]);
/// # Ok::<(), scan_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Sequential;

impl<Op: ScanOp> DeviceScan<Op> for Sequential {
    type Buf = [Op::Item];

    fn len(&self, buf: &[Op::Item]) -> usize {
        buf.len()
    }

    fn scan(&self, operands: Operands<'_, [Op::Item]>, spec: ScanSpec) -> Result<()> {
        <Self as DeviceScan<Op>>::checked_len(self, &operands)?;
        match operands {
            Operands::InPlace(data) => {
                scan_in_place::<Op>(data, spec);
                Ok(())
            }
            Operands::Into { src, dst } => scan_into::<Op>(src, dst, spec),
        }
    }
}
