#!/usr/bin/env python3
"""Peers of examples/bench's GPU section, timed on the same GPU in the same call.

torch.cumsum (f32 and i32), torch.cummax (f32) and jax.lax.associative_scan of
the linear recurrence on (a, b) f32 pairs, at 2^24 and 2^28 items, each against
a device-to-device copy of the same bytes measured in the same process; the
latency of torch.cumsum on 2^16 f32 items; and torch.cumsum over 2^12 to 2^30
f32 items (CSV for bench/plot.py). GB/s count input + output items, as
examples/bench does (cummax also writes int64 indices, which are not counted;
the recurrence moves whole (a, b) pairs in and out).

The data are examples/bench's (examples/bench/check.rs): f32 sums of small
integers uniform in {-2, ..., 2}, recurrences with a in {-1, 1} and b such
integers, so that every grouping is exact (every partial sum stays far below
2^24) and results are compared exactly; a bound on rounding at these sizes let
an all-zero output pass. If a partial sum ever did round, the exact check would
fail loudly, not pass falsely.

    PYTHONUNBUFFERED=1 python3 bench/peers.py [--reps 15] [--out peers.md] [--sweep-out peers-sweep.csv]
"""
import argparse
import os
import statistics
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


# Calls per timed rep where a peer is timed by the wall clock (JAX).
BACK_TO_BACK = 5


def torch_ms(fn, reps):
    import torch

    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def torch_replayed_rows(case, nbytes, one_call_copy, copy, scan, reps):
    """A copy and a scan replayed from a CUDA graph of `reps` calls (torch_replayed_us, median of `reps` replays), as
    examples/bench's replayed rows time ours; a failure is reported in the row, the other figures kept. Both rows'
    x copy is against `one_call_copy` (GB/s), the one-call copy measured in the same run: a copy recorded in a graph
    is a memcpy node run by a copy engine, slower than the copy a call runs, so not the baseline."""
    try:
        copy_us = torch_replayed_us(copy, max(reps, 2), reps)
        scan_us = torch_replayed_us(scan, max(reps, 2), reps)
    except Exception as e:  # report, keep the other figures
        print(f"{case}: replayed timing failed: {type(e).__name__}: {e}", flush=True)
        return []
    c, g = nbytes / (copy_us * 1e-6) / 1e9, nbytes / (scan_us * 1e-6) / 1e9
    return [
        (case, "torch device copy, replayed (a memcpy node: a copy engine; x copy: against the one-call copy, not a baseline)", c, c / one_call_copy),
        (case, f"torch.cumsum, replayed ({max(reps, 2)} calls in a CUDA graph, median of {reps} replays; x copy: against the one-call device copy)", g, g / one_call_copy),
    ]


def steps(torch, shape):
    """examples/bench's summed data (check.rs `step`): f32 integers uniform in {-2, ..., 2}."""
    return torch.randint(-2, 3, shape, device="cuda").float()


def exact_sums(torch, x, got):
    """Whether `got` is exactly the inclusive sum of `x` along the last dimension (float64 sums of integers are
    exact, and so is their conversion to f32 below 2^24)."""
    return bool(torch.equal(got, torch.cumsum(x.double(), -1).float()))


