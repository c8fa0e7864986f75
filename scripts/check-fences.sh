#!/usr/bin/env bash
# GCC refuses std::atomic_thread_fence under ThreadSanitizer (-Werror=tsan),
# which only the TSan stage, the last of `make test`, would find. Standalone
# fences go through core/fence.hpp, which turns them into compiler barriers
# there; this check fails on any other file that uses one.
#
#   scripts/check-fences.sh [REPO]
set -euo pipefail
repo=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$repo"
bad=$(grep -rlE 'atomic_thread_fence' include src apps tests bench examples 2>/dev/null | grep -vx 'include/mdcast/core/fence.hpp' || true)
if [ -n "$bad" ]; then
  while IFS= read -r f; do
    echo "check-fences: $f uses std::atomic_thread_fence, which GCC refuses in the TSan build; use mdcast::acquire_fence()/release_fence() from mdcast/core/fence.hpp" >&2
  done <<<"$bad"
  exit 1
fi
