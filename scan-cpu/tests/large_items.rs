//! Items of tens of KiB (a struct of big arrays is a legal item): every
//! algorithm and entry point scans them exactly, on the calling thread and
//! on helper threads, instead of overflowing a thread's stack (the tiled
//! path kept some 40 items of bookkeeping on the stack, and aborted the
//! process at 64 KiB items on 2 threads; found by the thirty-fifth
//! session's review). An abort here takes this test binary down, not the
//! others.

use scan_core::maps::Maps;
use scan_core::{reference, ScanOp, ScanSpec};
use scan_cpu::{Algorithm, Cpu};

/// An item of `W` words: an affine map (a, b) on its first two, so that the
/// operator does not commute, and sums on the rest.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Big<const W: usize>([u64; W]);

struct Compose<const W: usize>;

impl<const W: usize> ScanOp for Compose<W> {
    type Item = Big<W>;
    fn identity() -> Big<W> {
        let mut x = [0; W];
        x[0] = 1;
        Big(x)
    }
    fn combine(l: Big<W>, r: Big<W>) -> Big<W> {
        let mut x = r.0;
        x[0] = l.0[0].wrapping_mul(r.0[0]);
        x[1] = r.0[0].wrapping_mul(l.0[1]).wrapping_add(r.0[1]);
        for (x, l) in x.iter_mut().zip(&l.0).skip(2) {
            *x = x.wrapping_add(*l);
        }
        Big(x)
    }
}

/// The items themselves, lifted and projected unchanged.
struct Same;

impl<const W: usize> Maps<Compose<W>> for Same {
    type Input = Big<W>;
    type Output = Big<W>;
    fn lift(x: Big<W>) -> Big<W> {
        x
    }
    fn project(x: Big<W>) -> Big<W> {
        x
    }
}

/// `n` pseudo-random items whose first words are odd (so that products do
/// not run to 0).
fn items<const W: usize>(n: usize, seed: u64) -> Vec<Big<W>> {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        state >> 11
    };
    (0..n)
        .map(|_| {
            let mut x = [0; W];
            for w in x.iter_mut() {
                *w = next();
            }
            x[0] |= 1;
            Big(x)
        })
        .collect()
}

/// Every algorithm on 1 to 3 threads, every spec, lengths around the
/// tiled path's tile (8 items at these sizes) and its second worker (from
/// 8 tiles on 2 threads), out of place and in place, rows, and the mapped
/// scan.
fn check_every_entry_point<const W: usize>() {
    for n in [1, 9, 64, 70] {
        let x = items::<W>(n, n as u64);
        for spec in ScanSpec::ALL {
            let want = reference::scan::<Compose<W>>(&x, spec);
            for threads in 1..=3 {
                for algorithm in Algorithm::ALL {
                    let cpu = Cpu::new().with_algorithm(algorithm).with_threads(threads);
                    let ctx = format!("{} KiB items, n {n}, {spec:?}, {algorithm:?}, {threads} threads", W / 128);
                    assert!(cpu.scan::<Compose<W>>(&x, spec).expect("scan") == want, "scan: {ctx}");
                    let mut data = x.clone();
                    cpu.scan_in_place::<Compose<W>>(&mut data, spec).expect("in place");
                    assert!(data == want, "scan_in_place: {ctx}");
                    if n % 2 == 0 {
                        let rows = reference::scan_rows::<Compose<W>>(&x, 2, spec).expect("rows");
                        let mut out = x.clone();
                        cpu.scan_rows::<Compose<W>>(&x, &mut out, 2, spec).expect("scan_rows");
                        assert!(out == rows, "scan_rows: {ctx}");
                    }
                }
                let cpu = Cpu::new().with_threads(threads);
                let mut out = x.clone();
                cpu.scan_mapped::<Compose<W>, Same, _>(&x[..], &mut out, spec).expect("scan_mapped");
                assert!(out == want, "scan_mapped: {n} items, {spec:?}, {threads} threads");
                if n % 2 == 0 {
                    let rows = reference::scan_rows::<Compose<W>>(&x, 2, spec).expect("rows");
                    cpu.scan_mapped_rows::<Compose<W>, Same, _>(&x[..], &mut out, 2, spec).expect("mapped rows");
                    assert!(out == rows, "scan_mapped_rows: {n} items, {spec:?}, {threads} threads");
                }
            }
        }
    }
}

#[test]
fn items_of_64_kib_scan_exactly_on_every_path() {
    check_every_entry_point::<8192>();
}

#[test]
fn items_of_16_kib_scan_exactly_on_every_path() {
    check_every_entry_point::<2048>();
}
