//! Writing a finished tile to the output.
//!
//! A plain store to memory that is not in cache first reads the line
//! (read-for-ownership), so a scan that stores its output normally moves
//! 12 bytes per f32 item against a copy's 8. Non-temporal stores write whole
//! lines without reading them, which is what `memcpy` does for large buffers;
//! on x86_64 the tile is copied out with them.

/// Copies `src` to `dst`, bypassing the caches where the target allows.
///
/// The copy works on the bytes of the items, so it is correct for any `T`
/// (padding bytes included: the non-temporal part is an `asm!` block, which may
/// copy uninitialized bytes as `ptr::copy` may). The stores are fenced before
/// returning, so later ordinary stores and atomics are ordered after them.
///
/// # Safety
/// `dst` must be valid for writes of `src.len()` items and must not overlap `src`.
#[inline]
pub(crate) unsafe fn copy_streaming<T: Copy>(src: &[T], dst: *mut T) {
    let bytes = std::mem::size_of_val(src);
    let src = src.as_ptr().cast::<u8>();
    let dst = dst.cast::<u8>();
    #[cfg(target_arch = "x86_64")]
    {
        // Head up to the first 64-byte line boundary of the destination, whole
        // lines with non-temporal stores, then the tail.
        let head = ((dst as usize).wrapping_neg() & 63).min(bytes);
        let lines = (bytes - head) / 64;
        // SAFETY (all three): the caller guarantees `bytes` writable bytes at
        // `dst` that do not overlap the `bytes` readable bytes at `src`.
        std::ptr::copy_nonoverlapping(src, dst, head);
        if lines > 0 {
            stream_lines(src.add(head), dst.add(head), lines);
        }
        let done = head + 64 * lines;
        std::ptr::copy_nonoverlapping(src.add(done), dst.add(done), bytes - done);
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        // SAFETY: the caller guarantees the ranges, as above.
        std::ptr::copy_nonoverlapping(src, dst, bytes);
    }
}

/// Copies `lines` 64-byte lines from `src` to the 64-byte aligned `dst` with
/// non-temporal stores (SSE2, part of the x86_64 baseline), then `sfence`.
///
/// # Safety
/// `dst` 64-byte aligned; `64 * lines` bytes readable at `src`, writable at
/// `dst`, not overlapping; `lines > 0`.
#[cfg(target_arch = "x86_64")]
#[inline]
unsafe fn stream_lines(src: *const u8, dst: *mut u8, lines: usize) {
    std::arch::asm!(
        "2:",
        "movdqu {a}, xmmword ptr [{src}]",
        "movdqu {b}, xmmword ptr [{src} + 16]",
        "movdqu {c}, xmmword ptr [{src} + 32]",
        "movdqu {d}, xmmword ptr [{src} + 48]",
        "movntdq xmmword ptr [{dst}], {a}",
        "movntdq xmmword ptr [{dst} + 16], {b}",
        "movntdq xmmword ptr [{dst} + 32], {c}",
        "movntdq xmmword ptr [{dst} + 48], {d}",
        "add {src}, 64",
        "add {dst}, 64",
        "dec {n}",
        "jnz 2b",
        "sfence",
        src = inout(reg) src => _,
        dst = inout(reg) dst => _,
        n = inout(reg) lines => _,
        a = out(xmm_reg) _,
        b = out(xmm_reg) _,
        c = out(xmm_reg) _,
        d = out(xmm_reg) _,
        options(nostack),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streaming_copy_is_exact_for_every_length_and_destination_offset() {
        let src: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        for offset in 0..70 {
            for len in [0, 1, 15, 63, 64, 65, 127, 128, 129, 500, 900] {
                let mut dst = vec![0xAAu8; 1000 + 70];
                // SAFETY: dst has offset + len <= 1070 bytes, distinct from src.
                unsafe { copy_streaming(&src[..len], dst.as_mut_ptr().add(offset)) };
                assert_eq!(&dst[offset..offset + len], &src[..len], "offset {offset} len {len}");
                assert!(dst[..offset].iter().all(|&b| b == 0xAA), "wrote before the destination");
                assert!(dst[offset + len..].iter().all(|&b| b == 0xAA), "wrote past the destination");
            }
        }
    }

    #[test]
    fn streaming_copy_keeps_multi_byte_items_intact() {
        let src: Vec<(f32, f32, f32)> = (0..300).map(|i| (i as f32, -(i as f32), 0.5 * i as f32)).collect();
        let mut dst = vec![(0.0f32, 0.0f32, 0.0f32); 301];
        // SAFETY: dst[1..] holds 300 items, distinct from src.
        unsafe { copy_streaming(&src, dst.as_mut_ptr().add(1)) };
        assert_eq!(&dst[1..], &src[..]);
    }
}
