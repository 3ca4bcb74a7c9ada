#!/usr/bin/env bash
# Builds racecheck_handover.cu in every VARIANT (and with one scanning warp)
# and runs each under compute-sanitizer racecheck: which part of the
# single-pass slot hand-over makes racecheck report hazards? Needs nvcc and
# compute-sanitizer (the GPU machine). Prints one line per build.
set -uo pipefail
cd "$(dirname "$0")"
out=${OUT:-/tmp}/racecheck-probes
mkdir -p "$out"
# RACECHECK_ONLY=ring runs only the ring's variants.
[ "${RACECHECK_ONLY:-}" = ring ] || for warps in 2 1; do
  for v in 0 1 2 3 4; do
    b="$out/handover-v$v-w$warps"
    nvcc -arch=sm_90 -lineinfo -DVARIANT=$v -DWARPS=$warps -o "$b" racecheck_handover.cu || { echo "v$v w$warps: build failed"; continue; }
    result=$("$b")
    timeout 120 compute-sanitizer --tool racecheck --print-level info "$b" >"$b.racecheck.log" 2>&1
    hazards=$(grep -oE "RACECHECK SUMMARY: [0-9]+ hazards" "$b.racecheck.log" | grep -oE "[0-9]+")
    echo "variant $v, $warps scanning warp(s): $result, racecheck hazards ${hazards:-?}"
    # Where: the first report's pair of accesses, file:line each.
    grep -m2 -A1 -E "Race reported|Warning|Error" "$b.racecheck.log" | sed 's/^/    /' 
  done
done
if [ "${RACECHECK_ONLY:-}" != ring ]; then
  b="$out/two-slots"
  nvcc -arch=sm_90 -lineinfo -o "$b" racecheck_two_slots.cu && "$b" &&
    echo "two slots: racecheck hazards $(timeout 60 compute-sanitizer --tool racecheck "$b" 2>&1 | grep -oE 'RACECHECK SUMMARY: [0-9]+' | grep -oE '[0-9]+$')"
fi
# The two-slot ring grown one feature at a time (racecheck_ring.cu's
# VARIANTs), three racecheck runs each (does the verdict depend on timing?);
# then the same rings handing over through mbarriers (MBAR=1).
for mbar in 0 1; do
  for v in 0 1 2 3 4 5 6; do
    b="$out/ring-v$v-mbar$mbar"
    nvcc -arch=sm_90 -lineinfo -DVARIANT=$v -DMBAR=$mbar -o "$b" racecheck_ring.cu || { echo "ring v$v mbar $mbar: build failed"; continue; }
    result=$("$b")
    counts=""
    for run in 1 2 3; do
      timeout 60 compute-sanitizer --tool racecheck --print-level info "$b" >"$b.racecheck-$run.log" 2>&1
      counts="$counts $(grep -oE 'RACECHECK SUMMARY: [0-9]+' "$b.racecheck-$run.log" | grep -oE '[0-9]+$')"
    done
    echo "ring: $result, racecheck hazards in three runs:$counts"
    grep -h -m2 -A1 -E "Race reported" "$b".racecheck-*.log | sort | uniq -c | sed 's/^/    /'
  done
done
