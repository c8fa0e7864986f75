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

start_bg pub publish --name "$NAME" --rate 5k --duration 3s --wait-subscribers 1 --linger 2s --shm-slots 1024 --set shm.max_datagram=256
start_bg rec record --name "$NAME" --idle block --out "$WORK/rec" --set subscriber.inject_loss=0.02
sleep 1
# The recorder's counters are explained like every process's (mdcast stat's catalogue).
"$MDCAST" stat --prometheus "$PID_rec" >"$WORK/rec.prom" 2>"$WORK/rec.prom.err" || fail "mdcast stat --prometheus failed"
grep -q '^mdcast_rec_datagrams_total{' "$WORK/rec.prom" || { cat "$WORK/rec.prom"; fail "no recorder counters exported"; }
! grep -q "not in this mdcast's catalogue" "$WORK/rec.prom" "$WORK/rec.prom.err" || fail "recorder counters left out of the export"
kill -STOP "$PID_rec"; sleep 0.8; kill -CONT "$PID_rec"  # lapped: the ring holds ~2500 of these datagrams
wait_rc "$PID_rec" 60 || fail "mdcast record failed"
wait_rc "$PID_pub" 30 || fail "publisher failed"
[ -f "$WORK/rec.0000.pcap" ] || { ls "$WORK"; fail "no recording at $WORK/rec.0000.pcap"; }
note "$(tail -1 "$WORK/rec.log")"
grep -q "[1-9][0-9]* gap marker" "$WORK/rec.log" || fail "the recorder was not lapped: no gap in the recording"
bash "$(dirname "$0")/wireshark_dissector.sh" "$MDCAST" "$DECODE" "$LUA" --recording "$WORK/rec.0000.pcap"
