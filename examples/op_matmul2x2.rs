//! 2x2 matrix products as a scan: a non-commutative operator with exact
//! (wrapping) integer arithmetic.
//!
//! Prints the generated CUDA, then (1) scans n copies of the Fibonacci matrix
//! `[[1, 1], [1, 0]]`, whose k-th prefix product holds F(k) (mod 2^64), and
//! (2) scans pseudo-random matrices, checking each prefix against a sequential fold.
//!
//! `cargo run --example op_matmul2x2`

use scan::{scan_op, Cpu, CudaOp, ScanSpec};

/// `l · r` on row-major `[m00, m01, m10, m11]`; integer arithmetic wraps.
#[scan_op(identity = [1, 0, 0, 1])]
pub fn mat_mul_2x2(l: [u64; 4], r: [u64; 4]) -> [u64; 4] {
    [l[0] * r[0] + l[1] * r[2], l[0] * r[1] + l[1] * r[3], l[2] * r[0] + l[3] * r[2], l[2] * r[1] + l[3] * r[3]]
}

fn product(l: [u64; 4], r: [u64; 4]) -> [u64; 4] {
    let (m, a) = (u64::wrapping_mul, u64::wrapping_add);
    [
        a(m(l[0], r[0]), m(l[1], r[2])),
        a(m(l[0], r[1]), m(l[1], r[3])),
        a(m(l[2], r[0]), m(l[3], r[2])),
        a(m(l[2], r[1]), m(l[3], r[3])),
    ]
}

pub fn main() -> scan::Result<()> {
    println!("{}", MatMul2x2::cuda_source().code);
    let cpu = Cpu::new();

    // Fibonacci: Q^k = [[F(k+1), F(k)], [F(k), F(k-1)]]; past k = 93 it wraps.
    let n = 200;
    let q = vec![[1u64, 1, 1, 0]; n];
    let powers = cpu.scan::<MatMul2x2>(&q, ScanSpec::inclusive())?;
    let (mut f_prev, mut f) = (0u64, 1u64); // F(0), F(1)
    for (k, p) in powers.iter().enumerate() {
        assert_eq!(p[1], f, "F({}) from the scan", k + 1);
        (f_prev, f) = (f, f.wrapping_add(f_prev));
    }
    println!("// Q^1..Q^{n}: F(k) correct (mod 2^64) for every k");

    let len = 10_007;
    // Deterministic words that use all 64 bits (the products wrap).
    let word = |i: usize| (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let ms: Vec<[u64; 4]> =
        (0..len).map(|i| [word(4 * i), word(4 * i + 1), word(4 * i + 2), word(4 * i + 3)]).collect();
    let got = cpu.scan::<MatMul2x2>(&ms, ScanSpec::exclusive())?;
    let mut acc = [1, 0, 0, 1];
    for (i, m) in ms.iter().enumerate() {
        assert_eq!(got[i], acc, "exclusive prefix {i}");
        acc = product(acc, *m);
    }
    println!("// {len} pseudo-random matrices: every exclusive prefix product exact");
    Ok(())
}
