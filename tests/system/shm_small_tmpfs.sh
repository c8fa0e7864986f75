#!/usr/bin/env bash
# A ring on a file system too small for it is a setup error with the numbers
# ("needs 64.2 MiB, ... has 2 MiB free"), not a ring that is "created" and
# then kills everyone with SIGBUS; a ring that fits the same 2 MiB tmpfs
# works. Mounts the tmpfs in a private mount namespace (unshare -m): needs
# root; skips (77) otherwise.
source "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to mount a tmpfs in a private mount namespace"; exit 77; }
mkdir -p "$WORK/tiny"
unshare -m --propagation private true 2>/dev/null || { echo "SKIP: no private mount namespace here"; exit 77; }

export MDCAST NAME WORK
unshare -m --propagation private bash -euo pipefail -c '
  mount -t tmpfs -o size=2m tmpfs "$WORK/tiny"
  if "$MDCAST" publish --name "$NAME" --shm-dir "$WORK/tiny" --duration 1s >"$WORK/big.log" 2>&1; then
    echo "FAIL: a 72 MiB ring on a 2 MiB tmpfs was created" >&2; exit 1
  fi
  grep -q "needs 72.2 MiB, $WORK/tiny has 2 MiB free" "$WORK/big.log" || { cat "$WORK/big.log"; exit 1; }
  [ -z "$(ls -A "$WORK/tiny")" ] || { echo "FAIL: the refused ring left a file" >&2; exit 1; }
  # 1024 records of 1088 bytes, their index and the lane: 1.3 MiB, fits.
  "$MDCAST" publish --name "$NAME" --shm-dir "$WORK/tiny" --shm-slots 1024 --set shm.max_datagram=1024 --rate 5k --duration 1s \
    --instrument-count 10 --idle block --wait-subscribers 1 --result "$WORK/pub.toml" >"$WORK/pub.log" 2>&1 &
  pub=$!
  "$MDCAST" subscribe --name "$NAME" --shm-dir "$WORK/tiny" --idle block --result "$WORK/sub.toml" \
    >"$WORK/sub.log" 2>&1
  wait $pub
  "$MDCAST" verify "$WORK/pub.toml" "$WORK/sub.toml"
' || fail "see the logs"
note "refused: $(head -1 "$WORK/big.log")"
note "a ring that fits the same tmpfs delivered every message"
