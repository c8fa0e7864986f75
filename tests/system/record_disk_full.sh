#!/usr/bin/env bash
# mdcast record on a file system that fills up: refused up front with the
# numbers when it has less than --min-free, and when the disk fills during the
# recording the recorder stops with an error naming the file (exit 1), never
# a "complete" recording that silently misses its end; what it wrote before
# still replays up to where the disk filled. Mounts a 2 MiB tmpfs in a private
# mount namespace (unshare -m): needs root; skips (77) otherwise.
source "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to mount a tmpfs in a private mount namespace"; exit 77; }
mkdir -p "$WORK/tiny"
unshare -m --propagation private true 2>/dev/null || { echo "SKIP: no private mount namespace here"; exit 77; }

export MDCAST NAME WORK
unshare -m --propagation private bash -euo pipefail -c '
  mount -t tmpfs -o size=2m tmpfs "$WORK/tiny"
  if "$MDCAST" record --name "$NAME" --out "$WORK/tiny/rec" --min-free 10M >"$WORK/refused.log" 2>&1; then
    echo "FAIL: a recording needing 10 MiB started on a 2 MiB tmpfs" >&2; exit 1
  fi
  grep -q "needs 10 MiB, $WORK/tiny has 2 MiB free" "$WORK/refused.log" || { cat "$WORK/refused.log"; exit 1; }

  # A feed that outlasts the disk, however many bytes a second makes on this
  # machine: the publisher is stopped once the recorder has ended.
  "$MDCAST" publish --name "$NAME" --rate 20k --duration 120s --instrument-count 20 --idle block --wait-subscribers 1 \
    >"$WORK/pub.log" 2>&1 &
  pub=$!
  rc=0
  "$MDCAST" record --name "$NAME" --idle block --out "$WORK/tiny/rec" --min-free 1M --index-every 64 \
    >"$WORK/rec.log" 2>&1 || rc=$?
  kill -TERM $pub 2>/dev/null || true
  wait $pub || true
  [ "$rc" = 1 ] || { echo "FAIL: the recorder exited $rc on a full disk, expected 1" >&2; cat "$WORK/rec.log" >&2; exit 1; }
  grep -q "recording file $WORK/tiny/rec.0000.pcap: a write failed" "$WORK/rec.log" || { cat "$WORK/rec.log"; exit 1; }

  # What reached the disk replays up to where it filled.
  rc=0
  "$MDCAST" replay --name "$NAME-r" --speed max --linger 0s "$WORK/tiny/rec" >"$WORK/replay.log" 2>&1 || rc=$?
  [ "$rc" = 1 ] || { echo "FAIL: the replay of a recording cut by a full disk exited $rc, expected 1" >&2; exit 1; }
  grep -qE "rec.0000.pcap: offset [0-9]+: " "$WORK/replay.log" || { cat "$WORK/replay.log"; exit 1; }
' || fail "see the logs"
note "refused: $(grep -m1 needs "$WORK/refused.log")"
note "disk full: $(grep -m1 "write failed" "$WORK/rec.log")"
note "replayed up to it: $(grep -m1 -o "offset [0-9]*: [^;]*" "$WORK/replay.log")"
