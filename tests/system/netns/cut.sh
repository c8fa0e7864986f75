#!/usr/bin/env bash
# s2's link cut for 5 s mid-run, with a retransmit ring too small to hold
# 5 s of the feed: s2 recovers by snapshot and ends with books identical to
# the publisher's; s1 and s3 deliver every message untouched.
source "$(dirname "$0")/netns_feed.sh"
DURATION=10s
CUT_S=5

netns_topology
# ~1.3 s of history at 20 k msg/s: what s2 misses is gone by the time it is
# back, so a snapshot is the only way (with the default 64 MiB ring, 5 s
# outrun s2's window and it takes a snapshot too, but for another reason).
PUB_ARGS=(--retransmit-bytes 1M)
start_publisher
for s in s1 s2 s3; do start_subscriber $s; done
wait_published "$PID_pub" 40000
netns_cut s2
cut_at=$(stat_value "$PID_pub" pub.datagrams_sent)
sleep $CUT_S  # the outage itself
# Back only once what s2 missed is gone from the 1 MiB ring (a slot per
# datagram of up to 1472 B: at most 712), however few datagrams a loaded host
# sent in those 5 s.
expect "the publisher sent more than its retransmit ring holds while s2 was cut" \
  wait_stat "$PID_pub" pub.datagrams_sent $((${cut_at:-0} + 1024 * 1024 / 1472 + 1)) 60
netns_restore s2
finish s1 s2 s3
finish_publisher
figure cut_s "$CUT_S"
for s in s1 s2 s3; do sub_figures $s; done

check_books s1 s2 s3
check_all_delivered s1 s3
expect "s2 recovered by snapshot ($(result_value s2 sub.snapshots_applied))" gt0 "$(result_value s2 sub.snapshots_applied)"
check_undisturbed s1 s3
conclude
