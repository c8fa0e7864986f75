#!/usr/bin/env bash
# A publisher pair on one host over shared memory (docs/architecture.md,
# "Publisher pairs"): member A writes ring FA (rail A), member B ring FB
# (rail B); three subscribers read both (shm.rail_b). The datagrams end
# where the input's packets end (publisher.boundaries=input, packets of 1..8
# messages, a 6000-byte message every 150 that fragments). A begins the
# session, B joins it (pair.peer=FA) and catches up. Then KILLS times the
# member ahead is killed (SIGKILL) at a later point of the feed each time and
# started again with pair.peer naming the survivor; its ring comes back as
# its rail. Kills 3 and 7 aim right after a datagram that ends inside a
# fragmented message, kills 5 and 9 in the middle of a snapshot the member
# streams to a late joiner (publisher.crash_drill, armed by SIGUSR1; the
# joiner asks the victim alone and is not checked). Last, the two are
# stopped as an operator stops them (SIGTERM): the one alive longest leaves
# the session to the other (a tenth failover, a clean one), which ends it.
# Every subscriber exits 0, exact, with the last member's books, in one
# session, without a snapshot; those whose control connection was on a
# member that went away moved it to the other (shm.control_moved).
source "$(dirname "$0")/lib.sh"
KILLS=${KILLS:-9}

F=("pairA.$$" "pairB.$$")
SESSION=$(( ((RANDOM << 30) | (RANDOM << 15) | RANDOM) + 1 ))  # one per run: never reused
member=(publish --medium shm --idle block --rate 5k --instrument-count 300 --seed 11 --duration 300s --linger 15s
        --set publisher.boundaries=input --set publisher.packet_messages=8
        --set publisher.large_every=150 --set publisher.large_bytes=6000)

for i in 0 1 2; do
  start_bg "sub$i" subscribe --medium shm --name "${F[0]}" --set shm.rail_b="${F[1]}" --idle block --wait 60s \
    --set subscriber.pair_lag=1000000 --set subscriber.give_up=60s --result "$WORK/sub$i.toml"
done
sub_pid() { eval echo "\$PID_sub$1"; }
# Member k (0: A, 1: B), run r: its log is m<k>_<r>.
declare -A RUN PID
declare -A DRILL=([3]=fragment [5]=snapshot [7]=fragment [9]=snapshot)   # kill n's point, where a drill's
start_member() {  # k pair.peer|"" [the kill it will be the victim of]
  local k=$1 peer=${2:-} r=$(( ${RUN[$1]:-0} + 1 ))
  RUN[$k]=$r
  local extra=(--set publisher.session=$SESSION)
  [ -n "$peer" ] && extra=(--set pair.peer="$peer")
  [ -n "${DRILL[${3:-0}]:-}" ] && extra+=(--set publisher.crash_drill="${DRILL[$3]}")
  start_bg "m${k}_$r" "${member[@]}" --name "${F[$k]}" "${extra[@]}" --result "$WORK/m${k}_$r.toml"
  PID[$k]=$(eval echo "\$PID_m${k}_$r")
  wait_log "m${k}_$r" '^mdcast publish: shm ring' 60 || fail "member $k (run $r) did not start: $(tail -3 "$WORK/m${k}_$r.log")"
  if [ -n "$peer" ]; then
    wait_log "m${k}_$r" '^mdcast publish: pair member: caught up with the peer' 60 ||
      fail "member $k (run $r) did not catch up with its peer: $(grep 'pair member' "$WORK/m${k}_$r.log")"
    note "member $k (run $r): $(grep -o 'caught up.*' "$WORK/m${k}_$r.log")"
  fi
}
rail_name=(a b)
# Both rails heard by every subscriber (a rejoined member's ring returned);
# before[i]: the silences of rail $1 sub i will have counted after a kill.
rails_heard() {
  local rail=$1 i p silent back
  for i in 0 1 2; do
    p=$(sub_pid $i)
    silent=$(stat_value "$p" "sub.rail_${rail}_silences") back=$(stat_value "$p" "sub.rail_${rail}_returns")
    [ "${back:-0}" -ge "${silent:-0}" ] || wait_stat "$p" "sub.rail_${rail}_returns" "${silent:-0}" 60 ||
      fail "sub$i never heard rail $rail again after its member rejoined"
    before[$i]=$(( ${silent:-0} + 1 ))
  done
}

start_member 0 "" 1
for i in 0 1 2; do wait_stat "$(sub_pid $i)" sub.messages_delivered 2000 60 || fail "sub$i delivered too little"; done
start_member 1 "${F[0]}" 2
grep -q "session $(printf %016x $SESSION)" "$WORK/m1_1.log" || fail "member B did not join A's session $(printf %016x $SESSION)"
for i in 0 1 2; do wait_stat "$(sub_pid $i)" shm.reattached 1 60 || fail "sub$i never attached B's ring"; done

