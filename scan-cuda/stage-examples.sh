#!/usr/bin/env bash
# Run after ../shared/tools/stage-gpu: it copies the first artifact of each
# example name, and for an example with `test = true` in Cargo.toml
# (quickstart, sharded) that is its test harness (from `cargo test
# --no-run`), not the program. This copies the programs over them.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
[ -d .gpu/bin/examples ] || { echo "no .gpu/bin/examples: run ../shared/tools/stage-gpu first" >&2; exit 1; }
cargo build --workspace --release --examples --message-format=json | python3 -c '
import json, os, shutil, subprocess, sys
for line in sys.stdin:
    m = json.loads(line) if line.startswith("{") else {}
    if m.get("reason") != "compiler-artifact" or not m.get("executable"):
        continue
    if "example" not in m["target"]["kind"] or m.get("profile", {}).get("test"):
        continue
    dest = ".gpu/bin/examples/" + m["target"]["name"]
    if os.path.exists(dest):
        shutil.copy2(m["executable"], dest)
        subprocess.run(["strip", dest], check=False)
        print("staged the program", dest)
'
