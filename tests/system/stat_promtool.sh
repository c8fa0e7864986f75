#!/usr/bin/env bash
# mdcast stat --prometheus through Prometheus's own checker: `promtool check
# metrics` (Debian package prometheus) parses what a scrape would and lints
# names, units and histograms. Over a live shm feed, while the subscriber's
# latency histogram fills; then again after kill -9 of the subscriber (its
# file stays, alive 0): its series are the same ones, only values changed.
# Skips (77) without promtool; promtext_check.py (stat_formats.sh) checks
# the format without it.
source "$(dirname "$0")/lib.sh"
command -v promtool >/dev/null || { echo "SKIP: promtool not installed (Debian package prometheus)"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to compare the series"; exit 77; }

start_bg pub publish --name "$NAME" --rate 20k --duration 60s --instrument-count 50 --idle block
start_bg sub subscribe --name "$NAME" --idle block
wait_published "$PID_pub" 2000
wait_stat "$PID_sub" app.latency_max_ns 1 30 || fail "the subscriber published no latency"

promcheck() {  # FILE: promtool's verdict on it, failing the test on any problem
  local out rc=0
  out=$(promtool check metrics <"$1" 2>&1) || rc=$?
  [ "$rc" = 0 ] && [ -z "$out" ] || fail "promtool check metrics $1 (exit $rc): $out"
}
series() {  # FILE: the series (name and labels) it holds, sorted
  grep -v '^#' "$1" | sed -E 's/ [^ ]+$//' | sort
}

"$MDCAST" stat --prometheus >"$WORK/running.prom" 2>"$WORK/prom.log" || fail "stat --prometheus exited $?"
promcheck "$WORK/running.prom"
grep -q '^# TYPE mdcast_app_latency_seconds histogram$' "$WORK/running.prom" || fail "no latency histogram"
grep -q "^mdcast_process_state{pid=\"$PID_sub\",[^}]*} 1$" "$WORK/running.prom" || fail "the subscriber is not running (1)"
note "promtool accepts the export of a running feed ($(grep -vc '^#' "$WORK/running.prom") samples)"

kill -9 "$PID_sub"
wait "$PID_sub" 2>/dev/null || true
"$MDCAST" stat --prometheus >"$WORK/stale.prom" 2>>"$WORK/prom.log" || fail "stat --prometheus exited $?"
promcheck "$WORK/stale.prom"
grep -q "^mdcast_process_alive{pid=\"$PID_sub\",[^}]*} 0$" "$WORK/stale.prom" || fail "the killed subscriber is not alive 0"
# The subscriber's own series: its pid label, not a publisher's subscriber_pid
# (the publisher drops a row of a subscriber that left).
own="[{,]pid=\"$PID_sub\""
diff <(series "$WORK/running.prom" | grep -E "$own") <(series "$WORK/stale.prom" | grep -E "$own") \
  >"$WORK/series.diff" || fail "the subscriber's series changed with its liveness: $(head -5 "$WORK/series.diff")"
[ ! -s "$WORK/prom.log" ] || fail "stat --prometheus complained: $(cat "$WORK/prom.log")"
note "promtool accepts the export after kill -9 too; the dead subscriber's series are the same ones"

kill -INT "$PID_pub"
wait_rc "$PID_pub" 30 >/dev/null || true
