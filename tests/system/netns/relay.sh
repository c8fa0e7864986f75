#!/usr/bin/env bash
# Relays per host: one publisher host; on s1 and s2 a relay subscribes to
# the feed over UDP through a link that loses 5 % both ways, and publishes
# it again over shared memory to that host's subscriber processes; s3 is a
# plain UDP subscriber beside them. Every subscriber exits 0 with books
# identical to the origin's and under the origin's sequence numbers; each
# relay recovered its link's loss upstream before forwarding; the origin
# served the relays and s3, never the processes behind the relays.
# (The hosts share one /dev/shm, as namespaces do: each relay's feed gets
# its own name, md-s1 and md-s2; on real hosts both would be "md".)
#
# At scale (scripts/scale-relays.sh): RELAY_HOSTS="s1 s2 s3" PER_HOST=342
# puts 1026 subscriber processes behind three relays. DOWN_ARGS are their
# extra flags (the small footprint), SUB_WAIT how long each waits for its
# relay's ring and RELAY_WAIT each relay for the origin while the others
# start (a thousand process starts take minutes on two cores), RELAY_LINGER
# how long a relay serves recovery after the end, RELAY_ARGS and PUB_WAIT
# further relay and origin flags, and MEMORY_SAMPLE=1 samples the
# subscribers' memory (Pss, /proc/PID/smaps_rollup) while they run.
source "$(dirname "$0")/netns_feed.sh"
DURATION=${DURATION:-6s}
PER_HOST=${PER_HOST:-2}    # shm subscriber processes behind each relay
read -r -a RELAYS <<<"${RELAY_HOSTS:-s1 s2}"
read -r -a DOWN_ARGS <<<"${DOWN_ARGS:-}"
SUB_WAIT=${SUB_WAIT:-90s}
PLAIN=()  # s3 subscribes over UDP itself unless it is a relay host
[[ " ${RELAYS[*]} " == *" s3 "* ]] || PLAIN=(s3)
netns_topology
for r in "${RELAYS[@]:0:2}"; do netns_loss "$r" 5; done  # two lossy relay links
[ "$LOSS_MODE" != inject ] || skip "no netem or nftables to make the relay links lossy (install nftables)"

# Downstream first, waiting for their relay's ring; then the relays, waiting
# for the origin's session; then the origin, once the relays and s3 are
# there. What a relay misses while it starts it recovers from the origin:
# its window (256 MiB, 64 k datagrams) holds the whole feed.
readers=$((PER_HOST > 256 ? PER_HOST : 256))
for r in "${RELAYS[@]}"; do
  for i in $(seq 1 "$PER_HOST"); do
    start_in "$r" "$r-sub$i" subscribe --medium shm --name "md-$r" --idle block --wait "$SUB_WAIT" --give-up "$GIVE_UP" \
      --result "$WORK/$r-sub$i.toml" "${DOWN_ARGS[@]}"
  done
  start_in "$r" "$r-relay" relay --medium shm --name "md-$r" --idle block --linger "${RELAY_LINGER:-5s}" \
    "${DOWN_ARGS[@]}" --set shm.readers="$readers" --set control.max_unadmitted="$readers" ${RELAY_ARGS:-} \
    --from-medium udp --from-interface "${IP_A[$r]}" --from-udp-group "$NETNS_GROUP_A" \
    --wait "${RELAY_WAIT:-90s}" --give-up "$GIVE_UP" --from-set udp.rate="$RATE" --from-set subscriber.window_bytes=256M \
    --result "$WORK/$r-relay.toml"
