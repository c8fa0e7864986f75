#!/usr/bin/env bash
# kill -9 of one subscriber disturbs no one else; its counters file is
# recognised as stale by `mdcast stat` and removed by `mdcast stat --clean`.
source "$(dirname "$0")/lib.sh"

# The feed runs until the test has done its part, then is stopped cleanly
# (SIGTERM): a feed of a fixed length may end before a loaded host gets there.
start_bg pub publish --name "$NAME" --rate 30k --duration 120s --instrument-count 100 --idle block \
  --wait-subscribers 3 --result "$WORK/pub.toml"
wait_ring
for i in 1 2 3; do start_bg "sub$i" subscribe --name "$NAME" --idle block --result "$WORK/sub$i.toml"; done
wait_published "$PID_pub" 20000
"$MDCAST" stat >"$WORK/stat-before.log"
grep -q "subscriber" "$WORK/stat-before.log" || fail "mdcast stat does not list the running subscribers"
kill -9 "$PID_sub2"
note "killed subscriber $PID_sub2"
wait_published "$PID_pub" 40000  # the survivors go on past the kill
kill -TERM "$PID_pub"
wait_pid "$PID_sub1" 60 || fail "subscriber 1 exited non-zero"
wait_pid "$PID_sub3" 60 || fail "subscriber 3 exited non-zero"
wait_pid "$PID_pub" 30 || fail "publisher exited non-zero"
"$MDCAST" verify "$WORK/pub.toml" "$WORK/sub1.toml" "$WORK/sub3.toml"
for i in 1 3; do
  [ "$(toml_get "$WORK/sub$i.toml" sub.gaps)" = 0 ] || fail "subscriber $i saw gaps after the kill"
done
"$MDCAST" stat >"$WORK/stat-after.log"
grep -q "pid $PID_sub2 .*STALE" "$WORK/stat-after.log" || fail "the killed subscriber's counters file is not reported stale"
"$MDCAST" stat --clean | grep -q "removed 1 stale" || fail "stat --clean did not remove the stale file"
[ ! -e "$MDCAST_STAT_DIR/mdcast-$PID_sub2.stat" ] || fail "stale counters file still there"
note "survivors identical and gap-free; stale counters file detected and cleaned"