def torch_cases(logs, reps):
    import torch

    rows = []
    dev = torch.device("cuda")
    for log in logs:
        n = 1 << log
        x = steps(torch, (n,))
        out = torch.empty_like(x)
        nbytes = 2 * x.numel() * x.element_size()
        copy = nbytes / (torch_ms(lambda: out.copy_(x), reps) * 1e-3) / 1e9
        rows.append((f"f32 add 2^{log}", "torch device copy", copy, 1.0))
        out.fill_(float("nan"))
        torch.cumsum(x, 0, out=out)
        assert exact_sums(torch, x, out), "torch.cumsum check failed: not the exact sums"
        g = nbytes / (torch_ms(lambda: torch.cumsum(x, 0, out=out), reps) * 1e-3) / 1e9
        rows.append((f"f32 add 2^{log}", "torch.cumsum", g, g / copy))
        rows += torch_replayed_rows(f"f32 add 2^{log}", nbytes, copy, lambda: out.copy_(x), lambda: torch.cumsum(x, 0, out=out), reps)
        x.uniform_(-1e6, 1e6)  # examples/bench's f32 max data
        values = torch.empty_like(x)
        indices = torch.empty(n, device=dev, dtype=torch.int64)
        torch.cummax(x, 0, out=(values, indices))
        # Checked on its first 2^20 items against numpy's running maximum.
        import numpy as np

        head = x[: 1 << 20].cpu().numpy()
        assert np.array_equal(values[: 1 << 20].cpu().numpy(), np.maximum.accumulate(head)), "torch.cummax check failed"
        g = nbytes / (torch_ms(lambda: torch.cummax(x, 0, out=(values, indices)), reps) * 1e-3) / 1e9
        rows.append((f"f32 max 2^{log}", "torch.cummax (+int64 indices, not counted)", g, g / copy))
        del x, out, values, indices
        xi = torch.randint(-(2**31), 2**31 - 1, (n,), device=dev, dtype=torch.int32)
        outi = torch.empty_like(xi)
        # torch.cumsum of int32 promotes to int64 unless told: ask for int32, like ours.
        ref = torch.cumsum(xi.long(), 0)
        got = torch.cumsum(xi, 0, dtype=torch.int32)
        assert bool((got.long() - ref).remainder(2**32).eq(0).all()), "torch.cumsum i32 check failed"
        del ref, got
        copyi = nbytes / (torch_ms(lambda: outi.copy_(xi), reps) * 1e-3) / 1e9
        rows.append((f"i32 add 2^{log}", "torch device copy", copyi, 1.0))
        g = nbytes / (torch_ms(lambda: torch.cumsum(xi, 0, dtype=torch.int32, out=outi), reps) * 1e-3) / 1e9
        rows.append((f"i32 add 2^{log}", "torch.cumsum (int32)", g, g / copyi))
        rows += torch_replayed_rows(
            f"i32 add 2^{log}", nbytes, copyi, lambda: outi.copy_(xi), lambda: torch.cumsum(xi, 0, dtype=torch.int32, out=outi), reps
        )
        del xi, outi
        torch.cuda.empty_cache()
    return rows


def torch_half(logs, reps):
    """torch.cumsum on bf16, against examples/bench's bf16 sums (gpu_fused.rs):
    the same inputs (frac(i x 0.618...) rounded to f32, then bf16), GB/s counting 4 B
    per item, and the largest relative error against the exact prefix sums
    from position 1024 on. Torch is asked for a bf16 result, as ours writes."""
    import torch

    rows = []
    dev = torch.device("cuda")
    for log in logs:
        n = 1 << log
        # f64 -> f32 -> bf16, as gpu_fused.rs rounds (the same inputs, bit for bit).
        x = (torch.arange(n, device=dev, dtype=torch.float64) * 0.618033988749895).frac().float().to(torch.bfloat16)
        out = torch.empty_like(x)
        nbytes = 4 * n
        copy = nbytes / (torch_ms(lambda: out.copy_(x), reps) * 1e-3) / 1e9
        name = f"bf16 add, bf16 out (4 B/item) 2^{log}"
        rows.append((name, "torch device copy", copy, 1.0))
        exact = torch.cumsum(x.double(), 0)
        for what, fn in [
            ("torch.cumsum (bf16)", lambda: torch.cumsum(x, 0, out=out)),
            ("torch.cumsum (dtype=float32) then .to(bf16)", lambda: out.copy_(torch.cumsum(x, 0, dtype=torch.float32))),
        ]:
            fn()
            err = float(((out.double() - exact).abs() / exact)[1024:].max())
            g = nbytes / (torch_ms(fn, reps) * 1e-3) / 1e9
            rows.append((name, f"{what} (max relative error {err:.2e})", g, g / copy))
        del x, out, exact
        torch.cuda.empty_cache()
    return rows


def torch_latency():
    """torch.cumsum of 2^16 f32 items: one call between two events, median of 1000."""
    import torch

    x = steps(torch, (1 << 16,))
    out = torch.empty_like(x)
    us = 1e3 * torch_ms(lambda: torch.cumsum(x, 0, out=out), 1000)
    copy_us = 1e3 * torch_ms(lambda: out.copy_(x), 1000)
    return us, copy_us


def torch_back_to_back_us(fn, calls, runs):
    """us per call of `calls` calls between one pair of events, median of `runs` (as examples/bench times ours)."""
    import torch

    fn()
    torch.cuda.synchronize()
    per_call = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        per_call.append(1e3 * start.elapsed_time(end) / calls)
    return statistics.median(per_call)


