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
# Each note says when, in seconds since the test began: a test that times out
# under load shows which step took the time.
note() { echo "-- [${SECONDS}s] $*"; }

# start_bg LABEL ARGS...: runs mdcast ARGS in the background, logs to $WORK/LABEL.log
start_bg() {
  local label=$1; shift
  "$MDCAST" "$@" >"$WORK/$label.log" 2>&1 &
  PIDS+=($!)
  eval "PID_${label//-/_}=$!"
}

# wait_pid PID SECONDS: waits for PID, fails on timeout; returns its exit status
# Every wait below counts wall-clock seconds, not polls: on a loaded host (or
# in the emulated VM) one `mdcast stat` can take longer than the poll interval.
wait_pid() {
  local pid=$1 t=$2 end=$((SECONDS + $2))
  while kill -0 "$pid" 2>/dev/null; do
    sleep 0.1
    if [ $SECONDS -gt $end ]; then fail "process $pid still running after ${t}s"; fi
  done
  wait "$pid"
}

# toml_get FILE KEY: a top-level or quoted key's integer/string value
toml_get() { grep -E "^\"?$2\"? = " "$1" | head -1 | sed -E 's/^[^=]+= //; s/"//g'; }

wait_ring() {
  local end=$((SECONDS + 10))
  until [ -e "/dev/shm/mdcast-$NAME.ring" ] || [ -e "/dev/hugepages/mdcast-$NAME.ring" ]; do
    sleep 0.05
    if [ $SECONDS -gt $end ]; then fail "ring of $NAME never appeared in 10 s"; fi
  done
}

# wait_published PID N: until publisher PID has published N messages (read
# through `mdcast stat`, as an operator would)
wait_published() {
  local pid=$1 want=$2 end=$((SECONDS + 30)) got=0
  while :; do
    got=$("$MDCAST" stat "$pid" 2>/dev/null | awk '$1 == "pub.messages_published" {print $2}')
    if [ "${got:-0}" -ge "$want" ]; then return 0; fi
    sleep 0.05
    if [ $SECONDS -gt $end ]; then fail "publisher $pid published only ${got:-0} of $want messages in 30s"; fi
  done
}

# wait_rc PID SECONDS: PID's exit status; 124 (after SIGKILL) if it outlives SECONDS.
wait_rc() {
  local pid=$1 end=$((SECONDS + $2))
  while kill -0 "$pid" 2>/dev/null; do
    sleep 0.1
    if [ $SECONDS -gt $end ]; then
      kill -9 "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
      return 124
    fi
  done
  wait "$pid"
}

# crash_drill PID LOG [CMD...]: arms PID's crash drill (SIGUSR1;
# publisher.crash_drill), runs CMD (what brings the drill's point: a late
# joiner for a snapshot) and waits for PID to die there (SIGKILL: 137).
crash_drill() {
  local pid=$1 log=$2 rc=0
  shift 2
  kill -USR1 "$pid"
  if [ $# -gt 0 ]; then "$@"; fi
  wait_rc "$pid" 60 || rc=$?
  [ "$rc" = 137 ] || fail "process $pid did not die at its crash drill (exit status $rc): $(tail -2 "$log")"
}

# stat_value PID KEY: one counter of a running (or dead) mdcast process, as `mdcast stat` shows it.
stat_value() { "$MDCAST" stat -a "$1" 2>/dev/null | awk -v k="$2" '$1 == k {print $2; exit}'; }

# stat_each KEY PID...: "PID VALUE" for each PID that shows counter KEY, from
# one `mdcast stat -a` of every process (in the emulated VM one run of mdcast
# costs about a second: a wait over several processes reads them together).
stat_each() {
  local key=$1; shift
  "$MDCAST" stat -a 2>/dev/null | awk -v k="$key" -v pids=" $* " '
    $1 == "pid" {cur = $2; next}
    $1 == k && index(pids, " " cur " ") {print cur, $2}'
}

# wait_stat_each KEY MIN SECONDS PID...: until counter KEY of every PID reaches
# MIN; false on timeout or when one of them ended first.
wait_stat_each() {
  local key=$1 want=$2 end=$((SECONDS + $3)) p; shift 3
  while :; do
    [ "$(stat_each "$key" "$@" | awk -v m="$want" '$2 >= m' | wc -l)" -ge $# ] && return 0
    for p in "$@"; do kill -0 "$p" 2>/dev/null || return 1; done
    sleep 0.1
    [ $SECONDS -le $end ] || return 1
  done
}

# wait_stat PID KEY MIN SECONDS: until counter KEY of PID reaches MIN; false on timeout.
wait_stat() {
  local pid=$1 key=$2 want=$3 end=$((SECONDS + $4)) got
  while :; do
    got=$(stat_value "$pid" "$key")
    [ -n "$got" ] && [ "$got" -ge "$want" ] && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
    [ $SECONDS -le $end ] || return 1
  done
}

# wait_log LABEL REGEX SECONDS: until $WORK/LABEL.log has a line matching REGEX
# (grep -E), e.g. a publisher's start line; fails, with the log's last lines,
# if the process started as LABEL ends first or SECONDS pass.
wait_log() {
  local label=$1 re=$2 t=$3 end=$((SECONDS + $3)) pid
  pid=$(eval echo "\${PID_${label//-/_}:-}")
  until grep -qE -- "$re" "$WORK/$label.log" 2>/dev/null; do
    if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
      grep -qE -- "$re" "$WORK/$label.log" 2>/dev/null && return 0
      fail "$label (pid $pid) ended without printing /$re/: $(tail -3 "$WORK/$label.log" 2>/dev/null)"
    fi
    sleep 0.05
    [ $SECONDS -le $end ] || fail "$label printed no /$re/ in ${t}s: $(tail -3 "$WORK/$label.log" 2>/dev/null)"
  done
}

# wait_stopped PID: until every thread of PID is stopped (kill -STOP returns
# before the signal has stopped anything); fails after 10 s.
wait_stopped() {
  local pid=$1 end=$((SECONDS + 10)) states
  while :; do
    states=$(sed -E 's/^.*\) //' /proc/"$pid"/task/*/stat 2>/dev/null | cut -d' ' -f1 | sort -u | tr -d '\n' || true)
    [ "$states" = T ] && return 0
    [ -d "/proc/$pid" ] || fail "process $pid is gone: it cannot be stopped"
    sleep 0.02
    [ $SECONDS -le $end ] || fail "process $pid not stopped 10 s after SIGSTOP (thread states: $states)"
  done
}

# check_books LABEL...: `mdcast verify` finds $WORK/LABEL.toml's books
# identical to $WORK/pub.toml's (through the caller's `expect`).
check_books() {
  local files=() l v=0
  [ -f "$WORK/pub.toml" ] || { expect "the publisher wrote its result file" false; return 0; }
  for l in "$@"; do
    if [ -f "$WORK/$l.toml" ]; then files+=("$WORK/$l.toml"); else expect "$l wrote its result file" false; fi
  done
  [ ${#files[@]} -gt 0 ] || return 0
  "$MDCAST" verify "$WORK/pub.toml" "${files[@]}" >"$WORK/verify.log" 2>&1 || v=$?
  sed 's/^/   /' "$WORK/verify.log"
  expect "mdcast verify: books of $* identical to the publisher's" [ "$v" = 0 ]
}
