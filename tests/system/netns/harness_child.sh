#!/usr/bin/env bash
# A stand-in scenario for harness.sh: builds part of the topology, starts a
# process in a namespace, then fails, waits to be signalled, or (mode ok)
# does nothing after netns_lib.sh has reaped what dead runs left.
#   harness_child.sh path/to/mdcast MODE READY_FILE   (MODE: ok | fail | wait)
# READY_FILE receives the PID of the process it started inside a namespace.
MODE=${2:?usage: $0 path/to/mdcast ok|fail|wait READY_FILE}
READY=${3:?usage: $0 path/to/mdcast ok|fail|wait READY_FILE}
source "$(dirname "$0")/netns_lib.sh"

[ "$MODE" != ok ] || exit 0
netns_fabric
netns_host pub 10.77.0.1 10.78.0.1
netns_host s1 10.77.0.2
start_cmd_in s1 sleeper sleep 300
echo "child: started sleep $PID_sleeper in $(ns_of s1)" >"$WORK/child.log"
echo "$PID_sleeper" >"$READY.tmp" && mv "$READY.tmp" "$READY"
case "$MODE" in
  fail) fail "failing on purpose (harness.sh checks the teardown)" ;;
  wait) while :; do sleep 0.1; done ;;
  *) fail "unknown mode $MODE" ;;
esac
