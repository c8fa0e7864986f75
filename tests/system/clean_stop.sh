#!/usr/bin/env bash
# A publisher stopped mid-feed ends its session cleanly: SIGTERM (and SIGINT)
# over shm and over UDP on lo, each with two subscribers, one of them lossy:
# the publisher exits 0 after the end of session and the recovery it serves,
# every subscriber delivers everything published through the end and exits
# 0, books identical. A second signal cuts the linger short (exit 130): a
# stopped subscriber holds the publisher in its linger until then. A replay
# stopped mid-recording does the same, and so does `mdcast demo`: it tells
# only its publisher, and verifies every subscriber as at a natural end.
source "$(dirname "$0")/lib.sh"

GROUP="239.77.15.$((1 + $$ % 250)):$((20000 + $$ % 20000))"

# run_case TAG SIGNAL MEDIUM-FLAGS...: a feed of 60 s stopped by SIGNAL once both
# subscribers have delivered data.
run_case() {
  local tag=$1 sig=$2; shift 2
  local feed=("$@")
  start_bg "pub-$tag" publish "${feed[@]}" --rate 4k --duration 60s --instrument-count 50 --wait-subscribers 2 \
    --linger 30s --result "$WORK/pub-$tag.toml"
  wait_log "pub-$tag" "^mdcast publish: .*session [0-9a-f]{16}" 30
  start_bg "a-$tag" subscribe "${feed[@]}" --result "$WORK/a-$tag.toml"
  start_bg "b-$tag" subscribe "${feed[@]}" --inject-loss 0.02 --result "$WORK/b-$tag.toml"
  local pub a b
  pub=$(eval echo "\$PID_pub_${tag//-/_}"); a=$(eval echo "\$PID_a_${tag//-/_}"); b=$(eval echo "\$PID_b_${tag//-/_}")
  wait_stat "$a" sub.messages_delivered 1000 60 || fail "$tag: subscriber a delivered nothing in 60 s"
  wait_stat "$b" sub.messages_delivered 1000 60 || fail "$tag: subscriber b delivered nothing in 60 s"
  kill "-$sig" "$pub"
  local rc=0
  wait_rc "$pub" 40 || rc=$?
  [ "$rc" = 0 ] || fail "$tag: the publisher stopped by SIG$sig exited $rc, not 0: $(tail -2 "$WORK/pub-$tag.log")"
  grep -q "^mdcast publish: stopped: the session was ended" "$WORK/pub-$tag.log" || fail "$tag: $(tail -1 "$WORK/pub-$tag.log")"
  for s in a b; do
    rc=0; wait_rc "$(eval echo "\$PID_${s}_${tag//-/_}")" 30 || rc=$?
    [ "$rc" = 0 ] || fail "$tag: subscriber $s exited $rc after the publisher's SIG$sig: $(tail -2 "$WORK/$s-$tag.log")"
  done
  "$MDCAST" verify "$WORK/pub-$tag.toml" "$WORK/a-$tag.toml" "$WORK/b-$tag.toml" >"$WORK/verify-$tag.log" ||
    { cat "$WORK/verify-$tag.log"; fail "$tag: books differ"; }
  local published
  published=$(toml_get "$WORK/pub-$tag.toml" messages)
  for s in a b; do
    [ "$(toml_get "$WORK/$s-$tag.toml" messages)" = "$published" ] ||
      fail "$tag: subscriber $s delivered $(toml_get "$WORK/$s-$tag.toml" messages) of $published"
  done
  note "$tag: SIG$sig mid-feed: publisher 0, both subscribers 0 with all $published messages, books identical"
}

run_case shm-term TERM --name "$NAME" --idle block
run_case shm-int INT --name "$NAME-i" --idle block
run_case udp-term TERM --medium udp --udp-group "$GROUP" --interface lo --set udp.control_port=0 --idle block

# Twice: the first signal ends the session; a subscriber that never leaves
# (stopped) holds the publisher in its linger; the second cuts it.
start_bg pub2 publish --name "$NAME-2" --idle block --rate 4k --duration 60s --wait-subscribers 2 --linger 60s
wait_log pub2 "^mdcast publish: .*session [0-9a-f]{16}" 30
start_bg held subscribe --name "$NAME-2" --idle block
start_bg done2 subscribe --name "$NAME-2" --idle block
wait_stat "$PID_held" sub.messages_delivered 100 60 || fail "the held subscriber delivered nothing"
wait_stat "$PID_done2" sub.messages_delivered 100 60 || fail "the other subscriber delivered nothing"
kill -STOP "$PID_held"; wait_stopped "$PID_held"
kill -TERM "$PID_pub2"
rc=0; wait_rc "$PID_done2" 30 || rc=$?
[ "$rc" = 0 ] || fail "the running subscriber exited $rc after the first SIGTERM"
kill -0 "$PID_pub2" 2>/dev/null || fail "the publisher left its linger while a subscriber was still connected"
kill -TERM "$PID_pub2"
rc=0; wait_rc "$PID_pub2" 10 || rc=$?
[ "$rc" = 130 ] || fail "a publisher stopped twice exited $rc, not 130: $(tail -2 "$WORK/pub2.log")"
grep -q "stopped twice" "$WORK/pub2.log" || fail "no 'stopped twice': $(tail -1 "$WORK/pub2.log")"
kill -CONT "$PID_held"
note "a second SIGTERM cut the linger short: exit 130"

# A replay stopped mid-recording ends its session the same way: a recording
# of a 4 s feed, replayed at its pace, SIGTERM once the subscriber has
# delivered some of it: the replay exits 0 having ended the session where it
# was, the subscriber 0 with every message the replay published.
start_bg rpub publish --name "$NAME-r" --idle block --rate 10k --duration 4s --instrument-count 50 --wait-subscribers 1
start_bg rrec record --name "$NAME-r" --idle block --out "$WORK/r" --result "$WORK/rrec.toml"
wait_pid "$PID_rrec" 60 || fail "the recorder exited non-zero: $(tail -2 "$WORK/rrec.log")"
wait_pid "$PID_rpub" 30 || fail "the recorded publisher exited non-zero"
start_bg rep replay --name "$NAME-rep" --idle block --speed 1 --wait-subscribers 1 --linger 30s \
  --result "$WORK/rep.toml" "$WORK/r"
start_bg rsub subscribe --name "$NAME-rep" --idle block --result "$WORK/rsub.toml"
wait_stat "$PID_rsub" sub.messages_delivered 1000 60 || fail "the replay's subscriber delivered nothing"
kill -TERM "$PID_rep"
rc=0; wait_rc "$PID_rep" 40 || rc=$?
[ "$rc" = 0 ] || fail "a replay stopped by SIGTERM exited $rc, not 0: $(tail -2 "$WORK/rep.log")"
grep -q "^mdcast replay: stopped: the session was ended" "$WORK/rep.log" || fail "replay: $(tail -1 "$WORK/rep.log")"
rc=0; wait_rc "$PID_rsub" 30 || rc=$?
[ "$rc" = 0 ] || fail "the replay's subscriber exited $rc: $(tail -2 "$WORK/rsub.log")"
"$MDCAST" verify "$WORK/rep.toml" "$WORK/rsub.toml" >"$WORK/verify-rep.log" || { cat "$WORK/verify-rep.log"; fail "replay: books differ"; }
replayed=$(toml_get "$WORK/rep.toml" messages)
[ "$(toml_get "$WORK/rsub.toml" messages)" = "$replayed" ] || fail "the replay's subscriber delivered $(toml_get "$WORK/rsub.toml" messages) of $replayed"
note "replay: SIGTERM mid-recording: replay 0, its subscriber 0 with all $replayed messages it published, books identical"

# The demo stopped as Ctrl-C stops it (SIGINT to the demo alone: its children
# have process groups of their own) tells only its publisher: the session
# ends, both subscribers, one of them lossy, finish with everything, and the
# report verifies them: exit 0.
start_bg demo demo --name "$NAME-d" --duration 60s --rate 4k --instrument-count 50 --subscribers 2 --loss 0.02 \
  --idle block --progress true
# The progress line's "delivered MIN..MAX": the slower subscriber past 1,000.
wait_log demo "delivered +[0-9]{1,3}(,[0-9]{3})+\.\." 90
kill -INT "$PID_demo"
rc=0; wait_rc "$PID_demo" 60 || rc=$?
[ "$rc" = 0 ] || fail "a demo stopped by SIGINT exited $rc, not 0: $(tail -8 "$WORK/demo.log")"
grep -qE "^RESULT: stopped after [0-9.]+ s: all 2 subscribers delivered every message exactly once" "$WORK/demo.log" ||
  fail "demo: $(tail -3 "$WORK/demo.log")"
note "demo: SIGINT mid-feed: the publisher ended its session, both subscribers verified, exit 0"
