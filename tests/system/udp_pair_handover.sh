#!/usr/bin/env bash
# A publisher pair over UDP on loopback whose members are stopped as an
# operator stops them, with SIGTERM (docs/operations.md, "A publisher pair
# over UDP"). Each member names the other as its pair.peer: A finds no peer
# and begins the session, B joins it and catches up. Then
#  - A is stopped while B publishes: A leaves the session to B (exit 0, no
#    end of session), and the subscribers go on with B, their control
#    connections moved to it;
#  - B, alone, is stopped: no peer publishes past it within
#    pair.join_timeout, so it ends the session.
# Every subscriber exits 0 with everything B published and B's books, in one
# session, without a snapshot.
source "$(dirname "$0")/lib.sh"

PORT=$((20000 + $$ % 20000))
GA="239.77.18.$((1 + $$ % 250)):$PORT"
GB="239.77.19.$((1 + $$ % 250)):$PORT"
common=(--medium udp --interface lo --set udp.control_port=0 --idle block)
member=(publish "${common[@]}" --rate 5k --instrument-count 100 --seed 11 --duration 300s --linger 15s
        --set publisher.boundaries=input --set publisher.packet_messages=8)

for i in 0 1 2; do
  start_bg "sub$i" subscribe "${common[@]}" --udp-group "$GA" --rail-b "$GB" --wait 60s \
    --set subscriber.pair_lag=1000000 --result "$WORK/sub$i.toml"
done
sub_pid() { eval echo "\$PID_sub$1"; }

start_bg a "${member[@]}" --udp-group "$GA" --set pair.peer="$GB" --result "$WORK/a.toml"
wait_log a 'no session confirmed by the peer in .*: beginning one' 30
wait_log a '^mdcast publish: UDP multicast .*control tcp:' 30
for i in 0 1 2; do wait_stat "$(sub_pid $i)" sub.messages_delivered 2000 60 || fail "sub$i delivered too little from A"; done
start_bg b "${member[@]}" --udp-group "$GB" --set pair.peer="$GA" --result "$WORK/b.toml"
wait_log b '^mdcast publish: pair member: caught up with the peer' 60
note "B: $(grep -o 'caught up.*' "$WORK/b.log")"
# B's rail carries the feed too (A's copies, a little ahead, come first).
for i in 0 1 2; do
  wait_stat "$(sub_pid $i)" udp.rail_b_datagrams 1000 60 || fail "sub$i heard nothing from B"
done

# A stopped: B publishes past it, so A leaves the session to B.
kill -TERM "$PID_a"
wait_pid "$PID_a" 30 || fail "A exited non-zero after SIGTERM: $(tail -3 "$WORK/a.log")"
grep -q 'left it to the peer, not ended' "$WORK/a.log" ||
  fail "A ended the session although B publishes on: $(grep 'pair member' "$WORK/a.log" | tail -2)"
note "A: $(grep -o 'stopped at sequence.*' "$WORK/a.log")"
for i in 0 1 2; do
  n=$(stat_value "$(sub_pid $i)" sub.messages_delivered)
  wait_stat "$(sub_pid $i)" sub.messages_delivered $((n + 3000)) 60 || fail "sub$i stalled after A left"
  [ "$(stat_value "$(sub_pid $i)" sub.session_changes)" = 0 ] || fail "sub$i changed session when A left"
done
# B's end of session is confirmed over the control plane: SIGTERM once
# every subscriber's control connection has moved to B (by pid; the count
# alone would also count A's look at B while it lasted).
port=$(grep -oE 'control tcp:[0-9.]+:[0-9]+' "$WORK/b.log" | head -1 | sed 's/.*://')
for i in 0 1 2; do
  end=$((SECONDS + 60))
  until ss -tnpH state established "( dport = :$port )" | grep -q "pid=$(sub_pid $i),"; do
    [ $SECONDS -le $end ] || fail "sub$i's control connection never moved to B (port $port)"
    sleep 0.1
  done
done
wait_stat "$PID_b" ctl.subscribes 3 60 || fail "B granted fewer than 3 subscriptions"
kill -TERM "$PID_b"
wait_pid "$PID_b" 60 || fail "B exited non-zero: $(tail -3 "$WORK/b.log")"
grep -q 'did not publish past it within .*: ending the session' "$WORK/b.log" ||
  fail "B, alone, did not end the session: $(grep 'pair member' "$WORK/b.log" | tail -2)"
note "B: $(grep -o 'stopped at sequence.*' "$WORK/b.log")"
for i in 0 1 2; do wait_pid "$(sub_pid $i)" 60 || fail "sub$i exited non-zero: $(tail -2 "$WORK/sub$i.log")"; done

"$MDCAST" verify "$WORK/b.toml" "$WORK/sub0.toml" "$WORK/sub1.toml" "$WORK/sub2.toml" | tee "$WORK/verify.log"
published=$(toml_get "$WORK/b.toml" messages)
for i in 0 1 2; do
  r="$WORK/sub$i.toml"
  [ "$(toml_get "$r" messages)" = "$published" ] || fail "sub$i delivered $(toml_get "$r" messages) of $published"
  [ "$(toml_get "$r" sub.session_changes)" = 0 ] || fail "sub$i changed session"
  [ "$(toml_get "$r" sub.snapshots_requested)" = 0 ] || fail "sub$i needed a snapshot"
done
note "A left the session to B, B ended it: $published messages to every subscriber, one session, no snapshot"
