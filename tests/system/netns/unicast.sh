#!/usr/bin/env bash
# A unicast leg where multicast does not reach: the fabric drops every
# multicast datagram on its way to s1 and s2; the publisher sends its group
# (which s3 hears) and, through udp.also_to, each datagram, heartbeat and
# announcement to s1's and s2's own addresses as well. On s1 a relay takes
# the unicast leg, through a link that also loses 5 % both ways, and
# republishes it over shared memory to a subscriber process; on s2 a plain
# subscriber binds its address. Every subscriber exits 0 with books
# identical to the publisher's, under its sequence numbers; what s1's link
# lost was recovered upstream by the relay; the fabric did drop multicast
# on the way to s1 and s2.
source "$(dirname "$0")/netns_feed.sh"
DURATION=6s
LEG_PORT=7480

netns_topology
command -v nft >/dev/null 2>&1 || skip "nftables is needed to keep multicast from s1 and s2"
ip netns exec "$NETNS_FABRIC" nft -f - <<EOF2 || skip "nftables refused the bridge rule that drops multicast"
table bridge mdcast_nomcast {
  chain forward {
    type filter hook forward priority -10; policy accept;
    oifname { "a-s1", "a-s2" } ip daddr 224.0.0.0/4 counter drop
  }
}
EOF2
note "the fabric drops multicast to s1 and s2"
netns_loss s1 5
[ "$LOSS_MODE" != inject ] || skip "no netem or nftables to make s1's link lossy (install nftables)"

LEG1="${IP_A[s1]}:$LEG_PORT"
LEG2="${IP_A[s2]}:$LEG_PORT"
start_in s1 s1-sub subscribe --medium shm --name md-s1 --idle block --wait 90s --give-up "$GIVE_UP" \
  --result "$WORK/s1-sub.toml"
start_in s1 s1-relay relay --medium shm --name md-s1 --idle block --linger 5s \
  --from-medium udp --from-interface "${IP_A[s1]}" --from-udp-group "$LEG1" --wait 90s --give-up "$GIVE_UP" \
  --from-set udp.rate="$RATE" --from-set subscriber.window_bytes=256M --result "$WORK/s1-relay.toml"
start_in s2 s2 subscribe --medium udp --interface "${IP_A[s2]}" --udp-group "$LEG2" --name "$NAME" \
  --idle block --give-up "$GIVE_UP" --set udp.rate="$RATE" --result "$WORK/s2.toml"
start_subscriber s3
PUB_ARGS=(--set "udp.also_to=$LEG1,$LEG2")
WAIT_SUBS=3 start_publisher
finish s1-sub s1-relay s2 s3
finish_publisher

dropped=$(ip netns exec "$NETNS_FABRIC" nft list table bridge mdcast_nomcast 2>/dev/null |
  awk '/counter packets/ {for (i = 1; i < NF; i++) if ($i == "packets") s += $(i + 1)} END {print s + 0}')
figure multicast_dropped "$dropped"
figure loss "$LOSS_MODE"
figure link_drops "$(netns_loss_dropped)"
figure s1-relay.gaps "$(result_value s1-relay sub.gaps)"
figure s1-relay.recovered "$(result_value s1-relay sub.datagrams_recovered)"
for s in s2 s3; do sub_figures $s; done
last=$(result_value pub last_sequence)
expect "the fabric dropped multicast on the way to s1 and s2 ($dropped datagrams)" gt0 "$dropped"
expect "the relay on s1 recovered its link's loss over the unicast leg ($(result_value s1-relay sub.datagrams_recovered) datagrams)" \
  gt0 "$(result_value s1-relay sub.datagrams_recovered)"
expect "the relay kept every datagram's sequence" eq "$(result_value s1-relay relay.sequence_mismatches)" 0
for l in s1-sub s2; do
  expect "$l ended at the publisher's sequence $last (got $(result_value $l last_sequence))" \
    eq "$(result_value $l last_sequence)" "$last"
done
check_books s1-sub s1-relay s2 s3
check_all_delivered s1-sub s2 s3
conclude
