#!/usr/bin/env bash
# `--shm-slots 16777216` asks for a 64 GiB ring. The publisher must refuse
# with the numbers (the size it was asked for) before it maps or touches any
# of it: it exits with an error, its RSS stays small, and no ring file is
# left behind.
source "$(dirname "$0")/hostile_lib.sh"
# Today's publisher maps and pre-touches the whole file: an address-space
# limit turns that into a failed mmap instead of a host out of memory. The
# refusal we want comes before any mapping, so the limit never decides the
# outcome of a publisher that checks. Sanitizers reserve terabytes of
# address space and cannot run under it.
[ -z "${MDCAST_SANITIZE:-}" ] || skip "the address-space safety net cannot run under -fsanitize=$MDCAST_SANITIZE"
LIMIT_KB=$((4 << 20))

rc=0
maxrss_run "$WORK/pub.maxrss" bash -c 'ulimit -v "$1"; shift; exec "$@"' _ "$LIMIT_KB" \
  "$MDCAST" publish --name "$NAME" --shm-slots 16777216 --rate 20k --duration 2s --idle block \
  >"$WORK/pub.log" 2>&1 || rc=$?
maxrss_mib=$(( $(cat "$WORK/pub.maxrss" 2>/dev/null || echo 0) / 1024 ))
figure exit "$rc"
figure peak_rss_mib "$maxrss_mib"
note "publisher: $(grep -m1 -E '^mdcast' "$WORK/pub.log")"
expect "the publisher refuses (an error exit, got $rc)" error_exit "$rc"
expect "its message names the size asked for (16777216 slots / 64 GiB)" \
  grep -qE "16777216|64(\.[0-9]+)? ?GiB|65536 ?MiB|6871[0-9]{7}|68\.7 ?GB" "$WORK/pub.log"
expect "it refused before mapping, not because a mapping failed" bash -c '! grep -qiE "mmap|cannot allocate memory" "$1"' _ "$WORK/pub.log"
expect "its peak RSS stayed small (${maxrss_mib} MiB < 64 MiB)" [ "$maxrss_mib" -lt 64 ]
expect "no ring file left behind" [ ! -e "/dev/shm/mdcast-$NAME.ring" ]
conclude
