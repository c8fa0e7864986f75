#!/usr/bin/env bash
# The ring file is truncated to its header page under a running publisher
# and its two subscribers. Nobody may die of SIGBUS: each process either
# carries on (and the subscribers' books end identical to the publisher's)
# or stops with a clear error that names the ring.
source "$(dirname "$0")/hostile_lib.sh"
GIVE_UP=4s

start_feed
start_attack trunc truncate "$NAME" --bytes 4096
finish_attack trunc 10
declare -A RC
for p in sub1 sub2 pub; do
  rc=0; wait_rc "$(pid_of $p)" 30 || rc=$?
  RC[$p]=$rc
  figure "${p}_exit" "$rc"
  expect "$p was not killed by a signal (exit status $rc$( [ "$rc" = 135 ] && echo ': SIGBUS'))" no_signal "$rc"
  if [ "$rc" != 0 ] && no_signal "$rc"; then
    note "$p: $(grep -m1 -E '^mdcast' "$WORK/$p.log")"
    expect "$p's error names the ring" grep -qE "mdcast-$NAME\.ring|ring" "$WORK/$p.log"
  fi
done
if [ "${RC[pub]}" = 0 ]; then
  # The publisher carried on: subscribers that finished did so with the right books.
  ok=()
  for s in sub1 sub2; do [ "${RC[$s]}" = 0 ] && ok+=("$s"); done
  [ ${#ok[@]} -gt 0 ] && check_books "${ok[@]}"
  check_costs
fi
conclude
