//! The one error type of every fallible call in `scan`.

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in a scan; each message says what to do.
///
/// Backends carry foreign errors (CUDA driver, NVRTC) as text so that this
/// crate stays free of GPU dependencies.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Input and output lengths differ.
    #[error(
        "length mismatch: the input has {input} items but the output has {output}; pass an output of the same length"
    )]
    LengthMismatch {
        /// Items in the input.
        input: usize,
        /// Items in the output.
        output: usize,
    },

    /// A batched scan's buffer is not `rows` whole rows.
    #[error(
        "bad shape: {len} items cannot be split into {rows} rows of equal length; pass rows > 0 that divide the length"
    )]
    BadShape {
        /// Items in the buffer.
        len: usize,
        /// Rows asked for.
        rows: usize,
    },

    /// An argument of a multi-array call does not have the shape the others
    /// imply: an array of the selective scan, head flags or `keep` flags
    /// that are not one per item, a mapped scan's second or third input
    /// array, a `len` past the end of a buffer.
    #[error("wrong shape: `{argument}` must be {expected}, found {found}")]
    WrongShape {
        /// The argument, as the API names it (`u`, `B`, ...).
        argument: String,
        /// The shape it must have, with the sizes it follows from.
        expected: String,
        /// What it has.
        found: String,
    },

    /// A size does not fit what the backend can address or allocate.
    #[error("too large: {what}")]
    TooLarge {
        /// What did not fit, and what to do instead.
        what: String,
    },

    /// A tuning override that cannot run (e.g. a tile past shared memory).
    #[error("invalid tuning: {0}")]
    BadTuning(String),

    /// No usable CUDA driver, device or NVRTC library.
    #[error("CUDA is not available: {reason}")]
    CudaUnavailable {
        /// What is missing, and the fix.
        reason: String,
    },

    /// No usable NCCL library, for a scan across several GPUs.
    #[error("NCCL is not available: {reason}")]
    NcclUnavailable {
        /// What is missing, and the fix.
        reason: String,
    },

    /// NCCL returned an error.
    #[error("NCCL error during {during}: {message}")]
    Nccl {
        /// The operation that failed.
        during: String,
        /// NCCL's message.
        message: String,
    },

    /// The CUDA driver returned an error.
    #[error("CUDA driver error during {during}: {message}")]
    Driver {
        /// The operation that failed.
        during: String,
        /// The driver's message.
        message: String,
    },

    /// NVRTC rejected the generated source.
    #[error("NVRTC could not compile operator `{op}`: {log}\n--- generated source ---\n{code}")]
    Compile {
        /// The operator's C++ name.
        op: String,
        /// NVRTC's log.
        log: String,
        /// The whole source NVRTC saw.
        code: String,
    },

    /// Strided rows that do not fit: a stride shorter than a row, or rows
    /// past the end of the buffer.
    #[error("{}", stride_text(*rows, *row_len, *stride, *len))]
    BadStride {
        /// Rows asked for.
        rows: usize,
        /// Items per row.
        row_len: usize,
        /// Items between row starts.
        stride: usize,
        /// Items in the buffer.
        len: usize,
    },

    /// Segment starts that are not non-decreasing, or past the end.
    #[error("{}", segments_text(*index, *start, *previous, *len))]
    BadSegments {
        /// The first offending position in the starts.
        index: usize,
        /// Its value.
        start: usize,
        /// The start before it (0 for the first).
        previous: usize,
        /// The number of items.
        len: usize,
    },

    /// An operator without CUDA source was sent to the GPU.
    #[error(
        "`{op}` has no CUDA source, so it cannot run on the GPU: declare it with #[scan_op] (or, for a \
         hand-written CudaOp, return Some(Self::cuda_source()) from ScanOp::cuda_source_if_any), or run it on \
         the CPU (Device::cpu(), scan::Cpu)"
    )]
    NotCuda {
        /// The operator's Rust type.
        op: &'static str,
    },

    /// A valid request this backend or configuration does not run (e.g.
    /// fused maps with the GPU's Blelloch algorithm); the message says what
    /// does.
    #[error("not supported: {0}")]
    Unsupported(String),

    /// Anything else a backend wants to report (e.g. an I/O error in a cache).
    #[error("{0}")]
    Other(String),
}

