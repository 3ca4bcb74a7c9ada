//! Scan throughput against a copy of the same bytes, measured in one run.
//!
//! ```text
//! cargo run --release --example bench                       # CPU, 2^26 items
//! cargo run --release --example bench -- --size-log2 24 --reps 9 --out my-results.md
//! cargo run --release --example bench -- --cpu --gpu         # both (the GPU needs CUDA)
//! cargo run --release --example bench -- --gpu --gpu-policies --sweep-out sweep.csv
//! ```
//!
//! Every case reports GB/s counted as input + output bytes, each ratio to a
//! `memcpy` of the same bytes and to the sequential loop, all measured in the
//! same process (the median of several repetitions after a warm-up, the
//! methods interleaved so that a noisy neighbour slows them alike). The table
//! goes to stdout and to a file (`bench-results.md` unless `--out` says).

mod against_copy;
mod check;
mod cpu;
mod gpu;
mod gpu_fused;
mod gpu_rows;
mod gpu_selective;

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// What to run, from the command line.
pub struct Args {
    pub cpu: bool,
    pub gpu: bool,
    /// Items per case: `1 << size_log2`.
    pub size_log2: u32,
    /// Timed repetitions per method (after one warm-up).
    pub reps: usize,
    pub out: String,
    /// Also time single-pass tile shapes (GPU).
    pub gpu_policies: bool,
    /// Time only the single-pass tile shapes (GPU).
    pub gpu_policies_only: bool,
    /// The item sizes (bytes) whose tile shapes are timed: 4, 8, 16, 32.
    pub policy_items: Vec<usize>,
    /// With `gpu_policies_only`: time only f32 add's tile shapes, at these
    /// sizes (log2), instead of the whole sweep.
    pub policy_f32_sizes: Vec<u32>,
    /// Time only the scans of host slices (GPU).
    pub gpu_host_only: bool,
    /// Time only the f32 add's time per call at 2^16 and 2^24 (GPU).
    pub gpu_latency_only: bool,
    /// Time only rows and segments (GPU).
    pub gpu_rows_only: bool,
    /// Time only the fused maps (GPU).
    pub gpu_fused_only: bool,
    /// Time only the selective scan (GPU).
    pub gpu_selective_only: bool,
    /// Time only the plain scans of 5/11's table, the time per call and the
    /// size sweep (GPU): no fused maps, rows, selective scan or host scans.
    pub gpu_scans_only: bool,
    /// Time only the batched rows (CPU).
    pub cpu_rows_only: bool,
    pub cpu_selective_only: bool,
    /// Where the GPU size sweep goes, as CSV.
    pub sweep_out: String,
}

/// The item sizes (bytes) the policy sweep has shapes for.
const POLICY_ITEM_SIZES: [usize; 4] = [4, 8, 16, 32];

const USAGE: &str =
    "usage: bench [--cpu] [--gpu] [--gpu-policies] [--size-log2 N] [--reps R] [--out FILE] [--sweep-out FILE]
  --cpu            run the CPU cases (the default when neither --cpu nor --gpu is given)
  --cpu-rows-only  time only the CPU's batched rows (4096 x 4096 and 2^20 x 16)
  --cpu-selective-only  time only the CPU's selective scan and its backward (1 x 256 x 4096 and 1 x 8 x 65536, N 16)
  --gpu            run the GPU cases (fixed sizes, DESIGN.md's table; --size-log2 is for the CPU)
  --gpu-policies   with --gpu, also time single-pass tile shapes and status layouts
  --gpu-policies-only  time only those (GPU)
  --policy-items LIST  the item sizes whose shapes are timed, e.g. 16,32 (default 4,8,16,32)
  --policy-f32-sizes LIST  with --gpu-policies-only: only f32 add's tile shapes, at these sizes (log2, 10 to 30),
                   e.g. 20,22 (the shapes of small and middle sizes, the default shape among them)
  --gpu-latency-only  time only f32 add's time per call at 2^16 and 2^24, one call, back to back and replayed (GPU)
  --gpu-host-only  time only scans from and to host slices against the pinned link (GPU)
  --gpu-rows-only  time only rows and segments in one launch (GPU; SCAN_BENCH_ROWS_CASES=segments:
                   the segments alone; SCAN_BENCH_ROWS_SWEEP=1|only: tile shapes of 65536 x 4096 rows)
  --gpu-fused-only time only the fused-maps recurrence (GPU)
  --gpu-selective-only  time only the selective scan (GPU)
  --gpu-scans-only  time only the plain scans, the time per call and the size sweep (GPU)
  --size-log2 N    items per CPU case: 2^N (default 26)
  --reps R         timed repetitions per method, after one warm-up (default 15)
  --out FILE       also write the table to FILE (default bench-results.md)
  --sweep-out FILE the GPU's f32 add size sweep as CSV (default gpu-sweep.csv)";

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        cpu: false,
        gpu: false,
        size_log2: 26,
        reps: 15,
        out: "bench-results.md".into(),
        gpu_policies: false,
        gpu_policies_only: false,
        policy_items: POLICY_ITEM_SIZES.to_vec(),
        policy_f32_sizes: Vec::new(),
        gpu_host_only: false,
        gpu_latency_only: false,
        gpu_rows_only: false,
        gpu_fused_only: false,
        gpu_selective_only: false,
        gpu_scans_only: false,
        cpu_rows_only: false,
        cpu_selective_only: false,
        sweep_out: "gpu-sweep.csv".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--cpu" => args.cpu = true,
            "--cpu-rows-only" => (args.cpu, args.cpu_rows_only) = (true, true),
            "--cpu-selective-only" => (args.cpu, args.cpu_selective_only) = (true, true),
            "--gpu" => args.gpu = true,
            "--gpu-policies" => args.gpu_policies = true,
            "--gpu-policies-only" => (args.gpu, args.gpu_policies_only) = (true, true),
            "--gpu-host-only" => (args.gpu, args.gpu_host_only) = (true, true),
            "--gpu-latency-only" => (args.gpu, args.gpu_latency_only) = (true, true),
            "--gpu-rows-only" => (args.gpu, args.gpu_rows_only) = (true, true),
            "--gpu-fused-only" => (args.gpu, args.gpu_fused_only) = (true, true),
            "--gpu-selective-only" => (args.gpu, args.gpu_selective_only) = (true, true),
            "--gpu-scans-only" => (args.gpu, args.gpu_scans_only) = (true, true),
            "--sweep-out" => args.sweep_out = value("--sweep-out")?,
            "--policy-items" => {
                let v = value("--policy-items")?;
                args.policy_items = v
                    .split(',')
                    .map(|s| s.trim().parse().ok().filter(|n| POLICY_ITEM_SIZES.contains(n)))
                    .collect::<Option<_>>()
                    .ok_or(format!("--policy-items {v}: want a list of 4, 8, 16, 32"))?;
            }
            "--policy-f32-sizes" => {
                let v = value("--policy-f32-sizes")?;
                args.policy_f32_sizes = v
                    .split(',')
                    .map(|s| s.trim().parse().ok().filter(|n| (10..=30).contains(n)))
                    .collect::<Option<_>>()
                    .ok_or(format!("--policy-f32-sizes {v}: want a list of log2 sizes from 10 to 30"))?;
            }
            "--size-log2" => {
                let v = value("--size-log2")?;
                args.size_log2 = v.parse().ok().filter(|&n| n <= 32).ok_or(format!("--size-log2 {v}: want 0..=32"))?;
            }
            "--reps" => {
                let v = value("--reps")?;
                args.reps = v.parse().ok().filter(|&n| n > 0).ok_or(format!("--reps {v}: want a positive count"))?;
            }
            "--out" => args.out = value("--out")?,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if !args.cpu && !args.gpu {
        args.cpu = true;
    }
    Ok(args)
}

