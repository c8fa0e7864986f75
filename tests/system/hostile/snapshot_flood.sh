#!/usr/bin/env bash
# A subscribed client writes 64 KiB at a time of 16-byte "all" snapshot
# requests, as fast as the socket takes them, and reads the replies. Beside
# it the feed must go on: both subscribers deliver everything with books
# identical to the publisher's, and the publisher's longest control poll and
# memory growth stay bounded (each request must not cost a rebuild of every book).
source "$(dirname "$0")/hostile_lib.sh"

start_feed
start_attack flood snapshot-flood "shm:$NAME" --seconds 3
finish_attack flood 30
figure requests_sent "$(attack_value flood requests_sent)"
figure attacker_disconnects "$(attack_value flood disconnects)"
finish_feed
conclude
