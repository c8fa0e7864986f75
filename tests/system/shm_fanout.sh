#!/usr/bin/env bash
# 1 publisher + 8 subscriber processes over shm: every subscriber delivers
# every message, books identical to the publisher's.
source "$(dirname "$0")/lib.sh"

start_bg pub publish --name "$NAME" --rate 40k --duration 3s --instrument-count 200 --idle block \
  --wait-subscribers 8 --result "$WORK/pub.toml"
wait_ring
for i in 1 2 3 4 5 6 7 8; do
  start_bg "sub$i" subscribe --name "$NAME" --idle block --result "$WORK/sub$i.toml"
done
for i in 1 2 3 4 5 6 7 8; do eval wait_pid \$PID_sub$i 60 || fail "subscriber $i exited non-zero"; done
wait_pid "$PID_pub" 30 || fail "publisher exited non-zero"

"$MDCAST" verify "$WORK/pub.toml" "$WORK"/sub?.toml | tee "$WORK/verify.log"
published=$(toml_get "$WORK/pub.toml" messages)
# (How many messages 3 s make depends on the host's load: none is asserted.)
[ "$published" -gt 0 ] || fail "nothing published"
for i in 1 2 3 4 5 6 7 8; do
  got=$(toml_get "$WORK/sub$i.toml" messages)
  [ "$got" = "$published" ] || fail "subscriber $i delivered $got of $published"
  [ "$(toml_get "$WORK/sub$i.toml" sub.snapshots_applied)" = 0 ] || fail "subscriber $i needed a snapshot"
done
note "8 subscribers delivered all $published messages; books identical"
