#!/usr/bin/env bash
# `make test` beside a CPU hog on every core, as on a shared build machine:
# a test that waits for a fixed time, or assumes how much a few seconds
# produce, fails here first. The hogs are busy loops at normal priority
# (LOAD_HOGS of them, default one per core), ended by PID when the tests end,
# however they end.
#
#   scripts/test-under-load.sh [STAGE...]     stages as scripts/test-all.sh takes them
#   LOAD_HOGS=4 scripts/test-under-load.sh asan-tests
set -uo pipefail
cd "$(dirname "$0")/.."

hogs=${LOAD_HOGS:-$(nproc)}
[[ $hogs =~ ^[0-9]+$ ]] || { echo "test-under-load: LOAD_HOGS=$hogs is not a count" >&2; exit 2; }
pids=()
stop_hogs() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  pids=()
}
trap stop_hogs EXIT
trap 'stop_hogs; exit 130' INT
trap 'stop_hogs; exit 143' TERM

for _ in $(seq "$hogs"); do
  bash -c 'while :; do :; done' &
  pids+=($!)
done
echo "test-under-load: $hogs CPU hog(s) running (PIDs ${pids[*]}) on $(nproc) core(s)"
./scripts/test-all.sh "$@"
rc=$?
echo "test-under-load: load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $rc
