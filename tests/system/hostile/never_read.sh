#!/usr/bin/env bash
# Four clients subscribe, ask for full snapshots over and over, and never
# read a byte. What they may cost the publisher is bounded: its memory
# growth (replies queued for them) and its longest control poll; the two
# real subscribers deliver everything.
source "$(dirname "$0")/hostile_lib.sh"

start_feed
start_attack lazy never-read "shm:$NAME" --clients 4 --seconds 3
finish_attack lazy 30
figure requests_sent "$(attack_value lazy requests_sent)"
figure attacker_disconnects "$(attack_value lazy disconnects)"
finish_feed
conclude
