#!/usr/bin/env bash
# Random bytes, lengths out of range, unknown and reserved frame types,
# bodies that lie about their sizes, truncated frames, publisher frames sent
# by a client: every case gets an error reply or a closed connection (never
# silence), the publisher counts what it dropped, and the feed is undisturbed.
source "$(dirname "$0")/hostile_lib.sh"
DURATION=${DURATION_GARBAGE:-6s}

start_feed
start_attack garbage garbage "shm:$NAME" --seed $$ --timeout-ms 1500
finish_attack garbage 90
silent=$(attack_value garbage silent)
not_run=$(attack_value garbage not_run)
figure cases "$(attack_value garbage cases)"
figure error_replies "$(attack_value garbage error)"
figure closed "$(attack_value garbage closed)"
figure silent "${silent:-?}"
expect "every garbage case was answered by an error or a close (${silent:-?} silent)" [ "${silent:-1}" = 0 ]
expect "every garbage case ran (${not_run:-?} could not)" [ "${not_run:-1}" = 0 ]
finish_feed
malformed=$(publisher_counter ctl.malformed_frames)
bad_stream=$(publisher_counter control.bad_stream_disconnects)
figure malformed_counted "${malformed:-?}"
figure bad_stream_counted "${bad_stream:-?}"
expect "the publisher counted what it dropped (malformed ${malformed:-?}, bad streams ${bad_stream:-?})" \
  [ $(( ${malformed:-0} + ${bad_stream:-0} )) -gt 0 ]
conclude
