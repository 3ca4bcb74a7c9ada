#!/usr/bin/env python3
"""GB/s against N for f32 add: ours (single-pass), torch.cumsum and the device
copy, from examples/bench's --sweep-out CSV and bench/peers.py's, measured in
one device call.

    python3 bench/plot.py OURS.csv PEERS.csv OUT.png "title"
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read(path):
    series = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            series.setdefault(row["method"], []).append((int(row["n"]), float(row["gbps"])))
    return series


def main():
    ours, peers, out = sys.argv[1], sys.argv[2], sys.argv[3]
    title = sys.argv[4] if len(sys.argv) > 4 else "f32 inclusive scan"
    series = {**read(ours), **read(peers)}
    style = {
        "scan single-pass": ("scan (single-pass)", "-o", "tab:blue"),
        "torch.cumsum": ("torch.cumsum (CUB)", "-s", "tab:orange"),
        "device copy": ("device copy (cudarc)", "--", "tab:gray"),
        "torch copy": ("device copy (torch)", ":", "tab:gray"),
    }
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for key, (label, fmt, color) in style.items():
        if key in series:
            pts = sorted(series[key])
            ax.plot([n for n, _ in pts], [g for _, g in pts], fmt, color=color, label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("items (f32)")
    ax.set_ylabel("GB/s (input + output bytes)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)


if __name__ == "__main__":
    main()
