//! GPU test support: opening the device, poisoned runs, comparisons with the
//! sequential reference.
#![allow(dead_code)]

use std::fmt::Debug;

use scan_core::{reference, CudaOp, ScanSpec};
use scan_cuda::{Algorithm, BlellochPolicy, Cuda, SinglePassPolicy};
use scan_testing::{boundary_sizes, Rng};

/// The GPU, or a failure: a GPU test that cannot run must not pass. (These
/// tests are `#[ignore]`d so that machines without a GPU never run them;
/// run with `--ignored` they fail without one, whatever the environment.
/// The runner scripts set `SCAN_REQUIRE_GPU=1`, which only shows in this
/// message: it says the run was meant for a GPU machine.)
pub fn cuda() -> Cuda {
    match Cuda::new() {
        Ok(cuda) => cuda,
        Err(e) => panic!(
            "this test needs a CUDA GPU and none is usable (SCAN_REQUIRE_GPU={:?}): {e}",
            std::env::var("SCAN_REQUIRE_GPU").ok()
        ),
    }
}

/// One executor per GPU algorithm: every differential check runs on each.
pub fn executors() -> Vec<Cuda> {
    Algorithm::ALL.into_iter().map(|a| cuda().with_algorithm(a)).collect()
}

/// Caps sizes (e.g. under compute-sanitizer, which is slow): `SCAN_TEST_MAX_LEN`.
pub fn max_len() -> usize {
    std::env::var("SCAN_TEST_MAX_LEN").ok().and_then(|v| v.parse().ok()).unwrap_or(usize::MAX)
}

/// The single-pass tile `Op`'s plain scans run by default on an sm_90 GPU
/// (the H200 these tests run on): `SinglePassPolicy::plain_default`.
pub fn single_pass_tile<Op: CudaOp>() -> usize {
    SinglePassPolicy::plain_default(std::mem::size_of::<Op::Item>(), 90).map_or(0, |p| p.tile())
}

/// The single-pass tile of `Op` under a Tuning that sets a shape (or
/// `deterministic(false)`): `SinglePassPolicy::for_item`'s.
pub fn free_lookback_tile<Op: CudaOp>() -> usize {
    SinglePassPolicy::for_item(std::mem::size_of::<Op::Item>(), 90).map_or(0, |p| p.tile())
}

/// The tile of `Op`'s fused-map kernels on the H200 for maps that read
/// `input_bytes` per position (`SinglePassPolicy::for_maps`).
#[allow(dead_code)]
pub fn mapped_tile<Op: CudaOp>(input_bytes: usize) -> usize {
    let size = std::mem::size_of::<Op::Item>();
    SinglePassPolicy::for_item(size, 90).map_or(0, |p| p.for_maps(input_bytes, size).tile())
}

/// The tile of `Op`'s kernels of rows through fused maps
/// (`Cuda::scan_mapped_rows`: `for_maps`, then `for_segments`' runs).
#[allow(dead_code)]
pub fn mapped_rows_tile<Op: CudaOp>(input_bytes: usize) -> usize {
    let size = std::mem::size_of::<Op::Item>();
    SinglePassPolicy::for_item(size, 90).map_or(0, |p| p.for_maps(input_bytes, size).for_segments().tile())
}

/// Sizes around every boundary of both GPU algorithms for `Op`: for the
/// Blelloch tiling, around one tile, two tiles, `tile * min(tile, 64)`, and
/// past `tile^2` (three driver levels) when that stays under ~256 MiB; for the
/// single-pass tiling, around one and two tiles, one look-back window (32
/// tiles) and two, and past them, and around one and two of the
/// deterministic look-back's fixed groups.
pub fn gpu_sizes<Op: CudaOp>() -> Vec<usize> {
    let size = std::mem::size_of::<Op::Item>();
    let tile = BlellochPolicy::for_item_size(size).unwrap().tile();
    let mut sizes = boundary_sizes(tile);
    sizes.push((1 << 20) + 7);
    if (tile * tile + 1) * size <= 256 << 20 {
        sizes.extend([tile * tile - 1, tile * tile + 1]);
    }
    let single = single_pass_tile::<Op>();
    if single > 0 {
        sizes.extend(boundary_sizes(single));
        for t in [32 * single, 33 * single, 64 * single, 64 * single + single / 2] {
            sizes.extend([t - 1, t, t + 1]);
        }
        // The deterministic look-back's fixed groups of `32 * lookback`
        // tiles (128 for 4-byte items by default), one and two of them.
        if let Ok(p) = SinglePassPolicy::plain_default(size, 90) {
            let group = 32 * p.lookback as usize * p.tile();
            for t in [group, 2 * group] {
                sizes.extend([t - 1, t, t + 1]);
            }
        }
    }
    sizes.retain(|&n| n <= max_len());
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

fn first_mismatch<T: Debug>(got: &[T], want: &[T], eq: &impl Fn(&T, &T) -> bool) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!("length {} != {}", got.len(), want.len()));
    }
    let bad = got.iter().zip(want).position(|(g, w)| !eq(g, w))?;
    let count = got.iter().zip(want).filter(|(g, w)| !eq(g, w)).count();
    Some(format!("{count} mismatches; first at {bad}: got {:?}, want {:?}", got[bad], want[bad]))
}

