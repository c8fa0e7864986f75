#!/usr/bin/env bash
# Another user creates the feed's ring file first (anyone may create files in
# /dev/shm): the publisher refuses with the path, the owner and what to do
# and leaves the file alone; a subscriber refuses to believe it. A squatter
# of our own user's dead ring is replaced as on any restart. Needs root (to
# be another user); skips (77) otherwise.
source "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to create a file as another user"; exit 77; }
RING="/dev/shm/mdcast-$NAME.ring"
trap 'rc=$?; rm -f "$RING"; (exit $rc); cleanup' EXIT

head -c 65536 /dev/zero >"$RING"
chown 65534:65534 "$RING"
chmod 0644 "$RING"
before=$(sha256sum "$RING")

if "$MDCAST" publish --name "$NAME" --duration 1s >"$WORK/pub.log" 2>&1; then fail "the publisher used another user's file"; fi
grep -q "shm ring $RING already exists and belongs to uid 65534" "$WORK/pub.log" || { cat "$WORK/pub.log"; fail "the publisher did not name the owner"; }
grep -q "rm $RING" "$WORK/pub.log" || fail "the publisher did not say what to do"
note "publisher: $(head -1 "$WORK/pub.log")"
[ "$(stat -c %u "$RING")" = 65534 ] && [ "$(sha256sum "$RING")" = "$before" ] || fail "the other user's file was touched"

if "$MDCAST" subscribe --name "$NAME" --wait 0 >"$WORK/sub.log" 2>&1; then fail "the subscriber used another user's file"; fi
grep -q "belongs to uid 65534" "$WORK/sub.log" || { cat "$WORK/sub.log"; fail "the subscriber did not name the owner"; }
note "subscriber: $(grep -m1 "belongs to" "$WORK/sub.log")"

# Our own leftover (a publisher killed -9) is replaced, and the feed runs.
rm -f "$RING"
start_bg dead publish --name "$NAME" --rate 10k --duration 30s --idle block
wait_ring
kill -9 "$PID_dead"
wait "$PID_dead" 2>/dev/null || true
[ -e "$RING" ] || fail "a killed publisher left no ring to replace"
start_bg pub publish --name "$NAME" --rate 20k --duration 2s --instrument-count 20 --idle block --wait-subscribers 1 \
  --result "$WORK/pub.toml"
start_bg sub subscribe --name "$NAME" --idle block --result "$WORK/sub.toml"
wait_pid "$PID_sub" 60 || fail "subscriber exited non-zero"
wait_pid "$PID_pub" 30 || fail "publisher exited non-zero"
"$MDCAST" verify "$WORK/pub.toml" "$WORK/sub.toml"
note "another user's ring refused by both sides and left alone; our dead one replaced; books identical"
