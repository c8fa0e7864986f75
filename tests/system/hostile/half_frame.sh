#!/usr/bin/env bash
# A 4 MiB length prefix and a few bytes, then nothing, from a client that
# never subscribed and from one that did, and a 1 KiB frame left half-sent by
# a subscribed client (no size limit can catch that one, only a timeout): the
# publisher closes all three connections within a timeout (it holds no
# half-sent frame, nor its buffer, forever), and the feed is undisturbed.
source "$(dirname "$0")/hostile_lib.sh"
CLOSE_WITHIN=${HOSTILE_CLOSE_WITHIN_S:-5}
# The feed outlasts the wait: a close seen within it is the publisher's
# decision, not its exit.
DURATION=$((CLOSE_WITHIN + 3))s

start_feed
start_attack cold half-frame "shm:$NAME" --seconds "$CLOSE_WITHIN"
start_attack warm half-frame "shm:$NAME" --seconds "$CLOSE_WITHIN" --subscribe-first
start_attack small half-frame "shm:$NAME" --seconds "$CLOSE_WITHIN" --subscribe-first --length 1024
for a in cold warm small; do finish_attack $a $((CLOSE_WITHIN + 10)); done
for a in cold warm small; do
  closed=$(attack_value $a closed)
  after=$(attack_value $a closed_after_ms)
  figure "${a}_closed_after_ms" "${after:-never}"
  expect "the publisher closed the $a client's half-sent frame within ${CLOSE_WITHIN} s" [ "${closed:-0}" = 1 ]
done
for a in warm small; do
  expect "the $a attacker was a subscribed client" [ "$(attack_value $a subscribed)" = 1 ]
done
expect "the publisher was still publishing when the attacks ended" kill -0 "$PID_pub"
finish_feed
conclude
