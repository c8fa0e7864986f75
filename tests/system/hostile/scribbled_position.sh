#!/usr/bin/env bash
# The ring's published write position is overwritten with 2^40 over and over
# (as a same-user attacker, or a corrupted header, would), while one
# subscriber reads and a second one joins, positioning itself by that word.
# Neither may follow the position blindly: both finish with books identical
# to the publisher's, the first having delivered everything, and the late
# joiner reads the live feed from the ring once the scribbling has stopped
# (rather than getting everything by recovery through the control plane, or
# nothing at all).
source "$(dirname "$0")/hostile_lib.sh"
WAIT_SUBS=1
# Long enough for the feed to go on after the scribbling, however long the
# frozen writer waited for the joiner on a loaded host.
DURATION=10s

start_publisher
start_subscriber sub1
wait_published "$PID_pub" 5000
mark_baseline
# The scribbler rewrites the word in a tight loop, but on a loaded host it is
# descheduled often enough for the writer's own value to show through now
# and then. A joiner must not be lucky to be right: the writer is frozen
# (SIGSTOP) while the joiner positions itself, so it finds the scribbled word.
start_attack scribble scribble-position "$NAME" --value 1099511627776 --seconds 60  # until stopped below
wait_for_line scribble "^scribble-position: " 10 || fail "the scribbler never started"
kill -STOP "$PID_pub"
on_exit kill -CONT "$PID_pub" 2>/dev/null
wait_stopped "$PID_pub"
start_subscriber sub2  # a late joiner, starting where the scribbled word points
# It has positioned itself once it has counted the scribbled word as implausible.
expect "the late joiner positioned itself while the writer was frozen and the word scribbled" \
  wait_stat "$PID_sub2" shm.implausible_position 1 30
kill -CONT "$PID_pub"
expect "the late joiner subscribed while the position was scribbled" wait_stat "$PID_pub" ctl.subscribes 2 30
# The scribbling goes on until the joiner has read the live feed from the ring under it.
expect "the late joiner read datagrams from the ring while the position was scribbled" \
  wait_stat "$PID_sub2" sub.datagrams_received 1 30
stop_attack scribble
after=$(stat_value "$PID_pub" pub.last_sequence)
figure writes "$(attack_value scribble writes)"
figure restored_by_writer "$(attack_value scribble restored_by_writer)"
finish_subscribers sub1 sub2
finish_publisher
check_books sub1 sub2
check_delivered sub1
# The publisher was frozen for as long as the joiner took to position itself
# (seconds on a loaded host), and its feed's time ran on meanwhile: its rate
# is printed, not judged here (check_rate is for the control-plane scenarios).
figure published "$(toml_get "$WORK/pub.toml" messages 2>/dev/null || echo '?')"
last=$(toml_get "$WORK/pub.toml" last_sequence 2>/dev/null || true)
live=$(toml_get "$WORK/sub2.toml" sub.datagrams_received 2>/dev/null || true)
figure late_joiner_live_datagrams "${live:-?}"
figure datagrams_after_scribble $(( ${last:-0} - ${after:-0} ))
expect "the late joiner read at least half of the $(( ${last:-0} - ${after:-0} )) datagrams published after the scribbling live from the ring (${live:-?})" \
  [ $(( 2 * ${live:-0} )) -ge $(( ${last:-0} - ${after:-0} )) ]
# The poll timer would count the SIGSTOP above as a stall: the figure is
# printed, the bound is for the control-plane scenarios.
MAX_POLL_MS=$((1 << 30))
check_costs
conclude
