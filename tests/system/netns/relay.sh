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
source "$(dirname "$0")/netns_feed.sh"
DURATION=6s
PER_HOST=2    # shm subscriber processes behind each relay
RELAYS=(s1 s2)

netns_topology
for r in "${RELAYS[@]}"; do netns_loss "$r" 5; done
[ "$LOSS_MODE" != inject ] || skip "no netem or nftables to make the relay links lossy (install nftables)"

# Downstream first, waiting for their relay's ring; then the relays, waiting
# for the origin's session; then the origin, once the relays and s3 are
# there. What a relay misses while it starts it recovers from the origin:
# its window (256 MiB, 64 k datagrams) holds the whole feed.
for r in "${RELAYS[@]}"; do
  for i in $(seq 1 $PER_HOST); do
    start_in "$r" "$r-sub$i" subscribe --medium shm --name "md-$r" --idle block --wait 90s --give-up "$GIVE_UP" \
      --result "$WORK/$r-sub$i.toml"
  done
  start_in "$r" "$r-relay" relay --medium shm --name "md-$r" --idle block --linger 5s \
    --from-medium udp --from-interface "${IP_A[$r]}" --from-udp-group "$NETNS_GROUP_A" --wait 90s --give-up "$GIVE_UP" \
    --from-set udp.rate="$RATE" --from-set subscriber.window_bytes=256M --result "$WORK/$r-relay.toml"
done
start_subscriber s3
WAIT_SUBS=3 start_publisher
for r in "${RELAYS[@]}"; do
  for i in $(seq 1 $PER_HOST); do finish "$r-sub$i"; done
  finish "$r-relay"
done
finish s3
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
  expect "$l recovered its link's loss upstream ($(result_value $l sub.gaps) gaps, $(result_value $l sub.datagrams_recovered) datagrams)" \
    gt0 "$(result_value $l sub.datagrams_recovered)"
  expect "$l kept every datagram's sequence (relay.sequence_mismatches $(result_value $l relay.sequence_mismatches))" \
    eq "$(result_value $l relay.sequence_mismatches)" 0
  expect "$l served its $PER_HOST subscribers ($(result_value $l ctl.subscribes) subscriptions)" \
    [ "$(result_value $l ctl.subscribes)" -ge "$PER_HOST" ]
  for i in $(seq 1 $PER_HOST); do
    downstream+=("$r-sub$i")
    expect "$r-sub$i ended at the origin's sequence $last (got $(result_value "$r-sub$i" last_sequence))" \
      eq "$(result_value "$r-sub$i" last_sequence)" "$last"
  done
done
figure origin.subscriptions "$(result_value pub ctl.subscribes)"
figure origin.connects "$(result_value pub ctl.client_connects)"
check_books "${downstream[@]}" s1-relay s2-relay s3
check_all_delivered "${downstream[@]}" s3
conclude
