//! The Blelloch work-efficient scan (Blelloch 1990; GPU Gems 3, ch. 39).
//!
//! * [`block`]: one block, in place: up-sweep, clear the root, down-sweep.
//!   Exclusive by construction, inclusive by one extra combine per item;
//!   `2(n-1)` combines for `n` items, padded to a power of two with the identity.
//! * [`driver`]: any length: scan each block and emit its total, scan the totals
//!   (recursively, with the same driver), combine each block with its prefix.
//!   Written once against [`BlockBackend`], so the CPU and the GPU share it.
//! * [`Driver`]: the driver as a [`DeviceScan`](crate::device::DeviceScan),
//!   the algorithm-neutral contract executors dispatch on.
//! * [`SliceBackend`]: the single-threaded backend over host slices, which is
//!   also the model the other backends are tested against.

pub mod block;
pub mod driver;
mod slice_backend;

pub use driver::{scan_in_place, scan_into, BlockBackend, Driver};
pub use slice_backend::{block_range, host_scratch, SliceBackend};
