# Helpers for the hostile scenarios: a publisher and two well-behaved
# subscribers over shm beside an attack (mdcast_attack), and the checks every
# scenario ends with. Usage in a scenario:
#   source "$(dirname "$0")/hostile_lib.sh"    # args: path/to/mdcast path/to/mdcast_attack
#   start_feed; start_attack flood snapshot-flood "shm:$NAME" --seconds 3
#   finish_attack flood 30; finish_feed; conclude
# Each check is recorded rather than fatal, so a failing scenario still prints
# every figure it measured (the "before" numbers of docs/security.md) and
# names every outcome that did not hold.
ATTACK=${2:?usage: $0 path/to/mdcast path/to/mdcast_attack}
source "$(dirname "$0")/../lib.sh"
SCENARIO=$(basename "$0" .sh)

# Bounds (generous: the attacks they catch cost 400-650 ms and +0.9 GB).
MAX_POLL_MS=${HOSTILE_MAX_POLL_MS:-250}
MAX_GROWTH_MIB=${HOSTILE_MAX_GROWTH_MIB:-256}
# The feed: slow enough to leave the 2-core CI machine usable under attack.
RATE=${RATE:-25k}
DURATION=${DURATION:-4s}
WAIT_SUBS=${WAIT_SUBS:-2}
GIVE_UP=${GIVE_UP:-6s}
PUB_PRE=()   # global flags before `publish` (--config FILE)
PUB_ARGS=()  # publisher flags
SUB_ARGS=()  # subscriber flags
# AddressSanitizer keeps freed memory in a quarantine (256 MiB by default),
# which would read as the publisher's growth: keep it small, so what is
# measured is what the publisher holds.
case "${MDCAST_SANITIZE:-}" in
  *address*) export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=8:thread_local_quarantine_size_kb=256" ;;
esac

FAILURES=()
FIGURES=()
EXIT_HOOKS=()

# Run before lib.sh's cleanup (which keeps the exit status and prints logs).
_hostile_exit() {
  local rc=$? p
  set +e  # errexit would end the trap at the first failing hook, before cleanup
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  for h in "${EXIT_HOOKS[@]}"; do eval "$h"; done
  (exit $rc)
  cleanup
}
trap _hostile_exit EXIT
on_exit() { EXIT_HOOKS+=("$*"); }
# A publisher killed by an attack (SIGBUS) leaves its ring behind; the name is this test's alone.
on_exit rm -f "/dev/shm/mdcast-$NAME.ring"

skip() { echo "SKIP: $*"; exit 77; }

# expect WHAT COMMAND...: records whether COMMAND holds.
expect() {
  local what=$1; shift
  if "$@"; then
    note "ok: $what"
  else
    FAILURES+=("$what")
    echo "NOT OK: $what" >&2
  fi
}
# error_exit RC: an error exit of its own (1..123), not a signal (128+) or wait_rc's timeout (124).
error_exit() { [ "$1" -ge 1 ] && [ "$1" -le 123 ]; }
# no_signal RC: the process ended by itself (0..123).
no_signal() { [ "$1" -ge 0 ] && [ "$1" -le 123 ]; }
# figure KEY VALUE: a measured number, printed in the final RESULT line.
figure() { FIGURES+=("$1=$2"); }

