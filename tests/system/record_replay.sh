#!/usr/bin/env bash
# mdcast record / mdcast replay (docs/recording.md): a session recorded over
# shm (by a recorder losing 1 %, so recovered datagrams are recorded too) is a pcap file tcpdump and tshark read (every frame, checksums good);
# replayed to a new subscriber its books are identical to the original
# publisher's; a cut copy and a copy with one flipped byte are reported with
# the offset and what comes before is still replayed; a recording rotated by
# size replays in order; snapshots in a recording (a late or lapped recorder)
# are replayed through; --from SEQ starts later; a UDP feed on lo records too
# (and tcpreplay, where installed, sends that recording back onto lo).
source "$(dirname "$0")/lib.sh"

# publish_recorded TAG ARGS...: one shm session (publisher waits for the
# recorder), recorded into $WORK/TAG.NNNN.pcap; publisher result $WORK/TAG-pub.toml.
publish_recorded() {
  local tag=$1; shift
  start_bg "$tag-pub" publish --name "$NAME-$tag" --rate 20k --duration 2s --instrument-count 50 --idle block \
    --wait-subscribers 1 --result "$WORK/$tag-pub.toml"
  start_bg "$tag-rec" record --name "$NAME-$tag" --idle block --out "$WORK/$tag" --index-every 64 \
    --result "$WORK/$tag-rec.toml" "$@"
  eval wait_pid \$PID_${tag}_rec 60 || fail "recorder ($tag) exited non-zero"
  eval wait_pid \$PID_${tag}_pub 30 || fail "publisher ($tag) exited non-zero"
}

# verify_original PUB SUB: SUB's books against the original publisher's. The
# replay is a session of its own: the books alone are compared.
verify_original() { "$MDCAST" verify --content "$1" "$2"; }

# replay_to TAG EXPECT_RC REPLAY_ARGS...: replays into a new subscriber over shm;
# its result $WORK/TAG-sub.toml, the replay's log $WORK/TAG-replay.log.
replay_to() {
  local tag=$1 want=$2; shift 2
  start_bg "$tag-replay" replay --name "$NAME-r$tag" --idle block --wait-subscribers 1 --linger 2s \
    --result "$WORK/$tag-rep.toml" "$@"
  start_bg "$tag-sub" subscribe --name "$NAME-r$tag" --idle block --result "$WORK/$tag-sub.toml"
  local rc=0
  eval wait_pid \$PID_${tag}_replay 60 || rc=$?
  [ "$rc" = "$want" ] || fail "replay ($tag) exited $rc, expected $want"
  eval wait_pid \$PID_${tag}_sub 60 || fail "subscriber of replay ($tag) exited non-zero"
}

# ---------------------------------------------------------------- a session --
# The recorder loses 1 % on arrival: what it recovers is recorded in its place.
publish_recorded a --set subscriber.inject_loss=0.01
[ "$(toml_get "$WORK/a-rec.toml" sub.datagrams_recovered)" -gt 0 ] || fail "the recorder recovered nothing"
grep -q "0 gap marker(s), 0 not recorded" "$WORK/a-rec.log" || fail "recorder lost something: $(tail -1 "$WORK/a-rec.log")"
datagrams=$(toml_get "$WORK/a-pub.toml" last_sequence)
messages=$(toml_get "$WORK/a-pub.toml" messages)
[ "$(toml_get "$WORK/a-rec.toml" rec.datagrams)" = "$datagrams" ] || fail "recorded $(toml_get "$WORK/a-rec.toml" rec.datagrams) of $datagrams datagrams"
"$MDCAST" verify "$WORK/a-pub.toml" "$WORK/a-rec.toml" >/dev/null || fail "the recorder's own books differ"
file="$WORK/a.0000.pcap"
[ -f "$file" ] && [ -f "$file.idx" ] || fail "no $file or its index"
# Frames: one per datagram, and one marker naming the session at the start.
frames=$((datagrams + 1))
if command -v tcpdump >/dev/null; then
  n=$(tcpdump -nr "$file" 2>/dev/null | wc -l)
  [ "$n" = "$frames" ] || fail "tcpdump -r reads $n frames, expected $frames"
  tcpdump -c 1 -nr "$file" 2>/dev/null | grep -q "> 239.77.1.1.7470: UDP" || fail "frames not to 239.77.1.1.7470"
  note "tcpdump reads all $n frames"
