#!/usr/bin/env bash
# N real subscriber processes behind relays, in network namespaces, as a
# deployment lays them out: one publisher host multicasting over UDP, three
# hosts each with a relay that takes the feed (two of the links losing 5 %)
# and fans it out over shared memory to that host's subscriber processes
# (low rate, sleeping until data comes; the small footprint of
# docs/performance.md: 65536 orders, 256 instruments, a 1 MiB window). Runs
# tests/system/netns/relay.sh at that size: every subscriber exits 0 with
# the origin's books, the origin serves the three relays alone, and the
# processes' memory is sampled while they run.
#
#   scripts/scale-relays.sh MDCAST N [RATE] [DURATION]
#   scripts/scale-relays.sh build/release/apps/mdcast/mdcast 1024 1k 10s
#
# The relays hold until their host's subscribers have subscribed
# (--wait-subscribers), and the origin until the relays' forwarding
# subscriptions are there (a relay's session probe subscribes to no
# instrument and is not counted), so a thousand processes may take their
# time attaching; the origin lingers long enough for a relay starved of CPU
# to recover the end of the feed. On a 2-core host 1024 pass in about
# 90 s (docs/performance.md has the figures).
set -uo pipefail
MDCAST=$(readlink -f "${1:?usage: $0 MDCAST N [RATE] [DURATION]}")
N=${2:?subscriber count}
[[ $N =~ ^[0-9]+$ ]] && [ "$N" -ge 3 ] || { echo "scale-relays: N=$N: at least 3 (one per relay host)" >&2; exit 2; }
cd "$(dirname "$0")/.."
# Every process's descriptors (a relay holds a control connection per subscriber).
[ "$(ulimit -Sn)" = unlimited ] || [ "$(ulimit -Sn)" -ge $((N + 1024)) ] || ulimit -Sn $((N + 1024)) 2>/dev/null ||
  ulimit -Sn "$(ulimit -Hn)"
echo "scale-relays: $N subscribers behind 3 relays, ${3:-1k} msg/s for ${4:-10s}; $(nproc) cpus;" \
  "$(awk '/MemAvailable/ {printf "%.1f GiB available", $2/1048576}' /proc/meminfo)"
RELAY_HOSTS="s1 s2 s3" PER_HOST=$(((N + 2) / 3)) RATE=${3:-1k} DURATION=${4:-10s} GIVE_UP=${GIVE_UP:-60s} \
  SUB_WAIT=${SUB_WAIT:-900s} RELAY_WAIT=${RELAY_WAIT:-900s} RELAY_LINGER=${RELAY_LINGER:-60s} MEMORY_SAMPLE=1 \
  RELAY_ARGS="--wait-subscribers $(((N + 2) / 3)) --set publisher.wait_subscribers_timeout=900s" \
  PUB_WAIT="--set publisher.wait_subscribers_timeout=900s --linger 120s" DOWN_ARGS="--max-orders 65536 --max-instruments 256 --set subscriber.window_bytes=1MiB" \
  exec bash tests/system/netns/relay.sh "$MDCAST"
