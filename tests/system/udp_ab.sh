#!/usr/bin/env bash
# An A/B feed over UDP on loopback: the publisher sends on two groups, a
# subscriber listens to both and loses rail A for 2 s (the feed runs until
# that cut has dropped 1,000 copies, then is stopped): it delivers every
# message with no gap and nothing recovered, rail B's copies filling in.
# Also: a subscriber with a wrong secret is refused and the other is not.
source "$(dirname "$0")/lib.sh"

PORT=$((20000 + $$ % 20000))
A="239.77.12.$((1 + $$ % 250)):$PORT"
B="239.77.13.$((1 + $$ % 250)):$PORT"
udp=(--medium udp --udp-group "$A" --rail-b "$B" --interface lo --set udp.control_port=0 --idle block)

umask 077
"$MDCAST" secret new --identity desk-a >"$WORK/pub.secrets"
cp "$WORK/pub.secrets" "$WORK/desk-a.secret"
"$MDCAST" secret new --identity desk-a >"$WORK/wrong.secret"

start_bg pub publish "${udp[@]}" --rate 30k --duration 120s --instrument-count 100 --secrets "$WORK/pub.secrets" \
  --wait-subscribers 2 --linger 1s --result "$WORK/pub.toml"
wait_log pub '^mdcast publish: UDP multicast .*control tcp:' 30  # its start line: it announces itself from now on
if "$MDCAST" subscribe "${udp[@]}" --identity desk-a --secret-file "$WORK/wrong.secret" --wait 5s >"$WORK/wrong.log" 2>&1; then
  fail "a subscriber with a wrong secret was let in"
fi
grep -q "publisher could not prove it knows the secret" "$WORK/wrong.log" || { cat "$WORK/wrong.log"; fail "no clear refusal"; }
# The other subscriber first: the feed starts when the A/B one subscribes.
# The feed runs until the A/B subscriber's cut (2 s to 4 s after its own
# start) has dropped 1,000 of rail A's copies, so rail B alone carried that
# many, then is stopped cleanly (SIGTERM): a feed of a fixed length would miss
# the cut on a host slow to subscribe.
start_bg plain subscribe "${udp[@]}" --identity desk-a --secret-file "$WORK/desk-a.secret" --result "$WORK/plain.toml"
wait_stat "$PID_pub" ctl.subscribes 1 30 || fail "the first subscriber never subscribed"
start_bg cut subscribe "${udp[@]}" --identity desk-a --secret-file "$WORK/desk-a.secret" \
  --set udp.cut_a_after=2s --set udp.cut_a_for=2s --result "$WORK/cut.toml"
wait_stat "$PID_cut" udp.rail_a_cut 1000 60 || fail "the A/B subscriber's cut dropped under 1,000 of rail A's datagrams in 60 s"
kill -TERM "$PID_pub"
wait_pid "$PID_cut" 60 || fail "the A/B subscriber exited non-zero"
wait_pid "$PID_plain" 60 || fail "the other subscriber exited non-zero"
wait_pid "$PID_pub" 30 || fail "publisher exited non-zero"

"$MDCAST" verify "$WORK/pub.toml" "$WORK/cut.toml" "$WORK/plain.toml" | tee "$WORK/verify.log"
published=$(toml_get "$WORK/pub.toml" messages)
for s in cut plain; do
  [ "$(toml_get "$WORK/$s.toml" messages)" = "$published" ] || fail "$s delivered $(toml_get "$WORK/$s.toml" messages) of $published"
done
cut=$(toml_get "$WORK/cut.toml" udp.rail_a_cut)
# (How many datagrams 2 s carry depends on the host's load: some did.)
[ "$cut" -gt 0 ] || fail "rail A's cut dropped no datagram"
# A gap may open while one rail runs ahead of the other; the other rail's copy
# fills it within reorder_wait (2 ms): nothing asked for, nothing lost.
# Unless the kernel itself dropped datagrams (a starved process overflows its
# socket buffers, rail B's too): then recovery is the right answer, not a fault.
recovered=$(toml_get "$WORK/cut.toml" sub.datagrams_recovered)
drops=$(toml_get "$WORK/cut.toml" udp.kernel_drops)
if [ "$recovered" != 0 ]; then
  [ "$drops" -gt 0 ] || fail "the A/B subscriber needed recovery ($recovered datagrams) with no kernel drops"
  note "the kernel dropped $drops datagrams (this host was too busy to read both rails): $recovered recovered"
fi
[ "$(toml_get "$WORK/cut.toml" sub.snapshots_applied)" = 0 ] || fail "the A/B subscriber needed a snapshot"
[ "$(toml_get "$WORK/cut.toml" sub.rail_b_first)" -gt 0 ] || fail "rail B never came first"
note "rail A cut for $cut datagrams: all $published messages, $(toml_get "$WORK/cut.toml" sub.gaps) gaps (filled by rail B), 0 recovered ($(toml_get "$WORK/cut.toml" sub.rail_b_first) first on rail B)"

# The demo of an A/B feed: its banner says what is done, never what will come
# of it (a banner that promised "nothing lost" was contradicted by a row), and
# its column counts rail copies missed, not data lost; no progress line shows
# more delivered than published.
PORT2=$((PORT + 1))
"$MDCAST" demo --medium udp --udp-group "239.77.17.$((1 + $$ % 250)):$PORT2" --rail-b "239.77.18.$((1 + $$ % 250)):$PORT2" \
  --cut-rail-a 1s --duration 4s --rate 10k -n 2 --linger 1s >"$WORK/demo-ab.log" 2>&1 ||
  { cat "$WORK/demo-ab.log"; fail "the A/B demo failed"; }
grep -q "RESULT: all 2 subscribers delivered every message exactly once" "$WORK/demo-ab.log" ||
  { cat "$WORK/demo-ab.log"; fail "the A/B demo did not verify"; }
! grep -qi "nothing lost\|nothing to recover" "$WORK/demo-ab.log" || fail "the A/B demo's banner predicts its outcome"
grep -q "subscriber 1 loses rail A for 1s from 2 s in" "$WORK/demo-ab.log" || fail "the A/B demo's banner does not say what is cut"
grep -qE "^subscriber +messages +gaps +missed +recovered" "$WORK/demo-ab.log" ||
  { cat "$WORK/demo-ab.log"; fail "the A/B demo's table counts lost datagrams, not missed rail copies"; }
grep -q "^missed: copies one rail's socket dropped" "$WORK/demo-ab.log" || fail "the A/B demo does not say what missed counts"
python3 - "$WORK/demo-ab.log" <<'PY' || fail "a progress line shows more delivered than published"
import re, sys
for l in open(sys.argv[1]):
    m = re.search(r"published +([\d,]+) msg .*delivered +[\d,]+\.\.([\d,]+)", l)
    if m and int(m.group(2).replace(",", "")) > int(m.group(1).replace(",", "")):
        print(l.strip()); sys.exit(1)
PY
note "A/B demo: banner and rows agree"
