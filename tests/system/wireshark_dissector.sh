#!/usr/bin/env bash
# The Wireshark dissector (tools/wireshark/mdcast.lua) against mdcast's own
# decoders, field for field.
#
#   wireshark_dissector.sh MDCAST PCAP_DECODE LUA                 live: capture a UDP feed on lo
#   wireshark_dissector.sh MDCAST PCAP_DECODE LUA --recording F   a recording (mdcast record)
#
# First, always: the dissector installed in a plugin folder loads; crafted
# captures (text2pcap) of what the synthetic feed never sends, compared field
# for field, with exact values checked (a session id a double cannot hold, a
# recording's wall-clock send times, control frame summaries); malformed ones
# that must each raise their expert item.
#
# Live: tcpdump captures lo while `mdcast publish --medium udp --crc` with
# secrets feeds two subscribers that drop 5 % of what they receive (one
# entitled to instruments 0-9 only, so its retransmissions are FILTERED), a
# third that joins once the feed's start has left a small retransmit ring (a
# snapshot), and a client without a secret (refused: an Error frame). Then
# `compare` runs `tshark -X lua_script:LUA -T fields` with every field
# mdcast-pcap-decode knows, and the two outputs must be equal line for line;
# the counts prove they are not trivially equal (datagrams, every message type
# the synthetic feed produces, live every control frame kind that crossed).
# A copy of the capture with random byte errors (fixed seed) then decodes
# with no Lua error in the dissector and no crash in the decoder.
#
# MDCAST_KEEP_CAPTURE=FILE keeps the live capture there.
#
# Skips (77) without tshark with Lua, without mdcast-pcap-decode (no libpcap
# at build time), or, live, where tcpdump cannot capture on lo.
source "$(dirname "$0")/lib.sh"
DECODE=${2:?usage: $0 MDCAST PCAP_DECODE LUA [--recording FILE]}
LUA=${3:?usage: $0 MDCAST PCAP_DECODE LUA [--recording FILE]}
RECORDING=
if [ "${4:-}" = --recording ]; then RECORDING=${5:?--recording needs a pcap file}; fi

skip() {
  echo "SKIP: $*"
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  trap - EXIT
  rm -rf "$WORK"
  exit 77
}
command -v tshark >/dev/null || skip "tshark is not installed (scripts/install-deps.sh)"
tshark -v 2>/dev/null | grep -q "with Lua" || skip "this tshark was built without Lua"
for t in text2pcap mergecap editcap; do command -v $t >/dev/null || skip "$t is not installed (it comes with tshark)"; done
[ -x "$DECODE" ] || skip "$DECODE was not built (libpcap-dev missing when CMake ran)"
[ -f "$LUA" ] || fail "no dissector at $LUA"
TSHARK=(tshark -n -X "lua_script:$LUA")

# count FILE KEY: a summary count of mdcast-pcap-decode (0 when absent)
count() { awk -v k="$2" '$1 == k {print $2; f=1} END {if (!f) print 0}' "$1"; }
# matching CAPTURE FILTER [OPTIONS...]: how many packets the dissector shows for a display filter
matching() {
  local cap=$1 filter=$2; shift 2
  "${TSHARK[@]}" "$@" -r "$cap" -Y "$filter" -T fields -e frame.number 2>/dev/null | wc -l
}

# Every field the dissector registers is compared, but the scaled price (a
# double whose text form is Wireshark's).
check_field_coverage() {
  tshark -G fields -X "lua_script:$LUA" 2>/dev/null | awk -F'\t' '$1 == "F" && $3 ~ /^mdcast\./ && $3 !~ /^mdcast\.expert\./ {print $3}' | sort >"$WORK/registered"
  "$DECODE" --fields | sort >"$WORK/compared"
  local missing
  missing=$(comm -23 "$WORK/registered" "$WORK/compared" | grep -vx mdcast.msg.price_scaled || true)
  [ -z "$missing" ] || fail "fields the dissector registers but the test does not compare: $missing"
  missing=$(comm -13 "$WORK/registered" "$WORK/compared")
  [ -z "$missing" ] || fail "fields mdcast-pcap-decode prints that the dissector does not register: $missing"
  note "all $(wc -l <"$WORK/registered") registered fields compared but mdcast.msg.price_scaled"
}