done
[ ${#PLAIN[@]} -eq 0 ] || start_subscriber s3
if [ "${MEMORY_SAMPLE:-0}" = 1 ]; then  # the downstream processes' memory, the largest total seen
  down_pids=()
  for r in "${RELAYS[@]}"; do for i in $(seq 1 "$PER_HOST"); do down_pids+=("$(pid_of "$r-sub$i")"); done; done
  ( peak=0
    while :; do
      v=$(printf '/proc/%s/smaps_rollup\n' "${down_pids[@]}" | xargs cat 2>/dev/null |
        awk '/rollup/ {n++} /^Pss:/ {p += $2} /^Rss:/ {r += $2} END {print n+0, p+0, r+0}')
      read -r n pss rss <<<"$v"
      [ "$n" -gt 0 ] || break
      if [ "$pss" -gt "$peak" ]; then peak=$pss; echo "$n $pss $rss" >"$WORK/memory.peak"; fi
      sleep 2
    done ) &
  PIDS+=($!)
fi
WAIT_SUBS=$((${#RELAYS[@]} + ${#PLAIN[@]})) start_publisher ${PUB_WAIT:-}
for r in "${RELAYS[@]}"; do
  for i in $(seq 1 "$PER_HOST"); do finish "$r-sub$i"; done
  finish "$r-relay"
done
[ ${#PLAIN[@]} -eq 0 ] || finish s3
finish_publisher

figure loss "$LOSS_MODE"
figure link_drops "$(netns_loss_dropped)"
last=$(result_value pub last_sequence)
downstream=()
for r in "${RELAYS[@]}"; do
  l="$r-relay"
  figure "$l.gaps" "$(result_value $l sub.gaps)"
  figure "$l.recovered" "$(result_value $l sub.datagrams_recovered)"
  figure "$l.snapshots" "$(result_value $l sub.snapshots_applied)"
  figure "$l.subscriptions" "$(result_value $l ctl.subscribes)"
  # Only the first two links lose datagrams (a third relay host's is clean).
  if [[ " ${RELAYS[*]:0:2} " == *" $r "* ]]; then
    expect "$l recovered its link's loss upstream ($(result_value $l sub.gaps) gaps, $(result_value $l sub.datagrams_recovered) datagrams)" \
      gt0 "$(result_value $l sub.datagrams_recovered)"
  fi
  expect "$l kept every datagram's sequence (relay.sequence_mismatches $(result_value $l relay.sequence_mismatches))" \
    eq "$(result_value $l relay.sequence_mismatches)" 0
  expect "$l served its $PER_HOST subscribers ($(result_value $l ctl.subscribes) subscriptions)" \
    [ "$(result_value $l ctl.subscribes)" -ge "$PER_HOST" ]
  for i in $(seq 1 "$PER_HOST"); do
    downstream+=("$r-sub$i")
    expect "$r-sub$i ended at the origin's sequence $last (got $(result_value "$r-sub$i" last_sequence))" \
      eq "$(result_value "$r-sub$i" last_sequence)" "$last"
  done
done
figure origin.subscriptions "$(result_value pub ctl.subscribes)"
figure origin.connects "$(result_value pub ctl.client_connects)"
figure downstream "${#downstream[@]}"
# Each relay connects to the origin twice: once to learn its session, then to forward.
clients=$((2 * ${#RELAYS[@]} + ${#PLAIN[@]}))
expect "the origin served its ${#RELAYS[@]} relays and ${#PLAIN[@]} plain subscriber(s), none of the ${#downstream[@]} behind the relays ($(result_value pub ctl.client_connects) connections, at most $clients)" \
  [ "$(result_value pub ctl.client_connects)" -le "$clients" ]
if [ -s "$WORK/memory.peak" ]; then
  read -r n pss rss <"$WORK/memory.peak"
  figure memory "${n}_processes_Pss_$((pss / 1024))MiB_per_process_$((pss / n))KiB_Pss_$((rss / n))KiB_Rss"
fi
relays=()
for r in "${RELAYS[@]}"; do relays+=("$r-relay"); done
check_books "${downstream[@]}" "${relays[@]}" "${PLAIN[@]}"
check_all_delivered "${downstream[@]}" "${PLAIN[@]}"
conclude
