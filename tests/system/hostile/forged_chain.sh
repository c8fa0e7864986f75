#!/usr/bin/env bash
# An open UDP feed (no secrets) with rails A and B on loopback. A forger on
# the group hears one real datagram and sends the next sequences, 100 a
# millisecond for 2 s, never resynchronising: first on rail A, then on rail
# B alone. Every forged datagram is in order when it arrives, so only the
# control plane can tell: a run is held a window past the publisher's last
# confirmed sequence, and cut where an answer proves the publisher never
# sent it. Both subscribers end in the publisher's session with its books,
# exit 0, and the snapshots served stay bounded. What a run did before it
# was cut is repaired, not undone (no authentication on an open feed): the
# messages a snapshot replaced are counted, and held under 5 %.
source "$(dirname "$0")/hostile_lib.sh"

PORT=$((20000 + $$ % 20000))
GA="239.77.17.$((1 + $$ % 250)):$PORT"
GB="239.77.18.$((1 + $$ % 250)):$PORT"
DURATION=${DURATION_CHAIN:-8s}
udp=(--medium udp --interface lo --set udp.control_port=0 --udp-group "$GA" --rail-b "$GB")
SUB_ARGS=("${udp[@]}")
start_bg pub publish "${udp[@]}" --rate "$RATE" --duration "$DURATION" --instruments 200 --idle block \
  --wait-subscribers 2 --result "$WORK/pub.toml"
wait_log pub '^mdcast publish: UDP multicast .*control tcp:' 30
sample_memory "$PID_pub" "$WORK/pub.mem"
start_subscriber sub1
start_subscriber sub2
wait_published "$PID_pub" 2000
mark_baseline
for rail in A B; do
  group=$GA; [ "$rail" = B ] && group=$GB
  start_attack "chain$rail" forge-chain "$group" --seconds 2 --per-ms 100
  finish_attack "chain$rail" 60
  figure "forged_on_$rail" "$(attack_value "chain$rail" sent)"
done
finish_subscribers sub1 sub2
finish_publisher
check_books sub1 sub2
check_rate
check_costs
published=$(toml_get "$WORK/pub.toml" messages)
for l in sub1 sub2; do
  got=$(toml_get "$WORK/$l.toml" messages)
  figure "$l.replaced_by_snapshots" "$((published - got))"
  expect "$l: messages a snapshot replaced under 5 % ($((published - got)) of $published)" \
    [ $(( (published - got) * 20 )) -lt "$published" ]
  runs=$(toml_get "$WORK/$l.toml" sub.forged_runs); forged=$(toml_get "$WORK/$l.toml" sub.forged_datagrams)
  held=$(toml_get "$WORK/$l.toml" sub.claims_held); changes=$(toml_get "$WORK/$l.toml" sub.session_changes)
  figure "$l.forged_runs" "${runs:-?}"; figure "$l.forged_datagrams" "${forged:-?}"; figure "$l.claims_held" "${held:-?}"
  figure "$l.snapshots" "$(toml_get "$WORK/$l.toml" sub.snapshots_requested)"
  expect "$l saw the runs refuted (forged_datagrams ${forged:-?} > 0)" [ "${forged:-0}" -gt 0 ]
  expect "$l stayed in the publisher's session" [ "${changes:-x}" = 0 ]
done
served=$(publisher_counter ctl.snapshot_requests)
figure snapshot_requests "${served:-?}"
at_most() { [ -n "$1" ] && [ "$1" -le "$2" ]; }
expect "snapshot requests stayed bounded (${served:-?} <= 100)" at_most "$served" 100
conclude
