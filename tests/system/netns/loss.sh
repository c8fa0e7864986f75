#!/usr/bin/env bash
# One publisher host, three subscriber hosts over UDP multicast; 5 % loss on
# s1's link only (with reordering where the kernel has netem): every
# subscriber exits 0 with books identical to the publisher's; s1 recovered
# what it lost, s2 and s3 delivered every message with nothing to recover.
source "$(dirname "$0")/netns_feed.sh"

netns_topology
netns_loss s1 5
SUB_ARGS[s1]="${LOSS_SUB_ARGS[*]}"   # only where neither netem nor nftables exists
start_publisher
for s in s1 s2 s3; do start_subscriber $s; done
finish s1 s2 s3
finish_publisher
figure loss "$LOSS_MODE"
figure link_drops "$(netns_loss_dropped)"
for s in s1 s2 s3; do sub_figures $s; done

figure s1.retransmit_timeouts "$(result_value s1 sub.retransmit_timeouts)"
figure s1.forged "$(result_value s1 sub.forged_datagrams)"

check_books s1 s2 s3
# s1's control connection runs over the same lossy link: a retransmit reply
# TCP holds back twice (600 ms) can outlast its window, and then a snapshot
# recovers it instead; books match either way. (With the UDP medium's 1 s
# request timeout, runs here recover every message by retransmission.)
check_all_delivered s2 s3
expect "s1 detected gaps ($(result_value s1 sub.gaps))" gt0 "$(result_value s1 sub.gaps)"
expect "s1 recovered (datagrams $(result_value s1 sub.datagrams_recovered), snapshots $(result_value s1 sub.snapshots_applied))" \
  gt0 $(($(result_value s1 sub.datagrams_recovered) + $(result_value s1 sub.snapshots_applied)))
check_undisturbed s2 s3
# No one forges here: data that overtook a late answer is not forgery.
expect "s1 counted no real datagram as forged" eq "$(result_value s1 sub.forged_datagrams)" 0
conclude