def torch_latency_lines(reps):
    """torch.cumsum's time per call: 2^16 one call between two events, then 2^16 and 2^24 back to back and replayed
    (medians of `reps` runs and replays)."""
    us, copy_us = torch_latency()
    one_call = f"torch.cumsum of 2^16 f32 items: {us:.2f} us per call (device copy {copy_us:.2f} us), median of 1000"
    return [one_call, ""] + torch_latency_back_to_back(reps)


def torch_replayed_us(fn, calls, replays):
    """us per call of `calls` calls recorded in a CUDA graph (torch.cuda.CUDAGraph), one replay between two
    events, median of `replays` (as examples/bench's `Cuda::time_replayed` times ours): no Python or launch cost."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up outside the capture, as torch's docs ask
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    per_call = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        per_call.append(1e3 * start.elapsed_time(end) / calls)
    del graph
    return statistics.median(per_call)


def torch_latency_back_to_back(reps):
    """torch.cumsum and a copy of 2^16 and 2^24 f32 items, back to back and replayed from a CUDA graph, as
    examples/bench times ours; the replayed sums are checked exactly."""
    import torch

    lines = []
    for log, calls in ((16, 1000), (24, 100)):
        x = steps(torch, (1 << log,))
        out = torch.empty_like(x)
        us = torch_back_to_back_us(lambda: torch.cumsum(x, 0, out=out), calls, reps)
        copy_us = torch_back_to_back_us(lambda: out.copy_(x), calls, reps)
        gbps = lambda t: 8 * (1 << log) / (t * 1e-6) / 1e9
        lines.append(
            f"torch.cumsum of 2^{log} f32 items back to back ({calls} calls between two events, median of {reps}): "
            f"{us:.2f} us per call, {gbps(us):.0f} GB/s (device copy {copy_us:.2f} us, {gbps(copy_us):.0f} GB/s)"
        )
        exact = True
        try:
            out.fill_(float("nan"))
            replayed = torch_replayed_us(lambda: torch.cumsum(x, 0, out=out), calls, reps)
            exact = exact_sums(torch, x, out)
            replayed_copy = torch_replayed_us(lambda: out.copy_(x), calls, reps)
            lines.append(
                f"torch.cumsum of 2^{log} f32 items replayed ({calls} calls in a CUDA graph, one replay between two "
                f"events, median of {reps}): {replayed:.2f} us per call, {gbps(replayed):.0f} GB/s (device copy replayed, "
                f"a memcpy node run by a copy engine, not the baseline: {replayed_copy:.2f} us, "
                f"{gbps(replayed_copy):.0f} GB/s); the sums checked exactly"
            )
        except Exception as e:  # report, keep the other figures
            lines.append(f"torch.cumsum of 2^{log} f32 items replayed: failed: {type(e).__name__}: {e}")
        assert exact, f"torch.cumsum of 2^{log} f32 items replayed: not the exact sums"
        del x, out
    return lines


def torch_sweep(reps, path):
    """torch.cumsum and a copy over 2^12 .. 2^30 f32 items, as CSV: one call between two events, median of 200 up
    to 2^20 (microsecond calls), of `reps` above, as examples/bench's sweep."""
    import torch

    lines = ["n,method,gbps"]
    for log in range(12, 31, 2):
        n = 1 << log
        x = steps(torch, (n,))
        out = torch.empty_like(x)
        r = 200 if log <= 20 else reps
        copy = 8 * n / (torch_ms(lambda: out.copy_(x), r) * 1e-3) / 1e9
        g = 8 * n / (torch_ms(lambda: torch.cumsum(x, 0, out=out), r) * 1e-3) / 1e9
        lines += [f"{n},torch copy,{copy:.1f}", f"{n},torch.cumsum,{g:.1f}"]
        del x, out
        torch.cuda.empty_cache()
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return lines


