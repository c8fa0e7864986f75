#!/usr/bin/env bash
# The dissector on a recording (and the recorder's counters in `mdcast stat`): `mdcast record` writes a short feed (with
# 2 % loss, so recovered datagrams are in it, and stopped long enough to be
# lapped, so a gap and the snapshot's image are in it), and wireshark_dissector.sh
# --recording checks that tshark with tools/wireshark/mdcast.lua and mdcast's
# own decoders read it identically, field for field. Then the values the
# dissector shows against what the recorder logged and the clocks of this
# host: the session id (exact, in hex), the datagram count and last sequence,
# each gap marker's range against the datagrams around it, and every
# datagram's send time on the wall clock (send time + the session marker's
# clock offset, between the test's start and the datagram's capture).
#   wireshark_recording.sh MDCAST PCAP_DECODE LUA
source "$(dirname "$0")/lib.sh"
DECODE=${2:?usage: $0 MDCAST PCAP_DECODE LUA}
LUA=${3:?usage: $0 MDCAST PCAP_DECODE LUA}
command -v tshark >/dev/null || { echo "SKIP: tshark is not installed (scripts/install-deps.sh)"; exit 77; }
t0=$(date +%s%N)  # before the feed: no datagram of it was sent earlier

# (Datagrams filled for up to 1 ms: fewer packets for tshark, the same bytes.)
# The feed runs until the recorder has been lapped and let go, then is stopped
# cleanly (SIGTERM; the linger serves its recovery): a 5 s feed had to hold a
# whole ring's bytes after a loaded host's recorder started.
start_bg pub publish --name "$NAME" --rate 5k --duration 120s --wait-subscribers 1 --linger 2s --shm-slots 1024 \
  --set shm.max_datagram=256 --flush-interval 1ms
wait_ring
RING=/dev/shm/mdcast-$NAME.ring
[ -e "$RING" ] || RING=/dev/hugepages/mdcast-$NAME.ring
start_bg rec record --name "$NAME" --idle block --out "$WORK/rec" --set subscriber.inject_loss=0.02
# Lapped: once it records (its subscription started the feed), stopped until
# the publisher has written more bytes than the whole ring file holds
# (however long that takes on this host), then continued.
wait_stat "$PID_rec" rec.datagrams 1 60 || fail "the recorder recorded nothing within 60 s: $(tail -1 "$WORK/rec.log")"
kill -STOP "$PID_rec"
wait_stopped "$PID_rec"
at=$(stat_value "$PID_pub" pub.bytes_sent)
# Meanwhile: the recorder's counters are explained like every process's (mdcast stat's catalogue).
"$MDCAST" stat --prometheus "$PID_rec" >"$WORK/rec.prom" 2>"$WORK/rec.prom.err" || fail "mdcast stat --prometheus failed"
grep -q '^mdcast_rec_datagrams_total{' "$WORK/rec.prom" || { cat "$WORK/rec.prom"; fail "no recorder counters exported"; }
! grep -q "not in this mdcast's catalogue" "$WORK/rec.prom" "$WORK/rec.prom.err" || fail "recorder counters left out of the export"
wait_stat "$PID_pub" pub.bytes_sent $((at + $(stat -c %s "$RING") + 1)) 60 ||
  fail "the publisher did not write the ring's $(stat -c %s "$RING") bytes past the stopped recorder: $(tail -1 "$WORK/pub.log")"
kill -CONT "$PID_rec"
wait_stat "$PID_rec" shm.lapped 1 60 || fail "the recorder never noticed it was lapped"
# Enough after the gap for every kind of message (the dissector check wants
# 100 datagrams): counted, not timed - a loaded host records fewer a second.
have=$(stat_value "$PID_rec" rec.datagrams)
wait_stat "$PID_rec" rec.datagrams $((${have:-0} + 150)) 60 ||
  fail "the recorder recorded fewer than 150 datagrams in 60 s after the gap: $(tail -1 "$WORK/rec.log")"
kill -TERM "$PID_pub"
wait_rc "$PID_rec" 60 || fail "mdcast record failed"
wait_rc "$PID_pub" 30 || fail "publisher failed"
[ -f "$WORK/rec.0000.pcap" ] || { ls "$WORK"; fail "no recording at $WORK/rec.0000.pcap"; }
note "$(tail -1 "$WORK/rec.log")"
grep -q "[1-9][0-9]* gap marker" "$WORK/rec.log" || fail "the recorder was not lapped: no gap in the recording"
bash "$(dirname "$0")/wireshark_dissector.sh" "$MDCAST" "$DECODE" "$LUA" --recording "$WORK/rec.0000.pcap" || exit $?
t1=$(date +%s%N)

