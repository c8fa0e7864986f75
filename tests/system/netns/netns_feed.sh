# The mdcast side of the multi-host scenarios: one publisher host and three
# subscriber hosts over the UDP medium, and the checks every scenario ends
# with. Usage:
#   source "$(dirname "$0")/netns_feed.sh"      # args: path/to/mdcast
#   netns_topology; start_publisher; start_subscriber s1; ...
#   finish s1 s2 s3; check_books s1 s2 s3; conclude
# Checks are recorded rather than fatal, so a failing scenario still prints
# every figure it measured and names every outcome that did not hold.
source "$(dirname "${BASH_SOURCE[0]}")/netns_lib.sh"
SCENARIO=$(basename "$0" .sh)

# The feed: ~20 k msg/s for 8 s, slow enough for four debug-build processes
# on a 2-core machine shared with other builds.
RATE=${RATE:-20k}
DURATION=${DURATION:-8s}
INSTRUMENTS=${INSTRUMENTS:-200}
GIVE_UP=${GIVE_UP:-20s}
SUBSCRIBERS=(s1 s2 s3)
declare -A IP_A=([pub]=10.77.0.1 [s1]=10.77.0.2 [s2]=10.77.0.3 [s3]=10.77.0.4)
declare -A IP_B=([pub]=10.78.0.1 [s3]=10.78.0.4)
PUB_ARGS=()                         # extra publisher flags
declare -A SUB_ARGS=()              # extra flags per subscriber (a string, word-split)
FAILURES=()
FIGURES=()

# netns_topology: the fabric, the publisher host and s1..s3, rail A for all,
# rail B for the publisher and s3 (only the A/B scenario sends on it).
netns_topology() {
  netns_fabric
  local h
  for h in pub "${SUBSCRIBERS[@]}"; do netns_host "$h" "${IP_A[$h]}" "${IP_B[$h]:-}"; done
  netns_wait_links
}

# ------------------------------------------------------------ expectations --

expect() {
  local what=$1; shift
  if "$@"; then note "ok: $what"; else FAILURES+=("$what"); echo "NOT OK: $what" >&2; fi
}
figure() { FIGURES+=("$1=$2"); }
conclude() {
  echo "RESULT netns.$SCENARIO: ${FIGURES[*]:-} failures=${#FAILURES[@]}"
  if [ ${#FAILURES[@]} -gt 0 ]; then
    local f
    netns_diagnose
    for f in "${FAILURES[@]}"; do echo "FAILED: $f"; done
    exit 1
  fi
}
gt0() { [ "${1:-0}" -gt 0 ]; }
# error_exit RC: an error exit of its own (1..123), not a signal (128+) or wait_rc's timeout (124).
error_exit() { [ "$1" -ge 1 ] && [ "$1" -le 123 ]; }
eq() { [ "${1:-x}" = "$2" ]; }

# ------------------------------------------------------------------ the feed --

# start_publisher [flags]: on host pub, waiting for every subscriber; returns
# once it listens (its counters file is up).
start_publisher() {
  start_in pub pub publish --medium udp --interface "${IP_A[pub]}" --udp-group "$NETNS_GROUP_A" --name "$NAME" \
    --rate "$RATE" --duration "$DURATION" --instrument-count "$INSTRUMENTS" --idle block \
    --wait-subscribers "${WAIT_SUBS:-${#SUBSCRIBERS[@]}}" --result "$WORK/pub.toml" "${PUB_ARGS[@]}" "$@"
  wait_stat "$PID_pub" pub.messages_published 0 20 || fail "publisher $PID_pub never became ready"
}

# start_subscriber HOST [flags]: a subscriber on HOST (its label is HOST),
# finding the publisher by its announcement on the group.
start_subscriber() {
  local h=$1; shift
  # shellcheck disable=SC2086 # SUB_ARGS entries are flag lists
  start_in "$h" "$h" subscribe --medium udp --interface "${IP_A[$h]}" --udp-group "$NETNS_GROUP_A" --name "$NAME" \
    --idle block --give-up "$GIVE_UP" --set udp.rate="$RATE" --result "$WORK/$h.toml" ${SUB_ARGS[$h]:-} "$@"
}

# finish LABEL...: each exits 0 (it delivered through the end of the session).
finish() {
  local l rc
  for l in "$@"; do
    rc=0; wait_rc "$(pid_of "$l")" 90 || rc=$?
    expect "$l exits 0 (exit status $rc)" eq "$rc" 0
  done
}


# sub_figures LABEL: the figures a reader wants for one subscriber.
sub_figures() {
  local l=$1
  figure "$l.messages" "$(result_value "$l" messages)"
  figure "$l.gaps" "$(result_value "$l" sub.gaps)"
  figure "$l.recovered" "$(result_value "$l" sub.datagrams_recovered)"
  figure "$l.snapshots" "$(result_value "$l" sub.snapshots_applied)"
  figure "$l.kernel_drops" "$(result_value "$l" udp.kernel_drops)"
}

# check_all_delivered LABEL...: each delivered every message published.
check_all_delivered() {
  local published l
  published=$(result_value pub messages)
  figure published "$published"
  for l in "$@"; do
    expect "$l delivered all $published messages (got $(result_value "$l" messages))" \
      eq "$(result_value "$l" messages)" "$published"
  done
}

# check_undisturbed LABEL...: no recovery at all, unless its own kernel
# dropped datagrams (a subscriber starved of CPU on a loaded machine): then
# what it recovered is explained and only noted.
check_undisturbed() {
  local l drops
  for l in "$@"; do
    drops=$(result_value "$l" udp.kernel_drops)
    if gt0 "$drops"; then
      note "$l: its kernel dropped $drops datagrams (socket buffer full: CPU starvation), so its recovery is not asserted"
      continue
    fi
    expect "$l saw no gap ($(result_value "$l" sub.gaps))" eq "$(result_value "$l" sub.gaps)" 0
    expect "$l needed no snapshot ($(result_value "$l" sub.snapshots_applied))" eq "$(result_value "$l" sub.snapshots_applied)" 0
  done
}

# finish_publisher: it exits 0.
finish_publisher() {
  local rc=0
  wait_rc "$PID_pub" 60 || rc=$?
  expect "publisher exits 0 (exit status $rc)" eq "$rc" 0
}

# netns_diagnose: on failure, what the medium and the fabric saw (appended to a log lib.sh prints).
netns_diagnose() {
  {
    echo "fabric links:"; ip -n "$NETNS_FABRIC" -s link show 2>&1 | head -40
    [ "$LOSS_MODE" != nft ] || { echo "loss rule:"; ip netns exec "$NETNS_FABRIC" nft list ruleset 2>&1; }
  } >"$WORK/zz-fabric.log" 2>&1
}
