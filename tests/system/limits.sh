#!/usr/bin/env bash
# Limits an operator (or an attacker with a settings file) can reach, each a
# clear error with the right exit code, never a crash:
#  - integers that do not fit their type (publisher.session 2^64 and 2^64+1,
#    publisher.cpus 4294967297) are refused (2), not wrapped;
#  - --wait-subscribers above control.max_clients is refused (2), naming both;
#  - settings in their range but beyond this host's MemAvailable
#    (feed.max_levels, feed.max_orders, feed.max_instruments) are refused (3)
#    before anything is allocated, naming the setting and the bytes; the
#    values are computed from /proc/meminfo, so they exceed it by construction;
#  - feed.max_levels 65536 where it fits runs, and its peak RSS stays far
#    below the 3 GiB its levels reserve (books touch memory as they grow);
#  - a full counters file system (a tmpfs in a private mount namespace: root
#    only, the rest runs without) is refused (3) naming the file and the
#    space, leaving neither the counters file nor the publisher's ring;
#  - a closed output pipe (`publish 2>&1 | head -1`, `subscribe --print |
#    head -3`) ends the command quietly with 141 (128 + SIGPIPE), not an abort.
source "$(dirname "$0")/lib.sh"

# expect_exit CODE PATTERN ARGS...: mdcast ARGS exits CODE and says /PATTERN/.
expect_exit() {
  local want=$1 pattern=$2 rc=0; shift 2
  "$MDCAST" "$@" >"$WORK/out.log" 2>&1 || rc=$?
  [ "$rc" = "$want" ] || { cat "$WORK/out.log"; fail "'mdcast $*' exited $rc, not $want"; }
  grep -qE -- "$pattern" "$WORK/out.log" || { cat "$WORK/out.log"; fail "'mdcast $*' did not say /$pattern/"; }
  note "exit $rc: mdcast $*: $(grep -m1 '^mdcast:' "$WORK/out.log")"
}
no_leftovers() {  # no_leftovers DIR WHAT: DIR holds nothing
  [ -z "$(ls -A "$1")" ] || fail "$2 left $(ls -A "$1") behind"
}
RINGS="$WORK/rings"
mkdir -p "$RINGS"
P=(publish --name "$NAME" --shm-dir "$RINGS" --duration 1s --rate 1k --idle block)

# ---- integers that wrap
expect_exit 2 "publisher.session: '18446744073709551616' must be a whole number in \[0, 18446744073709551615\]" \
  "${P[@]}" --set publisher.session=18446744073709551616
expect_exit 2 "publisher.session: '18446744073709551617' must be a whole number" \
  "${P[@]}" --set publisher.session=18446744073709551617
expect_exit 2 "publisher.cpus: '4294967297' in CPU list '4294967297' is not a CPU id" "${P[@]}" --cpu 4294967297
expect_exit 2 "subscriber.cpu: '4294967297' in CPU list '4294967297' is not a CPU id" \
  subscribe --name "$NAME" --set subscriber.cpu=4294967297
expect_exit 2 "publisher.wait_subscribers \(--wait-subscribers\) 2000 exceeds control.max_clients 1" \
  "${P[@]}" --wait-subscribers 2000 --set control.max_clients=1
no_leftovers "$RINGS" "a refused publisher"

# ---- in range, beyond this host: refused before allocating
avail_kb=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
[ -n "$avail_kb" ] || { echo "SKIP: no MemAvailable in /proc/meminfo (the check passes where it cannot be read)"; exit 77; }
avail=$(( avail_kb * 1024 ))
level=24  # sizeof(book::Level): the levels alone are instruments x 2 x max_levels x 24 bytes
inst=$(( avail / (2 * 65536 * level) + 1 ))
[ "$inst" -le 1048576 ] || { echo "SKIP: more than 3 PiB available"; exit 77; }
expect_exit 3 "feed.max_instruments $inst x feed.max_levels 65536 .*this host has .* of memory available \(MemAvailable.*lower feed.max_levels" \
  "${P[@]}" --set feed.max_levels=65536 --max-instruments "$inst"
