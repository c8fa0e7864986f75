#!/usr/bin/env bash
# The one 16-core fan-out run of docs/performance.md, for the `device` tool
# (a 16-core machine lent for a few minutes, nothing reachable from it, so
# nothing can be installed there).
#
#   scripts/bench-fanout-16core.sh prepare    # here: release build + the binary and its libraries in .bench-carry/
#   # then, with the device tool:  run(command="scripts/bench-fanout-16core.sh run", carry=[".bench-carry"])
#   scripts/bench-fanout-16core.sh run        # there: $OUT/bench16*.{json,txt}, scale-N.txt, steps.txt
#
# `run` also starts 1024 real subscriber processes on that host
# (scripts/scale-shm.sh): small books, then the default footprint.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
carry="$root/.bench-carry"
case "${1:-}" in
  prepare)
    make -C "$root" deps >/dev/null
    cmake --preset release >/dev/null
    cmake --build "$root/build/release" -j "$(nproc)" --target mdcast >/dev/null  # only what travels
    rm -rf "$carry"; mkdir -p "$carry/lib"
    cp "$root/build/release/apps/mdcast/mdcast" "$root/scripts/scale-shm.sh" "$carry/"
    # Every shared library but the C runtime's own, which any Linux has.
    ldd "$carry/mdcast" | awk '/=> \//{print $3}' | grep -vE '/lib(c|m|pthread|dl|rt)\.so|ld-linux' |
      while read -r l; do cp -L "$l" "$carry/lib/"; done
    grep -qxF '/.bench-carry/' "$root/.git/info/exclude" 2>/dev/null || echo '/.bench-carry/' >>"$root/.git/info/exclude"
    du -sh "$carry"
    ;;
  run)
    out=${OUT:-/tmp}
    export LD_LIBRARY_PATH="$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    m="$carry/mdcast"
    nproc | sed 's/^/cpus: /'; uptime; grep -E 'MemAvailable' /proc/meminfo; uname -r
    step() {  # step LIMIT_S NAME CMD...: one bounded part; its time and status in $out/steps.txt
      local limit=$1 name=$2 t0=$SECONDS rc; shift 2
      echo "=== $name"
      rc=0; timeout -k 5 "$limit" "$@" || rc=$?
      echo "$name: exit $rc in $((SECONDS - t0)) s" | tee -a "$out/steps.txt"
    }
    # 1024 subscriber processes on one host, then at the default footprint.
    SCALE_TAG=-small step 120 scale-1024-small "$carry/scale-shm.sh" "$m" 1024 2k 10s -- \
      --max-orders 65536 --max-instruments 256 --set subscriber.window_bytes=1MiB
    avail=$(awk '/MemAvailable/ {print int($2 / 1048576)}' /proc/meminfo)
    n=$((avail >= 100 ? 1024 : 256))
    SCALE_TAG=-default step 120 "scale-$n-default" "$carry/scale-shm.sh" "$m" "$n" 2k 10s
    # 1 publisher + up to 15 subscribers, each pinned to its own core.
    step 200 bench-shm "$m" bench --repeat 3 --sections c2c,latency,fanout --fanout 1,2,4,8,15 --progress false \
      --json "$out/bench16.json" | tee "$out/bench16.txt"
    step 60 bench-udp "$m" bench --medium udp --sections fanout --fanout 1,2,4,8,15 --progress false \
      --json "$out/bench16-udp.json" | tee "$out/bench16-udp.txt"
    # One relay hop against the direct path, each process on a core of its own.
    step 60 bench-relay "$m" bench --repeat 3 --sections relay --rates 100k,1M --progress false \
      --json "$out/bench16-relay.json" | tee "$out/bench16-relay.txt"
    ;;
  *) echo "usage: $0 prepare|run" >&2; exit 2 ;;
esac
