//! A scan across GPUs, one process per rank, joined through NCCL: the
//! launcher (this program without `--rank`) makes an NCCL id, writes it to a
//! file, and starts `--ranks N` copies of itself, rank r on GPU r modulo the
//! GPUs there are. Each rank builds its shard of one sequence (non-
//! commutative 2x2 integer matrices, and u64 sums), scans it with
//! `NcclRank::scan_shard`, and checks it against the sequential reference of
//! the whole sequence. NCCL refuses two ranks on one GPU ("Duplicate GPU"):
//! with fewer GPUs than ranks the ranks say so and the launcher fails.
//!
//! `--bench` instead times, in one process, f32 add over 2^LOG2 items
//! (`--log2`, default 28): on one GPU, then split across every GPU through
//! `ShardGroup::nccl`, and split into two ranks on GPU 0 (what the join
//! costs), each beside a device copy of the same bytes.
//!
//! ```text
//! cargo run --release --example sharded -- --ranks 2
//! cargo run --release --example sharded -- --bench --log2 31
//! ```

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use scan::ops::{Add, MatMul2x2};
use scan::{Cuda, CudaOp, ScanSpec};
use scan_core::reference;
use scan_cuda::{NcclId, NcclRank, ShardGroup};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match parse(&args) {
        Ok(Mode::Launch { ranks, len }) => launch(ranks, len),
        Ok(Mode::Rank { rank, ranks, len, id_file }) => run_rank(rank, ranks, len, &id_file),
        Ok(Mode::Bench { log2 }) => bench(log2),
        Err(e) => Err(e),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

enum Mode {
    Launch { ranks: usize, len: usize },
    Rank { rank: usize, ranks: usize, len: usize, id_file: PathBuf },
    Bench { log2: u32 },
}

fn parse(args: &[String]) -> Result<Mode, String> {
    let value = |name: &str| -> Result<Option<String>, String> {
        match args.iter().position(|a| a == name) {
            None => Ok(None),
            Some(i) => args.get(i + 1).cloned().map(Some).ok_or(format!("{name} needs a value")),
        }
    };
    let number = |name: &str, default: usize| -> Result<usize, String> {
        value(name)?.map_or(Ok(default), |v| v.parse().map_err(|_| format!("{name}: not a number: {v:?}")))
    };
    if args.iter().any(|a| a == "--bench") {
        let log2 = number("--log2", 28)?;
        if !(10..=32).contains(&log2) {
            return Err(format!("--log2 is 10 to 32 (got {log2})"));
        }
        return Ok(Mode::Bench { log2: log2 as u32 });
    }
    let ranks = number("--ranks", 2)?;
    if ranks == 0 {
        return Err("--ranks is at least 1".into());
    }
    let len = number("--len", (1 << 22) + 12_345)?;
    match value("--rank")? {
        Some(r) => Ok(Mode::Rank {
            rank: r.parse().map_err(|_| format!("--rank: not a number: {r:?}"))?,
            ranks,
            len,
            id_file: value("--id-file")?.ok_or("--rank needs --id-file")?.into(),
        }),
        None => Ok(Mode::Launch { ranks, len }),
    }
}

/// Writes a new NCCL id to a file and runs one process per rank.
fn launch(ranks: usize, len: usize) -> Result<(), String> {
    let gpus = device_count();
    if gpus == 0 {
        return Err(format!("this example needs a CUDA GPU: {}", Cuda::new().unwrap_err()));
    }
    let id = NcclId::new().map_err(|e| e.to_string())?;
    let dir = std::env::temp_dir().join(format!("scan-sharded-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let id_file = dir.join("nccl-id");
    write_atomically(&id_file, &id.to_string())?;
    println!("{ranks} ranks on {gpus} GPU(s), {len} items; NCCL id in {}", id_file.display());
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let children: Vec<_> = (0..ranks)
        .map(|r| {
            Command::new(&me)
                .args(["--rank", &r.to_string(), "--ranks", &ranks.to_string(), "--len", &len.to_string()])
                .arg("--id-file")
                .arg(&id_file)
                .spawn()
                .map_err(|e| format!("starting rank {r}: {e}"))
        })
        .collect::<Result<_, _>>()?;
    let mut failed = Vec::new();
    for (r, mut child) in children.into_iter().enumerate() {
        match child.wait() {
            Ok(status) if status.success() => {}
            Ok(status) => failed.push(format!("rank {r} ({status})")),
            Err(e) => failed.push(format!("rank {r} ({e})")),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    if failed.is_empty() {
        println!("all {ranks} ranks matched the reference");
        Ok(())
    } else {
        Err(format!("failed: {}", failed.join(", ")))
    }
}

/// One rank: join, scan this rank's shard of each sequence, check it.
fn run_rank(rank: usize, ranks: usize, len: usize, id_file: &Path) -> Result<(), String> {
    let tag = |e: String| format!("rank {rank}: {e}");
    let id: NcclId = read_when_written(id_file)?.parse().map_err(|e: scan::Error| tag(e.to_string()))?;
    let device = rank % device_count().max(1);
    let cuda = Cuda::with_device(device).map_err(|e| tag(e.to_string()))?;
    let me = NcclRank::join(cuda, rank, ranks, &id).map_err(|e| tag(format!("joining on GPU {device}: {e}")))?;
    // Uneven shards, the last rank's possibly empty: rank r takes
    // [r * len / ranks, (r + 1) * len / ranks) with a skew.
    let cut = |r: usize| if r == ranks { len } else { (r * len / ranks + r * 1000).min(len) };
    let range = cut(rank)..cut(rank + 1);

    let matrices: Vec<[i32; 4]> = (0..len).map(|i| matrix(i as u64)).collect();
    let sums: Vec<u64> = (0..len as u64).map(|i| i.wrapping_mul(0x9e37_79b9) >> 40).collect();
    for spec in ScanSpec::ALL {
        check_rank::<MatMul2x2<i32>>(&me, &matrices, range.clone(), spec).map_err(tag)?;
        check_rank::<Add<u64>>(&me, &sums, range.clone(), spec).map_err(tag)?;
    }
    println!(
        "rank {rank} on GPU {device}: items {range:?} of {len} matched the reference (matmul2x2 i32, add u64; 4 specs)"
    );
    Ok(())
}

fn check_rank<Op: CudaOp>(
    me: &NcclRank,
    whole: &[Op::Item],
    range: std::ops::Range<usize>,
    spec: ScanSpec,
) -> Result<(), String>
where
    Op::Item: PartialEq + std::fmt::Debug,
{
    let mut shard = me.cuda().upload(&whole[range.clone()]).map_err(|e| e.to_string())?;
    me.scan_shard::<Op>(&mut shard, spec).map_err(|e| e.to_string())?;
    let got = shard.download().map_err(|e| e.to_string())?;
    let want = &reference::scan::<Op>(whole, spec)[range.clone()];
    match (0..got.len()).find(|&i| got[i] != want[i]) {
        None => Ok(()),
        Some(i) => Err(format!("{spec:?}: item {}: got {:?}, want {:?}", range.start + i, got[i], want[i])),
    }
}

/// A 2x2 integer matrix from an index: non-commutative products that wrap.
fn matrix(i: u64) -> [i32; 4] {
    let h = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    [1 + (h & 3) as i32, (h >> 8 & 7) as i32, (h >> 16 & 1) as i32, 1]
}

fn device_count() -> usize {
    (0..64).take_while(|&o| Cuda::with_device(o).is_ok()).count()
}

fn write_atomically(path: &Path, text: &str) -> Result<(), String> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).and_then(|_| std::fs::rename(&tmp, path)).map_err(|e| e.to_string())
}

fn read_when_written(path: &Path) -> Result<String, String> {
    let start = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            return Ok(text);
        }
        if start.elapsed() > Duration::from_secs(60) {
            return Err(format!("no NCCL id in {} after 60 s", path.display()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Times f32 add over 2^log2 items: one GPU, every GPU through NCCL, two
/// ranks on GPU 0, each beside a device copy of the same bytes.
fn bench(log2: u32) -> Result<(), String> {
    let n = 1usize << log2;
    let gpus = device_count();
    let e = |e: scan::Error| e.to_string();
    let cuda = Cuda::new().map_err(e)?;
    println!("f32 add, 2^{log2} items ({:.1} GB), {gpus} GPU(s): {cuda}", (4 * n) as f64 / 1e9);
    let x: Vec<f32> = (0..n).map(|i| ((i % 1000) as f32 - 499.5) * 1e-3).collect();
    let reps = 5;

    // One GPU, in place (no second buffer of 2^31 items needed).
    let mut buf = cuda.upload(&x).map_err(e)?;
    let mut copy = cuda.alloc::<f32>(n).map_err(e)?;
    let copy_s = best_of(reps, || {
        copy.copy_from(&buf)?;
        cuda.synchronize()
    })?;
    drop(copy);
    let one_s = best_of(reps, || {
        cuda.scan_device::<Add<f32>>(&mut buf, ScanSpec::inclusive())?;
        cuda.synchronize()
    })?;
    drop(buf);
    let rate = |s: f64| 2.0 * (4 * n) as f64 / s / 1e9;
    println!("| run | ms | GB/s | of copy | vs one GPU |");
    println!("|---|---|---|---|---|");
    println!("| device copy, GPU 0 | {:.3} | {:.1} | 1.00 | |", copy_s * 1e3, rate(copy_s));
    println!("| one GPU | {:.3} | {:.1} | {:.2} | 1.00 |", one_s * 1e3, rate(one_s), copy_s / one_s);

    let row = |label: &str, group: &ShardGroup| -> Result<(), String> {
        let mut shards = group.scatter(&x).map_err(e)?;
        let s = best_of(reps, || {
            group.scan_shards::<Add<f32>>(&mut shards, ScanSpec::inclusive())?;
            group.synchronize()
        })?;
        println!("| {label} | {:.3} | {:.1} | {:.2} | {:.2}x the time |", s * 1e3, rate(s), copy_s / s, s / one_s);
        Ok(())
    };
    if gpus >= 2 {
        let group = ShardGroup::nccl(&(0..gpus).collect::<Vec<_>>()).map_err(e)?;
        row(&format!("{gpus} GPUs through NCCL"), &group)?;
    } else {
        println!("(one GPU here: no multi-GPU row)");
    }
    let group = ShardGroup::nccl(&[0]).map_err(e)?;
    row("NCCL, 1 rank", &group)?;
    drop(group);
    let group = ShardGroup::on_one_gpu(cuda, 2).map_err(e)?;
    row("2 ranks on GPU 0 (reduce, gather, scan)", &group)?;
    Ok(())
}

/// The fastest of `reps` runs of `work` (after one untimed run), seconds.
fn best_of(reps: usize, mut work: impl FnMut() -> scan::Result<()>) -> Result<f64, String> {
    work().map_err(|e| e.to_string())?;
    let mut best = f64::MAX;
    for _ in 0..reps {
        let t = Instant::now();
        work().map_err(|e| e.to_string())?;
        best = best.min(t.elapsed().as_secs_f64());
    }
    Ok(best)
}