def jax_cases(logs, reps):
    import jax
    import jax.numpy as jnp

    rows = []

    def combine(l, r):
        return (l[0] * r[0], r[0] * l[1] + r[1])

    scan = jax.jit(lambda a, b: jax.lax.associative_scan(combine, (a, b)))
    copy = jax.jit(lambda a, b: (a + 0.0, b + 0.0))  # one read and one write of each array
    key = jax.random.PRNGKey(0)
    for log in logs:
        n = 1 << log
        ka, kb = jax.random.split(jax.random.fold_in(key, log))
        # examples/bench's data: a in {-1, 1}, b in {-2, ..., 2} (check.rs).
        a = jax.random.rademacher(ka, (n,), jnp.float32)
        b = jax.random.randint(kb, (n,), -2, 3).astype(jnp.float32)
        nbytes = 2 * 2 * n * 4

        # JAX has no CUDA events here: each rep times BACK_TO_BACK calls by
        # the wall clock, queued without waiting (JAX dispatches
        # asynchronously), and takes the time per call, so that a call's
        # dispatch and the final wait are not counted whole against it (one
        # call between two clock reads cost jax tens of us that ours, timed
        # by events, does not pay).
        def timed(fn):
            jax.block_until_ready(fn(a, b))
            times = []
            for _ in range(reps):
                t = time.perf_counter()
                for _ in range(BACK_TO_BACK):
                    r = fn(a, b)
                jax.block_until_ready(r)
                times.append((time.perf_counter() - t) * 1e3 / BACK_TO_BACK)
            return statistics.median(times)

        c = nbytes / (timed(copy) * 1e-3) / 1e9
        rows.append((f"linear recurrence f32 2^{log}", f"jax elementwise copy (a+0, b+0), {BACK_TO_BACK} calls back to back", c, 1.0))
        # Both components checked exactly, every item, in int64: with a_k = +-1
        # the product P_t = a_0 ... a_t is its own inverse, so
        # h_t = sum_k (P_t / P_k) b_k = P_t * cumsum(P b)_t.
        import numpy as np

        pa, h = scan(a, b)
        an, bn = np.asarray(a).astype(np.int64), np.asarray(b).astype(np.int64)
        p = np.cumprod(an)
        assert np.array_equal(np.asarray(pa), p), "jax recurrence check failed: the products of a"
        assert np.array_equal(np.asarray(h), p * np.cumsum(p * bn)), "jax recurrence check failed: h"
        del pa, h, an, bn, p
        g = nbytes / (timed(scan) * 1e-3) / 1e9
        rows.append((f"linear recurrence f32 2^{log}", f"jax.lax.associative_scan, {BACK_TO_BACK} calls back to back", g, g / c))
        del a, b
    return rows


ROW_SHAPES = [(65536, 4096), (256, 1 << 20), (4096, 4096), (1 << 20, 32)]


def torch_rows(reps):
    """torch.cumsum(dim=-1) on examples/bench's row shapes (gpu_rows.rs), against a copy."""
    import torch

    rows = []
    for r, l in ROW_SHAPES:
        x = torch.randint(-8, 9, (r, l), device="cuda").float()  # gpu_rows.rs's data
        out = torch.empty_like(x)
        nbytes = 2 * x.numel() * 4
        copy = nbytes / (torch_ms(lambda: out.copy_(x), reps) * 1e-3) / 1e9
        out.fill_(float("nan"))
        torch.cumsum(x, -1, out=out)
        assert exact_sums(torch, x, out), "torch.cumsum rows check failed"
        g = nbytes / (torch_ms(lambda: torch.cumsum(x, -1, out=out), reps) * 1e-3) / 1e9
        rows.append((f"f32 add rows {r} x {l}", "torch device copy", copy, 1.0))
        rows.append((f"f32 add rows {r} x {l}", "torch.cumsum(dim=-1)", g, g / copy))
        del x, out
        torch.cuda.empty_cache()
    return rows


def triton_rows(reps):
    """Triton's tl.associative_scan of the linear recurrence, one program per
    row of 65536 x 4096 (a, b) f32 pairs; it writes both components, as ours
    does, so both move 16 B per item."""
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def combine(a1, b1, a2, b2):
        return a1 * a2, b1 * a2 + b2

    @triton.jit
    def scan_rows(A, B, AO, HO, L: tl.constexpr):
        offs = tl.program_id(0).to(tl.int64) * L + tl.arange(0, L)
        a = tl.load(A + offs)
        b = tl.load(B + offs)
        ca, h = tl.associative_scan((a, b), 0, combine)
        tl.store(AO + offs, ca)
        tl.store(HO + offs, h)

    r, l = 65536, 4096
    # gpu_rows.rs's data: a in {-1, 0, 1}, b in {-8, ..., 8}; both components exact integers.
    a = torch.randint(-1, 2, (r, l), device="cuda").float()
    b = torch.randint(-8, 9, (r, l), device="cuda").float()
    ao, ho = torch.full_like(a, float("nan")), torch.full_like(b, float("nan"))
    run = lambda: scan_rows[(r,)](a, b, ao, ho, L=l)
    run()
    # Both components of every row checked exactly, against the sequential
    # recurrence in float64 (all rows at once, one step at a time).
    p, h = torch.ones(r, device="cuda", dtype=torch.float64), torch.zeros(r, device="cuda", dtype=torch.float64)
    wa, wh = torch.empty_like(a), torch.empty_like(b)
    for t in range(l):
        p, h = p * a[:, t], a[:, t] * h + b[:, t]
        wa[:, t], wh[:, t] = p, h
    assert torch.equal(ao, wa) and torch.equal(ho, wh), "triton rows check failed"
    del p, h, wa, wh
    nbytes = 2 * 2 * a.numel() * 4
    copy = nbytes / (torch_ms(lambda: (ao.copy_(a), ho.copy_(b)), reps) * 1e-3) / 1e9
    g = nbytes / (torch_ms(run, reps) * 1e-3) / 1e9
    name = "linear recurrence f32 pairs rows 65536 x 4096"
    return [(name, "torch device copy (a and b)", copy, 1.0), (name, "triton tl.associative_scan", g, g / copy)]