# compare CAPTURE LABEL MIN_DATAGRAMS WITH_CONTROL(0|1)
compare() {
  local cap=$1 label=$2 min=$3 control=$4
  local udp_ports tcp_ports p
  # The ports come from the bytes, not from a guess: UDP ports whose payloads
  # start with a datagram's or an announcement's magic, and both ends of every
  # TCP connection to an announced control port. Naming them all keeps a
  # dissector Wireshark registered on a port from winning over mdcast's.
  udp_ports=$(tshark -n -r "$cap" -Y 'udp.payload[0:2] == 4d:43 || udp.payload[0:2] == 4d:41' \
    -T fields -e udp.dstport 2>/dev/null | sort -un | paste -sd, -)
  [ -n "$udp_ports" ] || fail "$cap holds no mdcast datagram"
  tcp_ports=""
  for p in $("${TSHARK[@]}" -r "$cap" -Y mdcast.ann.address -T fields -e mdcast.ann.address 2>/dev/null |
             sort -u | sed -nE 's/^tcp:[0-9.]+:([0-9]+)$/\1/p'); do
    tcp_ports+=" $(tshark -n -r "$cap" -Y "tcp.port == $p" -T fields -e tcp.srcport -e tcp.dstport 2>/dev/null | tr '\t' '\n')"
  done
  tcp_ports=$(echo "$tcp_ports" | tr ' ' '\n' | grep -E '^[0-9]+$' | sort -un | paste -sd, - || true)
  local opts=(-o "mdcast.data_ports:$udp_ports" -o "mdcast.control_ports:${tcp_ports}")
  local dargs=()
  for p in ${udp_ports//,/ }; do dargs+=(--data-port "$p"); done
  for p in ${tcp_ports//,/ }; do dargs+=(--control-port "$p"); done
  [ -n "$tcp_ports" ] || dargs+=(--control-port 0)
  note "$label: UDP ports $udp_ports, TCP ports ${tcp_ports:-none}"

  local fields=()
  while read -r f; do fields+=(-e "$f"); done < <("$DECODE" --fields)
  "${TSHARK[@]}" "${opts[@]}" -r "$cap" -Y 'mdcast || mdcast_ctl || mdcast_ann || mdcast_rec' -T fields -E occurrence=a \
    -E aggregator='|' -e frame.number "${fields[@]}" >"$WORK/$label.tshark" 2>"$WORK/$label.tshark.log" ||
    fail "tshark failed on $cap: $(tail -3 "$WORK/$label.tshark.log")"
  ! grep -i "lua" "$WORK/$label.tshark.log" || fail "the dissector does not load (above)"
  "$DECODE" "${dargs[@]}" --summary "$WORK/$label.summary" "$cap" >"$WORK/$label.mdcast" 2>"$WORK/$label.decode.log" ||
    fail "mdcast-pcap-decode failed on $cap: $(tail -3 "$WORK/$label.decode.log")"
  sed 's/^/   /' "$WORK/$label.summary" | paste -sd' ' -

  if ! diff "$WORK/$label.mdcast" "$WORK/$label.tshark" >"$WORK/$label.diff"; then
    echo "   first differences (< mdcast, > dissector; fields in the order of mdcast-pcap-decode --fields):"
    head -8 "$WORK/$label.diff" | cut -c1-600
    fail "$label: the dissector and mdcast decode $cap differently ($(grep -c '^[<>]' "$WORK/$label.diff") lines)"
  fi
  local lines
  lines=$(wc -l <"$WORK/$label.tshark")
  note "$label: $lines packets decode identically, field for field"

  local s="$WORK/$label.summary" n t
  [ "$(count "$s" malformed)" = 0 ] || fail "$label: mdcast found $(count "$s" malformed) malformed datagrams/frames"
  n=$(count "$s" udp.datagrams)
  [ "$n" -ge "$min" ] || fail "$label: only $n datagrams (want at least $min)"
  # A recording holds no heartbeats (docs/recording.md), and a marker where each session begins.
  local kinds="instrument-definition add-order modify-order delete-order execute-order trading-status heartbeat"
  if [ "$label" = recording ]; then
    kinds=${kinds% heartbeat}
    [ "$(count "$s" rec.markers)" -gt 0 ] || fail "$label: no recording marker decoded"
  fi
  for t in $kinds; do
    [ "$(count "$s" "msg.$t")" -gt 0 ] || fail "$label: no $t message decoded"
  done
  if [ "$control" = 1 ]; then
    for t in subscribe subscribe-ack status-report retransmit-request retransmit-reply auth-hello auth-challenge \
             auth-proof auth-data-key error snapshot-request snapshot-data snapshot-done; do
      [ "$(count "$s" "ctl.$t")" -gt 0 ] || fail "$label: no $t control frame decoded"
    done
    [ "$(count "$s" retransmitted.datagrams)" -gt 0 ] || fail "$label: no retransmitted datagram decoded"
    [ "$(count "$s" msg.snapshot-chunk)" -gt 0 ] || fail "$label: no snapshot chunk decoded"
    [ "$(matching "$cap" 'mdcast.flags.filtered == 1' "${opts[@]}")" -gt 0 ] ||
      fail "$label: no FILTERED retransmission decoded"
    [ "$(count "$s" announcements)" -gt 0 ] || fail "$label: no announcement decoded"
    [ "$(matching "$cap" 'mdcast.flags.tag == 1 && mdcast.tag' "${opts[@]}")" -gt 0 ] ||
      fail "$label: no tagged datagram decoded (the feed has secrets)"
  fi
  [ "$(matching "$cap" '_ws.lua.error' "${opts[@]}")" = 0 ] || fail "$label: Lua errors in the dissector"
  [ "$(matching "$cap" 'mdcast.crc.status == 2' "${opts[@]}")" = 0 ] || fail "$label: the dissector finds bad CRCs"
  [ "$(matching "$cap" '_ws.expert.severity == error && (mdcast || mdcast_ctl || mdcast_ann || mdcast_rec)' "${opts[@]}")" = 0 ] ||
    fail "$label: the dissector reports errors on a clean capture"

  # Hostile bytes: the dissector and the decoder get through a corrupted copy.
  editcap --seed 12 -E 0.01 "$cap" "$WORK/$label.corrupt.pcap" >/dev/null 2>&1 || fail "editcap failed on $cap"
  [ "$(matching "$WORK/$label.corrupt.pcap" '_ws.lua.error' "${opts[@]}")" = 0 ] ||
    fail "$label: Lua errors in the dissector on a corrupted capture"
  "$DECODE" "${dargs[@]}" "$WORK/$label.corrupt.pcap" >/dev/null 2>"$WORK/$label.corrupt.log" ||
    fail "mdcast-pcap-decode failed on a corrupted capture: $(tail -3 "$WORK/$label.corrupt.log")"
  note "$label: a copy with 1 % of its bytes corrupted decodes without a Lua error or a crash"
}

# ------------------------------------------------------------------ crafted --
# What the synthetic feed never sends, built byte by byte with text2pcap: the
# example of docs/protocol.md §5 (CRC on), a datagram with Opaque, Fragment, an
# unknown type, a 16-character symbol (no NUL) and an order priced by its
# definition's exponent, an END_OF_SESSION heartbeat; control frames of the
# other kinds, two in one segment and one split over two. Then malformed
# ones: each must raise its expert item, with no Lua error and no crash.
le() { local v=$1 n=$2 i; for ((i = 0; i < n; i++)); do printf '%02x ' $(((v >> (8 * i)) & 255)); done; }
ascii() { printf '%s' "$1" | od -An -tx1; }
# packet HEX...: one text2pcap packet (offset lines of 16 bytes)
packet() {
  echo "$*" | tr -s ' \n' '\n\n' | grep . |
    awk '{ if (n % 16 == 0) printf "%s%06x", (n ? "\n" : ""), n; printf " %s", $1; n++ } END { print "" }'
}
# packet_at "YYYY-MM-DD HH:MM:SS" HEX...: the same, captured at that time (UTC; text2pcap -t "$AT")
AT='%Y-%m-%d %H:%M:%S.'
packet_at() { local at=$1; shift; packet "$@" | sed "1s/^/$at. /"; }
# dgram FLAGS COUNT SEQ LENGTH MESSAGES...: a header (channel 3, session 0x0a0b0c0d0e0f1011, sender 9, no CRC)
dgram() {
  local flags=$1 count=$2 seq=$3 len=$4; shift 4
  echo "4d 43 02 $(le "$flags" 1) $(le 3 2) $(le "$count" 2) 11 10 0f 0e 0d 0c 0b 0a $(le "$seq" 8)" \
    "$(le 1000000000 8) $(le "$len" 2) $(le 9 2) 00 00 00 00 $*"
}
crafted() {
  local d="$WORK/crafted" m
  mkdir -p "$d"
  packet 4d 43 02 02 01 00 02 00 04 03 02 01 00 00 00 00 05 00 00 00 00 00 00 00 00 ca 9a 3b 00 00 00 00 \
    60 00 01 00 42 2e eb 93 24 00 02 00 07 00 00 00 2a 00 00 00 e9 03 00 00 00 00 00 00 44 d6 12 00 \
    00 00 00 00 2c 01 00 00 01 00 00 00 14 00 04 00 07 00 00 00 2b 00 00 00 e7 03 00 00 00 00 00 00 >"$d/udp.txt"
  m="$(le 36 2) 01 00 $(le 4 4) $(le 1 4) $(ascii ABCDEFGHIJKLMNOP) $(le 10 4) fe 00 00 00"  # exponent -2
  m+=" $(le 36 2) 02 00 $(le 4 4) $(le 2 4) $(le 77 8) $(le 12345 8) $(le 5 4) 00 00 00 00"
  m+=" $(le 17 2) 0a 00 $(le 3 4) $(le 9 4) de ad be ef 01"
  m+=" $(le 26 2) 09 00 $(le 4 4) $(le 77 4) $(le 0 2) $(le 2 2) $(le 40 4) 01 02 03 04 05 06"
  m+=" $(le 8 2) 2a 00 aa bb cc dd"
  m+=" $(le 16 2) 06 00 $(le 4 4) $(le 3 4) 02 00 00 00"
  packet "$(dgram 0 6 6 179 "$m")" >>"$d/udp.txt"
  m="$(le 60 2) 08 00 $(le 6 8) $(le 81985529216486895 8) $(le 50 4) $(le 2 2) 00 00"
  m+=" $(le 4 4) $(le 3 4) $(le 1311768467463790320 8) $(le 7 4) $(le 1 4) $(le 42 8)"
  packet "$(dgram 5 1 6 100 "$m")" >>"$d/udp.txt"
  packet 4d 41 01 $(le 17 1) $(le 3 2) 00 00 11 10 0f 0e 0d 0c 0b 0a $(ascii tcp:10.2.2.2:7471) >>"$d/udp.txt"
  # Signed (version 2): the signature is shown, not checked (the dissector has no key).
  packet 4d 41 02 $(le 17 1) $(le 4 2) 00 00 11 10 0f 0e 0d 0c 0b 0a $(ascii tcp:10.2.2.3:7471) \
    $(for i in $(seq 0 63); do printf '%02x ' $((i * 3 % 256)); done) >>"$d/udp.txt"
  text2pcap -q -F pcap -u 40001,7470 "$d/udp.txt" "$d/udp.pcap" >>"$d/tools.log" 2>&1 ||
    fail "text2pcap failed: $(tail -2 "$d/tools.log")"

  local unsub="$(le 24 4) 03 02 00 00 $(le 7 4) $(le 2 4) $(le 5 4) $(le 6 4)"
  local snapreq="$(le 16 4) 06 02 00 00 $(le 8 4) ff ff ff ff"
  local rr="$(le 32 4) 04 02 00 00 $(le 9 4) 11 10 0f 0e 0d 0c 0b 0a $(le 3 8) $(le 2 4)"
  local err="$(le 33 4) 0a 02 00 00 $(le 9 4) $(le 3 2) $(le 17 2) $(ascii "not entitled to 7")"
  local hello="$(le 54 4) 0b 02 00 00 $(le 1 4) $(le 3 2) 01 06 $(le 0 32) $(ascii desk-a)"
  local proof="$(le 44 4) 0d 02 00 00 $(le 2 4) $(le 0 32)"
  local rrfirst rrrest
  rrfirst=$(echo "$rr" | tr -s ' ' '\n' | grep . | head -10 | paste -sd' ')
  rrrest=$(echo "$rr" | tr -s ' ' '\n' | grep . | tail -n +11 | paste -sd' ')
  { packet "$hello"; packet "$proof $unsub"; packet "$snapreq $rrfirst"; packet "$rrrest"
    packet "$(le 12 4) 0e 02 00 00 $(le 10 4) $err"; } >"$d/tcp.txt"
  text2pcap -q -F pcap -T 40002,7471 "$d/tcp.txt" "$d/tcp.pcap" >>"$d/tools.log" 2>&1 ||
    fail "text2pcap failed: $(tail -2 "$d/tools.log")"
  # A recording's start: its session marker for a session whose id a double
  # cannot hold (0x109fd57312e30d21), with the recording host's clock offset
  # set so that seq 1 (sent at 1 s on the publisher's monotonic clock) left at
  # 12:00:00.5 on the wall clock, half a second before its capture; seq 2
  # claims a send time 2 minutes after its capture (its publisher's clock is
  # not the recorder's: no wall clock); then a gap (3 to 6) and its image.
  local sess="21 0d e3 12 73 d5 9f 10" offset=1767355199500000000
  local mk="$(ascii MDCREC01)"
  { packet_at "2026-01-02 12:00:01" "$mk 02 00 00 00 00 00 00 00 $sess $(le $offset 8)"
    packet_at "2026-01-02 12:00:01" "4d 43 02 00 $(le 3 2) $(le 1 2) $sess $(le 1 8) $(le 1000000000 8) $(le 60 2)" \
      "$(le 9 2) 00 00 00 00 $(le 20 2) 04 00 $(le 4 4) $(le 1 4) $(le 77 8)"
    packet_at "2026-01-02 12:00:02" "4d 43 02 00 $(le 3 2) $(le 1 2) $sess $(le 2 8) $(le 121000000000 8) $(le 60 2)" \
      "$(le 9 2) 00 00 00 00 $(le 20 2) 04 00 $(le 4 4) $(le 2 4) $(le 78 8)"
    packet_at "2026-01-02 12:00:03" "$mk 01 00 00 00 00 00 00 00 $(le 3 8) $(le 7 8)"
    packet_at "2026-01-02 12:00:03" "$mk 03 00 00 00 00 00 00 00 $(le 7 8) $(le 1 8) $(le 16 2) 06 00 $(le 4 4)" \
      "$(le 3 4) 01 00 00 00"; } >"$d/rec.txt"
  TZ=UTC text2pcap -q -F pcap -t "$AT" -u 7470,7470 "$d/rec.txt" "$d/rec.pcap" >>"$d/tools.log" 2>&1 ||
    fail "text2pcap failed: $(tail -2 "$d/tools.log")"
  mergecap -F pcap -a -w "$d/good.pcap" "$d/udp.pcap" "$d/tcp.pcap" "$d/rec.pcap" >>"$d/tools.log" 2>&1 ||
    fail "mergecap failed: $(tail -2 "$d/tools.log")"

  local fields=()
  while read -r f; do fields+=(-e "$f"); done < <("$DECODE" --fields)
  "${TSHARK[@]}" -r "$d/good.pcap" -Y 'mdcast || mdcast_ctl || mdcast_ann || mdcast_rec' -T fields -E occurrence=a -E aggregator='|' \
    -e frame.number "${fields[@]}" >"$d/good.tshark" 2>/dev/null
  "$DECODE" --summary "$d/good.summary" "$d/good.pcap" >"$d/good.mdcast" 2>"$d/good.log" || fail "decoder failed"
  diff "$d/good.mdcast" "$d/good.tshark" >"$d/good.diff" ||
    { head -6 "$d/good.diff" | cut -c1-600; fail "crafted: the dissector and mdcast decode differently"; }
  [ "$(count "$d/good.summary" malformed)" = 0 ] || { cat "$d/good.log"; fail "crafted: mdcast finds malformed input"; }
  [ "$(wc -l <"$d/good.tshark")" = 15 ] || fail "crafted: $(wc -l <"$d/good.tshark") of 15 packets decoded"
  local t
  for t in msg.opaque msg.fragment msg.unknown msg.heartbeat ctl.unsubscribe ctl.snapshot-request ctl.retransmit-request \
           ctl.error ctl.auth-hello ctl.auth-proof ctl.session-query announcements; do
    [ "$(count "$d/good.summary" "$t")" -gt 0 ] || fail "crafted: no $t decoded"
  done
  expect_fields() {  # expect_fields FILTER FIELD VALUE
    local got
    got=$("${TSHARK[@]}" -r "$d/good.pcap" -Y "$1" -T fields -E occurrence=a -e "$2" 2>/dev/null | head -1)
    [ "$got" = "$3" ] || fail "crafted: $2 is '$got' in '$1', want '$3'"
  }
  expect_fields 'mdcast.seq == 5' mdcast.crc.status 1
  expect_fields 'mdcast.seq == 5' mdcast.msg.price 1234500
  expect_fields 'mdcast.seq == 5' mdcast.msg.order_id 1001,999
  expect_fields 'mdcast.msg.type == 1' mdcast.msg.symbol ABCDEFGHIJKLMNOP
  expect_fields 'mdcast.msg.type == 1' mdcast.msg.price_scaled 123.45
  expect_fields 'mdcast.msg.type == 8' mdcast.flags.end_of_session 1
  expect_fields 'mdcast.ctl.type == 10' mdcast.ctl.text "not entitled to 7"
  expect_fields 'mdcast.ctl.type == 4' mdcast.ctl.from_seq 3
  # Session ids exact, wall-clock send times from the recording's offset, and
  # summaries that give each frame's key values.
  expect_fields 'mdcast.rec.kind == 2' mdcast.rec.session 0x109fd57312e30d21
  expect_fields 'mdcast.rec.kind == 2' mdcast.rec.clock_offset $offset
  expect_fields 'mdcast.seq == 1' mdcast.session 0x109fd57312e30d21
  expect_fields 'mdcast.seq == 1' mdcast.send_wall "Jan  2, 2026 12:00:00.500000000 UTC"
  expect_fields 'mdcast.seq == 2 && mdcast.expert.foreign_clock' mdcast.send_wall ""
  [ "$(matching "$d/good.pcap" 'mdcast.seq == 2 && mdcast.expert.foreign_clock')" = 1 ] ||
    fail "crafted: a send time after its capture is not flagged as another host's clock"
  expect_fields 'mdcast.rec.kind == 1' mdcast.rec.first_missing 3
  expect_fields 'mdcast.rec.kind == 1' mdcast.rec.next_seq 7
  expect_fields 'mdcast.rec.kind == 3' mdcast.rec.last_frame 1
  expect_fields 'mdcast.rec.kind == 2' _ws.col.Info "mdcast recording: session 0x109fd57312e30d21 begins"
  expect_fields 'mdcast.rec.kind == 1' _ws.col.Info "mdcast recording: gap, sequences 3 to 6 replaced by a snapshot"
  expect_fields 'mdcast.rec.kind == 3' _ws.col.Info "mdcast recording: image before sequence 7, 1 messages (last)"
  expect_fields 'mdcast.ctl.type == 4' _ws.col.Info "mdcast RetransmitRequest session 0x0a0b0c0d0e0f1011, seq 3-4"
  expect_fields 'mdcast.ctl.type == 6' _ws.col.Info "mdcast SnapshotRequest all instruments"
  expect_fields 'mdcast.ctl.type == 3' _ws.col.Info "mdcast AuthProof; Unsubscribe 2 instruments 5,6"
  expect_fields 'mdcast.ctl.type == 10' _ws.col.Info "mdcast SessionQuery; Error 3 not entitled: not entitled to 7"
  expect_fields 'mdcast.ctl.type == 11' _ws.col.Info "mdcast AuthHello ch 3, identity desk-a"
  expect_fields 'mdcast.ann.channel == 3' mdcast.ann.address tcp:10.2.2.2:7471
  expect_fields 'mdcast.ann.channel == 4' mdcast.ann.signature "$(for i in $(seq 0 63); do printf '%02x' $((i * 3 % 256)); done)"
  [ "$(matching "$d/good.pcap" '_ws.expert.severity == error')" = 0 ] || fail "crafted: errors on good input"
  note "crafted: every message and frame kind the feed does not send decodes identically; §5's example checks its CRC;"
  note "crafted: exact session ids, wall-clock send times (and a foreign clock flagged), gap ranges, frame summaries"

  # Malformed: a flipped CRC byte, a count one too many, a message overrunning
  # its datagram, an unknown flag, a length field short of the bytes, a
  # truncated header, a bad announcement, an impossible frame length.
  packet 4d 43 02 02 01 00 02 00 04 03 02 01 00 00 00 00 05 00 00 00 00 00 00 00 00 ca 9a 3b 00 00 00 00 \
    60 00 01 00 42 2e eb 94 24 00 02 00 07 00 00 00 2a 00 00 00 e9 03 00 00 00 00 00 00 44 d6 12 00 \
    00 00 00 00 2c 01 00 00 01 00 00 00 14 00 04 00 07 00 00 00 2b 00 00 00 e7 03 00 00 00 00 00 00 >"$d/bad.txt"
  packet "$(dgram 0 2 7 56 "$(le 16 2) 06 00 $(le 4 4) $(le 3 4) 02 00 00 00")" >>"$d/bad.txt"
  packet "$(dgram 0 1 8 56 "$(le 36 2) 06 00 $(le 4 4) $(le 3 4) 02 00 00 00")" >>"$d/bad.txt"
  packet "$(dgram 64 1 9 56 "$(le 16 2) 06 00 $(le 4 4) $(le 3 4) 02 00 00 00")" >>"$d/bad.txt"
  packet "$(dgram 0 1 10 50 "$(le 16 2) 06 00 $(le 4 4) $(le 3 4) 02 00 00 00")" >>"$d/bad.txt"
  packet 4d 43 02 00 01 00 >>"$d/bad.txt"
  packet 4d 41 01 40 $(le 3 2) 00 00 11 10 0f 0e 0d 0c 0b 0a $(ascii tcp:1) >>"$d/bad.txt"
  text2pcap -q -F pcap -u 40001,7470 "$d/bad.txt" "$d/badu.pcap" >>"$d/tools.log" 2>&1 ||
    fail "text2pcap failed: $(tail -2 "$d/tools.log")"
  packet "$(le 5 4) 04 02 00 00 $(le 9 4) 00 00 00 00" >"$d/badt.txt"
  text2pcap -q -F pcap -T 40002,7471 "$d/badt.txt" "$d/badt.pcap" >>"$d/tools.log" 2>&1 ||
    fail "text2pcap failed: $(tail -2 "$d/tools.log")"
  mergecap -F pcap -a -w "$d/bad.pcap" "$d/badu.pcap" "$d/badt.pcap" >>"$d/tools.log" 2>&1 ||
    fail "mergecap failed: $(tail -2 "$d/tools.log")"
  [ "$(matching "$d/bad.pcap" '_ws.lua.error')" = 0 ] || fail "crafted: Lua errors on malformed input"
  local e
  for e in bad_crc bad_count bad_message bad_flags bad_length short bad_announcement bad_stream; do
    [ "$(matching "$d/bad.pcap" "mdcast.expert.$e")" -gt 0 ] || fail "crafted: malformed input without expert $e"
  done
  "$DECODE" --summary "$d/bad.summary" "$d/bad.pcap" >/dev/null 2>"$d/bad.log" || fail "decoder failed on malformed input"
  [ "$(count "$d/bad.summary" malformed)" -ge 7 ] || fail "crafted: mdcast counts $(count "$d/bad.summary" malformed) malformed"
  note "crafted: 8 kinds of malformed input each raise their expert item; mdcast counts them malformed"
}

# Installed as tools/wireshark/README.md says (both files in the personal
# plugin folder, which Wireshark loads one by one): the control frames'
# fields register too, and nothing fails to load.
check_install() {
  local plugins="$WORK/home/.local/lib/wireshark/plugins"
  mkdir -p "$plugins"
  cp "$(dirname "$LUA")"/mdcast*.lua "$plugins/"
  HOME="$WORK/home" tshark -G fields >"$WORK/installed.fields" 2>"$WORK/installed.log" || true
  ! grep -i "lua" "$WORK/installed.log" || fail "the installed dissector does not load (above)"
  grep -q $'\tmdcast.ctl.type\t' "$WORK/installed.fields" && grep -q $'\tmdcast.send_wall\t' "$WORK/installed.fields" ||
    fail "the dissector installed in a plugin folder registers no mdcast fields"
  note "installed in a plugin folder (mdcast.lua and mdcast_ctl.lua), it loads whole"
}

check_field_coverage
check_install
crafted

if [ -n "$RECORDING" ]; then
  [ -f "$RECORDING" ] || fail "no recording at $RECORDING"
  compare "$RECORDING" recording 100 0
  exit 0
fi

command -v tcpdump >/dev/null || skip "tcpdump is not installed (scripts/install-deps.sh)"
DPORT=$((20000 + $$ % 20000))
GROUP="239.77.12.$((1 + $$ % 250)):$DPORT"
CPORT=$((47000 + $$ % 900))
while ss -Hltn "sport = :$CPORT" 2>/dev/null | grep -q .; do CPORT=$((CPORT + 1)); done
CAP="$WORK/live.pcap"
user=(); [ "$(id -u)" = 0 ] && user=(-Z root)  # keep root's write access to $WORK
tcpdump -i lo -n -U -s 0 "${user[@]}" -w "$CAP" "udp port $DPORT or tcp port $CPORT" >"$WORK/tcpdump.log" 2>&1 &
TCPDUMP=$!
PIDS+=("$TCPDUMP")
for _ in $(seq 100); do
  grep -q "listening on" "$WORK/tcpdump.log" && break
  kill -0 "$TCPDUMP" 2>/dev/null || skip "tcpdump cannot capture on lo: $(tail -1 "$WORK/tcpdump.log")"
  sleep 0.05
done
grep -q "listening on" "$WORK/tcpdump.log" || fail "tcpdump did not start in 5 s: $(tail -1 "$WORK/tcpdump.log")"

# A feed with secrets, so that the authentication frames travel too: desk-a
# may have everything, desk-b instruments 0-9 (its retransmissions are
# FILTERED copies). Both drop 5 %; a third joins once the feed's start is
# gone from the publisher's retransmit ring (a snapshot);
# a client without a secret is refused (an Error frame).
umask 077
"$MDCAST" secret new --identity desk-a >"$WORK/pub.secrets"
"$MDCAST" secret new --identity desk-b --instruments 0-9 >>"$WORK/pub.secrets"
grep desk-a "$WORK/pub.secrets" >"$WORK/desk-a.secret"
grep desk-b "$WORK/pub.secrets" >"$WORK/desk-b.secret"
udp=(--medium udp --udp-group "$GROUP" --interface lo --idle block)
a=(--identity desk-a --secret-file "$WORK/desk-a.secret")
# A long feed (room for the late joiner on a loaded host) at a modest rate in
# datagrams filled for up to 1 ms: few messages and packets (tshark's work).
start_bg pub publish "${udp[@]}" --set "udp.control_port=$CPORT" --crc --rate 10k --duration 120s --instrument-count 50 \
  --flush-interval 1ms --secrets "$WORK/pub.secrets" --retransmit-bytes 1MiB --wait-subscribers 2 --linger 1s \
  --result "$WORK/pub.toml"
wait_log pub '^mdcast publish: UDP multicast .*control tcp:' 30  # its start line: it announces itself from now on
start_bg sub1 subscribe "${udp[@]}" "${a[@]}" --inject-loss 0.05 --result "$WORK/sub1.toml"
start_bg sub2 subscribe "${udp[@]}" --identity desk-b --secret-file "$WORK/desk-b.secret" --instruments 0-9 \
  --inject-loss 0.05 --result "$WORK/sub2.toml"
start_bg open subscribe "${udp[@]}" --wait 5s  # no secret: refused (after the publisher's delay for failures)
# The third joins once the feed's start is gone from the 1 MiB retransmit ring
# (a slot per datagram of up to 1472 B: at most 712 of them; once more were
# sent the first is overwritten, however long that took), so it cannot be
# retransmitted: a snapshot. The feed runs until it has had the snapshot, then
# is stopped cleanly (SIGTERM), however long a loaded host took to start it.
wait_stat "$PID_pub" pub.datagrams_sent $((1024 * 1024 / 1472 + 1)) 60 ||
  fail "the publisher did not send the 712 datagrams its retransmit ring holds within 60 s: $(tail -1 "$WORK/pub.log")"
start_bg sub3 subscribe "${udp[@]}" "${a[@]}" --result "$WORK/sub3.toml"
wait_stat "$PID_sub3" sub.snapshots_applied 1 60 || fail "the late subscriber had no snapshot in 60 s"
kill -TERM "$PID_pub"
rc=0; wait_rc "$PID_open" 60 || rc=$?
[ "$rc" != 0 ] || fail "a client without a secret subscribed"
[ "$rc" != 124 ] || fail "the client without a secret was neither refused nor gave up in 60 s"
for i in 1 2 3; do eval wait_pid \$PID_sub$i 60 || fail "subscriber $i exited non-zero"; done
wait_pid "$PID_pub" 30 || fail "publisher exited non-zero"
# Every process is gone, so every connection is closed: before tcpdump stops,
# its capture holds each one's close (a FIN from both ends, or a reset).
capture_closed() {
  tshark -n -r "$CAP" -Y tcp -T fields -e tcp.stream -e ip.src -e tcp.srcport -e tcp.flags.fin -e tcp.flags.reset \
    2>/dev/null | awk -F'\t' '
      { seen[$1] = 1 }
      $4 == 1 || $4 == "True" { if (!(($1, $2, $3) in fin)) { fin[$1, $2, $3] = 1; fins[$1]++ } }
      $5 == 1 || $5 == "True" { rst[$1] = 1 }
      END { for (s in seen) if (!rst[s] && fins[s] < 2) { open_++ }; exit (open_ > 0) }'
}
i=0
until capture_closed; do
  sleep 0.1; i=$((i + 1))
  [ $i -le 300 ] || fail "tcpdump's capture holds no close of some TCP connection 30 s after every process ended"
done
kill -INT "$TCPDUMP"
wait_pid "$TCPDUMP" 10 || true
grep -qE "^0 packets dropped by kernel" "$WORK/tcpdump.log" ||
  fail "tcpdump lost packets, the capture is not whole: $(grep dropped "$WORK/tcpdump.log" | paste -sd' ' -)"
note "captured $(grep 'packets captured' "$WORK/tcpdump.log")"
# MDCAST_KEEP_CAPTURE=FILE keeps the capture (to open in Wireshark, or as a fixture).
if [ -n "${MDCAST_KEEP_CAPTURE:-}" ]; then cp "$CAP" "$MDCAST_KEEP_CAPTURE"; fi

compare "$CAP" live 100 1  # (not how many 8 s make on a loaded host: that there are datagrams)
# Prices scaled as InstrumentDefinition says (the synthetic feed: 10^-4).
bad=$("${TSHARK[@]}" -o "mdcast.data_ports:$DPORT" -r "$CAP" -Y 'mdcast.msg.type == 2' -T fields -E occurrence=f \
  -e mdcast.msg.price -e mdcast.msg.price_scaled 2>/dev/null |
  awk -F'\t' '{n++; d = $1 / 10000 - $2; if (d < 0) d = -d; if (d > 1e-6 * ($2 < 0 ? -$2 : $2) + 1e-9) bad++}
              END {if (n == 0) print "none"; else print bad + 0}')
[ "$bad" = 0 ] || fail "scaled prices disagree with price x 10^-4: $bad"
note "scaled prices are the raw prices x 10^-4, as the feed's InstrumentDefinitions say"
note "the dissector decodes the live UDP feed exactly as mdcast does"
