#!/usr/bin/env bash
# A relay started late: the origin (UDP on loopback) has published more
# than its retransmit ring and the relay's window hold, so the relay's
# upstream subscriber joins with a snapshot, and the relay begins there: its
# engine takes the snapshot's books and goes on under the origin's sequence
# numbers from the next datagram. A subscriber of the relay (shm) takes its
# own snapshot from the relay; it ends with the origin's books, at the
# origin's last sequence. A second late relay republishes over UDP (another
# group), and its subscriber takes its snapshot from that relay's fixed-slot
# log, which holds nothing before where it began; SIGTERM to it mid-feed
# ends its session cleanly, and its subscriber exits 0.
source "$(dirname "$0")/lib.sh"

GROUP="239.77.13.$((1 + $$ % 250)):$((20000 + $$ % 20000))"
GROUP2="239.77.14.$((1 + $$ % 250)):$((20000 + $$ % 20000))"
NAME="late-$$"
udp=(--medium udp --udp-group "$GROUP" --interface lo --set udp.control_port=0 --idle block)

# A 2 MiB ring (~1,400 datagrams) behind a feed of 20 k msg/s for 8 s.
start_bg pub publish "${udp[@]}" --rate 20k --duration 8s --instrument-count 200 --retransmit-bytes 2M \
  --linger 5s --result "$WORK/pub.toml"
wait_log pub '^mdcast publish: UDP multicast .*control tcp:' 30
# Twice what the ring holds, in datagrams (a loaded host packs more messages in each).
wait_stat "$PID_pub" pub.last_sequence 3000 60 || fail "the origin did not reach sequence 3000"

start_bg sub subscribe --medium shm --name "$NAME" --idle block --wait 60s --result "$WORK/sub.toml"
start_bg relay relay --medium shm --name "$NAME" --idle block --linger 5s \
  --from-medium udp --from-udp-group "$GROUP" --from-interface lo --wait 30s --result "$WORK/relay.toml"
start_bg sub2 subscribe --medium udp --udp-group "$GROUP2" --interface lo --idle block --wait 60s --result "$WORK/sub2.toml"
start_bg relay2 relay --medium udp --udp-group "$GROUP2" --interface lo --set udp.control_port=0 --idle block --linger 5s \
  --from-medium udp --from-udp-group "$GROUP" --from-interface lo --wait 30s --result "$WORK/relay2.toml"
wait_log relay2 '^mdcast relay: session [0-9a-f]+ from ' 60
wait_stat "$PID_relay2" relay.messages 1000 60 || fail "the second relay forwarded nothing: $(tail -3 "$WORK/relay2.log")"
kill -TERM "$PID_relay2"
note "SIGTERM to the second relay"

wait_pid "$PID_relay2" 60 || fail "the second relay, stopped, exited non-zero: $(tail -3 "$WORK/relay2.log")"
wait_pid "$PID_sub2" 60 || fail "the second relay's subscriber exited non-zero: $(tail -2 "$WORK/sub2.log")"
wait_pid "$PID_sub" 120 || fail "the relay's subscriber exited non-zero: $(tail -2 "$WORK/sub.log")"
wait_pid "$PID_relay" 60 || fail "the relay exited non-zero: $(tail -3 "$WORK/relay.log")"
wait_pid "$PID_pub" 60 || fail "the origin exited non-zero"

"$MDCAST" verify "$WORK/pub.toml" "$WORK/sub.toml" "$WORK/relay.toml" | tee "$WORK/verify.log" ||
  fail "books differ from the origin's"
last=$(toml_get "$WORK/pub.toml" last_sequence)
first=$(toml_get "$WORK/relay.toml" relay.first_sequence)
[ "${first:-0}" -gt 1 ] || fail "the relay began at sequence ${first:-?}, not after a snapshot"
[ "$(toml_get "$WORK/relay.toml" sub.snapshots_applied)" -ge 1 ] || fail "the relay's upstream took no snapshot"
[ "$(toml_get "$WORK/sub.toml" last_sequence)" = "$last" ] || fail "the subscriber ended at $(toml_get "$WORK/sub.toml" last_sequence), the origin at $last"
[ "$(toml_get "$WORK/relay.toml" relay.sequence_mismatches)" = 0 ] || fail "the relay renumbered datagrams"
[ "$(toml_get "$WORK/sub.toml" sub.snapshots_applied)" -ge 1 ] || fail "the relay's subscriber took no snapshot from it"
grep -q '^mdcast subscribe: ok ' "$WORK/sub2.log" || fail "the stopped relay's subscriber did not end ok: $(tail -2 "$WORK/sub2.log")"
"$MDCAST" verify --content "$WORK/relay2.toml" "$WORK/sub2.toml" >/dev/null || fail "the stopped relay's subscriber's books differ from the relay's"
note "the late relay began at sequence $first of the origin's $last; its subscriber's books are the origin's"
[ "$(toml_get "$WORK/sub2.toml" sub.snapshots_applied)" -ge 1 ] || fail "the UDP relay's subscriber took no snapshot from it"
note "the UDP relay began at $(toml_get "$WORK/relay2.toml" relay.first_sequence); $(toml_get "$WORK/relay2.toml" ctl.retransmit_too_old) requests for what came before were too old, $(toml_get "$WORK/relay2.toml" ctl.snapshot_requests) snapshots served"
note "the stopped relay ended its session at $(toml_get "$WORK/relay2.toml" last_sequence); its subscriber exited 0"
