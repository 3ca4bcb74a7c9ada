//! A Mamba block's forward pass (mamba_ssm's `Mamba.forward`, the unfused
//! path) on random weights with the shapes of Mamba-130m, around
//! the selective scan: in-projection, causal depthwise conv1d, SiLU,
//! x-projection to delta/B/C, the selective scan (gated by z, with D and the
//! dt bias through a softplus), out-projection. Checks the scan against the
//! f64 reference and prints the time per token of each step.
//!
//! ```text
//! cargo run --release --example selective_scan [-- L]          # L tokens (default 256), batch 1
//! cargo run --release --example selective_scan -- [L] --bf16    # the scan's activations in bf16
//! ```
//!
//! The selective scan runs on the GPU when CUDA works (`Device::auto()`; the
//! time is the whole call, host slices in and out, after one untimed call
//! that compiles the kernel) and on the CPU otherwise; the other steps run on
//! the CPU. With `--bf16`, u, delta, z, B and C go to the scan rounded to
//! bf16 (as a bf16 model holds them; weights and state stay f32, as in
//! mamba_ssm), and the reference takes the same rounded values.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use scan::maps::bf16;
use scan::selective::{reference, Projection, SelectiveScan, SsmInput, SsmShape};
use scan::{Cpu, Device};

/// Mamba-130m's block: d_model 768, expand 2, d_state 16, d_conv 4, dt_rank = d_model / 16.
const D_MODEL: usize = 768;
const D_INNER: usize = 2 * D_MODEL;
const D_STATE: usize = 16;
const D_CONV: usize = 4;
const DT_RANK: usize = D_MODEL / 16;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Deterministic values in [-scale, scale): a Weyl sequence, no RNG crate.
fn weights(n: usize, seed: usize, scale: f32) -> Vec<f32> {
    (0..n).map(|i| (((i + 7919 * seed) as f64 * 0.618_033_988_749_895).fract() as f32 * 2.0 - 1.0) * scale).collect()
}

/// `out[r][j] = sum_k x[r][k] * w[j][k] (+ bias[j])`: a linear layer on
/// `rows` rows of `k` features, weights (out, k) as torch stores them.
fn linear(x: &[f32], rows: usize, w: &[f32], out_features: usize, bias: Option<&[f32]>) -> Vec<f32> {
    let k = x.len() / rows;
    let mut out = vec![0.0f32; rows * out_features];
    for r in 0..rows {
        let xr = &x[r * k..(r + 1) * k];
        for (j, o) in out[r * out_features..(r + 1) * out_features].iter_mut().enumerate() {
            let wj = &w[j * k..(j + 1) * k];
            *o = xr.iter().zip(wj).map(|(a, b)| a * b).sum::<f32>() + bias.map_or(0.0, |b| b[j]);
        }
    }
    out
}

/// Columns `first..first + count` of a row-major `(rows, width)` matrix,
/// as a row-major `(count, rows)` matrix: token-major <-> channel-major.
fn columns(m: &[f32], rows: usize, width: usize, first: usize, count: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; count * rows];
    for r in 0..rows {
        for k in 0..count {
            out[k * rows + r] = m[r * width + first + k];
        }
    }
    out
}

fn silu(x: f32) -> f32 {
    x / (1.0 + (-x).exp())
}

/// The selective scan's activations, channel-major as mamba_ssm takes them.
struct Activations<'a, T> {
    u: &'a [T],
    delta: &'a [T],
    z: &'a [T],
    b: &'a [T],
    c: &'a [T],
}

/// The weights the scan takes in f32 whatever the activations' type.
struct ScanWeights<'a> {
    a: &'a [f32],
    d: &'a [f32],
    dt_bias: &'a [f32],
}

/// The selective scan of `x` on `device` (after an untimed call that
/// compiles the kernel, on a GPU), checked against the f64 reference of the
/// same values with mamba_ssm's f32 tolerances: its output and its time.
fn selective_scan<T: SsmInput>(
    device: &Device,
    shape: SsmShape,
    x: Activations<'_, T>,
    w: &ScanWeights<'_>,
) -> Result<(Vec<f32>, Duration), String> {
    let args = SelectiveScan::new(
        shape,
        x.u,
        x.delta,
        w.a,
        Projection::Varying { data: x.b, groups: 1 },
        Projection::Varying { data: x.c, groups: 1 },
    )
    .d(w.d)
    .z(x.z)
    .delta_bias(w.dt_bias)
    .delta_softplus(true);
    if device.is_cuda() {
        device.selective_scan(&args).map_err(|e| e.to_string())?;
    }
    let t = Instant::now();
    let y = device.selective_scan(&args).map_err(|e| e.to_string())?.out;
    let elapsed = t.elapsed();
    let (want, _) = reference(&args).map_err(|e| e.to_string())?;
    let (mut worst, mut at) = (0.0f64, 0);
    for (i, (&g, &w)) in y.iter().zip(&want).enumerate() {
        let excess = (f64::from(g) - w).abs() - (2e-3 + 6e-4 * w.abs());
        if excess > worst || i == 0 {
            (worst, at) = (excess, i);
        }
    }
    if worst > 0.0 {
        return Err(format!("the selective scan is off at {at}: {} vs the reference {}", y[at], want[at]));
    }
    Ok((y, elapsed))
}

fn to_bf16(values: &[f32]) -> Vec<bf16> {
    values.iter().map(|&v| bf16::from_f32(v)).collect()
}

