#!/usr/bin/env bash
# Interfaces going down and up while a UDP feed runs, and nothing restarted:
# (a) s2's own eth0 down for longer than s2's give-up and publisher_timeout
#     (2 s each): s2 neither gives up nor calls the publisher silent, since
#     its own link is down; once it is back s2 joins the group again and
#     recovers what it missed;
# (b) the publisher's eth0 down: its sends fail (ENETUNREACH, counted), it
#     keeps publishing, sets its rail up again when the interface is back,
#     and every subscriber recovers the gap by retransmission.
# (c) s3's eth0 deleted and created again (a new index; the kernel dropped
#     the membership with it): s3 joins on the new interface.
# Every subscriber delivers every message, books identical, and the link
# counters (link.down, link.rejoins, link.down_ns) are reported.
source "$(dirname "$0")/netns_feed.sh"
DURATION=16s     # the three outages, however slowly a loaded host gets through them
S2_DOWN_S=2.5   # longer than s2's give-up and publisher_timeout
PUB_DOWN_S=0.3  # after the publisher saw it down

netns_topology
# Every subscriber's window holds its whole outage, so what it missed comes
# back by retransmission, not by a snapshot that would skip messages. The
# default window (2 s at udp.rate, in 4 KiB slots, ~14 k datagrams) is about
# 1 s of this feed once a loaded host packs fewer messages per datagram, and
# s3's outage (its interface deleted and created again) lasted 1.15 s under
# ASan.
WIDE_WINDOW="--set subscriber.window_bytes=128M"
SUB_ARGS[s1]="$WIDE_WINDOW"
SUB_ARGS[s2]="--set subscriber.publisher_timeout=2s $WIDE_WINDOW"
SUB_ARGS[s3]="$WIDE_WINDOW"
start_publisher
start_subscriber s1
GIVE_UP=2s start_subscriber s2
start_subscriber s3
wait_published "$PID_pub" 20000

# (a) s2's own interface.
in_ns s2 ip link set dev eth0 down || fail "cannot take s2's eth0 down"
note "s2's eth0 down"
expect "s2 saw its link go down" wait_stat "$PID_s2" link.down 1 20
sleep $S2_DOWN_S  # the outage itself, past s2's give-up
in_ns s2 ip link set dev eth0 up || fail "cannot bring s2's eth0 up"
note "s2's eth0 up"
expect "s2 set its rail up again" wait_stat "$PID_s2" link.rejoins 1 20
expect "s2 hears the feed again (link.down_ns counted)" wait_stat "$PID_s2" link.down_ns 1 20
s2_timeouts=$(stat_value "$PID_s2" sub.publisher_timeouts)

# (b) the publisher's interface.
wait_published "$PID_pub" $(($(stat_value "$PID_pub" pub.messages_published) + 10000))
in_ns pub ip link set dev eth0 down || fail "cannot take the publisher's eth0 down"
note "publisher's eth0 down"
expect "the publisher saw its link go down" wait_stat "$PID_pub" link.down 1 20
sleep $PUB_DOWN_S
in_ns pub ip link set dev eth0 up || fail "cannot bring the publisher's eth0 up"
note "publisher's eth0 up"
expect "the publisher set its rail up again" wait_stat "$PID_pub" link.rejoins 1 20
expect "the publisher sends again (link.down_ns counted)" wait_stat "$PID_pub" link.down_ns 1 20

# (c) s3's interface deleted and created again: a new index, and the kernel
# dropped the membership with the old interface.
old_index=$(in_ns s3 cat /sys/class/net/eth0/ifindex)
in_ns s3 ip link del dev eth0 || fail "cannot delete s3's eth0"
note "s3's eth0 deleted (index $old_index)"
expect "s3 saw its interface go" wait_stat "$PID_s3" link.down 1 20
_netns_cable s3 a eth0 "${IP_A[s3]}"
note "s3's eth0 created again (index $(in_ns s3 cat /sys/class/net/eth0/ifindex))"
expect "s3 joined again on the new interface" wait_stat "$PID_s3" link.rejoins 1 20
expect "s3 hears the feed again (link.down_ns counted)" wait_stat "$PID_s3" link.down_ns 1 20
expect "the publisher was still publishing after the three outages" kill -0 "$PID_pub"

finish s1 s2 s3
finish_publisher
for s in s1 s2 s3; do sub_figures $s; done
for l in pub s1 s2 s3; do
  figure "$l.link_down" "$(result_value $l link.down)"
  figure "$l.rejoins" "$(result_value $l link.rejoins)"
  figure "$l.silence_rejoins" "$(result_value $l link.silence_rejoins)"
  figure "$l.down_ms" "$(($(result_value $l link.down_ns) / 1000000))"
done
figure pub.send_errors "$(result_value pub udp.send_errors)"

check_books s1 s2 s3
check_all_delivered s1 s2 s3
expect "s2 did not call the publisher silent while its own link was down (sub.publisher_timeouts $s2_timeouts)" \
  eq "${s2_timeouts:-x}" 0
expect "s2 recovered what it missed ($(result_value s2 sub.datagrams_recovered) datagrams)" \
  gt0 "$(result_value s2 sub.datagrams_recovered)"
for l in s1 s3; do
  expect "$l recovered the publisher's outage by retransmission ($(result_value $l sub.datagrams_recovered) datagrams)" \
    gt0 "$(result_value $l sub.datagrams_recovered)"
done
for l in pub s2 s3; do
  expect "$l counted its link down ($(result_value $l link.down))" gt0 "$(result_value $l link.down)"
  expect "$l counted its rejoin ($(result_value $l link.rejoins))" gt0 "$(result_value $l link.rejoins)"
  expect "$l counted the time without data ($(result_value $l link.down_ns) ns)" gt0 "$(result_value $l link.down_ns)"
done
conclude