/// One line of the table.
pub struct Row {
    pub case: String,
    pub method: String,
    /// Input + output bytes per second, in GB/s (1e9).
    pub gbps: f64,
    /// `gbps` over the same case's memcpy figure.
    pub vs_copy: f64,
    /// `gbps` over the same case's sequential figure (NaN where there is none).
    pub vs_sequential: f64,
}

/// Times each of `methods` `reps` times after one warm-up call each, the
/// methods interleaved within every round; returns each method's median.
pub fn median_times(reps: usize, methods: &mut [&mut dyn FnMut()]) -> Vec<Duration> {
    for m in methods.iter_mut() {
        m();
    }
    let mut times = vec![Vec::with_capacity(reps); methods.len()];
    for _ in 0..reps {
        for (m, t) in methods.iter_mut().zip(&mut times) {
            let start = Instant::now();
            m();
            t.push(start.elapsed());
        }
    }
    times
        .into_iter()
        .map(|mut t| {
            t.sort_unstable();
            t[t.len() / 2]
        })
        .collect()
}

fn table(rows: &[Row], header: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{header}\n");
    let _ = writeln!(s, "| case | method | GB/s | x memcpy | x sequential |");
    let _ = writeln!(s, "|---|---|---:|---:|---:|");
    for r in rows {
        let seq = if r.vs_sequential.is_nan() { "-".to_string() } else { format!("{:.2}", r.vs_sequential) };
        let _ = writeln!(s, "| {} | {} | {:.2} | {:.2} | {seq} |", r.case, r.method, r.gbps, r.vs_copy);
    }
    s
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("error: {e}");
            }
            eprintln!("{USAGE}");
            return if e.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE };
        }
    };
    let mut rows = Vec::new();
    let mut notes = String::new();
    // Not one count for the file: the sections' medians are of different
    // counts (replays, runs of calls, fixed counts for microsecond calls), and
    // each says its own.
    let mut header =
        format!("# scan benchmark (--reps {}: each section says what its figures are medians of)", args.reps);
    if args.cpu {
        match cpu::run(&args) {
            Ok((about, r)) => {
                let _ = write!(header, "\n\n{about}");
                rows.extend(r);
            }
            Err(e) => {
                eprintln!("error: CPU benchmark failed: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if args.gpu {
        match gpu::run(&args) {
            Ok(report) => {
                let _ = write!(header, "\n\n{}", report.about);
                rows.extend(report.rows);
                notes = report.notes;
            }
            Err(e) => {
                eprintln!("error: GPU benchmark failed: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let text = table(&rows, &header) + &notes;
    print!("{text}");
    if let Err(e) = std::fs::write(&args.out, &text) {
        eprintln!("error: cannot write {}: {e}", args.out);
        return ExitCode::FAILURE;
    }
    eprintln!("wrote {}", args.out);
    ExitCode::SUCCESS
}
