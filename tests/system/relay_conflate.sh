#!/usr/bin/env bash
# A conflating relay on this host: the origin publishes 50k msg/s over shared
# memory; `mdcast relay --conflate 100ms` subscribes to it and publishes, as
# a feed of its own, each changed instrument's book once per 100 ms; a
# subscriber reads that feed at ten points a second. The subscriber exits 0
# with the origin's books by state (`mdcast verify --state`: the checksums;
# its instrument sequences are the conflated feed's), never took a snapshot,
# and received far fewer messages than the origin published; the relay
# found no point whose books differed from the upstream's.
source "$(dirname "$0")/lib.sh"

NAME="conflate-$$"
start_bg slow subscribe --medium shm --name "$NAME-slow" --idle block --wait 60s --result "$WORK/slow.toml"
start_bg relay relay --medium shm --name "$NAME-slow" --conflate 100ms --idle block --linger 5s --wait-subscribers 1 \
  --from-medium shm --from-name "$NAME" --wait 60s --result "$WORK/relay.toml"
# The origin waits for the relay's subscription (its session probe, which
# subscribes to no instrument, does not count).
start_bg pub publish --medium shm --name "$NAME" --idle block --rate 50k --duration 3s --instrument-count 200 \
  --wait-subscribers 1 --linger 10s --result "$WORK/pub.toml"
wait_log relay '^mdcast relay: session [0-9a-f]+ from .* conflated every 100ms as session [0-9a-f]+ ' 60
wait_pid "$PID_slow" 120 || fail "the conflated feed's subscriber exited non-zero: $(tail -3 "$WORK/slow.log")"
wait_pid "$PID_relay" 60 || fail "the relay exited non-zero: $(tail -3 "$WORK/relay.log")"
wait_pid "$PID_pub" 60 || fail "the origin exited non-zero: $(tail -3 "$WORK/pub.log")"

"$MDCAST" verify --state "$WORK/pub.toml" "$WORK/slow.toml" "$WORK/relay.toml" | tee "$WORK/verify.log" ||
  fail "the conflated books differ from the origin's"
if "$MDCAST" verify "$WORK/pub.toml" "$WORK/slow.toml" >/dev/null; then
  fail "plain verify took the conflated feed for the origin's session"
fi
published=$(toml_get "$WORK/pub.toml" messages)
got=$(toml_get "$WORK/slow.toml" messages)
points=$(toml_get "$WORK/relay.toml" conflate.points)
[ "$published" -gt 0 ] || fail "nothing published"
[ "$(toml_get "$WORK/relay.toml" conflate.upstream_messages)" = "$published" ] ||
  fail "the relay conflated $(toml_get "$WORK/relay.toml" conflate.upstream_messages) of $published upstream messages"
[ "$(toml_get "$WORK/relay.toml" conflate.mismatches)" = 0 ] ||
  fail "conflate.mismatches $(toml_get "$WORK/relay.toml" conflate.mismatches): a point's books differed from the upstream's"
[ "${points:-0}" -ge 2 ] || fail "conflate.points $points: a 3 s feed at 100 ms has several"
[ "$got" -gt 0 ] && [ "$got" -lt "$published" ] || fail "the subscriber got $got messages of a $published-message feed"
[ "$(toml_get "$WORK/slow.toml" sub.snapshots_applied)" = 0 ] || fail "the conflated feed's subscriber took a snapshot"
[ "$(toml_get "$WORK/slow.toml" sub.checksum_mismatch)" = 0 ] || fail "the subscriber's books disagreed with the relay's heartbeats"
note "origin: $published messages; relay: $points points, $(toml_get "$WORK/relay.toml" conflate.instruments) instrument states"
note "the conflated feed's subscriber: $got messages, no snapshot, books identical to the origin's by state"
