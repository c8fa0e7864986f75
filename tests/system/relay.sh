#!/usr/bin/env bash
# A tree of relays on this host: the origin publishes over UDP multicast on
# loopback; `mdcast relay` subscribes to it (dropping 2 % of what it
# receives) and publishes it again over shared memory (R1); two shm
# subscribers read R1, and so does a second relay, which publishes it again
# as R2 for a third subscriber. Each relay subscribes upstream only once its
# own subscribers have, so it recovers the start of the session from
# upstream. Every subscriber delivers every message with books identical to
# the origin's, in the origin's session and under its datagram sequence
# numbers; neither relay's counters say a datagram changed its number; the
# origin saw the first relay alone.
source "$(dirname "$0")/lib.sh"

GROUP="239.77.12.$((1 + $$ % 250)):$((20000 + $$ % 20000))"
NAME="relay-$$"
udp=(--medium udp --udp-group "$GROUP" --interface lo --set udp.control_port=0 --idle block)

# Downstream first, each waiting for its relay's ring; then the relays, each
# waiting for its upstream's session; then the origin, which goes once the
# first relay's subscription is there. What a subscriber or relay missed
# while it attached (a few milliseconds, more on a loaded host) it recovers
# from upstream. A relay cannot forward what a snapshot skipped, so each
# relay's window (256 MiB: 64 k datagrams) holds the whole 3 s feed, however
# late a loaded host starts it.
for i in 1 2; do
  start_bg "sub$i" subscribe --medium shm --name "$NAME" --idle block --wait 60s --result "$WORK/sub$i.toml"
done
start_bg sub3 subscribe --medium shm --name "$NAME-2" --idle block --wait 60s --result "$WORK/sub3.toml"
start_bg relay2 relay --medium shm --name "$NAME-2" --idle block --linger 5s \
  --from-medium shm --from-name "$NAME" --wait 60s --from-set subscriber.window_bytes=256M --result "$WORK/relay2.toml"
start_bg relay relay --medium shm --name "$NAME" --idle block --linger 5s \
  --from-medium udp --from-udp-group "$GROUP" --from-interface lo --wait 60s \
  --from-set subscriber.inject_loss=0.02 --from-set subscriber.window_bytes=256M --result "$WORK/relay.toml"
start_bg pub publish "${udp[@]}" --rate 20k --duration 3s --instrument-count 200 --wait-subscribers 1 --linger 5s \
  --result "$WORK/pub.toml"
wait_log relay '^mdcast relay: session [0-9a-f]+ from ' 60
wait_log relay2 '^mdcast relay: session [0-9a-f]+ from ' 60
for i in 1 2 3; do eval wait_pid \$PID_sub$i 120 || fail "subscriber $i exited non-zero: $(eval tail -2 "$WORK/sub$i.log")"; done
wait_pid "$PID_relay2" 60 || fail "the second relay exited non-zero: $(tail -3 "$WORK/relay2.log")"
wait_pid "$PID_relay" 60 || fail "the relay exited non-zero: $(tail -3 "$WORK/relay.log")"
wait_pid "$PID_pub" 60 || fail "the origin exited non-zero"

"$MDCAST" verify "$WORK/pub.toml" "$WORK"/sub?.toml "$WORK/relay.toml" "$WORK/relay2.toml" | tee "$WORK/verify.log" ||
  fail "books differ from the origin's"
published=$(toml_get "$WORK/pub.toml" messages)
last=$(toml_get "$WORK/pub.toml" last_sequence)
[ "$published" -gt 0 ] || fail "nothing published"
for r in relay relay2 sub1 sub2 sub3; do
  [ "$(toml_get "$WORK/$r.toml" last_sequence)" = "$last" ] ||
    fail "$r ended at sequence $(toml_get "$WORK/$r.toml" last_sequence), the origin at $last"
done
for i in 1 2 3; do
  got=$(toml_get "$WORK/sub$i.toml" messages)
  [ "$got" = "$published" ] || fail "subscriber $i delivered $got of $published"
done
for r in relay relay2; do
  for k in sequence_mismatches instrument_mismatches refused; do
    [ "$(toml_get "$WORK/$r.toml" "relay.$k")" = 0 ] || fail "$r: relay.$k is $(toml_get "$WORK/$r.toml" "relay.$k")"
  done
done
[ "$(toml_get "$WORK/relay.toml" relay.messages)" = "$published" ] || fail "the relay forwarded $(toml_get "$WORK/relay.toml" relay.messages) of $published"
lost=$(toml_get "$WORK/relay.toml" fault@up.lost)
recovered=$(toml_get "$WORK/relay.toml" sub.datagrams_recovered)
[ "${lost:-0}" -gt 0 ] || fail "the relay's 2 % loss dropped nothing"
[ "${recovered:-0}" -gt 0 ] || fail "the relay recovered nothing upstream"
subscribed=$(toml_get "$WORK/relay.toml" ctl.subscribes)
[ "${subscribed:-0}" -ge 3 ] || fail "the relay granted $subscribed subscriptions, expected 2 subscribers' and a relay's"
note "origin: $published messages in $last datagrams, $(toml_get "$WORK/pub.toml" ctl.subscribes) subscriptions (the relay's)"
note "relay: dropped $lost upstream, recovered $recovered; $subscribed subscriptions downstream"
note "2 shm subscribers of the relay and 1 of the relay's relay delivered all $published messages under the origin's sequences; books identical"
