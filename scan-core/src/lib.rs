//! The core of `scan`: the monoid contract ([`ScanOp`]), what a scan is
//! ([`ScanSpec`]), the device-level contract every algorithm implements
//! ([`device::DeviceScan`]), the sequential [`mod@reference`], the [`blelloch`]
//! algorithms, the naive [`hillis_steele`] scan, and the [`Error`] every
//! fallible call returns, and [`Scan`], the calls every executor offers.
//!
//! Nothing here knows about threads or GPUs: backends (`scan-cpu`, `scan-cuda`)
//! implement [`blelloch::BlockBackend`] to run the same multi-block driver,
//! and [`device::DeviceScan`] for their own algorithms (the CPU's tiled scan,
//! the GPU's single-pass scan).

#![warn(missing_docs)]

// Generated code names `::scan_core::...`; this lets the built-in operators,
// declared inside this crate, use the same generated paths.
extern crate self as scan_core;

pub mod backward;
pub mod blelloch;
mod cuda_type;
pub mod device;
mod error;
mod executor;
pub mod hillis_steele;
pub mod maps;
mod op;
pub mod ops;
pub mod reference;
mod rng;
mod segmented;
pub mod selective;
mod spec;

pub use cuda_type::{CudaFloat, CudaScalar, CudaType};
pub use error::{Error, Result};
pub use executor::Scan;
pub use op::{CudaOp, CudaSource, ScanOp};
pub use spec::{Direction, Kind, ScanSpec};

/// Support for the code `#[scan_op]` and `#[scan_item]` generate; not an API.
#[doc(hidden)]
pub mod __private {
    pub use crate::cuda_type::__private::{c_struct, item_name, neg, op_name, scalar, PRELUDE};
    pub use crate::cuda_type::CField;
    pub use crate::op::{is_narrow_float, is_narrow_float_field};
    pub use crate::rng::Rng;
}
