#!/usr/bin/env bash
# A publisher pair across hosts (docs/architecture.md, "Publisher pairs"):
# member A on host pa publishes group A on rail A, member B on host pb
# group B on rail B; three subscriber hosts read both rails. Datagram cuts
# follow the input (publisher.boundaries=input, packets of 1..8 messages, a
# 3000-byte message every 150 that fragments). A begins the session; B
# joins it (pair.peer). Then KILLS times the member ahead is killed
# (SIGKILL) at a later point of the feed each time, and started again with
# pair.peer naming the survivor, which it catches up with; a last failover
# goes to the member restarted last, which ends the session (SIGTERM).
# Four of the kills aim where a takeover is hardest, with the member's crash
# drill (publisher.crash_drill, armed by SIGUSR1): right after a datagram
# that ends inside a fragmented message (kills 3 and 7), and in the middle
# of a snapshot the member streams to a subscriber that joins late (kills 5
# and 9; that joiner asks the victim alone and is not checked).
# Every subscriber is exact with its books identical to the last member's,
# in one session, without a snapshot; the longest time without data and
# each catch-up are reported.
source "$(dirname "$0")/netns_lib.sh"
KILLS=${KILLS:-9}
RATE=${RATE:-10k}

declare -A IP_A=([pa]=10.77.0.1 [pb]=10.77.0.5 [s1]=10.77.0.2 [s2]=10.77.0.3 [s3]=10.77.0.4)
declare -A IP_B=([pa]=10.78.0.1 [pb]=10.78.0.5 [s1]=10.78.0.2 [s2]=10.78.0.3 [s3]=10.78.0.4)
netns_fabric
for h in pa pb s1 s2 s3; do netns_host "$h" "${IP_A[$h]}" "${IP_B[$h]}"; done
netns_wait_links

GA=$NETNS_GROUP_A GB=$NETNS_GROUP_B
SESSION=$(( ((RANDOM << 30) | (RANDOM << 15) | RANDOM) + 1 ))  # one per run: never reused
HOST=(pa pb)
IFACE=("${IP_A[pa]}" "${IP_B[pb]}")           # each member publishes on its own rail
GROUP=("$GA" "$GB")
PEER=("$GB@${IP_B[pa]}" "$GA@${IP_A[pb]}")    # member k follows the other on its rail
JOIN_IF=("${IP_A[s3]}" "${IP_B[s3]}")         # a late joiner on s3, on member k's rail
member=(publish --medium udp --set udp.control_port=0 --idle block --rate "$RATE" --instrument-count 300 --seed 11
        --duration 600s --linger 15s --set publisher.boundaries=input --set publisher.packet_messages=8
        --set publisher.large_every=150 --set publisher.large_bytes=3000)

for h in s1 s2 s3; do
  start_in "$h" "$h" subscribe --medium udp --interface "${IP_A[$h]}" --udp-group "$GA" --rail-b "$GB@${IP_B[$h]}" \
    --idle block --wait 60s --give-up 60s --set subscriber.pair_lag=1000000 --set udp.rate="$RATE" \
    --result "$WORK/$h.toml"
done
declare -A RUN PID
# Kill n's point where it is a drill's: the victim is started with it.
declare -A DRILL=([3]=fragment [5]=snapshot [7]=fragment [9]=snapshot)
start_member() {  # k join|"" [the kill it will be the victim of]
  local k=$1 r=$(( ${RUN[$1]:-0} + 1 )) label
  RUN[$k]=$r
  label="m${k}_$r"
  local extra=(--set publisher.session=$SESSION)
  [ -n "${2:-}" ] && extra=(--set pair.peer="${PEER[$k]}")
  [ -n "${DRILL[${3:-0}]:-}" ] && extra+=(--set publisher.crash_drill="${DRILL[$3]}")
  start_in "${HOST[$k]}" "$label" "${member[@]}" --interface "${IFACE[$k]}" --udp-group "${GROUP[$k]}" "${extra[@]}" \
    --result "$WORK/$label.toml"
  PID[$k]=$(pid_of "$label")
  wait_log "$label" '^mdcast publish: UDP multicast .*control tcp:' 60 || fail "member $k (run $r) did not start"
  if [ -n "${2:-}" ]; then
    wait_log "$label" '^mdcast publish: pair member: caught up with the peer' 60 ||
      fail "member $k (run $r) did not catch up: $(grep 'pair member' "$WORK/$label.log")"
    note "member $k (run $r) on ${HOST[$k]}: $(grep -o 'caught up.*' "$WORK/$label.log")"
  fi
}
rail_name=(a b)