# conclude: the RESULT line; fails the test if any expectation did not hold.
conclude() {
  echo "RESULT hostile.$SCENARIO: ${FIGURES[*]:-} failures=${#FAILURES[@]}"
  if [ ${#FAILURES[@]} -gt 0 ]; then
    local f
    for f in "${FAILURES[@]}"; do echo "FAILED: $f"; done
    exit 1
  fi
}


# ------------------------------------------------------------ memory --

# sample_memory PID FILE: "VmRSS VmHWM RssAnon" (kB) every 100 ms while PID lives.
sample_memory() {
  local pid=$1 out=$2
  (
    while [ -r "/proc/$pid/status" ]; do
      awk '/^VmRSS:/ {r = $2} /^VmHWM:/ {h = $2} /^RssAnon:/ {a = $2} END {if (r) print r, h, a}' \
        "/proc/$pid/status" >>"$out" 2>/dev/null || true
      sleep 0.1
    done
  ) &
  PIDS+=($!)
}
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

# mark_baseline: the publisher's RSS now (its ring is mapped and populated),
# against which the attack's cost is measured.
BASELINE_KB=0
mark_baseline() { BASELINE_KB=$(rss_kb "$PID_pub"); BASELINE_KB=${BASELINE_KB:-0}; }

# maxrss_run OUT CMD...: runs CMD, writes its peak RSS (kB, getrusage) to OUT; CMD's exit status
# (128 + signal when a signal ended it). For processes too short-lived to sample.
maxrss_run() {
  local out=$1; shift
  python3 - "$out" "$@" <<'PY'
import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
with open(sys.argv[1], "w") as f:
    print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=f)
sys.exit(128 - rc if rc < 0 else rc)
PY
}

# ------------------------------------------------------------- the feed --

start_publisher() {
  start_bg pub "${PUB_PRE[@]}" publish --name "$NAME" --rate "$RATE" --duration "$DURATION" --instrument-count 200 \
    --idle block --wait-subscribers "$WAIT_SUBS" --result "$WORK/pub.toml" "${PUB_ARGS[@]}" "$@"
  wait_ring
  sample_memory "$PID_pub" "$WORK/pub.mem"
  # Its counters file appears once the ring is complete and the socket listens.
  wait_stat "$PID_pub" pub.messages_published 0 20 || fail "publisher $PID_pub never became ready"
}
# start_subscriber LABEL [flags]
start_subscriber() {
  local label=$1; shift
  start_bg "$label" subscribe --name "$NAME" --idle block --give-up "$GIVE_UP" --result "$WORK/$label.toml" \
    "${SUB_ARGS[@]}" "$@"
}
# start_feed [publisher flags]: publisher and sub1, sub2; returns once publishing has begun.
start_feed() {
  start_publisher "$@"
  start_subscriber sub1
  start_subscriber sub2
  wait_published "$PID_pub" 2000
  mark_baseline
}

pid_of() { eval echo "\$PID_${1//-/_}"; }

# finish_subscribers LABEL...: each exits 0 (the feed ended and it delivered everything).
finish_subscribers() {
  local l rc
  for l in "$@"; do
    rc=0; wait_rc "$(pid_of "$l")" 60 || rc=$?
    expect "subscriber $l exits 0 (exit status $rc)" [ "$rc" = 0 ]
  done
}
finish_publisher() {
  local rc=0
  wait_rc "$PID_pub" 30 || rc=$?
  expect "publisher exits 0 (exit status $rc)" [ "$rc" = 0 ]
}

# check_delivered LABEL...: subscribers there from the first datagram delivered every message.
check_delivered() {
  local l got published
  published=$(toml_get "$WORK/pub.toml" messages 2>/dev/null || true)
  for l in "$@"; do
    got=$(toml_get "$WORK/$l.toml" messages 2>/dev/null || true)
    expect "$l delivered all ${published:-?} messages (got ${got:-none})" [ "${got:-x}" = "${published:-y}" ]
  done
}

# check_rate: the attack did not slow the feed: the publisher published at
# least 90% of the messages due at RATE over DURATION (its paced loop catches
# up after short stalls; a control plane that keeps stalling it cannot).
check_rate() {
  local published want
  published=$(toml_get "$WORK/pub.toml" messages 2>/dev/null || true)
  want=$(awk -v r="$RATE" -v d="$DURATION" 'BEGIN {
    m = 1; if (r ~ /[kK]$/) m = 1e3; if (r ~ /M$/) m = 1e6; sub(/[kKM]$/, "", r); sub(/s$/, "", d)
    printf "%d", r * m * d }')
  figure published "${published:-?}"
  expect "the publisher kept its rate: ${published:-?} of ${want} messages due (>= 90%)" \
    [ $(( ${published:-0} * 10 )) -ge $(( want * 9 )) ]
}

# publisher_counter KEY: from its result file, or its counters file if it left none.
publisher_counter() {
  local v=""
  [ -f "$WORK/pub.toml" ] && v=$(toml_get "$WORK/pub.toml" "$1" 2>/dev/null || true)
  [ -n "$v" ] || v=$(stat_value "$PID_pub" "$1")
  echo "${v:-}"
}

# check_costs: what the attack cost the publisher: its longest control poll and its memory growth.
check_costs() {
  local ns ms peak hwm growth
  ns=$(publisher_counter ctl.longest_poll_ns)
  if [ -n "$ns" ]; then
    ms=$(awk -v n="$ns" 'BEGIN {printf "%.1f", n / 1e6}')
    figure longest_poll_ms "$ms"
    expect "publisher's longest control poll ${ms} ms < ${MAX_POLL_MS} ms" [ "$ns" -lt $((MAX_POLL_MS * 1000000)) ]
  else
    expect "publisher's longest control poll is known" false
  fi
  peak=$(awk 'BEGIN {m = 0} $1 > m {m = $1} END {print m}' "$WORK/pub.mem" 2>/dev/null || echo 0)
  hwm=$(awk 'BEGIN {m = 0} $2 > m {m = $2} END {print m}' "$WORK/pub.mem" 2>/dev/null || echo 0)
  [ "$hwm" -gt "$peak" ] && peak=$hwm
  growth=$(( (peak - BASELINE_KB) / 1024 ))
  [ $growth -lt 0 ] && growth=0
  figure rss_baseline_mib $((BASELINE_KB / 1024))
  figure rss_peak_mib $((peak / 1024))
  figure rss_growth_mib $growth
  expect "publisher's memory growth ${growth} MiB < ${MAX_GROWTH_MIB} MiB (peak $((peak / 1024)) MiB)" \
    [ "$growth" -lt "$MAX_GROWTH_MIB" ]
}

# finish_feed: the end every feed scenario shares.
finish_feed() {
  finish_subscribers sub1 sub2
  finish_publisher
  check_books sub1 sub2
  check_delivered sub1 sub2
  check_rate
  check_costs
}

# ------------------------------------------------------------- attacks --

# start_attack LABEL SUBCOMMAND ARGS...: mdcast_attack in the background, output in $WORK/LABEL.log
start_attack() {
  local label=$1; shift
  "$ATTACK" "$@" >"$WORK/$label.log" 2>&1 &
  PIDS+=($!)
  eval "PID_${label//-/_}=$!"
}
# finish_attack LABEL SECONDS: waits for it; it must have run (exit 0).
finish_attack() {
  local rc=0
  wait_rc "$(pid_of "$1")" "$2" || rc=$?
  sed 's/^/   attack: /' "$WORK/$1.log"
  expect "attack '$1' ran (exit status $rc)" [ "$rc" = 0 ]
}
# stop_attack LABEL: asks it to stop now (SIGTERM: it still prints its report).
stop_attack() {
  kill -TERM "$(pid_of "$1")" 2>/dev/null || true
  finish_attack "$1" 10
}
# attack_value LABEL KEY: KEY's value in the attack's final report line.
attack_value() {
  tail -1 "$WORK/$1.log" | tr ' ' '\n' | awk -F= -v k="$2" '$1 == k {print $2; exit}'
}
# wait_for_line LABEL REGEX SECONDS: until the attack's output has a matching line.
wait_for_line() {
  local end=$((SECONDS + $3))
  until grep -qE "$2" "$WORK/$1.log" 2>/dev/null; do
    kill -0 "$(pid_of "$1")" 2>/dev/null || return 1
    sleep 0.05
    [ $SECONDS -le $end ] || return 1
  done
}
