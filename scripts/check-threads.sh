#!/usr/bin/env bash
# The TSan stage builds and runs only the engine tests that start threads
# (target `thread-tests`, tests/CMakeLists.txt), found by a pattern over each
# test's sources: the standard ways to start a thread and the library's APIs
# that start one. This check fails when library code starts a thread from a
# file the pattern does not name, so a new threaded API cannot silently leave
# its tests out of ThreadSanitizer.
#
#   scripts/check-threads.sh [REPO]
set -euo pipefail
repo=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$repo"
# The library's files that start threads, and the name a test uses them by
# (the name must be in MDCAST_THREAD_PATTERN).
known=("include/mdcast/runtime/publisher_runtime.hpp:PublisherRuntime")
pattern=$(sed -n 's/^set(MDCAST_THREAD_PATTERN "\(.*\)")$/\1/p' tests/CMakeLists.txt)
[ -n "$pattern" ] || { echo "check-threads: MDCAST_THREAD_PATTERN not found in tests/CMakeLists.txt" >&2; exit 1; }
rc=0
while IFS= read -r f; do
  ok=0
  for k in "${known[@]}"; do
    if [ "${k%%:*}" = "$f" ]; then
      grep -qE "(^|\|)${k#*:}(\||$)" <<<"$pattern" && ok=1
    fi
  done
  if [ $ok = 0 ]; then
    echo "check-threads: $f starts a thread, but no name it is used by is in MDCAST_THREAD_PATTERN (tests/CMakeLists.txt): its tests would not run under TSan; add the API's name there and the file to scripts/check-threads.sh" >&2
    rc=1
  fi
done < <(grep -rlE 'std::thread|std::jthread|std::async|pthread_create' include src | sort)
[ $rc = 0 ] && echo "check-threads: every thread-starting file of the library is in the TSan test pattern"
exit $rc
