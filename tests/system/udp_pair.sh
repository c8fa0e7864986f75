#!/usr/bin/env bash
# A publisher pair over UDP on loopback (docs/architecture.md, "Publisher
# pairs"): members A and B publish one session from one input (the same seed
# and settings, one message per datagram, so sequence n carries the same
# message whichever member sent it), A on group GA, B on group GB; three
# subscribers read GA as rail A and GB as rail B. A is killed (SIGKILL) while
# the feed runs; B goes on and ends the session. Every subscriber delivers
# everything B published with B's books, in one session (no reset), without
# a snapshot, and took datagrams first from both rails. Their counters show
# the takeover: rail A silent at the end (sub.rail_a_silences, one more than
# sub.rail_a_returns), rail B never or back each time, the time without data
# it cost (sub.silence_gap_ns, sub.longest_data_gap_ns), and the control
# connection moved to B where it was on A (udp.announce_left).
#
# PAIR_AUTH=1 (udp_pair_auth.sh): the same with secrets, so tagged data; both
# members derive the session's data key from one publisher.data_secret_file,
# so every subscriber checks either member's datagrams with the key it got
# from one of them: none dropped at the tag (sub.bad_tags 0). Both members
# also sign their announcements with one udp.announce_key_file and the
# subscribers hold its public key, so a subscriber on A moves to B the
# moment A's connection closes ("left: its connection failed"), not 2 s on.
#
# What this does not show yet: boundaries set by the input with batching
# (mdcast publish's synthetic source has no packets), and a restarted member
# rejoining.
source "$(dirname "$0")/lib.sh"

PORT=$((20000 + $$ % 20000))
GA="239.77.14.$((1 + $$ % 250)):$PORT"
GB="239.77.15.$((1 + $$ % 250)):$PORT"
SESSION=$(( ((RANDOM << 30) | (RANDOM << 15) | RANDOM) + 1 ))  # one per run: never reused
common=(--medium udp --interface lo --set udp.control_port=0 --idle block)
member=(publish "${common[@]}" --rate 5k --instrument-count 100 --seed 11 --flush-interval 0
        --set publisher.session=$SESSION --linger 3s)
SUB_AUTH=()
if [ "${PAIR_AUTH:-0}" = 1 ]; then
  umask 077
  "$MDCAST" secret new --identity desk-a >"$WORK/pub.secrets"
  cp "$WORK/pub.secrets" "$WORK/desk-a.secret"
  "$MDCAST" secret new --identity pair >"$WORK/pair.secret"
  "$MDCAST" secret new --identity announcer >"$WORK/announce.key"
  member+=(--secrets "$WORK/pub.secrets" --set publisher.data_secret_file="$WORK/pair.secret"
           --set udp.announce_key_file="$WORK/announce.key")
  SUB_AUTH=(--identity desk-a --secret-file "$WORK/desk-a.secret"
            --set udp.announce_public_key="$("$MDCAST" secret public "$WORK/announce.key")")
fi

for i in 0 1 2; do
  start_bg "sub$i" subscribe "${common[@]}" --udp-group "$GA" --rail-b "$GB" --wait 30s "${SUB_AUTH[@]}" \
    --set subscriber.pair_lag=1000000 --result "$WORK/sub$i.toml"
done
# A starts first and so stays ahead (each paces from its own start): rail A
# comes first until A dies, rail B after.
start_bg a "${member[@]}" --udp-group "$GA" --duration 60s --result "$WORK/a.toml"
wait_log a '^mdcast publish: UDP multicast .*control tcp:' 30
start_bg b "${member[@]}" --udp-group "$GB" --duration 120s --result "$WORK/b.toml"
wait_log b '^mdcast publish: UDP multicast .*control tcp:' 30
# Every subscriber has taken some of the feed from both members.
for i in 0 1 2; do
  pid=$(eval echo "\$PID_sub$i")
  wait_stat "$pid" sub.messages_delivered 5000 30 || fail "sub$i delivered too little before the kill"
done
kill -9 "$PID_a"
wait "$PID_a" 2>/dev/null || true  # (its "Killed" is what this test does)
note "member A killed at $(stat_value "$PID_sub0" sub.next_sequence) (sub0's next sequence)"
# B goes on: each subscriber sees rail A fall silent while B's rail carries
# on (after subscriber.publisher_timeout, 1 s). Then B, alone now, ends the
# session (SIGTERM): a B that ended on a timer could end before a loaded
# host's subscribers had counted the silence.
for i in 0 1 2; do
  wait_stat "$(eval echo "\$PID_sub$i")" sub.rail_a_silences 1 30 || fail "sub$i never counted rail A's silence"
