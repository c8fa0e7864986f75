#!/usr/bin/env bash
# Another local user (nobody) creates /dev/shm/mdcast-NAME.ring first, with
# a header naming a control socket it listens on. The publisher then either
# starts (and its subscribers get the whole feed) or refuses with an error
# naming the file's owner; no subscriber ever sends the squatter a byte (no
# Subscribe, no credential).
source "$(dirname "$0")/hostile_lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root to create the squatted ring as another user (uid 65534)"
GIVE_UP=4s
# (The squatter removes its file; hostile_lib.sh removes it if the squatter was killed.)

start_attack squat squat "$NAME" --seconds 12 --uid 65534
if ! wait_for_line squat "^squatting " 10; then
  rc=0; wait_rc "$PID_squat" 5 || rc=$?
  cat "$WORK/squat.log"
  [ "$rc" = 77 ] && skip "the squatter could not run here"
  fail "the squatter never took the ring (exit status $rc)"
fi
note "$(grep '^squatting ' "$WORK/squat.log")"

start_bg pub publish --name "$NAME" --rate "$RATE" --duration "$DURATION" --instrument-count 200 --idle block \
  --wait-subscribers 2 --result "$WORK/pub.toml"
sample_memory "$PID_pub" "$WORK/pub.mem"
# It refuses at once, or it is ready once its counters file is.
started=0
wait_stat "$PID_pub" pub.messages_published 0 5 && started=1
start_subscriber sub1 --wait 3s
start_subscriber sub2 --wait 3s
if [ $started = 1 ] && kill -0 "$PID_pub" 2>/dev/null; then
  note "the publisher started beside the squatted file: $(head -1 "$WORK/pub.log")"
  mark_baseline
  finish_feed
else
  rc=0; wait_rc "$PID_pub" 10 || rc=$?
  note "the publisher refused: $(grep -m1 'mdcast' "$WORK/pub.log")"
  expect "the publisher refuses with an error, not a crash (exit status $rc)" error_exit "$rc"
  expect "its error names the file's owner (uid 65534 / nobody)" grep -qE "65534|nobody" "$WORK/pub.log"
  # No publisher: the right exit for a subscriber is a clear error, after its --wait.
  for s in sub1 sub2; do
    rc=0; wait_rc "$(pid_of $s)" 20 || rc=$?
    note "$s: $(grep -m1 -E 'mdcast.*(error|ring|refus|owner)' "$WORK/$s.log" || tail -1 "$WORK/$s.log")"
    expect "subscriber $s ends with an error, not a crash or a hang (exit status $rc)" error_exit "$rc"
  done
fi
stop_attack squat
frames=$(attack_value squat frames)
figure squatter_connections "$(attack_value squat connections)"
figure squatter_frames "${frames:-?}"
figure squatter_credential_bytes "$(attack_value squat credential_bytes)"
expect "no subscriber sent the squatter anything (${frames:-?} frames)" [ "${frames:-1}" = 0 ]
conclude
