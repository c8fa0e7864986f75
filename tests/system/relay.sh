#!/usr/bin/env bash
# A relay on this host: the origin publishes over UDP multicast on loopback;
# `mdcast relay` subscribes to it (dropping 2 % of what it receives) and
# publishes it again over shared memory; three shm subscribers read the
# relay, which subscribes upstream only once they have, so it recovers the
# start of the session from the origin. Every subscriber delivers every
# message with books identical to the origin's, in the origin's session and
# under its datagram sequence numbers; the relay's counters say no datagram
# changed its number; the subscribers recovered from the relay, and the
# origin saw the relay alone.
source "$(dirname "$0")/lib.sh"

GROUP="239.77.12.$((1 + $$ % 250)):$((20000 + $$ % 20000))"
NAME="relay-$$"
udp=(--medium udp --udp-group "$GROUP" --interface lo --set udp.control_port=0 --idle block)

start_bg relay relay --medium shm --name "$NAME" --idle block --wait-subscribers 3 --linger 5s \
  --from-medium udp --from-udp-group "$GROUP" --from-interface lo --wait 60s \
  --from-set subscriber.inject_loss=0.02 --result "$WORK/relay.toml"
# The relay's first subscription only learns the session: the origin goes
# once it is there.
start_bg pub publish "${udp[@]}" --rate 20k --duration 3s --instrument-count 200 --wait-subscribers 1 --linger 5s \
  --result "$WORK/pub.toml"
wait_log relay '^mdcast relay: session [0-9a-f]+ from ' 60
for i in 1 2 3; do
  start_bg "sub$i" subscribe --medium shm --name "$NAME" --idle block --wait 60s --result "$WORK/sub$i.toml"
done
for i in 1 2 3; do eval wait_pid \$PID_sub$i 120 || fail "subscriber $i exited non-zero: $(eval tail -2 "$WORK/sub$i.log")"; done
wait_pid "$PID_relay" 60 || fail "the relay exited non-zero: $(tail -3 "$WORK/relay.log")"
wait_pid "$PID_pub" 60 || fail "the origin exited non-zero"

"$MDCAST" verify "$WORK/pub.toml" "$WORK"/sub?.toml "$WORK/relay.toml" | tee "$WORK/verify.log" ||
  fail "books differ from the origin's"
published=$(toml_get "$WORK/pub.toml" messages)
last=$(toml_get "$WORK/pub.toml" last_sequence)
[ "$published" -gt 0 ] || fail "nothing published"
for r in relay sub1 sub2 sub3; do
  [ "$(toml_get "$WORK/$r.toml" last_sequence)" = "$last" ] ||
    fail "$r ended at sequence $(toml_get "$WORK/$r.toml" last_sequence), the origin at $last"
done
for i in 1 2 3; do
  got=$(toml_get "$WORK/sub$i.toml" messages)
  [ "$got" = "$published" ] || fail "subscriber $i delivered $got of $published"
done
for k in sequence_mismatches instrument_mismatches refused; do
  [ "$(toml_get "$WORK/relay.toml" "relay.$k")" = 0 ] || fail "relay.$k is $(toml_get "$WORK/relay.toml" "relay.$k")"
done
[ "$(toml_get "$WORK/relay.toml" relay.messages)" = "$published" ] || fail "the relay forwarded $(toml_get "$WORK/relay.toml" relay.messages) of $published"
lost=$(toml_get "$WORK/relay.toml" fault@up.lost)
recovered=$(toml_get "$WORK/relay.toml" sub.datagrams_recovered)
[ "${lost:-0}" -gt 0 ] || fail "the relay's 2 % loss dropped nothing"
[ "${recovered:-0}" -gt 0 ] || fail "the relay recovered nothing upstream"
subscribed=$(toml_get "$WORK/relay.toml" ctl.subscribes)
[ "${subscribed:-0}" -ge 3 ] || fail "the relay granted $subscribed subscriptions, expected the 3 subscribers'"
note "origin: $published messages in $last datagrams, $(toml_get "$WORK/pub.toml" ctl.subscribes) subscriptions (the relay's)"
note "relay: dropped $lost upstream, recovered $recovered; $subscribed subscriptions downstream"
note "3 shm subscribers of the relay delivered all $published messages under the origin's sequences; books identical"
