//! The tile scan's chains eight lanes at a time (AVX2, 4-byte items).
//!
//! The [`CHAINS`](super::CHAINS) chains of a tile advance in lockstep, one
//! item each per step, so a step is eight independent combines: one vector
//! operation, if the eight items sat in one register. They sit in eight
//! chunks instead. Here each chain's next 8 items are loaded as one vector
//! (8 loads), the 8x8 block is transposed so that vector `j` holds item `j`
//! of every chain, the chains take 8 vector steps (`Op::combine` lane by
//! lane, in its accumulating form, accumulate.rs, which the compiler turns
//! into vector instructions for branch-free operators), and the block is
//! transposed back and stored. The order of combination in every chain is
//! the scalar loop's, so the results are the same bit for bit (up to which
//! NaN a NaN result is, which Rust leaves open).

use std::arch::x86_64::*;

use scan_core::ScanOp;

use super::accumulate;

/// Transposes an 8x8 block of 32-bit lanes: `out[j]` lane `k` = `rows[k]` lane `j`.
#[inline(always)]
unsafe fn transpose(rows: [__m256; 8]) -> [__m256; 8] {
    let [r0, r1, r2, r3, r4, r5, r6, r7] = rows;
    let (t0, t1) = (_mm256_unpacklo_ps(r0, r1), _mm256_unpackhi_ps(r0, r1));
    let (t2, t3) = (_mm256_unpacklo_ps(r2, r3), _mm256_unpackhi_ps(r2, r3));
    let (t4, t5) = (_mm256_unpacklo_ps(r4, r5), _mm256_unpackhi_ps(r4, r5));
    let (t6, t7) = (_mm256_unpacklo_ps(r6, r7), _mm256_unpackhi_ps(r6, r7));
    let (u0, u1) = (_mm256_shuffle_ps::<0x44>(t0, t2), _mm256_shuffle_ps::<0xEE>(t0, t2));
    let (u2, u3) = (_mm256_shuffle_ps::<0x44>(t1, t3), _mm256_shuffle_ps::<0xEE>(t1, t3));
    let (u4, u5) = (_mm256_shuffle_ps::<0x44>(t4, t6), _mm256_shuffle_ps::<0xEE>(t4, t6));
    let (u6, u7) = (_mm256_shuffle_ps::<0x44>(t5, t7), _mm256_shuffle_ps::<0xEE>(t5, t7));
    [
        _mm256_permute2f128_ps::<0x20>(u0, u4),
        _mm256_permute2f128_ps::<0x20>(u1, u5),
        _mm256_permute2f128_ps::<0x20>(u2, u6),
        _mm256_permute2f128_ps::<0x20>(u3, u7),
        _mm256_permute2f128_ps::<0x31>(u0, u4),
        _mm256_permute2f128_ps::<0x31>(u1, u5),
        _mm256_permute2f128_ps::<0x31>(u2, u6),
        _mm256_permute2f128_ps::<0x31>(u3, u7),
    ]
}

/// The 8 items at `p` in reverse order when `REV` (scan order runs down).
#[inline(always)]
unsafe fn load<const REV: bool>(p: *const f32) -> __m256 {
    let v = _mm256_loadu_ps(p);
    if REV {
        _mm256_permutevar8x32_ps(v, _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0))
    } else {
        v
    }
}

#[inline(always)]
unsafe fn store<const REV: bool>(p: *mut f32, v: __m256) {
    let v = if REV { _mm256_permutevar8x32_ps(v, _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0)) } else { v };
    _mm256_storeu_ps(p, v);
}

/// Advances the 8 chains `acc` over scan positions `i..i + 8` of each chunk
/// of `sub` items, reading `src` and writing `out` as the scalar step does.
///
/// # Safety
/// AVX2 is available; `Op::Item` is 4 bytes; `(i + 8) <= sub` and
/// `8 * sub <= n`; `src`/`out` as for `local_scan`.
#[inline(always)]
pub(super) unsafe fn block<Op: ScanOp, const REV: bool, const INCL: bool>(
    src: *const Op::Item,
    out: *mut Op::Item,
    n: usize,
    sub: usize,
    i: usize,
    acc: &mut [Op::Item; 8],
) {
    // The lowest address of chain k's 8 items.
    let base = |k: usize| if REV { n - 8 - (k * sub + i) } else { k * sub + i };
    let rows: [__m256; 8] = std::array::from_fn(|k| load::<REV>(src.add(base(k)).cast()));
    let cols = transpose(rows);
    let mut done = [_mm256_setzero_ps(); 8];
    for (col, done) in cols.iter().zip(&mut done) {
        let x: [Op::Item; 8] = std::mem::transmute_copy(col);
        let next: [Op::Item; 8] = std::array::from_fn(|l| accumulate::<Op>(acc[l], x[l]));
        *done = std::mem::transmute_copy(if INCL { &next } else { &*acc });
        *acc = next;
    }
    for (k, row) in transpose(done).into_iter().enumerate() {
        store::<REV>(out.add(base(k)).cast(), row);
    }
}
