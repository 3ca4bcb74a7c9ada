#!/usr/bin/env bash
# The whole GPU check in one device call, from the repository root, after
# ../shared/tools/stage-gpu (binaries in .gpu/). Every step has a time limit,
# so a hang costs minutes, not the lease; logs and results go to $OUT.
#
#   bash scan-cuda/gpu-check.sh tests      # smoke test, then every GPU test binary (side by side; each under
#                                          # TEST_LIMIT s, 420 by default, with TEST_THREADS test threads, 4)
#   bash scan-cuda/gpu-check.sh host       # quickstart at 2^24 and 2^28 (no environment set up), bench --gpu-host-only
#   bash scan-cuda/gpu-check.sh bench      # examples/bench --gpu, peers, plot (about 9 minutes since the replayed rows:
#                                          # longer than one device call allows; scans, rows, fused, selective split it)
#   bash scan-cuda/gpu-check.sh compact    # stream compaction: test gpu_compact, examples/compact at three register
#                                          # bounds of the scatter (SCAN_CUDA_COMPACT_SCATTER_BLOCKS), about a minute
#   bash scan-cuda/gpu-check.sh rows       # rows and segments: bench --gpu-rows-only, examples/compact, peers --rows-only
#                                          # (SCAN_BENCH_ROWS_SWEEP=1 adds tile shapes for f32 rows of 65536 x 4096)
#   bash scan-cuda/gpu-check.sh fused      # fused maps: bench --gpu-fused-only (the recurrence from a[], b[] to h[];
#                                          # bf16 sums in f32), peers --half-only (torch.cumsum on bf16);
#                                          # SCAN_BENCH_FUSED_SWEEP=1 adds tile shapes at 2^28 (=bf16: the bf16
#                                          # sums' alone, =recurrence: the recurrence's; the whole sweep takes minutes,
#                                          # its f64 checks on the host)
#   bash scan-cuda/gpu-check.sh selective  # the selective scan: bench --gpu-selective-only, peers --selective-only
#   bash scan-cuda/gpu-check.sh scans      # 5/11's table only: examples/bench --gpu-scans-only, the peers, the plot
#   bash scan-cuda/gpu-check.sh sharded    # scans across ranks: test gpu_sharded, examples/sharded (processes, bench
#                                          # at SHARDED_LOG2, default "28 31")
#   bash scan-cuda/gpu-check.sh test:NAME  # one GPU test binary (e.g. test:gpu_rows)
#   bash scan-cuda/gpu-check.sh policies   # examples/bench --gpu-policies-only (single-pass tuning sweep; POLICY_ITEMS=16,32 for some item sizes)
#   bash scan-cuda/gpu-check.sh midsizes   # f32 add's tile shapes at 2^20..2^24 only (POLICY_F32_SIZES=20,22 for others)
#   bash scan-cuda/gpu-check.sh sanitize   # compute-sanitizer memcheck/racecheck/synccheck
#   bash scan-cuda/gpu-check.sh probes     # racecheck of a model of the single-pass slot hand-over, in variants (needs nvcc)
#   bash scan-cuda/gpu-check.sh profile    # ncu of the single-pass kernel (f32 add, 2^28)
#                                          # (PROFILE_CASES="selective" for the selective scan: examples/gpu_profile cases;
#                                          # PROFILE_LOG=22 for 2^22 items instead of 2^28)
set -uo pipefail
out=${OUT:-/tmp/scan-gpu}
mkdir -p "$out"
export SCAN_REQUIRE_GPU=1 RUST_BACKTRACE=1 SCAN_CUDA_CACHE_DIR=/tmp/scan-cache
# Never NVLink multicast (it can put shared hosts' GPUs out of service).
export NCCL_NVLS_ENABLE=0
bin=.gpu/bin
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
status=0
step() { # step LIMIT NAME CMD...: run with a time limit, log to $out/NAME.log
  local limit=$1 name=$2; shift 2
  echo "== $name"
  timeout "$limit" "$@" >"$out/$name.log" 2>&1; local rc=$?
  grep -E '^test result|FAILED|panicked|ERROR SUMMARY|RACECHECK SUMMARY|SYNCCHECK SUMMARY|GPU RUN' "$out/$name.log" | head -20
  [ $rc -eq 0 ] || { echo "!! $name exited $rc"; tail -25 "$out/$name.log"; status=1; }
}
for what in "$@"; do
  case $what in
  tests)
    # No environment set up: scan-cuda finds libcuda and libnvrtc itself
    # (discover.rs). The loader's path is printed so the log shows that.
    echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-<unset>}"
    step 60 quickstart env -u LD_LIBRARY_PATH -u CUDA_HOME -u CUDA_PATH $bin/examples/quickstart
    # The NVRTC suites need no GPU: CI runs them (.ci/run). The binaries run
    # side by side: their time goes to NVRTC compiles (CPU) and the
    # adversarial schedules' delays, not to the GPU, so together they take
    # about as long as the slowest (gpu_single_pass) instead of the sum.
    # With 4 test threads each, all 15 GPU binaries took 120-155 s on the
    # H200 (2026-12-02); with one thread each gpu_rows and gpu_scan ran
    # past 300 s. gpu_large (two scans past 2^31 items checked on the host)
    # took 204 s, then 292 s side by side, and on 2026-12-07 ran past 300 s
    # (it passed alone in 261 s): each binary gets TEST_LIMIT seconds, 420 by
    # default, inside a device call's 600.
    pids=()
    for t in $bin/tests/*; do
      case $t in *nvrtc*) continue ;; esac
      name="test-$(basename "$t")"
      ( timeout "${TEST_LIMIT:-420}" "$t" --ignored --test-threads="${TEST_THREADS:-4}" --nocapture >"$out/$name.log" 2>&1; echo $? >"$out/$name.rc" ) &
      pids+=($!)
    done
    wait "${pids[@]}"
    for rc in "$out"/test-*.rc; do
      name=$(basename "$rc" .rc)
      echo "== $name"
      grep -E '^test result|FAILED|panicked' "$out/$name.log" | head -20
      [ "$(cat "$rc")" = 0 ] || { echo "!! $name exited $(cat "$rc")"; tail -25 "$out/$name.log"; status=1; }
      rm -f "$rc"
    done
    ;;
  host)
    for log in 24 28; do
      step 120 "quickstart-2e$log" env -u LD_LIBRARY_PATH -u CUDA_HOME -u CUDA_PATH $bin/examples/quickstart $log
      cat "$out/quickstart-2e$log.log"
    done
    step 400 bench-host $bin/examples/bench --gpu-host-only --reps 15 --out "$out/bench-host.md"
    cat "$out/bench-host.md"
    ;;
  bench)
    step 540 bench $bin/examples/bench --gpu --reps 15 --out "$out/bench.md" --sweep-out "$out/sweep.csv"
    PYTHONUNBUFFERED=1 step 300 peers python3 bench/peers.py --reps 15 --out "$out/peers.md" --sweep-out "$out/peers-sweep.csv"
    step 60 plot python3 bench/plot.py "$out/sweep.csv" "$out/peers-sweep.csv" "$out/gpu-sweep.png" "f32 inclusive scan, $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
    ;;
  scans)
    # 5/11's table alone (plain scans, time per call, size sweep) with the peers and the plot:
    # the whole bench no longer fits one device call with the peers.
    step 360 bench $bin/examples/bench --gpu-scans-only --reps 15 --out "$out/bench.md" --sweep-out "$out/sweep.csv"
    PYTHONUNBUFFERED=1 step 200 peers python3 bench/peers.py --reps 15 --out "$out/peers.md" --sweep-out "$out/peers-sweep.csv"
    step 60 plot python3 bench/plot.py "$out/sweep.csv" "$out/peers-sweep.csv" "$out/gpu-sweep.png" "f32 inclusive scan, $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
    ;;
  rows)
    step 400 bench-rows $bin/examples/bench --gpu-rows-only --reps 15 --out "$out/bench-rows.md"
    cat "$out/bench-rows.md"
    step 120 compact $bin/examples/compact
    cat "$out/compact.log"
    PYTHONUNBUFFERED=1 step 300 peers-rows python3 bench/peers.py --rows-only --reps 15 --out "$out/peers-rows.md"
    cat "$out/peers-rows.md"
    ;;
  compact)
    # Stream compaction: its GPU tests, then examples/compact (2^24 f32, a
    # quarter kept) with the scatter's register bound at the default and at
    # 4 and 5 blocks an SM (SCAN_CUDA_COMPACT_SCATTER_BLOCKS), twice each in
    # turn; about a minute.
    step 150 test-gpu_compact $bin/tests/scan-gpu_compact --ignored --test-threads=4
    for round in 1 2; do
      for blocks in default 4 5; do
        value=$blocks; [ "$blocks" = default ] && value=
        SCAN_CUDA_COMPACT_SCATTER_BLOCKS=$value step 60 "compact-$blocks-$round" $bin/examples/compact
        echo "-- scatter blocks $blocks, round $round: $(grep 'Cuda::compact_device_into' "$out/compact-$blocks-$round.log")"
      done
    done
    ;;
  fused)
    step 300 bench-fused $bin/examples/bench --gpu-fused-only --reps 15 --out "$out/bench-fused.md"
    cat "$out/bench-fused.md"
    PYTHONUNBUFFERED=1 step 120 peers-half python3 bench/peers.py --half-only --reps 15 --out "$out/peers-half.md"
    cat "$out/peers-half.md"
    ;;
  selective)
    step 300 bench-selective $bin/examples/bench --gpu-selective-only --reps 15 --out "$out/bench-selective.md"
    cat "$out/bench-selective.md"
    # The other kernels, forced (the default takes channels2 here).
    for k in block channels4 warp2 lanes; do
      SCAN_CUDA_SELECTIVE_KERNEL=$k step 300 "bench-selective-$k" $bin/examples/bench --gpu-selective-only --reps 15 \
        --out "$out/bench-selective-$k.md"
      echo "-- SCAN_CUDA_SELECTIVE_KERNEL=$k"; grep -E "^\| GPU selective" "$out/bench-selective-$k.md"
    done
    # The backward's 128-thread carries kernel (the default is one warp).
    SCAN_CUDA_SELECTIVE_BACKWARD_CARRIES=block step 300 bench-selective-carries-block $bin/examples/bench \
      --gpu-selective-only --reps 15 --out "$out/bench-selective-carries-block.md"
    echo "-- SCAN_CUDA_SELECTIVE_BACKWARD_CARRIES=block"; grep -E "backward" "$out/bench-selective-carries-block.md"
    PYTHONUNBUFFERED=1 step 400 peers-selective python3 bench/peers.py --selective-only --reps 15 --out "$out/peers-selective.md"
    cat "$out/peers-selective.md"
    ;;
  sharded)
    # Scans across ranks (11/11): where NCCL is, the GPU tests, the
    # multi-process example (one rank per GPU; with more ranks than GPUs NCCL
    # refuses, which is logged, not counted as a failure), and the benchmark.
    find / -name 'libnccl.so*' -not -path '*/proc/*' 2>/dev/null | head -5
    for t in $bin/tests/*gpu_sharded*; do
      step 400 "test-$(basename "$t")" "$t" --ignored --test-threads=1 --nocapture
    done
    ngpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
    step 120 sharded-ranks-$ngpu $bin/examples/sharded --ranks "$ngpu"
    cat "$out/sharded-ranks-$ngpu.log"
    echo "-- 2 ranks on $ngpu GPU(s) (NCCL refuses two ranks on one GPU)"
    timeout 120 $bin/examples/sharded --ranks 2 --len 100000 >"$out/sharded-ranks-2.log" 2>&1
    echo "exit $?"; grep -E "rank|error|Duplicate|matched" "$out/sharded-ranks-2.log" | head -8
    for log in ${SHARDED_LOG2:-28 31}; do
      step 300 "sharded-bench-2e$log" $bin/examples/sharded --bench --log2 "$log"
      cat "$out/sharded-bench-2e$log.log"
    done
    ;;
  test:*)
    for t in $bin/tests/*"${what#test:}"*; do
      step 400 "test-$(basename "$t")" "$t" --ignored --test-threads=1 --nocapture
    done
    ;;
  policies)
    step 480 policies $bin/examples/bench --gpu-policies-only --policy-items "${POLICY_ITEMS:-4,8,16,32}" --reps 11 --out "$out/policies.md"
    cat "$out/policies.md"
    ;;
  midsizes)
    # f32 add's tile shapes at small and middle sizes only (about a minute).
    step 240 midsizes $bin/examples/bench --gpu-policies-only --policy-f32-sizes "${POLICY_F32_SIZES:-20,21,22,23,24}" --reps 15 --out "$out/midsizes.md"
    cat "$out/midsizes.md"
    ;;
  sanitize)
    # -lineinfo: reports name the line of the generated source
    # (scan_cuda::module_source). The single-pass slot hand-overs are mbarriers
    # on sm_90, which racecheck follows (0 hazards since d13d6d4); on named
    # barriers it reported false hazards (the `probes` step shows it on a ring).
    export SCAN_CUDA_LINEINFO=1
    for tool in memcheck racecheck synccheck; do
      SCAN_TEST_MAX_LEN=40000 step 300 "sanitize-$tool" compute-sanitizer --tool $tool --error-exitcode 9 \
        $bin/tests/scan-gpu_single_pass --ignored --test-threads=1 adversarial tile_status shapes deterministic
      SCAN_TEST_MAX_LEN=5000 step 300 "sanitize-$tool-scan" compute-sanitizer --tool $tool --error-exitcode 9 \
        $bin/tests/scan-gpu_scan --ignored --test-threads=1 non_commutative
      # Rows and segments (the Heads kernels, the flags kernel) and the selective scan's two kernels.
      SCAN_TEST_MAX_LEN=5000 step 300 "sanitize-$tool-rows" compute-sanitizer --tool $tool --error-exitcode 9 \
        $bin/tests/scan-gpu_rows --ignored --test-threads=1 small_items
      step 300 "sanitize-$tool-selective" compute-sanitizer --tool $tool --error-exitcode 9 \
        $bin/tests/scan-selective_scan --ignored --test-threads=1 device_resident lane_group channel_group \
        widens_every_half takes_half_precision
      SCAN_TEST_MAX_LEN=20000 step 300 "sanitize-$tool-compact" compute-sanitizer --tool $tool --error-exitcode 9 \
        $bin/tests/scan-gpu_compact --ignored --test-threads=1
      # Fused maps: item slots, narrow slots (bf16 sums; f32 -> f64 -> f32 and
      # the non-commutative Alternate among the declared maps), staged loads.
      # Unlimited, racecheck of the half-precision test alone ran past 220 s.
      SCAN_TEST_MAX_LEN=20000 step 300 "sanitize-$tool-maps" compute-sanitizer --tool $tool --error-exitcode 9 \
        $bin/tests/scan-gpu_maps --ignored --test-threads=1 half_precision declared_maps
    done
    ;;
  probes)
    # The slot hand-over alone, in variants, under racecheck: which part of it
    # does racecheck report on named barriers, and do mbarriers clear it
    # (scan-cuda/probes/racecheck_handover.cu, racecheck_ring.cu)?
    OUT="$out" step 600 probes bash scan-cuda/probes/racecheck.sh
    cat "$out/probes.log"
    ;;
  profile)
    # The plain kernel, then the rows kernel (65536 rows of 4096). The
    # details and the stall reasons (cycles per issued instruction, by
    # reason) of each go to ncu-*.txt.
    for c in ${PROFILE_CASES:-f32-add f32-add-rows}; do
      step 300 "ncu-$c" ncu --clock-control none --set full --import-source yes --launch-skip 2 --launch-count 1 \
        -k regex:"single_pass|selective" -o "$out/$c" $bin/examples/gpu_profile $c "${PROFILE_LOG:-28}"
      ncu --import "$out/$c.ncu-rep" --page details >"$out/ncu-$c.txt" 2>&1
      ncu --import "$out/$c.ncu-rep" --page raw --csv 2>/dev/null | python3 -c '
import csv, sys
rows = list(csv.reader(sys.stdin))
for name, unit, value in zip(rows[0], rows[1], rows[2]):
    if "issue_stalled" in name and name.endswith("per_issue_active.ratio"):
        print("STALL", name, value, unit)' >>"$out/ncu-$c.txt"
      # Per SASS instruction (the source page): the 15 with the most excess
      # shared-memory wavefronts (bank conflicts), with their stall samples;
      # then the 30 with the most stall samples ("HOT", offsets from the
      # kernel's first instruction, as `cuobjdump -sass` of the cubin
      # example's build prints them; the two largest reasons).
      ncu --import "$out/$c.ncu-rep" --page source --csv --print-source sass 2>/dev/null | python3 -c '
import csv, sys
rows = list(csv.reader(sys.stdin))
head = next((i for i, r in enumerate(rows) if any("Source" == c or "Address" == c for c in r)), None)
if head is None:
    sys.exit(0)
cols = rows[head]
pick = lambda words: next((i for i, c in enumerate(cols) if all(w in c for w in words)), None)
src, ex, samp = pick(["Source"]), pick(["Shared", "Excessive"]), pick(["Warp Stall Sampling (All"])
if src is None or ex is None:
    print("SHARED no source-level columns:", cols[:12]); sys.exit(0)
def num(r, i):
    try:
        return float(r[i].replace(",", "")) if i is not None and i < len(r) and r[i] else 0.0
    except ValueError:
        return 0.0
body = [r for r in rows[head + 1:] if len(r) > max(src, ex)]
for r in sorted(body, key=lambda r: -num(r, ex))[:15]:
    print("SHARED excess %10.0f  stalls %8.0f  %s" % (num(r, ex), num(r, samp), r[src].strip()))
addr = pick(["Address"])
if addr is None or samp is None:
    sys.exit(0)
base = min(int(r[addr], 16) for r in body)
total = sum(num(r, samp) for r in body) or 1.0
reasons = [(i, c[len("stall_"):]) for i, c in enumerate(cols) if c.startswith("stall_") and "Not Issued" not in c]
for r in sorted(body, key=lambda r: -num(r, samp))[:30]:
    why = sorted(((num(r, i), c) for i, c in reasons), reverse=True)[:2]
    print("HOT %05x %5.1f%% %6.0f  %-50s %s" % (int(r[addr], 16) - base, 100 * num(r, samp) / total, num(r, samp),
          r[src].strip(), " ".join("%s=%g" % (c, v) for v, c in why if v > 0)))' >>"$out/ncu-$c.txt"
      echo "-- $c"
      grep -E "Duration|DRAM Throughput|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|Block Limit" "$out/ncu-$c.txt" | head -12
      grep -E "^SHARED" "$out/ncu-$c.txt" | head -15
      grep -E "^HOT" "$out/ncu-$c.txt" | head -12
      grep -E "^STALL" "$out/ncu-$c.txt" | sort -k3 -g -r | head -8
    done
    ;;
  esac
done
# The device tool returns at most 8 files: the logs travel as one archive.
(cd "$out" && ls *.log >/dev/null 2>&1 && tar czf "logs-$(date +%H%M%S).tar.gz" *.log && rm -f *.log)
[ $status -eq 0 ] && echo "GPU CHECK: all passed" || echo "GPU CHECK: FAILURES (logs in $out)"
exit $status
