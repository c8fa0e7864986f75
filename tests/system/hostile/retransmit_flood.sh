#!/usr/bin/env bash
# A subscribed client writes 64 KiB at a time of retransmit requests for the
# whole ring, as fast as the socket takes them, and reads the replies (moving
# its range on when told it is too old). The feed must go on undisturbed and
# the publisher's longest control poll and memory growth stay bounded.
source "$(dirname "$0")/hostile_lib.sh"

start_feed
start_attack flood retransmit-flood "shm:$NAME" --seconds 3
finish_attack flood 30
figure requests_sent "$(attack_value flood requests_sent)"
figure attacker_disconnects "$(attack_value flood disconnects)"
finish_feed
conclude