/// The byte poisoned outputs are filled with. 0x01 repeated is a valid value
/// of every item type these tests scan (integers, floats, `bool` (true),
/// aggregates of them), so an item a kernel left unwritten is still a valid
/// value, which the comparison then reports; it is also no scan result the tests' data makes
/// (an exclusive scan's first item is the identity, never 0x0101...).
pub const POISON: u8 = 0x01;

/// `n` items made of [`POISON`] bytes.
pub fn poisoned<T: Copy>(n: usize) -> Vec<T> {
    let mut v = Vec::<T>::with_capacity(n);
    // SAFETY: the capacity holds `n` items, whose bytes are all written; POISON
    // repeated is a valid value of every item type these tests scan (above).
    unsafe {
        std::ptr::write_bytes(v.as_mut_ptr(), POISON, n);
        v.set_len(n);
    }
    v
}

/// Runs `Op` on the GPU, on every executor (one per algorithm), for every
/// size and every (kind, direction), three ways, and compares every item of
/// each with `reference::scan` under `eq`:
/// device-to-device out of place into an output poisoned first (the scan
/// reads the input and must write every output item: nothing is copied over
/// the output first), device in place, and the host convenience API. Also
/// checks that the out-of-place input is left unchanged.
pub fn check_op<Op: CudaOp>(
    executors: &[Cuda],
    label: &str,
    mut gen: impl FnMut(&mut Rng) -> Op::Item,
    eq: impl Fn(&Op::Item, &Op::Item) -> bool,
) where
    Op::Item: Debug,
{
    let mut rng = Rng::fresh(label);
    let sizes = gpu_sizes::<Op>();
    for cuda in executors {
        for &n in &sizes {
            for spec in ScanSpec::ALL {
                let input = rng.vec(n, &mut gen);
                let want = reference::scan::<Op>(&input, spec);
                let ctx = format!("{label} ({}): n = {n}, {spec:?}", cuda.algorithm());

                let dev_in = cuda.upload(&input).unwrap();
                let mut dev_out = cuda.upload(&poisoned::<Op::Item>(n)).unwrap();
                cuda.scan_device_into::<Op>(&dev_in, &mut dev_out, spec).unwrap();
                if let Some(m) = first_mismatch(&dev_out.download().unwrap(), &want, &eq) {
                    panic!("{ctx}, device into poisoned output: {m}");
                }
                // NaN items (e.g. max's inputs) are unchanged when still NaN.
                let same = |a: &Op::Item, b: &Op::Item| eq(a, b) || (!eq(a, a) && !eq(b, b));
                if let Some(m) = first_mismatch(&dev_in.download().unwrap(), &input, &same) {
                    panic!("{ctx}: the input buffer changed: {m}");
                }

                let mut buf = cuda.upload(&input).unwrap();
                cuda.scan_device::<Op>(&mut buf, spec).unwrap();
                if let Some(m) = first_mismatch(&buf.download().unwrap(), &want, &eq) {
                    panic!("{ctx}, device in place: {m}");
                }

                let got = cuda.scan::<Op>(&input, spec).unwrap();
                if let Some(m) = first_mismatch(&got, &want, &eq) {
                    panic!("{ctx}, host API: {m}");
                }
            }
        }
    }
    eprintln!("[{label}] ok on sizes {sizes:?} x 4 specs x 3 ways x {} algorithms", executors.len());
}