SSM = dict(batch=8, dim=1536, len=4096, state=16)


def ssm_inputs(torch):
    """examples/bench's selective-scan case (gpu_selective.rs): same shapes and ranges."""
    b, d, l, n = SSM["batch"], SSM["dim"], SSM["len"], SSM["state"]
    g = torch.Generator(device="cuda").manual_seed(0)
    r = lambda shape, lo, hi: torch.rand(shape, device="cuda", generator=g) * (hi - lo) + lo
    return dict(
        u=r((b, d, l), -1, 1), delta=r((b, d, l), -4, -1), z=r((b, d, l), -2, 2),
        A=r((d, n), -1.5, -0.5), D=r((d,), -1, 1), bias=r((d,), -0.3, 0.3),
        B=r((b, n, l), -1, 1), C=r((b, n, l), -1, 1),
    )


def torch_selective_ref(x):
    """mamba_ssm's selective_scan_ref: the loop over L (f32)."""
    import torch
    import torch.nn.functional as F

    delta = F.softplus(x["delta"] + x["bias"][..., None])
    deltaA = torch.exp(torch.einsum("bdl,dn->bdln", delta, x["A"]))
    deltaB_u = torch.einsum("bdl,bnl,bdl->bdln", delta, x["B"], x["u"])
    h = x["u"].new_zeros((x["u"].shape[0], x["u"].shape[1], x["A"].shape[1]))
    ys = []
    for i in range(x["u"].shape[2]):
        h = deltaA[:, :, i] * h + deltaB_u[:, :, i]
        ys.append(torch.einsum("bdn,bn->bd", h, x["C"][:, :, i]))
    y = torch.stack(ys, dim=2) + x["u"] * x["D"][..., None]
    return y * F.silu(x["z"])


