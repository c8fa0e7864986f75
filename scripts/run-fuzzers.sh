#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build for SECONDS each, under
# ASan/UBSan (the targets are built with them), and fails if any target
# crashes, trips a FUZZ_CHECK, leaks, times out on one input or runs out of
# memory. The checked-in seeds (tests/fuzz/corpus/<target>) are read, never
# written: new inputs go to a work corpus under the build directory, and
# crashing inputs to its artifacts/ folder.
#
#   scripts/run-fuzzers.sh BUILD_DIR SECONDS [TARGET...]
#
# Environment: MDCAST_FUZZ_WORK (work directory, default BUILD_DIR/fuzz-work),
# MDCAST_FUZZ_JOBS (targets run side by side, default 1),
# MDCAST_FUZZ_NO_GUARDS=1 (stop stepping around known bugs, see tests/fuzz/README.md).
set -euo pipefail

if [ $# -lt 2 ]; then
  echo "usage: $0 BUILD_DIR SECONDS [TARGET...]" >&2
  exit 2
fi
build=$1
secs=$2
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_datagram fuzz_control fuzz_subscriber fuzz_snapshot_apply fuzz_auth fuzz_announce fuzz_pcap fuzz_shm_ring)
work=${MDCAST_FUZZ_WORK:-$build/fuzz-work}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

# One target's run, its verdict in $work/TARGET.verdict (read after all ran,
# so that targets can run side by side).
fuzz_one() {
  local t=$1 bin=$build/tests/fuzz/$1 log=$work/$1.log seeds=$root/tests/fuzz/corpus/$1 rc
  mkdir -p "$work/$t" "$work/artifacts/$t"
  set +e
  "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/$t/" "$work/$t" "$seeds" >"$log" 2>&1
  rc=$?
  set -e
  echo "$rc" >"$work/$t.verdict"
}

for t in "${targets[@]}"; do
  if [ ! -x "$build/tests/fuzz/$t" ]; then
    echo "run-fuzzers: $build/tests/fuzz/$t missing (configure with the 'fuzz' preset, MDCAST_FUZZ=ON, and build)" >&2
    exit 1
  fi
done

# Each target gets its SECONDS whatever runs beside it: libFuzzer's time is
# wall time, so JOBS beyond the cores only thins each target's executions.
jobs=${MDCAST_FUZZ_JOBS:-1}
mkdir -p "$work"
running=0
for t in "${targets[@]}"; do
  rm -f "$work/$t.verdict"
  fuzz_one "$t" &
  running=$((running + 1))
  if [ $running -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
done
wait

failed=()
for t in "${targets[@]}"; do
  log=$work/$t.log
  rc=$(cat "$work/$t.verdict" 2>/dev/null || echo "?")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2 || true)
  if [ "$rc" = 0 ]; then
    printf 'run-fuzzers: %-20s ok    %10s execs  %7s exec/s  cov %s\n' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}"
  else
    printf 'run-fuzzers: %-20s FAIL  (exit %s) log %s\n' "$t" "$rc" "$log" >&2
    grep -E 'ERROR:|FUZZ_CHECK|runtime error|SUMMARY|Test unit written' "$log" | head -8 >&2 || tail -20 "$log" >&2
    failed+=("$t")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "run-fuzzers: failed: ${failed[*]} (reproduce: BUILD_DIR/tests/fuzz/TARGET ARTIFACT)" >&2
  exit 1
fi
