#!/usr/bin/env bash
# Two rails: the publisher sends every datagram on rail A (10.77.0.0/24) and
# rail B (10.78.0.0/24); s3 listens to both. Rail A cut at s3 for 4 s: s3
# takes every datagram from rail B, so it delivers every message with no gap
# and no recovery at all; books identical everywhere.
source "$(dirname "$0")/netns_feed.sh"
CUT_S=4

netns_topology
PUB_ARGS=(--rail-b "$NETNS_GROUP_B@${IP_B[pub]}")
# s3's control connection runs over rail A, which the cut takes down: a
# subscriber runs at most a window ahead of what its control plane last
# confirmed (subscriber.confirm_ahead), so its window holds the outage and
# the control plane's return however slowly a loaded host gets there (in
# CI under ASan the default's ~38 k datagrams were outrun, and s3 ended
# with a snapshot).
SUB_ARGS[s3]="--rail-b $NETNS_GROUP_B@${IP_B[s3]} --set subscriber.window_bytes=256M"
start_publisher
for s in s1 s2 s3; do start_subscriber $s; done
wait_published "$PID_pub" 30000
netns_cut s3 a
b_at=$(stat_value "$PID_s3" sub.rail_b_first)
sleep $CUT_S  # the outage itself
# Back only once rail B has carried s3 through part of it, however few
# datagrams a loaded host sent in those 4 s.
expect "rail B came first at s3 while rail A was cut" wait_stat "$PID_s3" sub.rail_b_first $((${b_at:-0} + 1)) 60
netns_restore s3 a
finish s1 s2 s3
finish_publisher
figure cut_s "$CUT_S"
for s in s1 s2 s3; do sub_figures $s; done
figure s3.rail_a_first "$(result_value s3 sub.rail_a_first)"
figure s3.rail_b_first "$(result_value s3 sub.rail_b_first)"
figure s3.rail_a_datagrams "$(result_value s3 udp.rail_a_datagrams)"
figure s3.rail_b_datagrams "$(result_value s3 udp.rail_b_datagrams)"

check_books s1 s2 s3
check_all_delivered s1 s2 s3
# A gap may open for the moment one rail runs ahead of the other: the other
# rail's copy fills it within reorder_wait (2 ms), nothing is asked for.
figure s3.gaps_filled_by_rail_b "$(result_value s3 sub.gaps)"
expect "s3 recovered nothing ($(result_value s3 sub.datagrams_recovered))" eq "$(result_value s3 sub.datagrams_recovered)" 0
expect "s3 needed no snapshot ($(result_value s3 sub.snapshots_applied))" eq "$(result_value s3 sub.snapshots_applied)" 0
expect "s3 took datagrams first from rail B ($(result_value s3 sub.rail_b_first))" gt0 "$(result_value s3 sub.rail_b_first)"
check_undisturbed s1 s2
conclude
