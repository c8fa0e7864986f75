#!/usr/bin/env bash
# The publisher's view of each subscriber and a subscriber's loss report,
# read by `mdcast stat` from another process while the feed runs: an
# authenticated shm feed, two subscribers (desk-a, desk-b) each losing 2 %
# of datagrams on arrival (subscriber.inject_loss). The publisher's table
# names both by identity with their gaps, retransmit requests,
# recoveries and the latency their applications reported; each subscriber's loss report lists gaps recovered by
# retransmission with their recovery times; --json and --prometheus carry
# the same (promtext_check.py, and promtool where installed). Then the
# publisher is stopped and every book compared.
source "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to read the JSON"; exit 77; }
CHECK="$(dirname "$0")/promtext_check.py"

umask 077
"$MDCAST" secret new --identity desk-a >"$WORK/pub.secrets"
"$MDCAST" secret new --identity desk-b >>"$WORK/pub.secrets"
grep desk-a "$WORK/pub.secrets" >"$WORK/desk-a.secret"
grep desk-b "$WORK/pub.secrets" >"$WORK/desk-b.secret"

start_bg pub publish --name "$NAME" --rate 20k --duration 120s --instrument-count 50 --secrets "$WORK/pub.secrets" \
  --wait-subscribers 2 --linger 2s --result "$WORK/pub.toml"
wait_ring
for d in a b; do
  start_bg "sub_$d" subscribe --name "$NAME" --identity "desk-$d" --secret-file "$WORK/desk-$d.secret" \
    --inject-loss 0.02 --result "$WORK/sub_$d.toml"
done

# Until the table shows both identities with a recovery and a reported
# latency each (the table is refreshed every 100 ms; status and latency
# reports come every 250 ms; "-" in the last column: no latency yet).
recovered() {  # IDENTITY: true when the publisher's row for it shows recoveries > 0 and a latency
  "$MDCAST" stat --subscribers "$PID_pub" 2>/dev/null |
    awk -v id="$1" '$3 == id && $10 > 0 && $NF != "-" { ok = 1 } END { exit !ok }'
}
i=0
until recovered desk-a && recovered desk-b; do
  kill -0 "$PID_pub" 2>/dev/null || fail "the publisher ended first"
  sleep 0.1; i=$((i + 1))
  [ $i -le 300 ] || fail "no recoveries and latency for both identities in 30 s: $("$MDCAST" stat --subscribers "$PID_pub")"
done
"$MDCAST" stat --subscribers "$PID_pub" | tee "$WORK/table.txt" | sed 's/^/   /'
grep -qE '^ +slot +chan +subscriber +position +lag +gaps +rtx req.* lat p50 +lat p99$' "$WORK/table.txt" || fail "no table header"
[ "$(grep -cE ' desk-[ab] ' "$WORK/table.txt")" = 2 ] || fail "the table does not show each identity once"
grep -qE ' pid [0-9]+ ' "$WORK/table.txt" && fail "an authenticated subscriber shows as a pid"
grep -qE ' desk-a .* [0-9.]+ (ns|us|ms|s) +[0-9.]+ (ns|us|ms|s)$' "$WORK/table.txt" || fail "desk-a's latency is not shown"
note "the publisher names both subscribers by identity, with their recoveries and reported latency"

# Each subscriber's loss report: gaps recovered by retransmission, timed.
for d in a b; do
  pid=$(eval echo "\$PID_sub_$d")
  "$MDCAST" stat --subscribers "$pid" >"$WORK/losses_$d.txt"
  grep -qE '^ +[0-9]+ gaps?' "$WORK/losses_$d.txt" || fail "desk-$d: no gap count: $(cat "$WORK/losses_$d.txt")"
  grep -qE ' retransmit +[0-9.]+ (us|ms|s) ' "$WORK/losses_$d.txt" ||
    fail "desk-$d: no gap recovered by retransmit with its time: $(head -8 "$WORK/losses_$d.txt")"
done
sed -n '1,6p' "$WORK/losses_a.txt" | sed 's/^/   /'
note "both loss reports list gaps recovered by retransmission with their recovery times"

"$MDCAST" stat --json "$PID_pub" "$PID_sub_a" >"$WORK/stat.json" || fail "stat --json exited $?"
python3 - "$WORK/stat.json" "$PID_pub" "$PID_sub_a" <<'PY' || fail "the JSON lacks the table or the loss report"
import json, sys
doc = json.load(open(sys.argv[1]))
procs = {p["pid"]: p for p in doc["processes"]}
pub, sub = procs[int(sys.argv[2])], procs[int(sys.argv[3])]
rows = {r["identity"]: r for r in pub["subscribers"]}
assert set(rows) == {"desk-a", "desk-b"}, rows
for r in rows.values():
    assert r["authenticated"] and r["subscribed"] and r["recoveries"] > 0 and r["retransmit_requests"] > 0, r
    assert isinstance(r["subscriber_pid"], int), r  # a Unix peer: the kernel names its pid
    assert r["status_age_ns"] is not None and r["status_age_ns"] < 5_000_000_000, r
    lat = r["latency"]
    assert lat is not None and lat["count"] > 0 and 0 < lat["p50_ns"] <= lat["p99_ns"] <= lat["max_ns"], r
assert rows["desk-a"]["subscriber_pid"] == int(sys.argv[3]), rows["desk-a"]
losses = sub["losses"]
assert losses and any(l["how"] == "retransmit" and l["recovery_ns"] > 0 for l in losses), losses[:3]
assert [l["gap"] for l in losses] == sorted(l["gap"] for l in losses)
PY
note "--json has both rows and the loss report"

"$MDCAST" stat --prometheus >"$WORK/stat.prom" || fail "stat --prometheus exited $?"
python3 "$CHECK" "$WORK/stat.prom" --require-labels pid,role,name,medium || fail "promtext_check refused the export"
for d in a b; do
  grep -qE "^mdcast_subscriber_recoveries_total\{pid=\"$PID_pub\",[^}]*identity=\"desk-$d\"[^}]*\} [1-9]" "$WORK/stat.prom" ||
    fail "no recoveries series for desk-$d"
  grep -qE "^mdcast_subscriber_latency_p99_seconds\{pid=\"$PID_pub\",[^}]*identity=\"desk-$d\"[^}]*\} [0-9]" "$WORK/stat.prom" ||
    fail "no reported latency series for desk-$d"
done
if command -v promtool >/dev/null; then
  out=$(promtool check metrics <"$WORK/stat.prom" 2>&1) || fail "promtool check metrics: $out"
  [ -z "$out" ] || fail "promtool check metrics: $out"
  note "promtool accepts the export"
fi

kill -TERM "$PID_pub"
wait_pid "$PID_pub" 60 || fail "the publisher exited non-zero after SIGTERM"
wait_pid "$PID_sub_a" 60 || fail "desk-a exited non-zero"
wait_pid "$PID_sub_b" 60 || fail "desk-b exited non-zero"
"$MDCAST" verify "$WORK/pub.toml" "$WORK/sub_a.toml" "$WORK/sub_b.toml" >"$WORK/verify.log" ||
  { cat "$WORK/verify.log"; fail "books differ"; }
note "stopped: both subscribers' books identical to the publisher's"
