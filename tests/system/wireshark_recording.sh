#!/usr/bin/env bash
# The dissector on a recording (and the recorder's counters in `mdcast stat`): `mdcast record` writes a short feed (with
# 2 % loss, so recovered datagrams are in it, and stopped long enough to be
# lapped, so a gap and the snapshot's image are in it), and wireshark_dissector.sh
# --recording checks that tshark with tools/wireshark/mdcast.lua and mdcast's
# own decoders read it identically, field for field.
#   wireshark_recording.sh MDCAST PCAP_DECODE LUA
source "$(dirname "$0")/lib.sh"
DECODE=${2:?usage: $0 MDCAST PCAP_DECODE LUA}
LUA=${3:?usage: $0 MDCAST PCAP_DECODE LUA}
command -v tshark >/dev/null || { echo "SKIP: tshark is not installed (scripts/install-deps.sh)"; exit 77; }

# (Datagrams filled for up to 1 ms: fewer packets for tshark, the same bytes.)
start_bg pub publish --name "$NAME" --rate 5k --duration 5s --wait-subscribers 1 --linger 2s --shm-slots 1024 \
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
wait_rc "$PID_rec" 60 || fail "mdcast record failed"
wait_rc "$PID_pub" 30 || fail "publisher failed"
[ -f "$WORK/rec.0000.pcap" ] || { ls "$WORK"; fail "no recording at $WORK/rec.0000.pcap"; }
note "$(tail -1 "$WORK/rec.log")"
grep -q "[1-9][0-9]* gap marker" "$WORK/rec.log" || fail "the recorder was not lapped: no gap in the recording"
bash "$(dirname "$0")/wireshark_dissector.sh" "$MDCAST" "$DECODE" "$LUA" --recording "$WORK/rec.0000.pcap"