def selective_cases(reps):
    """The selective scan by mamba_ssm's reference loop (torch) and by
    jax.lax.associative_scan over the (a, b) pairs along L, each timed end
    to end on the same inputs as examples/bench; checked against each other."""
    import torch

    x = ssm_inputs(torch)
    rows = []
    name = f"selective scan {SSM['batch']} x {SSM['dim']} x {SSM['len']}, N {SSM['state']}"
    ref = torch_selective_ref(x)
    # (A Python loop over L: slow, so fewer reps, said in the row.)
    ref_reps = max(3, reps // 5)
    ms = torch_ms(lambda: torch_selective_ref(x), ref_reps)
    rows.append((name, f"torch selective_scan_ref (loop over L; median of {ref_reps})", ms, float("nan")))
    try:
        import jax
        import jax.numpy as jnp

        def combine(l, r):
            return (l[0] * r[0], r[0] * l[1] + r[1])

        @jax.jit
        def ssm(u, delta, z, A, D, bias, B, C):
            dt = jax.nn.softplus(delta + bias[:, None])
            a = jnp.exp(dt[..., None] * A[None, :, None, :])  # (b, d, l, n)
            bu = (dt * u)[..., None] * jnp.transpose(B, (0, 2, 1))[:, None]
            _, h = jax.lax.associative_scan(combine, (a, bu), axis=2)
            y = jnp.einsum("bdln,bln->bdl", h, jnp.transpose(C, (0, 2, 1))) + u * D[:, None]
            return y * jax.nn.silu(z)

        args = [jnp.asarray(x[k].cpu().numpy()) for k in ("u", "delta", "z", "A", "D", "bias", "B", "C")]
        got = ssm(*args)
        jax.block_until_ready(got)
        err = float(jnp.max(jnp.abs(got - jnp.asarray(ref.cpu().numpy())) / (2e-3 + 6e-4 * jnp.abs(got))))
        assert err <= 1.0, f"jax selective scan differs from the torch reference: worst err/tol {err}"
        times = []
        for _ in range(reps):
            t = time.perf_counter()
            jax.block_until_ready(ssm(*args))
            times.append((time.perf_counter() - t) * 1e3)
        rows.append((name, "jax.lax.associative_scan on (a, b), (b, d, l, n) materialised (wall clock, one call)", statistics.median(times), float("nan")))
    except Exception as e:  # report, keep the torch figure
        print(f"jax selective scan failed: {type(e).__name__}: {e}", flush=True)
    return rows


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--logs", default="24,28")
    p.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "peers.md"))
    p.add_argument("--sweep-out", default=os.path.join(os.environ.get("OUT", "."), "peers-sweep.csv"))
    p.add_argument("--rows-only", action="store_true", help="only the rows cases (torch.cumsum(dim=-1), Triton)")
    p.add_argument("--selective-only", action="store_true", help="only the selective scan (torch loop, jax)")
    p.add_argument("--half-only", action="store_true", help="only torch.cumsum on bf16 (speed and error)")
    p.add_argument("--latency-only", action="store_true", help="only torch.cumsum's time per call at 2^16 and 2^24")
    args = p.parse_args()
    logs = [int(v) for v in args.logs.split(",")]
    rows = []
    import torch

    # Rows are medians of --reps timed reps unless they say their own count (replays, runs, the sweep's 200).
    print(f"# peers on {torch.cuda.get_device_name()}, torch {torch.__version__}, medians of {args.reps} reps unless a row says otherwise", flush=True)
    if args.selective_only:
        lines = ["| case | method | ms per call |", "|---|---|---:|"] + [f"| {c} | {m} | {t:.3f} |" for c, m, t, _ in selective_cases(args.reps)]
        text = "\n".join(lines) + "\n"
        print(text)
        with open(args.out, "w") as f:
            f.write(text)
        return
    if args.latency_only:
        rows = torch_cases([24], args.reps)
        lines = ["| case | method | GB/s | x copy |", "|---|---|---:|---:|"]
        lines += [f"| {c} | {m} | {g:.1f} | {r:.2f} |" for c, m, g, r in rows if c == "f32 add 2^24"]
        text = "\n".join(lines + [""] + torch_latency_lines(args.reps)) + "\n"
        print(text)
        with open(args.out, "w") as f:
            f.write(text)
        return
    if args.half_only:
        rows = torch_half(logs, args.reps)
        text = "\n".join(["| case | method | GB/s | x copy |", "|---|---|---:|---:|"] + [f"| {c} | {m} | {g:.1f} | {r:.2f} |" for c, m, g, r in rows]) + "\n"
        print(text)
        with open(args.out, "w") as f:
            f.write(text)
        return
    rows += torch_rows(args.reps)
    try:
        rows += triton_rows(args.reps)
    except Exception as e:  # report, keep the other figures
        print(f"triton rows failed: {type(e).__name__}: {e}", flush=True)
    if args.rows_only:
        text = "\n".join(["| case | method | GB/s | x copy |", "|---|---|---:|---:|"] + [f"| {c} | {m} | {g:.1f} | {r:.2f} |" for c, m, g, r in rows]) + "\n"
        print(text)
        with open(args.out, "w") as f:
            f.write(text)
        return
    rows += torch_cases(logs, args.reps)
    latency = torch_latency_lines(args.reps)
    print("\n".join(latency), flush=True)
    torch_sweep(args.reps, args.sweep_out)
    try:
        import jax

        print(f"jax {jax.__version__} on {jax.devices()}", flush=True)
        rows += jax_cases(logs, args.reps)
    except Exception as e:  # report, keep the torch figures
        print(f"jax cases failed: {type(e).__name__}: {e}", flush=True)
    lines = ["| case | method | GB/s | x copy |", "|---|---|---:|---:|"]
    lines += [f"| {c} | {m} | {g:.1f} | {r:.2f} |" for c, m, g, r in rows]
    lines += [""] + latency
    text = "\n".join(lines) + "\n"
    print(text)
    with open(args.out, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
