# Helpers for the system tests: real mdcast processes over shm on this host.
# Each test gets its own feed name, counters directory and scratch directory,
# and ends only the processes it started.
set -euo pipefail

MDCAST=${1:?usage: $0 path/to/mdcast}
NAME="sys-$(basename "$0" .sh)-$$"
WORK=$(mktemp -d "/tmp/mdcast-${NAME}.XXXXXX")
export MDCAST_STAT_DIR="$WORK/stat"
mkdir -p "$MDCAST_STAT_DIR"
PIDS=()

cleanup() {
  local rc=$?
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  if [ $rc -ne 0 ]; then
    echo "--- logs ($WORK) ---"
    for f in "$WORK"/*.log; do [ -f "$f" ] && { echo "== $f"; tail -20 "$f"; }; done
  else
    rm -rf "$WORK"
  fi
  exit $rc
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "-- $*"; }

# start_bg LABEL ARGS...: runs mdcast ARGS in the background, logs to $WORK/LABEL.log
start_bg() {
  local label=$1; shift
  "$MDCAST" "$@" >"$WORK/$label.log" 2>&1 &
  PIDS+=($!)
  eval "PID_${label//-/_}=$!"
}

# wait_pid PID SECONDS: waits for PID, fails on timeout; returns its exit status
wait_pid() {
  local pid=$1 t=$2 i=0
  while kill -0 "$pid" 2>/dev/null; do
    sleep 0.1; i=$((i + 1))
    if [ $i -gt $((t * 10)) ]; then fail "process $pid still running after ${t}s"; fi
  done
  wait "$pid"
}

# toml_get FILE KEY: a top-level or quoted key's integer/string value
toml_get() { grep -E "^\"?$2\"? = " "$1" | head -1 | sed -E 's/^[^=]+= //; s/"//g'; }

wait_ring() {
  local i=0
  until [ -e "/dev/shm/mdcast-$NAME.ring" ] || [ -e "/dev/hugepages/mdcast-$NAME.ring" ]; do
    sleep 0.05; i=$((i + 1))
    if [ $i -gt 200 ]; then fail "ring of $NAME never appeared"; fi
  done
}

# wait_published PID N: until publisher PID has published N messages (read
# through `mdcast stat`, as an operator would)
wait_published() {
  local pid=$1 want=$2 i=0 got=0
  while :; do
    got=$("$MDCAST" stat "$pid" 2>/dev/null | awk '$1 == "pub.messages_published" {print $2}')
    if [ "${got:-0}" -ge "$want" ]; then return 0; fi
    sleep 0.05; i=$((i + 1))
    if [ $i -gt 600 ]; then fail "publisher $pid published only ${got:-0} of $want messages in 30s"; fi
  done
}
