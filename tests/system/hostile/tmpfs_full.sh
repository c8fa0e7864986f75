#!/usr/bin/env bash
# A 64 MiB ring on a 2 MiB tmpfs (mounted over /dev/shm in a private mount
# namespace): the publisher must stop with a clear error (the space it needs,
# the space there is) before it publishes, never die of SIGBUS when the
# filesystem runs out under its mapping.
source "$(dirname "$0")/hostile_lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root to mount a tmpfs in a private mount namespace"
unshare -m true 2>/dev/null || skip "unshare -m is not permitted here"

rc=0
# The ring goes where --shm-dir says (not /dev/hugepages), inside the namespace only.
unshare -m bash -c 'mount -t tmpfs -o size=2m hostile-tmpfs /dev/shm || exit 77; exec "$@"' _ \
  "$MDCAST" publish --name "$NAME" --shm-dir /dev/shm --rate 20k --duration 2s --idle block \
  >"$WORK/pub.log" 2>&1 || rc=$?
[ "$rc" = 77 ] && skip "could not mount a tmpfs over /dev/shm"
figure exit "$rc"
note "publisher: $(grep -m1 -E '^mdcast' "$WORK/pub.log" || echo '(no message)')"
expect "the publisher was not killed by a signal (exit status $rc$( [ "$rc" = 135 ] && echo ': SIGBUS'))" no_signal "$rc"
expect "it stops with an error (exit status $rc)" error_exit "$rc"
expect "its message names the ring's directory and the space" \
  bash -c 'grep -qE "/dev/shm" "$1" && grep -qiE "space|free|MiB|bytes" "$1"' _ "$WORK/pub.log"
conclude
