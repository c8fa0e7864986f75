#!/usr/bin/env bash
# Entitlements at every hop: an authenticated origin over UDP (loopback)
# knows the relay by its own identity; the relay proves it upstream and asks
# its own subscribers, over shm, to prove theirs against its own secrets
# file. Secrets never travel: each hop holds only its lines. A desk entitled
# to all instruments gets the origin's books; one entitled to 0-9 gets those
# ten; a subscriber with no secret, and a relay with the wrong one upstream,
# are refused with the reason, and the feed goes on for everyone else.
source "$(dirname "$0")/lib.sh"

GROUP="239.77.13.$((1 + $$ % 250)):$((20000 + $$ % 20000))"
NAME="relay-auth-$$"
udp=(--medium udp --udp-group "$GROUP" --interface lo --set udp.control_port=0 --idle block)

umask 077
"$MDCAST" secret new --identity relay-1 >"$WORK/origin.secrets"
grep relay-1 "$WORK/origin.secrets" >"$WORK/relay-1.secret"
"$MDCAST" secret new --identity relay-1 >"$WORK/wrong.secret"  # the same identity, another secret
"$MDCAST" secret new --identity desk-a >"$WORK/down.secrets"
"$MDCAST" secret new --identity desk-b --instruments 0-9 >>"$WORK/down.secrets"
grep desk-a "$WORK/down.secrets" >"$WORK/desk-a.secret"
grep desk-b "$WORK/down.secrets" >"$WORK/desk-b.secret"
grep -q relay-1 "$WORK/down.secrets" && fail "the relay's downstream secrets hold its upstream identity"

start_bg sub_a subscribe --medium shm --name "$NAME" --idle block --wait 60s --identity desk-a \
  --secret-file "$WORK/desk-a.secret" --result "$WORK/sub_a.toml"
start_bg sub_b subscribe --medium shm --name "$NAME" --idle block --wait 60s --identity desk-b \
  --secret-file "$WORK/desk-b.secret" --instruments 0-9 --result "$WORK/sub_b.toml"
start_bg relay relay --medium shm --name "$NAME" --idle block --linger 5s --secrets "$WORK/down.secrets" \
  --wait-subscribers 2 --from-medium udp --from-udp-group "$GROUP" --from-interface lo --wait 60s \
  --from-identity relay-1 --from-secret-file "$WORK/relay-1.secret" --from-set subscriber.window_bytes=256M \
  --result "$WORK/relay.toml"
start_bg pub publish "${udp[@]}" --rate 20k --duration 3s --instrument-count 100 --secrets "$WORK/origin.secrets" \
  --wait-subscribers 1 --linger 5s --result "$WORK/pub.toml"
wait_log relay '^mdcast relay: session [0-9a-f]+ from ' 60

# While the feed runs: no secret downstream, the wrong one upstream.
if "$MDCAST" subscribe --medium shm --name "$NAME" --wait 10s >"$WORK/open.log" 2>&1; then
  fail "a subscriber without a secret was served by the relay"
fi
grep -qE "authenticated clients only" "$WORK/open.log" || { cat "$WORK/open.log"; fail "no reason for the refusal"; }
note "no secret downstream: $(grep -E 'authenticated clients only' "$WORK/open.log" | head -1)"
rc=0
"$MDCAST" relay --medium shm --name "$NAME-wrong" --idle block --from-medium udp --from-udp-group "$GROUP" \
  --from-interface lo --from-identity relay-1 --from-secret-file "$WORK/wrong.secret" --wait 10s \
  >"$WORK/wrong.log" 2>&1 || rc=$?
[ "$rc" = 3 ] || { cat "$WORK/wrong.log"; fail "a relay with the wrong secret upstream exited $rc, expected 3"; }
tail -1 "$WORK/wrong.log" | grep -qE "no upstream control plane confirmed a session .*: publisher could not prove it knows the secret for identity 'relay-1'" || { cat "$WORK/wrong.log"; fail "no reason"; }
note "wrong secret upstream: exit 3: $(tail -1 "$WORK/wrong.log")"

wait_pid "$PID_sub_a" 120 || fail "desk-a exited non-zero: $(tail -2 "$WORK/sub_a.log")"
wait_pid "$PID_sub_b" 120 || fail "desk-b exited non-zero: $(tail -2 "$WORK/sub_b.log")"
wait_pid "$PID_relay" 60 || fail "the relay exited non-zero: $(tail -3 "$WORK/relay.log")"
wait_pid "$PID_pub" 60 || fail "the origin exited non-zero"

"$MDCAST" verify "$WORK/pub.toml" "$WORK/sub_a.toml" "$WORK/sub_b.toml" "$WORK/relay.toml" | tee "$WORK/verify.log" ||
  fail "books differ from the origin's"
published=$(toml_get "$WORK/pub.toml" messages)
[ "$published" -gt 0 ] || fail "nothing published"
[ "$(toml_get "$WORK/sub_a.toml" messages)" = "$published" ] ||
  fail "desk-a delivered $(toml_get "$WORK/sub_a.toml" messages) of $published"
got_b=$(toml_get "$WORK/sub_b.toml" messages)
[ "$got_b" -gt 0 ] && [ "$got_b" -lt "$published" ] || fail "desk-b (instruments 0-9) delivered $got_b of $published"
grep -qE "sub_b.toml: identical \(10 instruments compared" "$WORK/verify.log" ||
  fail "desk-b's books are not the ten it is entitled to: $(grep sub_b "$WORK/verify.log")"
[ "$(toml_get "$WORK/relay.toml" relay.refused)" = 0 ] || fail "the relay refused messages"
note "origin: $published messages; the relay proved relay-1 upstream; desk-a all, desk-b $got_b (instruments 0-9); books identical"