/// Runs `Op`'s batched scans (`scan_rows` out of place into an output filled
/// with `garbage`, and `scan_rows_in_place`) on `[rows, row_len]` shapes
/// around the tile boundaries, every (kind, direction), against
/// `reference::scan_rows` item by item.
pub fn check_rows<Op: CudaOp>(
    executors: &[Cuda],
    label: &str,
    garbage: Op::Item,
    mut gen: impl FnMut(&mut Rng) -> Op::Item,
    eq: impl Fn(&Op::Item, &Op::Item) -> bool,
) where
    Op::Item: Debug,
{
    let tile = BlellochPolicy::for_item_size(std::mem::size_of::<Op::Item>()).unwrap().tile();
    let single = single_pass_tile::<Op>().max(1);
    let mut rng = Rng::fresh(label);
    let shapes = [(1, 0), (3, 0), (1, 1), (5, 1), (7, 3), (3, tile - 1), (4, tile), (3, tile + 1), (2, 2 * tile + 5)];
    let more = [(3, single - 1), (3, single + 1), (2, 33 * single + 3)];
    let shapes: Vec<_> = shapes.into_iter().chain(more).filter(|&(r, c)| r * c <= max_len()).collect();
    for cuda in executors {
        for &(rows, row_len) in &shapes {
            for spec in ScanSpec::ALL {
                let input = rng.vec(rows * row_len, &mut gen);
                let want = reference::scan_rows::<Op>(&input, rows, spec).unwrap();
                let ctx = format!("{label} ({}): {rows} rows of {row_len}, {spec:?}", cuda.algorithm());

                let mut out = vec![garbage; input.len()];
                cuda.scan_rows::<Op>(&input, &mut out, rows, spec).unwrap();
                if let Some(m) = first_mismatch(&out, &want, &eq) {
                    panic!("{ctx}, scan_rows: {m}");
                }

                let mut data = input;
                cuda.scan_rows_in_place::<Op>(&mut data, rows, spec).unwrap();
                if let Some(m) = first_mismatch(&data, &want, &eq) {
                    panic!("{ctx}, scan_rows_in_place: {m}");
                }
            }
        }
    }
    eprintln!("[{label}] rows ok on shapes {shapes:?} x 4 specs x 2 ways");
}

/// Exact equality (NaN never passes: `NaN != NaN`).
pub fn exact<T: PartialEq>(a: &T, b: &T) -> bool {
    a == b
}

/// Small integers as floats: sums and products stay exact, so float
/// operators can be compared exactly whatever the order of combination.
pub fn small_int(rng: &mut Rng) -> f64 {
    rng.below(17) as f64 - 8.0
}

/// The tile of `Op`'s rows kernels on an sm_90 GPU
/// (`SinglePassPolicy::for_segments`: shorter than the plain scan's for
/// items of 4 bytes or less; 4-byte items take it from the deterministic
/// shape, whose tile is the same 256 x 16, as the unit test
/// `rows_of_one_tile_take_a_block_each_and_longer_whole_tiles_the_plain_code_path`
/// checks), and
/// the flags and offsets kernels' fallback tile.
pub fn segmented_tile<Op: CudaOp>() -> usize {
    SinglePassPolicy::for_item(std::mem::size_of::<Op::Item>(), 90).map_or(0, |p| p.for_segments().tile())
}

/// The tile of `Op`'s flags and offsets kernels on an sm_90 GPU where their
/// long runs do not spill (`SinglePassPolicy::for_segment_heads`: 32-item
/// runs for 4-byte items).
pub fn segment_heads_tile<Op: CudaOp>() -> usize {
    SinglePassPolicy::for_item(std::mem::size_of::<Op::Item>(), 90).map_or(0, |p| p.for_segment_heads().tile())
}

/// The row lengths around every boundary, for `Op`'s single-pass
/// tiles (the plain scan's, which a single row runs, and the rows kernel's):
/// 1, 2, 31, 32, 33, 1000, tile - 1, tile, tile + 1 of each, 2^20 + 7.
pub fn row_lengths<Op: CudaOp>() -> Vec<usize> {
    let mut lengths = vec![1, 2, 31, 32, 33, 1000, (1 << 20) + 7];
    for tile in [single_pass_tile::<Op>().max(2), segmented_tile::<Op>().max(2)] {
        lengths.extend([tile - 1, tile, tile + 1]);
    }
    // Rows of whole tiles of the rows kernels (heads.cuh, TileRows): several
    // tiles each, whose look-back must stop at the row's start; and the
    // edges of rows of one tile, a block each (row_tiles.cuh): more than
    // half a tile (partial warps past the row's end), or half (several rows
    // to a tile).
    let tile = segmented_tile::<Op>().max(2);
    lengths.extend([2 * tile, 3 * tile, tile / 2, tile / 2 + 1]);
    lengths.sort_unstable();
    lengths.dedup();
    lengths
}

