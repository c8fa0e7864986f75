#!/usr/bin/env bash
# 1024 connections that never send a byte are open before the subscribers
# start: the subscribers must still get in and get the whole feed (idle
# sockets cannot lock anyone out), at bounded cost to the publisher.
source "$(dirname "$0")/hostile_lib.sh"

start_publisher
mark_baseline
start_attack idle idle-sockets "shm:$NAME" --count 1024 --seconds 20
wait_for_line idle "^ready " 30 || fail "the idle sockets were never all attempted"
note "$(grep '^ready ' "$WORK/idle.log")"
start_subscriber sub1
start_subscriber sub2
if wait_stat "$PID_pub" ctl.subscribes 2 10; then
  note "both subscribers subscribed beside the idle sockets"
  finish_feed
else
  expect "subscribers started after 1024 idle sockets subscribe within 10 s ($(stat_value "$PID_pub" ctl.subscribes) did)" false
  figure refused "$(stat_value "$PID_pub" control.refused)"
  check_costs
  kill -TERM "$PID_sub1" "$PID_sub2" "$PID_pub" 2>/dev/null || true
fi
stop_attack idle
figure idle_opened "$(attack_value idle opened)"
figure idle_closed_by_publisher "$(attack_value idle closed_by_peer)"
conclude