fn run() -> Result<(), String> {
    let (mut len, mut half) = (256, false);
    for a in std::env::args().skip(1) {
        match a.as_str() {
            "--bf16" => half = true,
            _ => {
                len = a.parse::<usize>().ok().filter(|&n| n >= 1).ok_or(format!(
                    "expected a positive token count L or --bf16, got {a:?} (usage: selective_scan [L] [--bf16])"
                ))?
            }
        }
    }
    let cpu = Cpu::new();
    let device = Device::auto();
    println!(
        "Mamba block forward (d_model {D_MODEL}, d_inner {D_INNER}, d_state {D_STATE}, d_conv {D_CONV}, dt_rank \
         {DT_RANK}), batch 1, L {len}: the selective scan{} on {device}, the rest on the CPU ({} threads)",
        if half { " (bf16 activations)" } else { "" },
        cpu.threads()
    );
    // Weights, scaled like their initialisations.
    let hidden = weights(len * D_MODEL, 1, 1.0);
    let in_proj = weights(2 * D_INNER * D_MODEL, 2, 1.0 / (D_MODEL as f32).sqrt());
    let conv_w = weights(D_INNER * D_CONV, 3, 0.5);
    let conv_b = weights(D_INNER, 4, 0.1);
    let x_proj = weights((DT_RANK + 2 * D_STATE) * D_INNER, 5, 1.0 / (D_INNER as f32).sqrt());
    let dt_proj = weights(D_INNER * DT_RANK, 6, 1.0 / (DT_RANK as f32).sqrt());
    // dt bias: softplus^-1 of dt in [0.001, 0.1], as mamba initialises it.
    let dt_bias: Vec<f32> = weights(D_INNER, 7, 1.0)
        .iter()
        .map(|u| {
            let dt = (0.001f32.ln() + (u + 1.0) / 2.0 * (0.1f32.ln() - 0.001f32.ln())).exp();
            dt + (-(-dt).exp_m1()).ln()
        })
        .collect();
    // A = -exp(A_log) with A_log = log(1..=d_state) per channel (S4D-real).
    let a: Vec<f32> = (0..D_INNER * D_STATE).map(|i| -((i % D_STATE + 1) as f32)).collect();
    let d_skip = vec![1.0f32; D_INNER];
    let out_proj = weights(D_MODEL * D_INNER, 8, 1.0 / (D_INNER as f32).sqrt());

    let mut steps: Vec<(&str, Duration)> = Vec::new();
    let mut timed = |name: &'static str, elapsed: Duration| steps.push((name, elapsed));

    // in_proj: (L, d_model) -> (L, 2 d_inner), then x and z as (d_inner, L).
    let t = Instant::now();
    let xz = linear(&hidden, len, &in_proj, 2 * D_INNER, None);
    let (x, z) = (columns(&xz, len, 2 * D_INNER, 0, D_INNER), columns(&xz, len, 2 * D_INNER, D_INNER, D_INNER));
    timed("in_proj", t.elapsed());

    // Causal depthwise conv1d (kernel d_conv, left padding), then SiLU.
    let t = Instant::now();
    let mut xc = vec![0.0f32; D_INNER * len];
    for c in 0..D_INNER {
        for l in 0..len {
            let mut acc = conv_b[c];
            for k in 0..D_CONV {
                if let Some(src) = (l + k + 1).checked_sub(D_CONV) {
                    acc += conv_w[c * D_CONV + k] * x[c * len + src];
                }
            }
            xc[c * len + l] = silu(acc);
        }
    }
    timed("conv1d + SiLU", t.elapsed());

    // x_proj: per token, (d_inner) -> (dt_rank + 2 d_state); dt_proj: dt_rank -> d_inner.
    let t = Instant::now();
    let tokens = columns(&xc, D_INNER, len, 0, len);
    let width = DT_RANK + 2 * D_STATE;
    let x_dbl = linear(&tokens, len, &x_proj, width, None);
    let dt_in: Vec<f32> = (0..len).flat_map(|l| x_dbl[l * width..][..DT_RANK].to_vec()).collect();
    let dt_tokens = linear(&dt_in, len, &dt_proj, D_INNER, None);
    let delta = columns(&dt_tokens, len, D_INNER, 0, D_INNER);
    let (b, c) =
        (columns(&x_dbl, len, width, DT_RANK, D_STATE), columns(&x_dbl, len, width, DT_RANK + D_STATE, D_STATE));
    timed("x_proj + dt_proj", t.elapsed());

    // The selective scan, checked against the f64 reference.
    let shape = SsmShape { batch: 1, dim: D_INNER, len, state: D_STATE };
    let weights = ScanWeights { a: &a, d: &d_skip, dt_bias: &dt_bias };
    let (y, elapsed) = if half {
        let (u, delta, z, b, c) = (to_bf16(&xc), to_bf16(&delta), to_bf16(&z), to_bf16(&b), to_bf16(&c));
        selective_scan(&device, shape, Activations { u: &u, delta: &delta, z: &z, b: &b, c: &c }, &weights)?
    } else {
        selective_scan(&device, shape, Activations { u: &xc, delta: &delta, z: &z, b: &b, c: &c }, &weights)?
    };
    timed("selective scan", elapsed);

    // out_proj: (L, d_inner) -> (L, d_model).
    let t = Instant::now();
    let out = linear(&columns(&y, D_INNER, len, 0, len), len, &out_proj, D_MODEL, None);
    timed("out_proj", t.elapsed());
    let total: Duration = steps.iter().map(|(_, d)| *d).sum();
    for (name, d) in &steps {
        println!("  {name:<18} {:>9.1} us per token", d.as_secs_f64() * 1e6 / len as f64);
    }
    println!(
        "  {:<18} {:>9.1} us per token ({:.1} ms for {len} tokens); the scan matches the f64 reference within \
         rtol 6e-4 / atol 2e-3; out[0..3] = {:?}",
        "total",
        total.as_secs_f64() * 1e6 / len as f64,
        total.as_secs_f64() * 1e3,
        &out[..3]
    );
    Ok(())
}
