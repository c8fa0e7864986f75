#!/usr/bin/env bash
# A publisher of 2 channels behind one control endpoint. 1024 connections
# that never name a channel are open before the subscribers start, then
# garbage first frames arrive while they run: both subscribers (of both
# channels) must get in and get the whole feed; the endpoint holds what never
# names a channel to its bound (evicting the oldest), answers garbage with an
# error or a close, and counts all of it.
source "$(dirname "$0")/hostile_lib.sh"
DURATION=${DURATION_SHARED:-6s}
PUB_ARGS=(--channels 2 --threads 2)
SUB_ARGS=(--channels 2)
# Channel index 0's ring names the endpoint (every channel's does).
wait_ring() {
  local i=0
  until [ -e "/dev/shm/mdcast-$NAME.0.ring" ] || [ -e "/dev/hugepages/mdcast-$NAME.0.ring" ]; do
    sleep 0.05; i=$((i + 1))
    [ $i -le 200 ] || fail "ring of $NAME.0 never appeared"
  done
}
on_exit rm -f "/dev/shm/mdcast-$NAME.0.ring" "/dev/shm/mdcast-$NAME.1.ring"

start_publisher
mark_baseline
start_attack idle idle-sockets "shm:$NAME.0" --count 1024 --seconds 30
wait_for_line idle "^ready " 30 || fail "the idle sockets were never all attempted"
note "$(grep '^ready ' "$WORK/idle.log")"
start_subscriber sub1
start_subscriber sub2
# Each subscriber subscribes once per channel.
if wait_stat "$PID_pub" ctl.subscribes 4 10; then
  note "both subscribers subscribed on both channels beside 1024 idle sockets"
  start_attack garbage garbage "shm:$NAME.0" --seed $$ --timeout-ms 1500
  finish_attack garbage 90
  figure garbage_cases "$(attack_value garbage cases)"
  figure garbage_silent "$(attack_value garbage silent)"
  expect "every garbage case was answered by an error or a close ($(attack_value garbage silent) silent)" \
    [ "$(attack_value garbage silent)" = 0 ]
  finish_feed
else
  expect "subscribers started after 1024 idle sockets subscribe within 10 s ($(stat_value "$PID_pub" ctl.subscribes) of 4 did)" false
  kill -TERM "$PID_sub1" "$PID_sub2" "$PID_pub" 2>/dev/null || true
fi
stop_attack idle
routed=$(publisher_counter door.routed)
evicted=$(publisher_counter door.evicted)
refused=$(( $(publisher_counter door.bad_first_frame) + $(publisher_counter door.unknown_channel) ))
figure door_routed "$routed"
figure door_evicted "$evicted"
figure door_refused_with_reason "$refused"
expect "the endpoint evicted idle connections past its bound (${evicted} evicted)" [ "${evicted:-0}" -gt 0 ]
expect "the endpoint told garbage first frames why (${refused} refused)" [ "${refused:-0}" -gt 0 ]
conclude
