//! A scan across GPUs, one process per rank, joined through NCCL: the
//! launcher (this program without `--rank`) makes an NCCL id, writes it to a
//! file, and starts `--ranks N` copies of itself, rank r on GPU r modulo the
//! GPUs there are. Each rank builds its shard of one sequence (non-
//! commutative 2x2 integer matrices, and u64 sums), scans it with
//! `NcclRank::scan_shard`, and checks it against the sequential reference of
//! the whole sequence. NCCL refuses two ranks on one GPU ("Duplicate GPU"):
//! with fewer GPUs than ranks the ranks say so and the launcher fails.
//! A rank that finds a mismatch still takes part in every collective (NCCL
//! has no timeout: the others would wait for it forever) and reports at the
//! end; the launcher stops the other ranks when one fails, and all of them
//! after ten minutes.
//!
//! NVLink multicast stays off: `NCCL_NVLS_ENABLE` is set to 0 where it is
//! not set (for the ranks, and before NCCL starts in `--bench`).
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

/// NCCL's NVLink multicast (NVLS) is never used here: on shared hosts a
/// program that uses it can put the GPUs out of service.
const NO_MULTICAST: (&str, &str) = ("NCCL_NVLS_ENABLE", "0");

fn main() -> ExitCode {
    if std::env::var_os(NO_MULTICAST.0).is_none() {
        // Before any thread starts and before NCCL reads its environment.
        std::env::set_var(NO_MULTICAST.0, NO_MULTICAST.1);
    }
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
    let mut children = Vec::new();
    let mut failed = Vec::new();
    for r in 0..ranks {
        let child = Command::new(&me)
            .args(["--rank", &r.to_string(), "--ranks", &ranks.to_string(), "--len", &len.to_string()])
            .arg("--id-file")
            .arg(&id_file)
            .env(NO_MULTICAST.0, std::env::var_os(NO_MULTICAST.0).unwrap_or(NO_MULTICAST.1.into()))
            .spawn();
        match child {
            Ok(child) => children.push((r, child)),
            Err(e) => {
                failed.push(format!("starting rank {r}: {e}"));
                break;
            }
        }
    }
    failed.extend(wait_for_ranks(children, Duration::from_secs(600), !failed.is_empty()));
    let _ = std::fs::remove_dir_all(&dir);
    if failed.is_empty() {
        println!("all {ranks} ranks matched the reference");
        Ok(())
    } else {
        Err(format!("failed: {}", failed.join(", ")))
    }
}

/// Waits for every rank; when one fails (or `stop` is already set, or the
/// time is up) kills the rest, since they would wait in NCCL for it forever.
/// Returns the failures.
fn wait_for_ranks(mut running: Vec<(usize, std::process::Child)>, limit: Duration, mut stop: bool) -> Vec<String> {
    let start = Instant::now();
    let mut failed = Vec::new();
    while !running.is_empty() {
        if !stop && start.elapsed() > limit {
            failed.push(format!("stopped after {} s", limit.as_secs()));
            stop = true;
        }
        let mut i = 0;
        while i < running.len() {
            let (r, child) = &mut running[i];
            if stop {
                let _ = child.kill();
            }
            let outcome = match child.try_wait() {
                Ok(None) => {
                    i += 1;
                    continue;
                }
                Ok(Some(status)) => status.success().then_some(()).ok_or_else(|| status.to_string()),
                Err(e) => Err(e.to_string()),
            };
            if let Err(why) = outcome {
                failed.push(format!("rank {r} ({why})"));
                stop = true;
            }
            running.swap_remove(i);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    failed
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
    // Every rank runs every collective, mismatch or not (the others wait
    // for it in each one); mismatches are reported at the end.
    let mut mismatches = Vec::new();
    for spec in ScanSpec::ALL {
        mismatches.extend(check_rank::<MatMul2x2<i32>>(&me, &matrices, range.clone(), spec).map_err(&tag)?);
        mismatches.extend(check_rank::<Add<u64>>(&me, &sums, range.clone(), spec).map_err(&tag)?);
    }
    if !mismatches.is_empty() {
        return Err(tag(mismatches.join("; ")));
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
) -> Result<Option<String>, String>
where
    Op::Item: PartialEq + std::fmt::Debug,
{
    let mut shard = me.cuda().upload(&whole[range.clone()]).map_err(|e| e.to_string())?;
    me.scan_shard::<Op>(&mut shard, spec).map_err(|e| e.to_string())?;
    let got = shard.download().map_err(|e| e.to_string())?;
    let want = &reference::scan::<Op>(whole, spec)[range.clone()];
    match (0..got.len()).find(|&i| got[i] != want[i]) {
        None => Ok(None),
        Some(i) => Ok(Some(format!("{spec:?}: item {}: got {:?}, want {:?}", range.start + i, got[i], want[i]))),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn start(script: &str) -> std::process::Child {
        Command::new("sh").args(["-c", script]).spawn().unwrap()
    }

    #[test]
    fn one_failed_rank_stops_the_others() {
        let t = Instant::now();
        let ranks = vec![(0, start("sleep 30")), (1, start("exit 3")), (2, start("sleep 30"))];
        let failed = wait_for_ranks(ranks, Duration::from_secs(60), false);
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
        assert_eq!(failed.len(), 3, "{failed:?}");
        assert!(failed.iter().any(|f| f.starts_with("rank 1 (exit status: 3")), "{failed:?}");
    }

    #[test]
    fn ranks_that_pass_are_no_failure_and_a_late_one_is_stopped() {
        assert!(wait_for_ranks(vec![(0, start("true")), (1, start("sleep 0.2"))], Duration::from_secs(60), false)
            .is_empty());
        let failed = wait_for_ranks(vec![(0, start("sleep 30"))], Duration::from_millis(200), false);
        assert_eq!(failed.len(), 2, "{failed:?}");
        assert!(failed[0].starts_with("stopped after"), "{failed:?}");
    }
}
