#!/usr/bin/env bash
# The publisher crashes (kill -9): subscribers report it silent. A new
# publisher starts under the same name: subscribers follow its new ring and
# session and end with books identical to the new publisher's.
source "$(dirname "$0")/lib.sh"

start_bg pub1 publish --name "$NAME" --rate 30k --duration 30s --instrument-count 50 --idle block \
  --wait-subscribers 2 --seed 1
wait_ring
for i in 1 2; do
  start_bg "sub$i" subscribe --name "$NAME" --idle block --give-up 20s --set subscriber.publisher_timeout=300ms \
    --result "$WORK/sub$i.toml"
done
wait_published "$PID_pub1" 20000
kill -9 "$PID_pub1"
note "publisher $PID_pub1 killed"
# The new publisher starts once both subscribers have reported the old one silent.
for i in 1 2; do wait_log "sub$i" "publisher silent" 30; done
start_bg pub2 publish --name "$NAME" --rate 30k --duration 2s --instrument-count 50 --idle block --seed 2 \
  --result "$WORK/pub2.toml"
for i in 1 2; do eval wait_pid \$PID_sub$i 60 || fail "subscriber $i exited non-zero"; done
wait_pid "$PID_pub2" 30 || fail "second publisher exited non-zero"
"$MDCAST" verify "$WORK/pub2.toml" "$WORK/sub1.toml" "$WORK/sub2.toml"
for i in 1 2; do
  grep -q "publisher silent" "$WORK/sub$i.log" || fail "subscriber $i did not report the publisher's silence"
  [ "$(toml_get "$WORK/sub$i.toml" sub.session_changes)" -ge 1 ] || fail "subscriber $i did not change session"
  [ "$(toml_get "$WORK/sub$i.toml" shm.reattached)" -ge 1 ] || fail "subscriber $i did not attach the new ring"
done
note "both subscribers followed the restarted publisher; books identical to its"
