//! The sequential algorithm: one pass, one chain of combines.

use std::mem::MaybeUninit;

use scan_core::{ScanOp, ScanSpec};

/// Scans `input` into `output` (same length) in one pass: the loop of
/// `scan_core::reference`, reading the input and writing the output once.
pub(crate) fn scan_into<Op: ScanOp>(input: &[Op::Item], output: &mut [MaybeUninit<Op::Item>], spec: ScanSpec) {
    debug_assert_eq!(input.len(), output.len());
    let mut acc = Op::identity();
    let inclusive = spec.is_inclusive();
    let mut step = |(slot, &x): (&mut MaybeUninit<Op::Item>, &Op::Item)| {
        let next = Op::combine(acc, x);
        slot.write(if inclusive { next } else { acc });
        acc = next;
    };
    if spec.is_reverse() {
        output.iter_mut().rev().zip(input.iter().rev()).for_each(&mut step);
    } else {
        output.iter_mut().zip(input).for_each(&mut step);
    }
}
