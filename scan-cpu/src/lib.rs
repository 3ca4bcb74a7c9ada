//! The CPU backend of `scan`: the [`Cpu`] executor runs any [`ScanOp`] with one
//! of three [`Algorithm`]s.
//!
//! * [`Algorithm::Sequential`]: the obvious loop (`scan_core::reference`'s).
//! * [`Algorithm::Blelloch`]: the work-efficient tree scan, through the core's
//!   multi-block driver, with blocks scanned and fixed up on several threads.
//! * [`Algorithm::Tiled`] (the default, the fast path): threads take
//!   cache-sized tiles in order; each tile is scanned as several independent
//!   chains in one loop (one chain under 128 items), takes its prefix from its predecessors through a
//!   decoupled look-back, and is written out with non-temporal stores when the
//!   output is large, so that the scan moves about as many bytes as a copy.
//!
//! ```
//! use scan_core::{ops::Add, ScanSpec};
//! use scan_cpu::Cpu;
//!
//! let cpu = Cpu::new();
//! let x: Vec<f32> = (1..=5).map(|i| i as f32).collect();
//! assert_eq!(cpu.scan::<Add<f32>>(&x, ScanSpec::inclusive())?, [1.0, 3.0, 6.0, 10.0, 15.0]);
//! assert_eq!(cpu.scan::<Add<f32>>(&x, ScanSpec::exclusive())?, [0.0, 1.0, 3.0, 6.0, 10.0]);
//! # Ok::<(), scan_core::Error>(())
//! ```
//!
//! [`ScanOp`]: scan_core::ScanOp

#![warn(missing_docs)]

mod blelloch;
mod compact;
mod cpu;
mod kernel;
mod lookback;
mod mapped;
mod parallel;
mod rows;
mod selective;
mod sequential;
mod stream;
mod tiled;
mod tree;

pub use blelloch::BLOCK_LEN as BLELLOCH_BLOCK_LEN;
pub use cpu::{Algorithm, Cpu};
pub use selective::SelectiveCheckpoints;
pub use tiled::{tile_len, STREAM_MIN_BYTES};

/// Items larger than this many bytes skip the paths that keep a handful of
/// items per chain or lane on a thread's stack (about 40 in the tiled
/// path's tile bookkeeping, which overflowed the 2 MiB stacks of helper
/// threads at 64 KiB items): [`Algorithm::Tiled`] runs them as
/// [`Algorithm::Blelloch`], and the mapped scans in one lane a piece. Such
/// items are memory-bound anyway (a combine touches kilobytes), so the
/// chains' latency hiding buys nothing there.
pub const STACK_ITEM_MAX_BYTES: usize = 4096;
