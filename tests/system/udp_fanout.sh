#!/usr/bin/env bash
# 1 publisher + 8 subscriber processes over UDP multicast on loopback, half
# of them dropping 2 % of the datagrams they receive: every subscriber
# delivers every message, books identical to the publisher's; the lossy ones
# recovered through the TCP control plane the publisher announced.
source "$(dirname "$0")/lib.sh"

GROUP="239.77.11.$((1 + $$ % 250)):$((20000 + $$ % 20000))"
udp=(--medium udp --udp-group "$GROUP" --interface lo --set udp.control_port=0 --idle block)

start_bg pub publish "${udp[@]}" --rate 40k --duration 4s --instrument-count 200 --wait-subscribers 8 --linger 2s \
  --result "$WORK/pub.toml"
wait_log pub '^mdcast publish: UDP multicast .*control tcp:' 30  # its start line: it announces itself from now on
for i in 1 2 3 4 5 6 7 8; do
  loss=0; [ "$i" -le 4 ] && loss=0.02
  start_bg "sub$i" subscribe "${udp[@]}" --inject-loss "$loss" --result "$WORK/sub$i.toml"
done
for i in 1 2 3 4 5 6 7 8; do eval wait_pid \$PID_sub$i 90 || fail "subscriber $i exited non-zero"; done
wait_pid "$PID_pub" 30 || fail "publisher exited non-zero"

"$MDCAST" verify "$WORK/pub.toml" "$WORK"/sub?.toml | tee "$WORK/verify.log"
published=$(toml_get "$WORK/pub.toml" messages)
# (How many messages 4 s make depends on the host's load: none is asserted.)
[ "$published" -gt 0 ] || fail "nothing published"
lost_all=0
for i in 1 2 3 4 5 6 7 8; do
  got=$(toml_get "$WORK/sub$i.toml" messages)
  [ "$got" = "$published" ] || fail "subscriber $i delivered $got of $published"
  rec=$(toml_get "$WORK/sub$i.toml" sub.datagrams_recovered)
  snaps=$(toml_get "$WORK/sub$i.toml" sub.snapshots_applied)
  if [ "$i" -le 4 ]; then
    # Every gap its 2 % loss opened was recovered through the control plane.
    gaps=$(toml_get "$WORK/sub$i.toml" sub.gaps)
    lost=$(toml_get "$WORK/sub$i.toml" fault.lost)
    [ "$gaps" = 0 ] || [ "$rec" -gt 0 ] || [ "$snaps" -gt 0 ] || fail "subscriber $i: $gaps gaps ($lost dropped), nothing recovered"
    lost_all=$((lost_all + lost))
  fi
  [ "$(toml_get "$WORK/sub$i.toml" udp.announce_followed)" = 1 ] || fail "subscriber $i did not take the announced control address"
  note "subscriber $i: $got messages, $rec datagrams recovered, $snaps snapshots, kernel drops $(toml_get "$WORK/sub$i.toml" udp.kernel_drops)"
done
[ "$lost_all" -gt 0 ] || fail "the 4 subscribers with 2 % loss injected dropped no datagram"
note "8 UDP subscribers delivered all $published messages; books identical"