done
kill -TERM "$PID_b"
wait_pid "$PID_b" 60 || fail "member B exited non-zero"
for i in 0 1 2; do
  wait_pid "$(eval echo "\$PID_sub$i")" 60 || fail "sub$i exited non-zero"
done

"$MDCAST" verify "$WORK/b.toml" "$WORK/sub0.toml" "$WORK/sub1.toml" "$WORK/sub2.toml" | tee "$WORK/verify.log"
published=$(toml_get "$WORK/b.toml" messages)
actl=$(grep -o 'control tcp:[^ ]*' "$WORK/a.log" | head -1 | cut -d' ' -f2)
bctl=$(grep -o 'control tcp:[^ ]*' "$WORK/b.log" | head -1 | cut -d' ' -f2)
for i in 0 1 2; do
  r="$WORK/sub$i.toml"
  [ "$(toml_get "$r" messages)" = "$published" ] || fail "sub$i delivered $(toml_get "$r" messages) of $published"
  [ "$(toml_get "$r" sub.session_changes)" = 0 ] || fail "sub$i changed session"
  [ "$(toml_get "$r" sub.snapshots_requested)" = 0 ] || fail "sub$i needed a snapshot"
  [ "$(toml_get "$r" sub.rail_a_first)" -gt 0 ] || fail "sub$i never took rail A (member A) first"
  [ "$(toml_get "$r" sub.rail_b_first)" -gt 0 ] || fail "sub$i never took rail B (member B) first"
  if [ "${PAIR_AUTH:-0}" = 1 ]; then
    [ "$(toml_get "$r" sub.bad_tags)" = 0 ] || fail "sub$i dropped $(toml_get "$r" sub.bad_tags) datagrams at the tag"
    [ "$(toml_get "$r" sub.untagged)" = 0 ] || fail "sub$i saw untagged datagrams"
  fi
  # A stall of this host longer than publisher_timeout may add a silence
  # that ends; the kill's never does, and rail B's always did.
  a_silent=$(toml_get "$r" sub.rail_a_silences) a_back=$(toml_get "$r" sub.rail_a_returns)
  b_silent=$(toml_get "$r" sub.rail_b_silences) b_back=$(toml_get "$r" sub.rail_b_returns)
  [ "$((a_silent - a_back))" = 1 ] || fail "sub$i: rail A silent $a_silent times, back $a_back: not silent at the end"
  [ "$b_silent" = "$b_back" ] || fail "sub$i: rail B (the survivor's) silent $b_silent times, back only $b_back"
  [ "$b_silent" = 0 ] || note "sub$i: rail B silent $b_silent times (this host stalled?)"
  gap=$(toml_get "$r" sub.silence_gap_ns) longest=$(toml_get "$r" sub.longest_data_gap_ns)
  [ "$gap" -gt 0 ] || fail "sub$i: rail A's silence cost no time without data (B was behind A)"
  [ "$longest" -ge "$gap" ] || fail "sub$i: longest time without data $longest ns below the silence's $gap ns"
  # A subscriber that heard B's announcement first was on B all along.
  moved=$(toml_get "$r" udp.announce_left)
  if grep -qF "names control $actl, not $bctl (in use)" "$WORK/sub$i.log"; then
    [ "$moved" = 0 ] || fail "sub$i, on B from the start, moved its control connection $moved times"
  else
    [ "$moved" -ge 1 ] || fail "sub$i never moved its control connection from A to B"
    if [ "${PAIR_AUTH:-0}" = 1 ]; then
      grep -qF "control $actl left: its connection failed (" "$WORK/sub$i.log" ||
        fail "sub$i, with the members' public key, did not leave A the moment its connection failed: $(grep -F "control $actl left" "$WORK/sub$i.log")"
    fi
  fi
  [ "$(toml_get "$r" udp.announce_unsigned)" = 0 ] || fail "sub$i dropped $(toml_get "$r" udp.announce_unsigned) unsigned announcements"
  [ "$(toml_get "$r" udp.announce_bad_signature)" = 0 ] || fail "sub$i dropped a member's announcement as badly signed"
  note "sub$i: rail A silent $a_silent time(s), costing $((gap / 1000)) us without data (longest $((longest / 1000)) us)"
  note "sub$i: $published messages, rail A first $(toml_get "$r" sub.rail_a_first), rail B first $(toml_get "$r" sub.rail_b_first), recovered $(toml_get "$r" sub.datagrams_recovered)"
done
