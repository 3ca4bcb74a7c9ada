//! Shared by the scan-cpu test files: the sizes to test and the loop over
//! every algorithm, kind, direction and call form.

#![allow(dead_code)] // each test file uses part of it

use std::fmt::Debug;

use scan_core::{reference, ScanOp, ScanSpec};
use scan_cpu::{tile_len, Algorithm, Cpu, BLELLOCH_BLOCK_LEN};

/// The large size every suite includes: past 2^20, not a power of two.
pub const BIG: usize = (1 << 20) + 7;

/// 0, 1, 2, 3, 7, 8, 9, 31..=33, 1000, and t-1..=t+1, 2t-1..=2t+1 around the
/// tiled path's tile and the Blelloch block, and 8 tiles + 5 (the first sizes
/// that the tiled path spreads over two threads).
pub fn sizes<T>() -> Vec<usize> {
    let mut s = vec![0, 1, 2, 3, 7, 8, 9, 31, 32, 33, 1000];
    for t in [tile_len::<T>(), BLELLOCH_BLOCK_LEN] {
        s.extend([t - 1, t, t + 1, 2 * t - 1, 2 * t, 2 * t + 1]);
    }
    s.push(8 * tile_len::<T>() + 5);
    s.sort_unstable();
    s.dedup();
    s
}

/// How a result is judged.
pub enum Check<'a, T> {
    /// Equal to `scan_core::reference` item for item.
    Exact,
    /// `f(spec, got)` returns the first wrong index, if any.
    Custom(&'a dyn Fn(ScanSpec, &[T]) -> Option<usize>),
}

/// Runs `x` through every algorithm (on the default number of threads), every
/// kind and direction, and the three call forms (`scan`, `scan_into`,
/// `scan_in_place`), and checks each result. With `big`, only the forms that
/// differ in how they write (`scan` into fresh memory, `scan_in_place`) run.
pub fn for_each_scan<Op>(x: &[Op::Item], big: bool, check: Check<'_, Op::Item>)
where
    Op: ScanOp,
    Op::Item: PartialEq + Debug,
{
    for_each_scan_on::<Op>(&Algorithm::ALL.map(|a| Cpu::new().with_algorithm(a)), x, big, check)
}

/// [`for_each_scan`] on the given executors.
pub fn for_each_scan_on<Op>(cpus: &[Cpu], x: &[Op::Item], big: bool, check: Check<'_, Op::Item>)
where
    Op: ScanOp,
    Op::Item: PartialEq + Debug,
{
    let n = x.len();
    for spec in ScanSpec::ALL {
        let want = match check {
            Check::Exact => Some(reference::scan::<Op>(x, spec)),
            Check::Custom(_) => None,
        };
        let judge = |what: &str, got: &[Op::Item]| {
            assert_eq!(got.len(), n, "{what}: output length");
            let bad = match (&check, &want) {
                (Check::Exact, Some(want)) => (0..n).find(|&i| got[i] != want[i]),
                (Check::Custom(f), _) => f(spec, got),
                (Check::Exact, None) => unreachable!(),
            };
            if let Some(i) = bad {
                let expected = want.as_ref().map(|w| format!("{:?}", w[i])).unwrap_or_else(|| "see the bound".into());
                panic!("{what}: n = {n}, {spec:?}: wrong at index {i}: got {:?}, want {expected}", got[i]);
            }
        };
        for cpu in cpus {
            let got = cpu.scan::<Op>(x, spec).unwrap_or_else(|e| panic!("{cpu} scan: {e}"));
            judge(&format!("{cpu} scan"), &got);

            if !big {
                // A stale output must be overwritten everywhere: start from
                // the input reversed.
                let mut out: Vec<Op::Item> = x.iter().rev().copied().collect();
                cpu.scan_into::<Op>(x, &mut out, spec).unwrap_or_else(|e| panic!("{cpu} scan_into: {e}"));
                judge(&format!("{cpu} scan_into"), &out);
            }

            let mut data = x.to_vec();
            cpu.scan_in_place::<Op>(&mut data, spec).unwrap_or_else(|e| panic!("{cpu} scan_in_place: {e}"));
            judge(&format!("{cpu} scan_in_place"), &data);
        }
    }
}
