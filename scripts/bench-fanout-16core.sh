#!/usr/bin/env bash
# The one 16-core fan-out run of docs/performance.md, for the `device` tool
# (a 16-core machine lent for a few minutes, nothing reachable from it, so
# nothing can be installed there).
#
#   scripts/bench-fanout-16core.sh prepare    # here: release build + the binary and its libraries in .bench-carry/
#   # then, with the device tool:  run(command="scripts/bench-fanout-16core.sh run", carry=[".bench-carry"])
#   scripts/bench-fanout-16core.sh run        # there: writes $OUT/bench16.json and $OUT/bench16.txt
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
carry="$root/.bench-carry"
case "${1:-}" in
  prepare)
    make -C "$root" release >/dev/null
    rm -rf "$carry"; mkdir -p "$carry/lib"
    cp "$root/build/release/apps/mdcast/mdcast" "$carry/"
    # Every shared library but the C runtime's own, which any Linux has.
    ldd "$carry/mdcast" | awk '/=> \//{print $3}' | grep -vE '/lib(c|m|pthread|dl|rt)\.so|ld-linux' |
      while read -r l; do cp -L "$l" "$carry/lib/"; done
    grep -qxF '/.bench-carry/' "$root/.git/info/exclude" 2>/dev/null || echo '/.bench-carry/' >>"$root/.git/info/exclude"
    du -sh "$carry"
    ;;
  run)
    out=${OUT:-/tmp}
    export LD_LIBRARY_PATH="$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    nproc | sed 's/^/cpus: /'; uptime
    # 1 publisher + up to 15 subscribers, each pinned to its own core.
    "$carry/mdcast" bench --repeat 3 --fanout 1,2,4,8,15 --progress false --json "$out/bench16.json" |
      tee "$out/bench16.txt"
    ;;
  *) echo "usage: $0 prepare|run" >&2; exit 2 ;;
esac
