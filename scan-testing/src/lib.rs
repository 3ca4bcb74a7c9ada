//! Test support shared by every test suite and benchmark of the `scan`
//! workspace (a dev-dependency only, never published): a seeded random source
//! whose seed is printed, the boundary sizes every algorithm is tested on, and
//! NaN-proof tolerance checks.

#![warn(missing_docs)]

/// SplitMix64, seeded from `SCAN_SEED` or the clock (the seed is printed so
/// that a failure can be replayed). The same generator the law tests of
/// `#[scan_op(assume_associative)]` use.
pub use scan_core::__private::Rng;

/// A random 2x2 integer matrix of determinant 1, row-major `[1 + ab, a, b,
/// 1]` (a, b uniform over the type, arithmetic wrapping): data for matrix
/// products that stay order-sensitive along a whole scan. Products of such
/// matrices keep determinant 1 modulo 2^32 (or 2^64), so they never reach
/// zero; products of matrices with random entries reach the zero matrix
/// after some 100-200 factors (every prefix is then 0, and a carry applied
/// on the wrong side or from the wrong tile gives the same zeros).
///
/// ```
/// let mut rng = scan_testing::Rng::new(7);
/// let [p, q, r, s] = scan_testing::unimodular_i32(&mut rng);
/// assert_eq!(p.wrapping_mul(s).wrapping_sub(q.wrapping_mul(r)), 1);
/// ```
pub fn unimodular_i32(rng: &mut Rng) -> [i32; 4] {
    let (a, b) = (rng.next_u64() as i32, rng.next_u64() as i32);
    [1i32.wrapping_add(a.wrapping_mul(b)), a, b, 1]
}

/// [`unimodular_i32`] in 64 bits.
pub fn unimodular_i64(rng: &mut Rng) -> [i64; 4] {
    let (a, b) = (rng.next_u64() as i64, rng.next_u64() as i64);
    [1i64.wrapping_add(a.wrapping_mul(b)), a, b, 1]
}

/// Sizes around every boundary of an algorithm whose tile or block holds
/// `tile` items: 0, 1, 2, 3, 7, 8, 9, 31..=33, tile-1..=tile+1, 1000,
/// 2·tile±1, and non-powers of two. Sorted, without duplicates.
pub fn boundary_sizes(tile: usize) -> Vec<usize> {
    let mut sizes = vec![0, 1, 2, 3, 7, 8, 9, 31, 32, 33, 1000, 4097];
    for t in [tile, 2 * tile, tile * tile.min(64)] {
        sizes.extend([t.saturating_sub(1), t, t + 1]);
    }
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

/// True when `got` is within `bound` of `want`. NaN anywhere (or an infinite
/// difference) is never within: a comparison written `err > bound` would let
/// NaN pass, this one cannot.
///
/// ```
/// use scan_testing::within;
/// assert!(within(1.0, 1.0 + 1e-9, 1e-6));
/// assert!(!within(f64::NAN, 1.0, 1e-6));
/// assert!(!within(1.0, 2.0, 1e-6));
/// ```
pub fn within(got: f64, want: f64, bound: f64) -> bool {
    (got - want).abs() <= bound
}

/// True when `got` is within mamba_ssm's f32 tolerances of `want` (its
/// selective-scan tests: atol 2e-3, rtol 6e-4, as |got - want| <= atol +
/// rtol |want|); NaN never is.
///
/// ```
/// use scan_testing::within_mamba_tolerance;
/// assert!(within_mamba_tolerance(1.0025, 1.0));
/// assert!(!within_mamba_tolerance(1.003, 1.0));
/// assert!(!within_mamba_tolerance(f64::NAN, 1.0));
/// ```
pub fn within_mamba_tolerance(got: f64, want: f64) -> bool {
    within(got, want, 2e-3 + 6e-4 * want.abs())
}

/// The kernels of a ptxas report (`scan_cuda::ptxas_report_mapped`, NVRTC's
/// `--ptxas-options=-v` log) whose name starts with `prefix` and that use
/// a stack frame or spill registers, as "name: N bytes stack frame, ...".
/// Empty when every such kernel keeps to its registers.
pub fn kernels_that_spill(report: &str, prefix: &str) -> Vec<String> {
    let mut current = None;
    let mut found = Vec::new();
    for line in report.lines() {
        if let Some(name) = line.split("Function properties for ").nth(1) {
            current = Some(name.trim().to_string());
        } else if line.contains("bytes stack frame") {
            // "ptxas         .     40 bytes stack frame, 54 bytes spill stores, ..."
            let numbers: Vec<u64> = line
                .split(',')
                .filter_map(|part| {
                    let words: Vec<&str> = part.split_whitespace().collect();
                    let at = words.iter().position(|&w| w == "bytes")?;
                    words.get(at.checked_sub(1)?)?.parse().ok()
                })
                .collect();
            if let Some(name) = current.take().filter(|n| n.starts_with(prefix)) {
                if numbers.iter().any(|&n| n > 0) {
                    found.push(format!("{name}: {}", line.trim()));
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::kernels_that_spill;

    #[test]
    fn spills_are_read_from_a_ptxas_report() {
        // As NVRTC 12.9 prints it.
        let report = "ptxas info    : Function properties for single_pass_mapped_forward_inclusive\n\
                      ptxas         .     24 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
                      ptxas info    : Function properties for single_pass_mapped_reverse_inclusive\n\
                      ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
                      ptxas info    : Function properties for single_pass_mapped_reverse_exclusive\n\
                      ptxas         .     40 bytes stack frame, 54 bytes spill stores, 92 bytes spill loads\n\
                      ptxas info    : Function properties for blelloch_scan_tile\n\
                      ptxas         .     8 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n";
        let spills = kernels_that_spill(report, "single_pass_mapped");
        assert_eq!(spills.len(), 2, "{spills:?}");
        assert!(spills[0].starts_with("single_pass_mapped_forward_inclusive: ptxas"), "{spills:?}");
        assert!(spills[1].contains("54 bytes spill stores"), "{spills:?}");
        assert!(kernels_that_spill("", "single_pass").is_empty());
    }
}