start_member 0 "" 1
for h in s1 s2 s3; do wait_stat "$(pid_of $h)" sub.messages_delivered 1000 60 || fail "$h delivered too little"; done
start_member 1 join 2
grep -q "session $(printf %016x $SESSION)" "$WORK/m1_1.log" || fail "member B did not join A's session"

victim=0
for n in $(seq "$KILLS"); do
  rail=${rail_name[$victim]}
  for h in s1 s2 s3; do
    p=$(pid_of $h)
    silent=$(stat_value "$p" "sub.rail_${rail}_silences")
    wait_stat "$p" "sub.rail_${rail}_returns" "${silent:-0}" 60 || fail "$h never heard rail $rail again after its member rejoined"
    before[${h#s}]=$(( ${silent:-0} + 1 ))
  done
  # A later point each time: n * 700 messages past the rejoin.
  p=$(pid_of s1)
  wait_stat "$p" sub.messages_delivered $(( $(stat_value "$p" sub.messages_delivered) + n * 700 )) 60 || fail "the feed stalled before kill $n"
  point=${DRILL[$n]:-}
  if [ -z "$point" ]; then
    kill -9 "${PID[$victim]}"
    wait "${PID[$victim]}" 2>/dev/null || true
    point="kill -9"
  else
    log="$WORK/m${victim}_${RUN[$victim]}.log"
    if [ "$point" = snapshot ]; then
      ctl=$(grep -oE 'control tcp:[0-9.]+:[0-9]+' "$log" | head -1 | sed 's/^control //')
      crash_drill "${PID[$victim]}" "$log" start_in s3 "joiner$n" subscribe --medium udp --interface "${JOIN_IF[$victim]}" \
        --udp-group "${GROUP[$victim]}" --set feed.control="$ctl" --idle block --wait 60s --give-up 60s
    else
      crash_drill "${PID[$victim]}" "$log"
    fi
    if [ "$point" = snapshot ]; then
      kill -9 "$(pid_of "joiner$n")"
      wait "$(pid_of "joiner$n")" 2>/dev/null || true
    fi
    point="its $point drill"
  fi
  note "kill $n: member $victim on ${HOST[$victim]} died ($point) at s1's sequence $(stat_value "$p" sub.next_sequence)"
  for h in s1 s2 s3; do
    wait_stat "$(pid_of $h)" "sub.rail_${rail}_silences" "${before[${h#s}]}" 60 || fail "$h never counted rail $rail's silence (kill $n)"
  done
  start_member "$victim" join $((n + 2))
  victim=$((1 - victim))
done

# The last failover, to the member restarted last; it ends the session once
# every subscriber's control connection is on it.
kill -9 "${PID[$victim]}"
wait "${PID[$victim]}" 2>/dev/null || true
last=$((1 - victim))
wait_stat "${PID[$last]}" ctl.clients_connected 3 60 || fail "the subscribers' control connections never all moved to the last member"
# The longest time without data across the failovers, read before the
# last member's end: stopped, it first looks for a peer publishing on
# (pair.join_timeout), a pause of the feed and not a takeover.
longest=0
for h in s1 s2 s3; do
  g=$(stat_value "$(pid_of $h)" sub.longest_data_gap_ns)
  [ "${g:-0}" -gt "$longest" ] && longest=$g
done
kill -TERM "${PID[$last]}"
final="$WORK/m${last}_${RUN[$last]}"
wait_rc "${PID[$last]}" 60 || fail "the last member exited $?: $(tail -3 "$final.log")"
for h in s1 s2 s3; do wait_rc "$(pid_of $h)" 60 || fail "$h exited $?: $(grep -v '^mdcast-udp' "$WORK/$h.log" | tail -2)"; done

"$MDCAST" verify "$final.toml" "$WORK/s1.toml" "$WORK/s2.toml" "$WORK/s3.toml" | tee "$WORK/verify.log"
published=$(toml_get "$final.toml" messages)
for h in s1 s2 s3; do
  r="$WORK/$h.toml"
  [ "$(toml_get "$r" messages)" = "$published" ] || fail "$h delivered $(toml_get "$r" messages) of $published"
  [ "$(toml_get "$r" sub.session_changes)" = 0 ] || fail "$h changed session"
  [ "$(toml_get "$r" sub.snapshots_requested)" = 0 ] || fail "$h needed a snapshot"
done
echo "RESULT netns.pair: failovers=$((KILLS + 1)) rejoins=$KILLS messages=$published longest_data_gap_us=$((longest / 1000)) replayed_datagrams=$(toml_get "$final.toml" pub.datagrams_replayed)"
