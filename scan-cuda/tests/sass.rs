//! The machine code of the tile-status accesses (no GPU needed): every
//! status word must be read and written by one access of its full width.
//!
//! A packed or tagged status word (kernels/tile_status.cuh) holds a code
//! beside a value, and a reader trusts the value because both arrive in one
//! access. PTX promises no such thing for vector loads, and ptxas splits a
//! vector load whose halves are partly unused: tagged statuses of u32 items
//! compiled to two 4-byte loads and scanned wrong on the H200 (2026-12-02)
//! until every half of a word took part in the read. This test compiles the
//! single-pass modules of items of every size and layout with NVRTC,
//! disassembles them with `cuobjdump -sass`, and checks that every strong
//! (status) load and store of every single-pass kernel is 16 bytes wide (8
//! for packed statuses of items of up to 4 bytes). The kernels make no other
//! strong accesses (the counter is an atomic, everything else is weak).
//!
//! Needs libnvrtc, `cuobjdump` and `nvdisasm` on the PATH (or `cuobjdump`
//! named by `SCAN_CUOBJDUMP`): `pip install --user nvidia-cuda-cuobjdump
//! nvidia-cuda-nvdisasm` puts both in `$(python3 -m site
//! --user-site)/nvidia/cu13/bin` (.ci/run does this).

mod support;

use std::collections::BTreeMap;
use std::process::Command;

use scan_core::ops::{Add, LinearRecurrence, MatMul2x2, Segmented};
use scan_core::CudaOp;
use scan_cuda::{StatusLayout, Tuning};
use support::user_ops::{AffineI32Counted, CountAndSum, QuaternionProduct};

/// `(kernel, access)` counts of the strong global loads and stores in
/// `cubin`'s single-pass kernels, e.g. `("single_pass_forward_inclusive",
/// "LDG.E.128.STRONG.GPU") -> 3`.
fn strong_accesses(cubin: &[u8], label: &str) -> BTreeMap<(String, String), usize> {
    static FILES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!("scan-sass-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{}.cubin", FILES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)));
    std::fs::write(&path, cubin).unwrap();
    let tool = std::env::var("SCAN_CUOBJDUMP").unwrap_or_else(|_| "cuobjdump".into());
    let out = Command::new(&tool).arg("-sass").arg(&path).output().unwrap_or_else(|e| {
        panic!("{tool} did not run ({e}): install it (see this file's header) or set SCAN_CUOBJDUMP")
    });
    assert!(out.status.success(), "{tool} -sass {label}: {}", String::from_utf8_lossy(&out.stderr));
    let sass = String::from_utf8_lossy(&out.stdout);
    let mut counts = BTreeMap::new();
    let mut function = String::new();
    for line in sass.lines() {
        if let Some(rest) = line.split("Function : ").nth(1) {
            function = rest.trim().to_string();
            continue;
        }
        if !function.starts_with("single_pass") {
            continue;
        }
        if let Some(op) = line.split_whitespace().find(|w| {
            (w.starts_with("LDG") || w.starts_with("STG") || w.starts_with("LD.") || w.starts_with("ST."))
                && w.contains("STRONG")
        }) {
            *counts.entry((function.clone(), op.to_string())).or_insert(0) += 1;
        }
    }
    assert!(!counts.is_empty(), "{label}: no strong accesses found in any single-pass kernel:\n{sass:.2000}");
    counts
}

/// Every strong access of `Op`'s plain module (and, with `segmented`, of
/// its rows, flags and offsets modules) under `tuning` is `width` bytes.
fn check<Op: CudaOp>(tuning: Tuning, width: usize, segmented: bool) {
    let name = format!("{} with {tuning:?}", std::any::type_name::<Op>());
    let mut cubins = vec![scan_cuda::compile_with::<Op>("sm_90", tuning).unwrap_or_else(|e| panic!("{name}: {e}"))];
    if segmented {
        cubins
            .extend(scan_cuda::compile_segmented_with::<Op>("sm_90", tuning).unwrap_or_else(|e| panic!("{name}: {e}")));
    }
    let suffix = if width == 16 { ".128.".to_string() } else { format!(".{}.", 8 * width) };
    for (i, cubin) in cubins.iter().enumerate() {
        for ((kernel, op), n) in strong_accesses(cubin, &format!("{name} {i}")) {
            assert!(op.contains(&suffix), "{name}, {kernel}: {n} x {op}, want every status access {width} bytes wide");
        }
    }
}

#[test]
#[ignore = "needs libnvrtc, cuobjdump and nvdisasm"]
fn every_status_word_is_one_full_width_access() {
    let packed = Tuning::default().status(StatusLayout::Packed);
    let tagged = Tuning::default().status(StatusLayout::Tagged);
    // Packed: 4-byte items in 8-byte words, 8-byte items in 16-byte ones.
    check::<Add<u32>>(packed, 8, false);
    check::<Add<f32>>(Tuning::default(), 8, true);
    check::<LinearRecurrence<f32>>(packed, 16, true);
    // Tagged: one 16-byte word per 8-byte piece, items of every kind,
    // including the ones whose halves are partly unused: a 4-byte item, a
    // 12-byte one (its last piece half empty), and padding inside the item
    // (a bool head beside an f64; a u32 beside an i64).
    check::<Add<u32>>(tagged, 16, false);
    check::<AffineI32Counted>(tagged, 16, false);
    check::<Segmented<Add<f64>>>(tagged, 16, true);
    check::<CountAndSum>(tagged, 16, false);
    check::<MatMul2x2<i32>>(tagged, 16, false);
    check::<LinearRecurrence<f64>>(tagged, 16, true);
    check::<QuaternionProduct>(tagged, 16, false);
    check::<MatMul2x2<i32>>(tagged.deterministic(true), 16, false);
}
