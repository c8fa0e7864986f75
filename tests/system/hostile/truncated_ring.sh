#!/usr/bin/env bash
# Another local user (nobody) tries to truncate the ring file to its header
# page under a running publisher and its two subscribers (before, anyone
# could, and all three died of SIGBUS). The ring is the publisher's, mode
# 0600: the attempt is refused, and the feed goes on to identical books.
# (The publisher's own user can still truncate its own file: that user is
# outside the threat model, see docs/security.md.)
source "$(dirname "$0")/hostile_lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root to act as another user (uid 65534)"
GIVE_UP=4s

start_feed
start_attack trunc truncate "$NAME" --bytes 4096 --uid 65534
finish_attack trunc 10
expect "another user could not open the ring for writing" grep -q "refused" "$WORK/trunc.log"
figure truncate_refused "$(attack_value trunc refused)"
finish_feed  # both subscribers exit 0 with the publisher's books, at its rate and cost bounds
conclude
