#!/usr/bin/env bash
# A subscriber refused for room exits 3 (a setup error, docs/operations.md),
# saying why: a publisher admitting one control client (control.max_clients=1)
# has one; a second subscriber is told, ends at once, and the first one
# still gets the whole feed.
source "$(dirname "$0")/lib.sh"

start_bg pub publish --name "$NAME" --rate 2k --duration 60s --instrument-count 50 --idle block --wait-subscribers 1 \
  --set control.max_clients=1 --linger 2s --result "$WORK/pub.toml"
wait_ring
start_bg sub1 subscribe --name "$NAME" --idle block --result "$WORK/sub1.toml"
wait_stat "$PID_pub" ctl.subscribes 1 30 || fail "the first subscriber never subscribed"
start_bg sub2 subscribe --name "$NAME" --idle block --result "$WORK/sub2.toml"
rc=0
wait_rc "$PID_sub2" 60 || rc=$?
[ "$rc" = 3 ] || fail "the subscriber refused for room exited $rc, expected 3: $(tail -3 "$WORK/sub2.log")"
grep -q 'control.max_clients' "$WORK/sub2.log" || fail "the refused subscriber did not say why: $(tail -3 "$WORK/sub2.log")"
note "refused: $(grep -m1 'control.max_clients' "$WORK/sub2.log")"
kill -TERM "$PID_pub"
wait_pid "$PID_pub" 60 || fail "the publisher did not stop cleanly"
wait_pid "$PID_sub1" 60 || fail "the admitted subscriber exited non-zero"
"$MDCAST" verify "$WORK/pub.toml" "$WORK/sub1.toml" || fail "the admitted subscriber's books differ"
echo "PASS: control_full"