victim=0
for n in $(seq "$KILLS"); do
  survivor=$((1 - victim))
  rail=${rail_name[$victim]}
  rails_heard "$rail"
  p=$(sub_pid 0)
  wait_stat "$p" sub.messages_delivered $(( $(stat_value "$p" sub.messages_delivered) + n * 600 )) 60 ||
    fail "the feed stalled before kill $n"
  point=${DRILL[$n]:-}
  if [ -z "$point" ]; then
    kill -9 "${PID[$victim]}"
    wait "${PID[$victim]}" 2>/dev/null || true
    point="kill -9"
  else
    log="$WORK/m${victim}_${RUN[$victim]}.log"
    if [ "$point" = snapshot ]; then
      crash_drill "${PID[$victim]}" "$log" start_bg "joiner$n" subscribe --medium shm --name "${F[$victim]}" --idle block \
        --wait 60s --give-up 60s
    else
      crash_drill "${PID[$victim]}" "$log"
    fi
    if [ "$point" = snapshot ]; then
      j=$(eval echo "\$PID_joiner$n")
      kill -9 "$j"
      wait "$j" 2>/dev/null || true
    fi
    point="its $point drill"
  fi
  note "kill $n: member $victim (rail $rail) died ($point) at sub0's sequence $(stat_value "$p" sub.next_sequence)"
  for i in 0 1 2; do
    wait_stat "$(sub_pid $i)" "sub.rail_${rail}_silences" "${before[$i]}" 60 || fail "sub$i never counted rail $rail's silence (kill $n)"
  done
  start_member "$victim" "${F[$survivor]}" $((n + 2))
  victim=$survivor
done

# Stopped as an operator stops a pair: the member alive longest first. Its
# peer publishes on past it, so it leaves the session (exit 0, no end).
rails_heard "${rail_name[$victim]}"
kill -TERM "${PID[$victim]}"
wait_pid "${PID[$victim]}" 30 || fail "member $victim exited non-zero after SIGTERM: $(tail -3 "$WORK/m${victim}_${RUN[$victim]}.log")"
grep -q 'left it to the peer, not ended' "$WORK/m${victim}_${RUN[$victim]}.log" ||
  fail "member $victim ended the session although its peer publishes on: $(grep 'pair member' "$WORK/m${victim}_${RUN[$victim]}.log" | tail -2)"
last=$((1 - victim))
# Every subscriber's control connection on the last member (those on the
# one that left moved), then it ends the session alone.
wait_stat "${PID[$last]}" ctl.clients_connected 3 60 || fail "the subscribers' control connections never all moved to the last member"
role=$(stat_value "${PID[$last]}" app.pair_role)
[ "$role" = 2 ] || fail "the last member's app.pair_role is '$role', not 2 (joined and publishing)"
for i in 0 1 2; do gap_us[$i]=$(( $(stat_value "$(sub_pid $i)" sub.longest_data_gap_ns) / 1000 )); done
kill -TERM "${PID[$last]}"
final="$WORK/m${last}_${RUN[$last]}"
wait_pid "${PID[$last]}" 60 || fail "the last member exited non-zero: $(tail -3 "$final.log")"
# (Its peer's ring is gone with the peer: nothing to follow, so at once.)
grep -q ': ending the session$' "$final.log" ||
  fail "the last member did not end the session: $(grep 'pair member' "$final.log" | tail -2)"
for i in 0 1 2; do wait_pid "$(sub_pid $i)" 60 || fail "sub$i exited non-zero: $(tail -2 "$WORK/sub$i.log")"; done

"$MDCAST" verify "$final.toml" "$WORK/sub0.toml" "$WORK/sub1.toml" "$WORK/sub2.toml" | tee "$WORK/verify.log"
published=$(toml_get "$final.toml" messages)
for i in 0 1 2; do
  r="$WORK/sub$i.toml"
  [ "$(toml_get "$r" messages)" = "$published" ] || fail "sub$i delivered $(toml_get "$r" messages) of $published"
  [ "$(toml_get "$r" sub.session_changes)" = 0 ] || fail "sub$i changed session"
  [ "$(toml_get "$r" sub.snapshots_requested)" = 0 ] || fail "sub$i needed a snapshot"
  [ "$(toml_get "$r" sub.reassembled)" -gt 0 ] || fail "sub$i reassembled no fragmented message"
  [ "$(toml_get "$r" shm.control_moved)" -ge "$KILLS" ] ||
    fail "sub$i moved its control connection $(toml_get "$r" shm.control_moved) times over $KILLS kills and a hand-over"
  note "sub$i: $published messages; rail A silent $(toml_get "$r" sub.rail_a_silences) times, rail B $(toml_get "$r" sub.rail_b_silences); control moved $(toml_get "$r" shm.control_moved) times; longest time without data ${gap_us[$i]} us; recovered $(toml_get "$r" sub.datagrams_recovered)"
done
note "$KILLS failovers by SIGKILL ($((${#DRILL[@]})) of them by drill) with rejoins, a hand-over by SIGTERM and an end: the last member published $published messages to every subscriber, one session, no snapshot"