# ------------------------------------------------------------------ values --
log=$(grep '^mdcast record: ' "$WORK/rec.log" | grep ' datagrams through sequence ' | tail -1)
session=$(sed -nE 's/.*\(session ([0-9a-f]{16})\).*/\1/p' <<<"$log")
datagrams=$(sed -nE 's/.*\): ([0-9]+) datagrams through sequence ([0-9]+) .*/\1/p' <<<"$log")
last=$(sed -nE 's/.*\): ([0-9]+) datagrams through sequence ([0-9]+) .*/\2/p' <<<"$log")
gaps=$(sed -nE 's/.*; ([0-9]+) gap marker.*/\1/p' <<<"$log")
[ -n "$session" ] && [ -n "$datagrams" ] && [ -n "$last" ] && [ -n "$gaps" ] || fail "cannot read the recorder's summary: $log"
TS=(tshark -n -X "lua_script:$LUA")
REC="$WORK/rec.0000.pcap"
"${TS[@]}" -r "$REC" -Y mdcast_rec -T fields -E 'separator=|' -e frame.number -e mdcast.rec.kind -e mdcast.rec.session \
  -e mdcast.rec.clock_offset -e mdcast.rec.first_missing -e mdcast.rec.next_seq -e _ws.col.Info >"$WORK/markers" 2>/dev/null
"${TS[@]}" -r "$REC" -Y 'mdcast.seq && !mdcast_rec' -T fields -E 'separator=|' -e frame.number -e frame.time_epoch \
  -e mdcast.session -e mdcast.seq -e mdcast.send_time -e mdcast.send_wall >"$WORK/datagrams" 2>/dev/null

# One session marker, for the session the recorder logged, with a clock offset.
[ "$(awk -F'|' '$2 == 2' "$WORK/markers" | wc -l)" = 1 ] || fail "not one session marker: $(cat "$WORK/markers")"
IFS='|' read -r _ _ msession offset _ _ minfo < <(awk -F'|' '$2 == 2' "$WORK/markers")
[ "$msession" = "0x$session" ] || fail "the session marker says session $msession, the recorder logged $session"
[ "$minfo" = "mdcast recording: session 0x$session begins" ] || fail "session marker summary: '$minfo'"
[ "${offset:-0}" -gt 0 ] || fail "the session marker holds no clock offset: '$offset'"
# Every datagram: the session, exactly; as many as logged, through the logged sequence.
[ "$(wc -l <"$WORK/datagrams")" = "$datagrams" ] ||
  fail "$(wc -l <"$WORK/datagrams") datagrams shown, the recorder logged $datagrams"
bad=$(awk -F'|' -v s="0x$session" '$3 != s' "$WORK/datagrams" | head -3)
[ -z "$bad" ] || fail "datagrams of another session than the logged 0x$session: $bad"
[ "$(tail -1 "$WORK/datagrams" | cut -d'|' -f4)" = "$last" ] || fail "the last datagram is not the logged sequence $last"
note "session 0x$session, $datagrams datagrams through sequence $last: as the recorder logged"
# Gap markers: as many as logged, each between the datagrams its range names
# (the one before it ends at first missing - 1, the next one after is next).
[ "$(awk -F'|' '$2 == 1' "$WORK/markers" | wc -l)" = "$gaps" ] || fail "gap markers shown differ from the $gaps logged"
while IFS='|' read -r frame _ _ _ from next info; do
  before=$(awk -F'|' -v f="$frame" '$1 < f {s = $4} END {print s + 0}' "$WORK/datagrams")
  after=$(awk -F'|' -v f="$frame" '$1 > f {print $4; exit}' "$WORK/datagrams")
  [ "$before" = $((from - 1)) ] || fail "gap marker $frame: sequences $from..$((next - 1)), but sequence $before precedes it"
  [ -z "$after" ] || [ "$after" = "$next" ] || fail "gap marker $frame: next is $next, but sequence $after follows it"
  [ "$info" = "mdcast recording: gap, sequences $from to $((next - 1)) replaced by a snapshot" ] ||
    fail "gap marker summary: '$info'"
done < <(awk -F'|' '$2 == 1' "$WORK/markers")
note "$gaps gap marker(s), each between the datagrams its range names"
# Send times on the wall clock: send time + offset, exactly, between the
# test's start and the frame's capture (one host: the publisher's monotonic
# clock is the recorder's). Checked on the first, a middle and the last datagram.
[ "$(awk -F'|' '$6 == ""' "$WORK/datagrams" | wc -l)" = 0 ] || fail "datagrams without a wall-clock send time"
for line in 1 $(((datagrams + 1) / 2)) "$datagrams"; do
  IFS='|' read -r frame epoch _ seq sent wall < <(sed -n "${line}p" "$WORK/datagrams")
  ns=${wall##*.}; ns=${ns%% UTC}
  wall_ns=$(($(date -u -d "${wall%.*}" +%s) * 1000000000 + 10#$ns))
  captured=$((10#${epoch%.*} * 1000000000 + 10#${epoch#*.}))
  [ "$wall_ns" = $((sent + offset)) ] || fail "seq $seq: send_wall '$wall' is not send time $sent + offset $offset"
  [ "$wall_ns" -ge "$t0" ] && [ "$wall_ns" -le "$captured" ] && [ "$captured" -le "$t1" ] ||
    fail "seq $seq: sent at $wall_ns, captured at $captured: not between the test's start $t0 and end $t1"
done
note "send times on the wall clock: send time + the marker's offset, between the test's start and each capture"
