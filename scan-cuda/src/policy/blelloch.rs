//! The Blelloch kernels' tile shape for one item size.

use scan_core::{Error, Result};

use super::SHARED_LIMIT;

/// Threads per block and items per run of the Blelloch kernels for one item
/// size.
///
/// A tile holds `2 * threads * items_per_run` items: each thread owns two runs
/// (GPU Gems 3's two elements per thread) of `items_per_run` consecutive items.
/// Small items get long runs so that a tile stays around 16 KiB of shared
/// memory; large items get short runs and, past 32 bytes, fewer threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BlellochPolicy {
    /// Threads per block (a power of two).
    pub threads: u32,
    /// Consecutive items each run holds.
    pub items_per_run: u32,
}

impl BlellochPolicy {
    /// The policy for items of `size` bytes.
    ///
    /// For tuning experiments only, `SCAN_CUDA_POLICY=THREADSxITEMS` (e.g.
    /// `256x8`) overrides the choice for every item size whose tile fits (a
    /// value it does not take is ignored, with a warning on stderr).
    pub fn for_item_size(size: usize) -> Result<BlellochPolicy> {
        let size = size.max(1);
        if let Some(p) = Self::from_env().filter(|p| p.shared_bytes(size) <= SHARED_LIMIT) {
            return Ok(p);
        }
        let mut threads = 256u32;
        let items_per_run = match size {
            0..=4 => 8,
            5..=8 => 4,
            9..=16 => 2,
            _ => 1,
        };
        let mut policy = BlellochPolicy { threads, items_per_run };
        while policy.shared_bytes(size) > SHARED_LIMIT {
            if threads == 1 {
                return Err(Error::TooLarge {
                    what: format!(
                        "items of {size} bytes do not fit the GPU kernels' shared memory ({SHARED_LIMIT} bytes for a \
                         tile of 2 items); use smaller items or the CPU backend"
                    ),
                });
            }
            threads /= 2;
            policy = BlellochPolicy { threads, items_per_run };
        }
        Ok(policy)
    }

    fn from_env() -> Option<BlellochPolicy> {
        let var = crate::env::TuningVar {
            name: "SCAN_CUDA_POLICY",
            takes: "THREADSxITEMS, THREADS a power of two from 32 to 1024 and ITEMS 1 to 32 (e.g. 256x8)",
        };
        var.read(BlellochPolicy::parse)
    }

    /// `THREADSxITEMS` (`SCAN_CUDA_POLICY`'s form), if the kernels take it.
    fn parse(v: &str) -> Option<BlellochPolicy> {
        let (t, k) = v.split_once('x')?;
        let (threads, items_per_run): (u32, u32) = (t.trim().parse().ok()?, k.trim().parse().ok()?);
        let ok = threads.is_power_of_two() && (32..=1024).contains(&threads) && (1..=32).contains(&items_per_run);
        ok.then_some(BlellochPolicy { threads, items_per_run })
    }

    /// Items one block scans: the driver's `block_len`.
    pub fn tile(self) -> usize {
        2 * self.threads as usize * self.items_per_run as usize
    }

    /// Dynamic shared memory of one block for items of `size` bytes: the padded
    /// tile, then the padded run totals (see `conflict_free` in the kernels).
    pub fn shared_bytes(self, size: usize) -> usize {
        let padded = |n: usize| n + n / 32 + 1;
        (padded(self.tile()) + padded(2 * self.threads as usize)) * size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_blelloch_policy_fits_shared_memory_and_keeps_tiles_power_of_two() {
        for size in [1, 4, 8, 12, 16, 24, 32, 64, 100, 256, 1000, 4096] {
            let p = BlellochPolicy::for_item_size(size).unwrap();
            assert!(p.shared_bytes(size) <= SHARED_LIMIT, "size {size}: {p:?}");
            assert!(p.tile().is_power_of_two(), "size {size}: {p:?}");
        }
    }

    #[test]
    fn huge_items_are_an_error_not_a_panic() {
        assert!(matches!(BlellochPolicy::for_item_size(1 << 20), Err(Error::TooLarge { .. })));
    }

    #[test]
    fn the_policy_variable_takes_what_the_kernels_take() {
        assert_eq!(BlellochPolicy::parse("256x8"), Some(BlellochPolicy { threads: 256, items_per_run: 8 }));
        assert_eq!(BlellochPolicy::parse(" 64 x 1 "), Some(BlellochPolicy { threads: 64, items_per_run: 1 }));
        for refused in ["256", "100x8", "16x8", "2048x8", "256x0", "256x33", "x", "256x8x2", "-256x8"] {
            assert_eq!(BlellochPolicy::parse(refused), None, "{refused}");
        }
    }
}
