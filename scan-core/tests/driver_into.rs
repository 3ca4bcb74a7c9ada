//! The out-of-place driver: reads the input, writes every output item, and
//! leaves the input as it was.

use scan_core::blelloch::{scan_into, SliceBackend};
use scan_core::ops::{Add, MatMul2x2};
use scan_core::{reference, Error, ScanSpec};
use scan_testing::{boundary_sizes, Rng};

#[test]
fn scan_into_writes_every_item_and_keeps_the_input() {
    let mut rng = Rng::fresh("scan_into");
    for block in [2, 3, 4, 8] {
        let backend = SliceBackend::new(block);
        for n in boundary_sizes(block) {
            // Non-commutative and exact: wrapping 2x2 integer matrices of
            // determinant 1 (random entries collapse to the zero matrix
            // within a few hundred factors).
            let x: Vec<[i32; 4]> = rng.vec(n, scan_testing::unimodular_i32);
            for spec in ScanSpec::ALL {
                let poison = [i32::MIN; 4];
                let mut out = vec![poison; n];
                let input = x.clone();
                scan_into::<MatMul2x2<i32>, _>(&backend, &input[..], &mut out[..], n, spec).unwrap();
                assert_eq!(out, reference::scan::<MatMul2x2<i32>>(&x, spec), "block {block}, n {n}, {spec:?}");
                assert_eq!(input, x, "the input changed");
            }
        }
    }
}

#[test]
fn a_length_past_the_buffers_is_an_error_not_a_panic() {
    let backend = SliceBackend::new(4);
    let x = [1u32, 2, 3];
    let mut out = [0u32; 5];
    let err = scan_into::<Add<u32>, _>(&backend, &x[..], &mut out[..], 5, ScanSpec::inclusive());
    let message = err.expect_err("len past the input").to_string();
    assert_eq!(message, "wrong shape: `input` must be at least `len` = 5 items, found 3 items");
    let mut data = [1u32, 2];
    let err = scan_core::blelloch::scan_in_place::<Add<u32>, _>(&backend, &mut data[..], 3, ScanSpec::inclusive());
    assert!(matches!(&err, Err(Error::WrongShape { argument, .. }) if argument == "data"), "{err:?}");
    assert_eq!(data, [1, 2]);
}
