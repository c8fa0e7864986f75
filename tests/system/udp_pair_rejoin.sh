#!/usr/bin/env bash
# A publisher pair over UDP on loopback whose members die and come back,
# one after the other (docs/architecture.md, "Publisher pairs"): the
# datagrams end where the input's packets end (publisher.boundaries=input,
# packets of 1..8 messages, and every 150th message a 3000-byte one that
# fragments), so each member cuts the same datagrams; member A begins the
# session, member B joins it through A's control plane (pair.peer: no
# session in B's settings). Then KILLS times: the member ahead is killed
# (SIGKILL), the subscribers count its rail's silence, and it is started
# again with pair.peer naming the survivor: it joins the survivor's
# session, replays its input quietly to where the survivor is, and its
# rail returns. The last member is stopped with SIGTERM and ends the
# session. Every subscriber delivers everything with the last member's
# books, in one session, without a snapshot: each failover after a rejoin
# lost nothing.
source "$(dirname "$0")/lib.sh"
KILLS=${KILLS:-4}

PORT=$((20000 + $$ % 20000))
G=("239.77.16.$((1 + $$ % 250)):$PORT" "239.77.17.$((1 + $$ % 250)):$PORT")
SESSION=$(( ((RANDOM << 30) | (RANDOM << 15) | RANDOM) + 1 ))  # one per run: never reused
common=(--medium udp --interface lo --set udp.control_port=0 --idle block)
member=(publish "${common[@]}" --rate 5k --instrument-count 100 --seed 11 --duration 300s --linger 15s
        --set publisher.boundaries=input --set publisher.packet_messages=8
        --set publisher.large_every=150 --set publisher.large_bytes=3000)

for i in 0 1 2; do
  start_bg "sub$i" subscribe "${common[@]}" --udp-group "${G[0]}" --rail-b "${G[1]}" --wait 60s \
    --set subscriber.pair_lag=1000000 --set subscriber.give_up=60s --result "$WORK/sub$i.toml"
done
# Member k (0: A on rail A, 1: B on rail B), run r: its log is m<k>_<r>.
declare -A RUN PID
start_member() {  # k [pair.peer]
  local k=$1 peer=${2:-} r=$(( ${RUN[$1]:-0} + 1 ))
  RUN[$k]=$r
  local extra=(--set publisher.session=$SESSION)
  [ -n "$peer" ] && extra=(--set pair.peer="$peer")
  start_bg "m${k}_$r" "${member[@]}" --udp-group "${G[$k]}" "${extra[@]}" --result "$WORK/m${k}_$r.toml"
  PID[$k]=$(eval echo "\$PID_m${k}_$r")
  wait_log "m${k}_$r" '^mdcast publish: UDP multicast .*control tcp:' 60
  if [ -n "$peer" ]; then
    wait_log "m${k}_$r" '^mdcast publish: pair member: caught up with the peer' 60 ||
      fail "member $k (run $r) did not catch up with its peer: $(grep 'pair member' "$WORK/m${k}_$r.log")"
    note "member $k (run $r): $(grep -o 'caught up.*' "$WORK/m${k}_$r.log")"
  fi
}
sub_pid() { eval echo "\$PID_sub$1"; }
rail_name=(a b)

start_member 0
for i in 0 1 2; do wait_stat "$(sub_pid $i)" sub.messages_delivered 2000 60 || fail "sub$i delivered too little"; done
start_member 1 "${G[0]}"
grep -q "session $(printf %016x $SESSION)" "$WORK/m1_1.log" || fail "member B did not join A's session $(printf %016x $SESSION)"

victim=0
for n in $(seq "$KILLS"); do
  survivor=$((1 - victim))
  rail=${rail_name[$victim]}
  # Both rails heard by every subscriber before the kill (the rejoined
  # member's rail returned).
  for i in 0 1 2; do
    p=$(sub_pid $i)
    silent=$(stat_value "$p" "sub.rail_${rail}_silences") back=$(stat_value "$p" "sub.rail_${rail}_returns")
    want=$(( ${silent:-0} ))
    [ "${back:-0}" -ge "$want" ] || wait_stat "$p" "sub.rail_${rail}_returns" "$want" 60 ||
      fail "sub$i never heard rail $rail again after its member rejoined"
    before[$i]=$(( ${silent:-0} + 1 ))
  done
  wait_stat "$(sub_pid 0)" sub.messages_delivered $(( $(stat_value "$(sub_pid 0)" sub.messages_delivered) + 3000 )) 60 ||
    fail "the feed stalled before kill $n"
  kill -9 "${PID[$victim]}"
  wait "${PID[$victim]}" 2>/dev/null || true
  note "kill $n: member $victim (rail $rail) killed at sub0's sequence $(stat_value "$(sub_pid 0)" sub.next_sequence)"
  for i in 0 1 2; do
    wait_stat "$(sub_pid $i)" "sub.rail_${rail}_silences" "${before[$i]}" 60 || fail "sub$i never counted rail $rail's silence (kill $n)"
  done
  start_member "$victim" "${G[$survivor]}"
  victim=$survivor