else
  note "tcpdump not installed: frame count not checked"
fi
if command -v tshark >/dev/null; then
  tshark -r "$file" -o ip.check_checksum:TRUE -o udp.check_checksum:TRUE >"$WORK/tshark.txt" 2>"$WORK/tshark.err" || fail "tshark -r failed: $(cat "$WORK/tshark.err")"
  [ "$(wc -l <"$WORK/tshark.txt")" = "$frames" ] || fail "tshark reads $(wc -l <"$WORK/tshark.txt") frames, expected $frames"
  if grep -qiE "malformed|incorrect|bad checksum" "$WORK/tshark.txt"; then fail "tshark complains: $(grep -iE -m1 'malformed|incorrect|bad' "$WORK/tshark.txt")"; fi
  tshark -r "$file" -c 1 -T fields 2>/dev/null -e frame.time_epoch | grep -qE '\.[0-9]{9}$' || fail "no nanosecond timestamps"
  note "tshark reads all frames: no malformed frame, IPv4 and UDP checksums good, nanosecond times"
else
  note "tshark not installed: frames not dissected"
fi

# ------------------------------------------------ replay: identical books --
replay_to full 0 --speed 1 "$file"
[ "$(toml_get "$WORK/full-sub.toml" messages)" = "$messages" ] || fail "replay delivered $(toml_get "$WORK/full-sub.toml" messages) of $messages"
"$MDCAST" verify "$WORK/full-rep.toml" "$WORK/full-sub.toml" >/dev/null || fail "the replay's subscriber differs from the replay"
verify_original "$WORK/a-pub.toml" "$WORK/full-sub.toml" | tee "$WORK/verify-full.log" || fail "replayed books differ from the original publisher's"
note "replay at the recorded pace: $messages messages, books identical to the original publisher's"
# Without --content the sessions differ, and verify says so (and what to use);
# a book changed in the subscriber's result is a difference with --content too.
rc=0; "$MDCAST" verify "$WORK/a-pub.toml" "$WORK/full-sub.toml" >"$WORK/verify-session.log" || rc=$?
[ "$rc" = 1 ] && grep -q "DIFFERENT (subscriber ended in session .*verify --content" "$WORK/verify-session.log" ||
  fail "verify of a replay without --content: exit $rc, $(cat "$WORK/verify-session.log")"
# The first book with state ("ID" = [SEQ > 0, "CHECKSUM"]) gets another checksum.
sed -E '0,/^("[0-9]+" = \[[1-9][0-9]*, ")[0-9a-f]{16}("\])$/ s//\10000000000000bad\2/' "$WORK/full-sub.toml" \
  >"$WORK/tampered-sub.toml"
! cmp -s "$WORK/full-sub.toml" "$WORK/tampered-sub.toml" || fail "the tampered copy is no different"
rc=0; "$MDCAST" verify --content "$WORK/a-pub.toml" "$WORK/tampered-sub.toml" >"$WORK/verify-tampered.log" || rc=$?
[ "$rc" = 1 ] && grep -q "DIFFERENT (instrument [0-9]*: book checksum differs" "$WORK/verify-tampered.log" ||
  fail "verify --content of a tampered result: exit $rc, $(cat "$WORK/verify-tampered.log")"
note "verify --content: identical for the replay, different for a tampered book; without it, the sessions differ"

# pcapng (what Wireshark saves) replays too.
if command -v editcap >/dev/null; then
  editcap -F pcapng "$file" "$WORK/a.pcapng"
  replay_to ng 0 --speed max "$WORK/a.pcapng"
  verify_original "$WORK/a-pub.toml" "$WORK/ng-sub.toml" >/dev/null || fail "the pcapng copy replayed: books differ"
  note "a pcapng copy (editcap -F pcapng) replays: books identical"