/// Random segment starts over `n` items: lengths drawn from 0, 1, short,
/// up to 2000 and (rarely) longer than `long`, so that empty segments, single
/// items, segments inside one tile and segments across tiles all occur.
pub fn random_starts(rng: &mut Rng, n: usize, long: usize) -> Vec<usize> {
    // Half the time bare starts (item 0 starts a segment all the same).
    let mut starts = if rng.below(2) == 0 { vec![0] } else { Vec::new() };
    let mut at = 0;
    while at < n {
        let len = match rng.below(8) {
            0 => 0,
            1 => 1,
            2 | 3 => 1 + rng.below(40) as usize,
            7 if rng.below(4) == 0 => long + rng.below(long as u64 + 1) as usize,
            _ => 1 + rng.below(2000) as usize,
        };
        at = (at + len).min(n);
        starts.push(at);
    }
    starts
}

/// Runs `Op`'s many-scan calls on every executor and every (kind,
/// direction), against the reference item by item:
/// * rows: `[rows, L]` for L in [`row_lengths`] and rows in 1, 3, 1000,
///   65536 (shapes up to `limit` items; Blelloch, one scan per row, only up
///   to 1000 rows), out of place into a poisoned output and in place, from
///   the host and on device buffers;
/// * strided rows (stride > L), whose padding must stay poisoned;
/// * segments by starts and by head flags, with random lengths including 0
///   and 1, host and device forms.
pub fn check_many<Op: CudaOp>(
    executors: &[Cuda],
    label: &str,
    limit: usize,
    mut gen: impl FnMut(&mut Rng) -> Op::Item,
    eq: impl Fn(&Op::Item, &Op::Item) -> bool,
) where
    Op::Item: Debug,
{
    let limit = limit.min(max_len());
    let mut rng = Rng::fresh(label);
    let tile = single_pass_tile::<Op>().max(2);
    let mut shapes = Vec::new();
    for rows in [1, 3, 1000, 65536] {
        for len in row_lengths::<Op>() {
            if rows * len <= limit {
                shapes.push((rows, len));
            }
        }
    }
    // (Rows of one tile, strided: row_tiles.cuh; the last two unaligned.)
    let rows_tile = segmented_tile::<Op>().max(2);
    let strided = [
        (3, 5, 7),
        (1000, 33, 40),
        (7, tile + 1, tile + 9),
        (4096, 1, 3),
        (2, 1000, 5000),
        (5, rows_tile, rows_tile + 4),
        (6, rows_tile.saturating_sub(3).max(1), rows_tile + 9),
        (4, rows_tile / 2 + 1, rows_tile + 1),
    ];
    for cuda in executors {
        let blelloch = cuda.algorithm() == Algorithm::Blelloch;
        for &(rows, len) in &shapes {
            if blelloch && rows > 1000 {
                continue;
            }
            for spec in ScanSpec::ALL {
                let input = rng.vec(rows * len, &mut gen);
                let want = reference::scan_rows::<Op>(&input, rows, spec).unwrap();
                let ctx = format!("{label} ({}): {rows} rows of {len}, {spec:?}", cuda.algorithm());

                let mut out = poisoned::<Op::Item>(input.len());
                cuda.scan_rows::<Op>(&input, &mut out, rows, spec).unwrap();
                if let Some(m) = first_mismatch(&out, &want, &eq) {
                    panic!("{ctx}, scan_rows: {m}");
                }
                let dev_in = cuda.upload(&input).unwrap();
                let mut dev_out = cuda.upload(&poisoned::<Op::Item>(input.len())).unwrap();
                cuda.scan_rows_device_into::<Op>(&dev_in, &mut dev_out, rows, spec).unwrap();
                if let Some(m) = first_mismatch(&dev_out.download().unwrap(), &want, &eq) {
                    panic!("{ctx}, scan_rows_device_into: {m}");
                }
                let same = |a: &Op::Item, b: &Op::Item| eq(a, b) || (!eq(a, a) && !eq(b, b));
                if let Some(m) = first_mismatch(&dev_in.download().unwrap(), &input, &same) {
                    panic!("{ctx}: the input buffer changed: {m}");
                }
                let mut data = input;
                cuda.scan_rows_in_place::<Op>(&mut data, rows, spec).unwrap();
                if let Some(m) = first_mismatch(&data, &want, &eq) {
                    panic!("{ctx}, scan_rows_in_place: {m}");
                }
            }
        }
        for &(rows, len, stride) in &strided {
            let n = (rows - 1) * stride + len + 3;
            if n > limit {
                continue;
            }
            for spec in ScanSpec::ALL {
                let input = rng.vec(n, &mut gen);
                let ctx = format!("{label} ({}): {rows} rows of {len}, stride {stride}, {spec:?}", cuda.algorithm());
                let scanned = reference::scan_rows_strided::<Op>(&input, rows, len, stride, spec).unwrap();
                let mut want = poisoned::<Op::Item>(n);
                for r in reference::strided_rows(n, rows, len, stride).unwrap() {
                    want[r.clone()].copy_from_slice(&scanned[r]);
                }
                let mut out = poisoned::<Op::Item>(n);
                cuda.scan_rows_strided::<Op>(&input, &mut out, rows, len, stride, spec).unwrap();
                if let Some(m) = first_mismatch(&out, &want, &eq) {
                    panic!("{ctx}, scan_rows_strided (padding must stay poisoned): {m}");
                }
            }
        }
        // Around the segment kernels' tiles (for_segment_heads, and
        // for_segments where those spill) and the plain one.
        let (seg_tile, heads_tile) = (segmented_tile::<Op>().max(2), segment_heads_tile::<Op>().max(2));
        let mut lengths = vec![1, 100, 3 * seg_tile + 5, 3 * heads_tile + 5, 3 * tile + 5, (1 << 20) + 7];
        lengths.sort_unstable();
        lengths.dedup();
        for n in lengths {
            if n > limit {
                continue;
            }
            for spec in ScanSpec::ALL {
                let input = rng.vec(n, &mut gen);
                let starts = random_starts(&mut rng, n, heads_tile);
                let want = reference::scan_segments::<Op>(&input, &starts, spec).unwrap();
                let ctx = format!("{label} ({}): {n} items, {} starts, {spec:?}", cuda.algorithm(), starts.len());

                let mut out = poisoned::<Op::Item>(n);
                cuda.scan_segments::<Op>(&input, &mut out, &starts, spec).unwrap();
                if let Some(m) = first_mismatch(&out, &want, &eq) {
                    panic!("{ctx}, scan_segments: {m}");
                }
                let mut data = input.clone();
                cuda.scan_segments_in_place::<Op>(&mut data, &starts, spec).unwrap();
                if let Some(m) = first_mismatch(&data, &want, &eq) {
                    panic!("{ctx}, scan_segments_in_place: {m}");
                }
                let mut heads = vec![false; n];
                for &s in starts.iter().filter(|&&s| s < n) {
                    heads[s] = true;
                }
                let mut out = poisoned::<Op::Item>(n);
                cuda.scan_flagged::<Op>(&input, &mut out, &heads, spec).unwrap();
                if let Some(m) = first_mismatch(&out, &want, &eq) {
                    panic!("{ctx}, scan_flagged: {m}");
                }
                let mut data = input.clone();
                cuda.scan_flagged_in_place::<Op>(&mut data, &heads, spec).unwrap();
                if let Some(m) = first_mismatch(&data, &want, &eq) {
                    panic!("{ctx}, scan_flagged_in_place: {m}");
                }
                let dev_in = cuda.upload(&input).unwrap();
                let dev_starts = cuda.upload(&starts.iter().map(|&s| s as u64).collect::<Vec<_>>()).unwrap();
                let mut dev_out = cuda.upload(&poisoned::<Op::Item>(n)).unwrap();
                cuda.scan_segments_device_into::<Op>(&dev_in, &mut dev_out, &dev_starts, spec).unwrap();
                if let Some(m) = first_mismatch(&dev_out.download().unwrap(), &want, &eq) {
                    panic!("{ctx}, scan_segments_device_into: {m}");
                }
                let dev_heads = cuda.upload(&heads).unwrap();
                let mut dev_out = cuda.upload(&poisoned::<Op::Item>(n)).unwrap();
                cuda.scan_flagged_device_into::<Op>(&dev_in, &mut dev_out, &dev_heads, spec).unwrap();
                if let Some(m) = first_mismatch(&dev_out.download().unwrap(), &want, &eq) {
                    panic!("{ctx}, scan_flagged_device_into: {m}");
                }
            }
        }
    }
    eprintln!(
        "[{label}] many-scan calls ok: rows {shapes:?}, strided {strided:?}, segments on 4 sizes, x 4 specs x {} algorithms",
        executors.len()
    );
}
