#!/usr/bin/env bash
# A retransmit storm: 2 % of the publisher's datagrams are lost as its host
# sends them, so every subscriber misses the same datagrams and asks for
# the same ranges at about the same moment. All three recover every message,
# books identical; the publisher answers identical requests of one poll with
# one encoded reply, copied (ctl.retransmit_coalesced).
source "$(dirname "$0")/netns_feed.sh"

netns_topology
# Dropped as the publisher's host sends them (before the switch copies them
# to each port): every subscriber misses the same datagrams.
LOSS_MODE=nft
ip netns exec "$(ns_of pub)" nft -f - <<EOF2 || { LOSS_MODE=none; note "no nftables: no loss (install nftables)"; }
table ip mdcast_storm {
  chain output {
    type filter hook output priority 0; policy accept;
    ip daddr 224.0.0.0/4 udp dport != 0 numgen random mod 100 < 2 counter drop
  }
}
EOF2
storm_dropped() {
  ip netns exec "$(ns_of pub)" nft list table ip mdcast_storm 2>/dev/null \
    | awk '/counter packets/ {for (i = 1; i < NF; i++) if ($i == "packets") s += $(i + 1)} END {print s + 0}'
}
start_publisher
for s in s1 s2 s3; do start_subscriber $s; done
finish s1 s2 s3
finish_publisher
figure loss "$LOSS_MODE"
figure publisher_drops "$(storm_dropped)"
for s in s1 s2 s3; do sub_figures $s; done
figure pub.retransmit_requests "$(result_value pub ctl.retransmit_requests)"
figure pub.datagrams_retransmitted "$(result_value pub ctl.datagrams_retransmitted)"
figure pub.retransmit_coalesced "$(result_value pub ctl.retransmit_coalesced)"

check_books s1 s2 s3
if [ "$LOSS_MODE" = nft ]; then
  check_all_delivered s1 s2 s3
  for s in s1 s2 s3; do
    expect "$s recovered what the publisher's link lost ($(result_value $s sub.datagrams_recovered))" \
      gt0 "$(result_value $s sub.datagrams_recovered)"
  done
fi
conclude
