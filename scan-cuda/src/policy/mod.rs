//! How the kernels' work is shaped for one item type on one architecture:
//! the policy, kept apart from the mechanism (the kernel templates), as in
//! CUB. Chosen in Rust from the item's size and the device's compute
//! capability; [`Tuning`] overrides it for experiments.

mod blelloch;
mod single_pass;
mod tuning;

pub use blelloch::BlellochPolicy;
pub use single_pass::{SinglePassPolicy, StatusLayout, DETERMINISTIC_LOOKBACK, SINGLE_PASS_MAX_ITEM_BYTES};
pub use tuning::Tuning;

/// Dynamic or static shared memory a block may use without opting in to more.
const SHARED_LIMIT: usize = 48 * 1024;

/// Shared memory one block may opt in to on compute capability `arch`
/// (CUDA C++ Programming Guide, "Technical specifications per compute
/// capability"); unknown architectures get the smallest recent figure.
pub(crate) fn shared_limit_per_block(arch: u32) -> usize {
    let kib = match arch {
        70 | 72 => 96,
        75 => 64,
        80 | 87 => 163,
        90..=109 => 227,
        _ => 99,
    };
    kib * 1024
}

/// Shared memory of one SM; each resident block also reserves 1 KiB.
fn shared_per_sm(arch: u32) -> usize {
    shared_limit_per_block(arch) + 1024
}

/// The GPU scan algorithms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// One launch: each block scans a tile and chains it to its predecessors
    /// with a decoupled look-back, so the data is read once and written once
    /// (the bytes a copy moves). The default; items past
    /// [`SINGLE_PASS_MAX_ITEM_BYTES`] and GPUs older than compute capability
    /// 7.0 fall back to [`Algorithm::Blelloch`], saying why
    /// ([`Cuda::algorithm_for`](crate::Cuda::algorithm_for)).
    #[default]
    SinglePass,
    /// Blelloch's multi-block scan: scan tiles and their totals, scan the
    /// totals (recursively), add each tile's prefix. Moves each item about
    /// four times; kept as the reference implementation of the shared driver.
    Blelloch,
}

impl Algorithm {
    /// Both algorithms, for tests and benchmarks that cover them all.
    pub const ALL: [Algorithm; 2] = [Algorithm::SinglePass, Algorithm::Blelloch];

    /// A short lower-case name (`"single-pass"`, `"blelloch"`).
    pub const fn name(self) -> &'static str {
        match self {
            Algorithm::SinglePass => "single-pass",
            Algorithm::Blelloch => "blelloch",
        }
    }
}

impl std::fmt::Display for Algorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
