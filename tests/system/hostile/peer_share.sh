#!/usr/bin/env bash
# One peer opens 1,100 connections and subscribes on each, over TCP (a UDP
# feed's control plane on loopback, the attacker from 127.0.0.2), before the
# real subscribers start. It gets its share (control.max_clients_per_peer,
# 256) and every further Subscribe is refused naming the setting; the two
# real subscribers, from 127.0.0.1, are admitted and deliver everything.
source "$(dirname "$0")/hostile_lib.sh"

PORT=$((20000 + $$ % 20000))
GROUP="239.77.16.$((1 + $$ % 250)):$PORT"
udp=(--medium udp --udp-group "$GROUP" --interface lo --set udp.control_port=0)
PUB_ARGS=("${udp[@]}")
SUB_ARGS=("${udp[@]}")
start_bg pub publish "${udp[@]}" --rate "$RATE" --duration "$DURATION" --instrument-count 200 --idle block \
  --wait-subscribers 258 --result "$WORK/pub.toml"
wait_log pub '^mdcast publish: UDP multicast .*control tcp:' 30
control=$(grep -o 'control tcp:[0-9.]*:[0-9]*' "$WORK/pub.log" | head -1 | cut -d' ' -f2)
note "control endpoint $control"
sample_memory "$PID_pub" "$WORK/pub.mem"
mark_baseline
start_attack greedy subscribers "$control" --from 127.0.0.2 --count 1100 --seconds 600
wait_for_line greedy '^ready ' 120 || fail "the attacker's 1,100 subscriptions were never all tried"
note "$(grep -E '^(ready|first refusal)' "$WORK/greedy.log")"
start_subscriber sub1
start_subscriber sub2
finish_subscribers sub1 sub2
finish_publisher
stop_attack greedy
subscribed=$(attack_value greedy subscribed)
figure greedy_subscribed "$subscribed"
figure greedy_refused "$(attack_value greedy refused)"
expect "the one peer got its share and no more (256 subscribed, got $subscribed)" [ "$subscribed" = 256 ]
expect "its Subscribes past the share were refused naming control.max_clients_per_peer" \
  grep -q '^first refusal: .*control.max_clients_per_peer' "$WORK/greedy.log"
check_books sub1 sub2
check_delivered sub1 sub2
check_costs
conclude
