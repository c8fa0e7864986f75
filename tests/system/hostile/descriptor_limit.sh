#!/usr/bin/env bash
# A publisher at a small open-files limit (prlimit --nofile=32) and 64
# connections that send nothing, opened before the subscribers start, more
# than its descriptors can hold. Un-admitted connections are kept for 60 s
# here (control.unadmitted_timeout), so no timeout lets anyone in: the
# listener's reserve descriptor does, taking each new connection and closing
# the oldest silent one for it. Both subscribers get in and deliver everything.
source "$(dirname "$0")/hostile_lib.sh"
command -v prlimit >/dev/null || skip "prlimit (util-linux) is not installed"
# At its limit the process has no descriptor for the sanitizer runtime
# (UBSan's first look at a dynamic type makes a pipe, and reports an
# "invalid vptr" without one): this runs in the debug build (label fdlimit).
[ -z "${MDCAST_SANITIZE:-}" ] || skip "a publisher at its open-files limit is beyond the sanitizer runtime; runs in the debug build"

prlimit --nofile=32 "$MDCAST" publish --name "$NAME" --rate "$RATE" --duration "$DURATION" --instrument-count 200 \
  --idle block --wait-subscribers 2 --set control.unadmitted_timeout=60s --result "$WORK/pub.toml" \
  >"$WORK/pub.log" 2>&1 &
PIDS+=($!)
PID_pub=$!
wait_ring
sample_memory "$PID_pub" "$WORK/pub.mem"
wait_stat "$PID_pub" pub.messages_published 0 20 || fail "publisher $PID_pub never became ready"
mark_baseline
start_attack idle idle-sockets "shm:$NAME" --count 64 --seconds 600
wait_for_line idle "^ready " 30 || fail "the idle sockets were never all attempted"
note "$(grep '^ready ' "$WORK/idle.log")"
# The publisher is at its limit once a silent connection made room for another.
wait_stat "$PID_pub" control.descriptor_evictions 1 30 || fail "the publisher never reached its descriptor limit"
start_subscriber sub1
start_subscriber sub2
finish_feed
stop_attack idle
figure descriptor_evictions "$(publisher_counter control.descriptor_evictions)"
figure accept_failures "$(publisher_counter control.accept_failures)"
figure idle_closed_by_publisher "$(attack_value idle closed_by_peer)"
conclude
