//! The core of `scan`: the monoid contract ([`ScanOp`]), what a scan is
//! ([`ScanSpec`]), the sequential [`reference`], the [`blelloch`] algorithms and
//! the [`Error`] every fallible call returns.
//!
//! Nothing here knows about threads or GPUs: backends (`scan-cpu`, `scan-cuda`)
//! implement [`blelloch::BlockBackend`] and run the same multi-block driver.

// Generated code names `::scan_core::...`; this lets the built-in operators,
// declared inside this crate, use the same generated paths.
extern crate self as scan_core;

pub mod blelloch;
mod cuda_type;
mod error;
mod op;
pub mod ops;
pub mod reference;
mod spec;
pub mod testing;

pub use cuda_type::{CudaFloat, CudaScalar, CudaType};
pub use error::{Error, Result};
pub use op::{CudaOp, CudaSource, ScanOp};
pub use spec::{Direction, Kind, ScanSpec};

/// Support for the code `#[scan_op]` and `#[scan_item]` generate; not an API.
#[doc(hidden)]
pub mod __private {
    pub use crate::cuda_type::__private::{c_struct, op_name, PRELUDE};
    pub use crate::cuda_type::CField;
}
