#!/usr/bin/env bash
# Only an impostor announces on an open UDP feed's group (no publisher): a
# subscriber takes its address, finds it fails (silent, or closing every
# connection), says so naming it, has no other address to go to, and ends
# after its wait (subscriber.wait) with exit 3 and the reason: it never hangs
# for as long as the impostor announces.
source "$(dirname "$0")/hostile_lib.sh"

WAIT=4
for variant in silent close; do
  n=$([ $variant = silent ] && echo 0 || echo 1)
  PORT=$((20000 + ($$ + 7 + n) % 20000))
  GROUP="239.77.18.$((1 + ($$ + n) % 250)):$PORT"
  SUB_ARGS=(--medium udp --udp-group "$GROUP" --interface lo --set udp.control_port=0 --wait "${WAIT}s")
  start_attack "imp_$variant" announce "$GROUP" "--$variant" --seconds 120
  wait_for_line "imp_$variant" '^ready ' 10 || fail "the impostor ($variant) never started: $(cat "$WORK/imp_$variant.log")"
  imp=$(grep -o 'announcing tcp:[0-9.]*:[0-9]*' "$WORK/imp_$variant.log" | cut -d' ' -f2)
  note "impostor ($variant) announces $imp"
  t0=$(date +%s%N)
  start_subscriber "sub_$variant"
  rc=0; wait_rc "$(pid_of "sub_$variant")" $((WAIT + 10)) || rc=$?
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  stop_attack "imp_$variant"
  figure "${variant}_exit" "$rc"
  figure "${variant}_ms" "$ms"
  sed "s/^/   sub_$variant: /" "$WORK/sub_$variant.log"
  expect "the subscriber ($variant impostor) exits 3, setup (exit status $rc after $ms ms)" [ "$rc" = 3 ]
  expect "it ended within its wait, not after the impostor ($ms ms, wait ${WAIT} s)" [ "$ms" -lt $(( (WAIT + 5) * 1000 )) ]
  expect "its log names the impostor $imp and why it fails" \
    grep -qE "control $imp fails: .*no other announced control address" "$WORK/sub_$variant.log"
  expect "it says it heard no publisher" grep -q 'nothing from a publisher' "$WORK/sub_$variant.log"
done
conclude