impl Error {
    /// `Ok` when the lengths agree, else [`Error::LengthMismatch`]: the check
    /// every out-of-place call makes before it touches either buffer.
    ///
    /// ```
    /// use scan_core::Error;
    /// assert!(Error::check_lengths(3, 3).is_ok());
    /// assert!(matches!(Error::check_lengths(3, 2), Err(Error::LengthMismatch { input: 3, output: 2 })));
    /// ```
    pub fn check_lengths(input: usize, output: usize) -> Result<()> {
        if input != output {
            return Err(Error::LengthMismatch { input, output });
        }
        Ok(())
    }

    /// `Ok` when `argument` has `found` == `expected` items, one per item of
    /// `per`; else [`Error::WrongShape`] naming both (for arrays that go
    /// beside the input, such as flags or a second input array, where
    /// [`Error::LengthMismatch`]'s "input" and "output" would name the wrong
    /// buffers).
    ///
    /// ```
    /// use scan_core::Error;
    /// assert!(Error::check_one_per("heads", 3, "the input", 3).is_ok());
    /// let err = Error::check_one_per("heads", 2, "the input", 3).unwrap_err();
    /// assert_eq!(err.to_string(), "wrong shape: `heads` must be 3 items, one per item of the input, found 2 items");
    /// ```
    pub fn check_one_per(argument: &str, found: usize, per: &str, expected: usize) -> Result<()> {
        if found != expected {
            return Err(Error::WrongShape {
                argument: argument.into(),
                expected: format!("{expected} items, one per item of {per}"),
                found: format!("{found} items"),
            });
        }
        Ok(())
    }
}

/// [`Error::BadStride`]'s message: one row only has to fit.
fn stride_text(rows: usize, row_len: usize, stride: usize, len: usize) -> String {
    if rows <= 1 {
        format!("bad strided rows: {rows} row of {row_len} items does not fit in {len} items")
    } else {
        format!(
            "bad strided rows: {rows} rows of {row_len} items, {stride} items apart, need a stride of at least the \
             row length and (rows - 1) * stride + row_len <= {len} items"
        )
    }
}

/// [`Error::BadSegments`]'s message: a start past the end, or out of order.
fn segments_text(index: usize, start: usize, previous: usize, len: usize) -> String {
    let rule = "starts must be non-decreasing and at most the length (equal starts make empty segments)";
    if start > len {
        format!("bad segment starts: starts[{index}] = {start} is past the end of the {len} items; {rule}")
    } else {
        format!("bad segment starts: starts[{index}] = {start} after {previous}, with {len} items; {rule}")
    }
}

#[cfg(test)]
mod tests {
    use super::Error;

    #[test]
    fn messages_name_what_is_wrong() {
        let past = Error::BadSegments { index: 0, start: 6, previous: 0, len: 5 }.to_string();
        assert!(past.contains("starts[0] = 6 is past the end of the 5 items"), "{past}");
        let order = Error::BadSegments { index: 1, start: 0, previous: 2, len: 5 }.to_string();
        assert!(order.contains("starts[1] = 0 after 2, with 5 items"), "{order}");
        let one = Error::BadStride { rows: 1, row_len: 6, stride: 0, len: 5 }.to_string();
        assert_eq!(one, "bad strided rows: 1 row of 6 items does not fit in 5 items");
        let many = Error::BadStride { rows: 3, row_len: 4, stride: 2, len: 10 }.to_string();
        assert!(many.contains("need a stride of at least the row length"), "{many}");
    }
}