fi

# ----------------------------------------------------------------- damage --
size=$(stat -c %s "$file")
# Cut inside a record about 2/3 of the way in (a cut at a record's end
# would leave a shorter file that is whole): the middle of the record that
# spans 2/3 of the file, found by walking the pcap record headers.
cut_at=$(python3 - "$file" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
end = 'big' if data[:4] in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d") else 'little'
at, goal = 24, len(data) * 2 // 3
while at + 16 <= len(data):
    n = int.from_bytes(data[at + 8:at + 12], end)
    if at + 16 + n > goal:
        print(at + 16 + n // 2)
        break
    at += 16 + n
PY
)
[ -n "$cut_at" ] || fail "no record found 2/3 into $file ($size bytes)"
head -c "$cut_at" "$file" >"$WORK/cut.pcap"
replay_to cut 1 --speed max "$WORK/cut.pcap"
grep -qE "cut.pcap: offset [0-9]+: " "$WORK/cut-replay.log" || fail "the cut file's error names no offset: $(grep -m1 damaged "$WORK/cut-replay.log")"
got=$(toml_get "$WORK/cut-sub.toml" messages)
# Bytes are not messages (datagrams carry 1 to dozens, with the load), so what
# is asserted is: some replayed, not all, and the replay says through which
# recorded sequence.
through=$(grep -m1 -oE 'through recorded sequence [0-9]+' "$WORK/cut-replay.log" | grep -oE '[0-9]+$' || echo 0)
[ "$got" -gt 0 ] && [ "$got" -lt "$messages" ] && [ "$through" -gt 0 ] ||
  fail "cut file: $got of $messages messages replayed (through recorded sequence $through)"
note "cut file: $(grep -m1 -o 'offset [0-9]*: [^;]*' "$WORK/cut-replay.log"); $got messages before it replayed"

# A flipped byte inside the payload of the frame the middle index entry points
# at (how many entries there are depends on how many datagrams the load made).
entries=$(( ($(stat -c %s "$file.idx") - 16) / 24 ))
[ "$entries" -ge 3 ] || fail "the index of $file has $entries entries, too few to flip a byte between them"
entry=$((entries / 2))
off=$(od -An -t u8 -j $((16 + 24 * entry + 8)) -N 8 "$file.idx" | tr -d ' ')
seq=$(od -An -t u8 -j $((16 + 24 * entry)) -N 8 "$file.idx" | tr -d ' ')
cp "$file" "$WORK/flip.pcap"
printf '\xff' | dd of="$WORK/flip.pcap" bs=1 seek=$((off + 16 + 42 + 45)) conv=notrunc status=none
replay_to flip 1 --speed max "$WORK/flip.pcap"
grep -q "flip.pcap: offset $off: .*checksum" "$WORK/flip-replay.log" || fail "flipped byte at record $off not reported: $(grep -m1 damaged "$WORK/flip-replay.log")"
grep -q "through recorded sequence $((seq - 1))" "$WORK/flip-replay.log" || fail "not everything before sequence $seq replayed"
note "flipped byte: reported at offset $off (sequence $seq), sequences before it replayed"

# --------------------------------------------------------------- rotation --
# The size is a sixth of what session a wrote: how many bytes a 2 s feed
# makes depends on how many messages the publisher packs per datagram, which
# depends on the machine's load.
abytes=$(stat -c %s "$WORK/a.0000.pcap")
rotate=$((abytes / 6))
publish_recorded b --rotate-size "$rotate"
nfiles=$(ls "$WORK"/b.*.pcap | wc -l)
total=$(cat "$WORK"/b.*.pcap | wc -c)
[ "$nfiles" -ge 3 ] || fail "--rotate-size $rotate made $nfiles file(s) of $total bytes in all (session a: $abytes bytes)"
last=$(ls "$WORK"/b.*.pcap | tail -1)
for f in "$WORK"/b.*.pcap; do
  [ -f "$f.idx" ] || fail "$f has no index"
  [ "$f" = "$last" ] || [ "$(stat -c %s "$f")" -ge "$rotate" ] || fail "$f rotated at $(stat -c %s "$f") bytes, before $rotate"
done
replay_to rot 0 --speed max "$WORK/b"
verify_original "$WORK/b-pub.toml" "$WORK/rot-sub.toml" >/dev/null || fail "rotated recording replayed: books differ"
note "rotation by size ($rotate bytes): $nfiles files, replayed in order, books identical"
# A file left out is a jump in the sequence; two sessions are two replays.
replay_to skip 1 --speed max "$WORK/b.0000.pcap" "$WORK/b.0002.pcap"
grep -q "b.0002.pcap: offset 24: the sequence jumps from " "$WORK/skip-replay.log" || fail "a missing file went unnoticed"
replay_to two 1 --speed max "$WORK/b.0000.pcap" "$WORK/a.0000.pcap"
grep -q "a.0000.pcap: offset 24: the recording goes on with another session" "$WORK/two-replay.log" ||
  fail "a second session went unnoticed"
note "a file left out of the rotation, a second session: reported where they begin, what came before replayed"

# --------------------------------------------------------------- snapshots --
# A recorder that joins late starts from a snapshot; one stopped while the
# publisher writes 6000 messages is lapped (320 KiB of records: 1024 of the
# largest, 256 bytes, ~2500 small ones) and resumes from one. Each
# gap is recorded with the books the snapshot gave, and the replay goes on
# through it: the books end as the original publisher's (their checksums; the
# instruments' sequences differ, the replay having cleared and re-added books).
books() { grep -E '^"[0-9]+" = \[[1-9]' "$1" | sed -E 's/\[[0-9]+, /[/' | sort; }
# The feed is long enough for every step below on a busy host; each step
# waits for the counter that says it happened, not for time.
start_bg s-pub publish --name "$NAME-s" --rate 20k --duration 12s --instrument-count 50 --idle block --shm-slots 1024 --set shm.max_datagram=256 \
  --retransmit-bytes 64K --result "$WORK/s-pub.toml"
wait_log s-pub "^mdcast publish: .*session [0-9a-f]{16}" 30
wait_published "$PID_s_pub" 6000  # more than the ring holds: a late recorder starts from a snapshot
start_bg s-rec record --name "$NAME-s" --idle block --out "$WORK/s" --result "$WORK/s-rec.toml"
wait_stat "$PID_s_rec" rec.datagrams 100 30 || fail "the late recorder recorded nothing in 30 s"
kill -STOP "$PID_s_rec"; wait_stopped "$PID_s_rec"
at=$(stat_value "$PID_s_pub" pub.messages_published)
wait_published "$PID_s_pub" $((at + 6000))  # laps the stopped recorder
kill -CONT "$PID_s_rec"
wait_pid "$PID_s_rec" 60 || fail "recorder (snapshots) exited non-zero"
wait_pid "$PID_s_pub" 30 || fail "publisher (snapshots) exited non-zero"
gaps=$(toml_get "$WORK/s-rec.toml" rec.gap_markers)
[ "$gaps" -ge 2 ] || fail "expected a gap at the start and one after the stop, the recording has $gaps"
[ "$(toml_get "$WORK/s-rec.toml" rec.image_frames)" -ge "$gaps" ] || fail "a gap without its image"
replay_to snap 0 --speed max "$WORK/s"
[ "$(toml_get "$WORK/snap-rep.toml" rep.gaps)" = "$gaps" ] || fail "the replay went through $(toml_get "$WORK/snap-rep.toml" rep.gaps) of $gaps gaps"
diff <(books "$WORK/s-pub.toml") <(books "$WORK/snap-sub.toml") >/dev/null ||
  fail "replayed across snapshots: the subscriber's books differ from the original publisher's"
note "$gaps recorded snapshots (late start, a lapped recorder): replayed through their images, book checksums identical"

# ------------------------------------------------------------ --from SEQ --
from=$((datagrams / 2))
replay_to from 0 --speed max --from "$from" "$file"
skipped=$(toml_get "$WORK/from-rep.toml" rep.skipped)
[ "$skipped" = $((from - 1)) ] || fail "--from $from skipped $skipped datagrams"
[ "$(toml_get "$WORK/from-rep.toml" rep.image_messages)" -gt 0 ] || fail "--from published no book image"
# Same orders in every book: the checksums agree (the instruments' sequences do not: a new session).
diff <(books "$WORK/a-pub.toml") <(books "$WORK/from-sub.toml") >/dev/null ||
  fail "--from $from: the subscriber's books differ from the original publisher's"
note "--from $from: $skipped datagrams rebuilt into a book image, the rest replayed; book checksums identical"

# -------------------------------------------------------------- over UDP --
GROUP="239.77.12.$((1 + $$ % 250)):$((20000 + $$ % 20000))"
udp=(--medium udp --udp-group "$GROUP" --interface lo --set udp.control_port=0 --idle block)
start_bg u-pub publish "${udp[@]}" --rate 20k --duration 1s --instrument-count 50 --wait-subscribers 1 --result "$WORK/u-pub.toml"
wait_log u-pub '^mdcast publish: UDP multicast .*control tcp:' 30  # it announces itself from now on
start_bg u-rec record "${udp[@]}" --out "$WORK/u"
wait_pid "$PID_u_rec" 60 || fail "recorder over UDP exited non-zero"
wait_pid "$PID_u_pub" 30 || fail "publisher over UDP exited non-zero"
if command -v tcpdump >/dev/null; then
  tcpdump -c 2 -nr "$WORK/u.0000.pcap" 2>/dev/null | tail -1 | grep -q "127.0.0.1.* > ${GROUP%:*}.${GROUP#*:}: UDP" ||
    fail "UDP frames not from the publisher to $GROUP: $(tcpdump -c 2 -nr "$WORK/u.0000.pcap" 2>/dev/null | tail -1)"
fi
# tcpreplay sends every frame of it back onto lo (to this test's own group).
if command -v tcpreplay >/dev/null && [ "$(id -u)" = 0 ]; then
  uframes=$(($(toml_get "$WORK/u-pub.toml" last_sequence) + 1))
  tcpreplay -i lo -t "$WORK/u.0000.pcap" >"$WORK/tcpreplay.log" 2>&1 || fail "tcpreplay failed: $(tail -3 "$WORK/tcpreplay.log")"
  grep -qE "Successful packets: +$uframes$" "$WORK/tcpreplay.log" || fail "tcpreplay did not send all $uframes frames"
  note "tcpreplay -i lo sends all $uframes frames"
else
  note "tcpreplay not installed (or not root): not tried"
fi
replay_to udp 0 --speed max "$WORK/u"
verify_original "$WORK/u-pub.toml" "$WORK/udp-sub.toml" >/dev/null || fail "UDP recording replayed over shm: books differ"
# ... and the shm recording replayed over UDP (another group) to a UDP subscriber.
GROUP2="239.77.13.$((1 + $$ % 250)):$((20000 + $$ % 20000))"
udp2=(--medium udp --udp-group "$GROUP2" --interface lo --set udp.control_port=0 --idle block)
start_bg ur-replay replay "${udp2[@]}" --speed max --wait-subscribers 1 --linger 2s --result "$WORK/ur-rep.toml" "$file"
wait_log ur-replay '^mdcast replay: UDP multicast .*control tcp:' 30
start_bg ur-sub subscribe "${udp2[@]}" --result "$WORK/ur-sub.toml"
wait_pid "$PID_ur_replay" 60 || fail "replay over UDP exited non-zero"
wait_pid "$PID_ur_sub" 60 || fail "subscriber of the replay over UDP exited non-zero"
verify_original "$WORK/a-pub.toml" "$WORK/ur-sub.toml" >/dev/null || fail "shm recording replayed over UDP: books differ"
note "over UDP on lo: recorded with the group's address and replayed over shm; the shm recording replayed over UDP; books identical"