expect_exit 3 "subscriber's memory for books .*feed.max_levels 65536 .*MemAvailable" \
  subscribe --name "$NAME" --shm-dir "$RINGS" --set feed.max_levels=65536 --max-instruments "$inst"
levels=$(( avail / (1048576 * 2 * level) + 1 ))
[ "$levels" -le 65536 ] || { echo "SKIP: more than 3 PiB available"; exit 77; }
expect_exit 3 "feed.max_instruments 1048576 x feed.max_levels $levels .*MemAvailable" \
  "${P[@]}" --max-instruments 1048576 --set feed.max_levels="$levels"
# 2^29 orders: 20 GiB of orders and links and a 16 GiB index. A host with
# more than that gets instruments too, so that the total exceeds it anyway.
extra=()
[ "$avail" -gt $(( 34 << 30 )) ] && extra=(--max-instruments "$inst" --set feed.max_levels=65536)
expect_exit 3 "feed.max_orders 536870912: .*MemAvailable" "${P[@]}" --max-orders 536870912 "${extra[@]}"
no_leftovers "$RINGS" "a publisher refused for memory"

# ---- in range and within MemAvailable: runs, and its books cost memory only
# as they grow. feed.max_levels 65536 on 1024 instruments reserves 3 GiB of
# levels; a feed over 100 instruments touches a few pages of each.
if [ "$avail" -gt $(( 6 << 30 )) ]; then
  rss_kb=$(python3 -c 'import resource, subprocess, sys
rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' \
    "$MDCAST" "${P[@]}" --set feed.max_levels=65536 --max-instruments 1024 --instrument-count 100 2>"$WORK/levels.log")
  read -r rc rss_kb <<<"$rss_kb"
  [ "$rc" = 0 ] || { cat "$WORK/levels.log"; fail "a publisher with feed.max_levels 65536 (3 GiB reserved, $((avail >> 30)) GiB available) exited $rc"; }
  [ "$rss_kb" -lt $(( 1 << 20 )) ] || fail "a publisher with feed.max_levels 65536 over 100 instruments peaked at $((rss_kb >> 10)) MiB: its levels were touched up front"
  note "feed.max_levels 65536 x 1024 instruments (3 GiB reserved): exit 0, peak RSS $((rss_kb >> 10)) MiB"
  no_leftovers "$RINGS" "a publisher with feed.max_levels 65536"
else
  note "feed.max_levels 65536 run not tried: $((avail >> 20)) MiB available, under 6 GiB"
fi

# ---- a closed output pipe: 141, quietly, nothing left behind
set +e
"$MDCAST" "${P[@]}" 2>&1 | head -1 >"$WORK/head-pub.out"
st=("${PIPESTATUS[@]}")
set -e
[ "${st[0]}" = 141 ] || fail "publish 2>&1 | head -1 exited ${st[0]}, not 141 (134 is an abort)"
note "publish 2>&1 | head -1: exit ${st[0]} after '$(cat "$WORK/head-pub.out")'"
no_leftovers "$RINGS" "a publisher whose output was closed"

start_bg pub publish --name "$NAME" --shm-dir "$RINGS" --duration 60s --rate 20k --instrument-count 10 --idle block \
  --linger 0s
wait_log pub "mdcast publish: .*session" 20
set +e
"$MDCAST" subscribe --name "$NAME" --shm-dir "$RINGS" --idle block --print 2>"$WORK/sub-pipe.log" | head -3 >"$WORK/head-sub.out"
st=("${PIPESTATUS[@]}")
set -e
[ "${st[0]}" = 141 ] || { cat "$WORK/sub-pipe.log"; fail "subscribe --print | head -3 exited ${st[0]}, not 141"; }
[ "$(wc -l <"$WORK/head-sub.out")" = 3 ] || fail "head -3 got no three lines"
! grep -qiE "terminate|abort|unexpected" "$WORK/sub-pipe.log" || { cat "$WORK/sub-pipe.log"; fail "the subscriber complained"; }
note "subscribe --print | head -3: exit ${st[0]}"
kill -INT "$PID_pub"
rc=0; wait_rc "$PID_pub" 30 || rc=$?
[ "$rc" = 0 ] || fail "the publisher, stopped by SIGINT, exited $rc"
no_leftovers "$RINGS" "the publisher"

# ---- a full counters file system
if [ "$(id -u)" != 0 ] || ! unshare -m --propagation private true 2>/dev/null; then
  echo "SKIP: needs root and a private mount namespace to mount a full tmpfs (the checks above passed)"
  exit 77
fi
mkdir -p "$WORK/full"
export MDCAST NAME WORK RINGS
unshare -m --propagation private bash -euo pipefail -c '
  say() { echo "$*" >&2; }
  mount -t tmpfs -o size=64k tmpfs "$WORK/full"
  head -c 1M /dev/zero >"$WORK/full/fill" 2>/dev/null || true  # until ENOSPC: full
  # The publisher: its ring (elsewhere) is created first, then the counters file is refused.
  rc=0
  MDCAST_STAT_DIR="$WORK/full" "$MDCAST" publish --name "$NAME" --shm-dir "$RINGS" --duration 1s --rate 1k \
    --idle block >"$WORK/full-pub.log" 2>&1 || rc=$?
  [ "$rc" = 3 ] || { cat "$WORK/full-pub.log"; say "FAIL: publisher on a full counters file system exited $rc, not 3"; exit 1; }
  grep -qE "counters file $WORK/full/mdcast-[0-9]+\.stat needs [0-9.]+ KiB, its file system has 0 B free: no space left" \
    "$WORK/full-pub.log" || { cat "$WORK/full-pub.log"; say "FAIL: no path and numbers"; exit 1; }
  grep -q "MDCAST_STAT_DIR" "$WORK/full-pub.log" || { say "FAIL: no advice"; exit 1; }
  [ "$(ls -A "$WORK/full")" = fill ] || { say "FAIL: the refused counters file was left: $(ls -A "$WORK/full")"; exit 1; }
  [ -z "$(ls -A "$RINGS")" ] || { say "FAIL: the refused publisher left its ring: $(ls -A "$RINGS")"; exit 1; }
  echo "-- exit 3: publisher: $(grep -m1 "^mdcast:" "$WORK/full-pub.log")"
  # A subscriber of a running publisher (whose counters are elsewhere).
  "$MDCAST" publish --name "$NAME" --shm-dir "$RINGS" --duration 60s --rate 1k --idle block --linger 0s \
    >"$WORK/full-pub2.log" 2>&1 &
  pub=$!
  until grep -q "mdcast publish: .*session" "$WORK/full-pub2.log"; do
    kill -0 $pub 2>/dev/null || { cat "$WORK/full-pub2.log"; say "FAIL: the publisher ended"; exit 1; }
    sleep 0.05
  done
  rc=0
  MDCAST_STAT_DIR="$WORK/full" "$MDCAST" subscribe --name "$NAME" --shm-dir "$RINGS" --idle block \
    >"$WORK/full-sub.log" 2>&1 || rc=$?
  kill -INT $pub
  wait $pub || { say "FAIL: the publisher, stopped by SIGINT, failed"; exit 1; }
  [ "$rc" = 3 ] || { cat "$WORK/full-sub.log"; say "FAIL: subscriber on a full counters file system exited $rc, not 3"; exit 1; }
  grep -qE "counters file $WORK/full/mdcast-[0-9]+\.stat needs [0-9.]+ KiB, its file system has 0 B free" \
    "$WORK/full-sub.log" || { cat "$WORK/full-sub.log"; say "FAIL: no path and numbers"; exit 1; }
  [ "$(ls -A "$WORK/full")" = fill ] || { say "FAIL: the refused counters file was left"; exit 1; }
  echo "-- exit 3: subscriber: $(grep -m1 "^mdcast:" "$WORK/full-sub.log")"
' || fail "a full counters file system: see above"
no_leftovers "$RINGS" "the publishers"
note "every limit refused with its cause and exit code"
