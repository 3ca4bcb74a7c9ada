#!/usr/bin/env bash
# Builds racecheck_handover.cu in every VARIANT (and with one scanning warp)
# and runs each under compute-sanitizer racecheck: which part of the
# single-pass slot hand-over makes racecheck report hazards? Needs nvcc and
# compute-sanitizer (the GPU machine). Prints one line per build.
set -uo pipefail
cd "$(dirname "$0")"
out=${OUT:-/tmp}/racecheck-probes
mkdir -p "$out"
for warps in 2 1; do
  for v in 0 1 2 3 4; do
    b="$out/handover-v$v-w$warps"
    nvcc -arch=sm_90 -lineinfo -DVARIANT=$v -DWARPS=$warps -o "$b" racecheck_handover.cu || { echo "v$v w$warps: build failed"; continue; }
    result=$("$b")
    hazards=$(timeout 120 compute-sanitizer --tool racecheck "$b" 2>&1 | grep -oE "RACECHECK SUMMARY: [0-9]+ hazards" | grep -oE "[0-9]+")
    echo "variant $v, $warps scanning warp(s): $result, racecheck hazards ${hazards:-?}"
  done
done
b="$out/two-slots"
nvcc -arch=sm_90 -lineinfo -o "$b" racecheck_two_slots.cu && "$b" &&
  echo "two slots: racecheck hazards $(timeout 60 compute-sanitizer --tool racecheck "$b" 2>&1 | grep -oE 'RACECHECK SUMMARY: [0-9]+' | grep -oE '[0-9]+$')"