done

# A last failover, to the member that rejoined last: the other one (alive
# longest) is killed, and the rejoined one, alone, ends the session.
kill -9 "${PID[$victim]}"
wait "${PID[$victim]}" 2>/dev/null || true
rail=${rail_name[$victim]}
for i in 0 1 2; do
  wait_stat "$(sub_pid $i)" "sub.rail_${rail}_silences" $(( $(stat_value "$(sub_pid $i)" "sub.rail_${rail}_returns") + 1 )) 60 ||
    fail "sub$i never counted rail $rail's last silence"
done
last=$((1 - victim))
# Its end of session is confirmed to a subscriber over the control plane:
# SIGTERM once every subscriber's control connection has moved to it (a
# member that ends with nobody connected stops lingering at once).
wait_stat "${PID[$last]}" ctl.clients_connected 3 60 || fail "the subscribers' control connections never all moved to the last member"
# The member's own view of its role (mdcast stat; the Prometheus export has the same).
role=$(stat_value "${PID[$last]}" app.pair_role) joined_at=$(stat_value "${PID[$last]}" app.pair_joined_at)
[ "$role" = 2 ] || fail "the last member's app.pair_role is '$role', not 2 (joined and publishing)"
[ "${joined_at:-0}" -gt 1 ] || fail "the last member's app.pair_joined_at is '$joined_at'"
note "the last member: app.pair_role $role, joined at sequence $joined_at after a catch-up of $(stat_value "${PID[$last]}" app.pair_catch_up_ms) ms"
# The longest time without data across the failovers (after this, the last
# member's look for a peer that publishes on, pair.join_timeout, comes
# before its end of session).
for i in 0 1 2; do gap_us[$i]=$(( $(stat_value "$(sub_pid $i)" sub.longest_data_gap_ns) / 1000 )); done
kill -TERM "${PID[$last]}"
final="$WORK/m${last}_${RUN[$last]}"
wait_pid "${PID[$last]}" 60 || fail "the last member exited non-zero: $(tail -3 "$final.log")"
grep -q 'did not publish past it within .*: ending the session' "$final.log" ||
  fail "the last member did not end the session: $(grep 'pair member' "$final.log" | tail -2)"
for i in 0 1 2; do wait_pid "$(sub_pid $i)" 60 || fail "sub$i exited non-zero"; done

"$MDCAST" verify "$final.toml" "$WORK/sub0.toml" "$WORK/sub1.toml" "$WORK/sub2.toml" | tee "$WORK/verify.log"
published=$(toml_get "$final.toml" messages)
replayed=$(toml_get "$final.toml" pub.datagrams_replayed)
[ "${replayed:-0}" -gt 0 ] || fail "the last member replayed no datagrams (pub.datagrams_replayed ${replayed:-unset})"
for i in 0 1 2; do
  r="$WORK/sub$i.toml"
  [ "$(toml_get "$r" messages)" = "$published" ] || fail "sub$i delivered $(toml_get "$r" messages) of $published"
  [ "$(toml_get "$r" sub.session_changes)" = 0 ] || fail "sub$i changed session"
  [ "$(toml_get "$r" sub.snapshots_requested)" = 0 ] || fail "sub$i needed a snapshot"
  note "sub$i: $published messages; rail A silent $(toml_get "$r" sub.rail_a_silences) times, rail B $(toml_get "$r" sub.rail_b_silences); longest time without data ${gap_us[$i]} us; recovered $(toml_get "$r" sub.datagrams_recovered)"
done
note "$((KILLS + 1)) failovers, $KILLS rejoins; the last member published $published messages, $replayed datagrams of them replayed quietly"
