#!/usr/bin/env bash
# mdcast stat's machine-readable output and --clean, on a real shm feed:
#   --json         parses, one process per counters file, every field typed
#   --json --watch one document per line
#   --prometheus   passes a strict check of the text format (promtext_check.py,
#                  which must also reject broken input), every label known;
#                  no label that changes in a process's life (state is a
#                  gauge); latency a histogram (stat_promtool.sh passes the
#                  same output through promtool)
#   --clean        after kill -9 of a publisher: its counters file and its
#                  ring go (with their sizes); a live publisher's ring and
#                  counters file stay; as root, files of another uid (a
#                  planted ring, a lone counters file) stay; a symbolic link
#                  and a FIFO named like mdcast files neither hang nor fool it.
source "$(dirname "$0")/lib.sh"
HERE=$(dirname "$0")
CHECK="$HERE/promtext_check.py"
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to check the formats"; exit 77; }
# Rings in a directory of this test's own: --clean's orphan scan then sees
# no other test's rings.
SHM="$WORK/shm"
mkdir -p "$SHM"
chmod 1777 "$SHM" "$MDCAST_STAT_DIR"  # as /dev/shm: anyone may plant files here
chmod 755 "$WORK"

# The checker itself: it must reject what a scrape rejects.
printf '# HELP a_total x\n# TYPE a_total counter\na_total{pid="1"} 1\n' >"$WORK/good.prom"
python3 "$CHECK" "$WORK/good.prom" >/dev/null || fail "promtext_check.py rejects a valid exposition"
bad() {
  printf "$1" >"$WORK/bad.prom"
  if python3 "$CHECK" "$WORK/bad.prom" >/dev/null; then fail "promtext_check.py accepts: $2"; fi
}
bad '# TYPE a_total counter\na_total 1\n' "a family without HELP"
bad '# HELP a x\n# TYPE a gauge\na{pid="1} 1\n' "an unterminated label value"
bad '# HELP a x\n# TYPE a gauge\na{pid="1"} one\n' "a value that is not a number"
bad '# HELP a x\n# TYPE a gauge\na{pid="1"} 1\na{pid="1"} 2\n' "the same series twice"
bad '# HELP a x\n# TYPE a gauge\n# HELP b x\n# TYPE b gauge\na 1\nb 1\na{x="2"} 1\n' "a family's samples apart"
bad '# HELP a x\n# TYPE a counter\na 1\n' "a counter without _total"
bad '# HELP a x\n# TYPE a gauge\na{p="\\q"} 1\n' "a bad escape"
bad '# HELP 1a x\n# TYPE 1a gauge\n1a 1\n' "a bad metric name"
H='# HELP h x\n# TYPE h histogram\n'
printf "$H"'h_bucket{le="1"} 1\nh_bucket{le="+Inf"} 2\nh_sum 3\nh_count 2\n' >"$WORK/good.prom"
python3 "$CHECK" "$WORK/good.prom" >/dev/null || fail "promtext_check.py rejects a valid histogram"
bad "$H"'h_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 3\nh_count 1\n' "a histogram that is not cumulative"
bad "$H"'h_bucket{le="1"} 1\nh_bucket{le="+Inf"} 2\nh_sum 3\nh_count 3\n' "a +Inf bucket other than _count"
bad "$H"'h_bucket{le="1"} 1\nh_sum 3\nh_count 1\n' "a histogram without +Inf"
bad "$H"'h_bucket{le="1"} 1\nh_bucket{le="+Inf"} 1\nh_count 1\n' "a histogram without _sum"
bad '# HELP a x\n# TYPE a gauge\na{le="1"} 1\n' "an le label outside a histogram"

SOCK="$SHM/ctl-$$.sock"
# docs/operations.md lists every counter this binary knows.
DOC="$HERE/../../docs/operations.md"
"$MDCAST" stat --catalogue >"$WORK/catalogue.md" || fail "stat --catalogue exited $?"
missing=$(grep -oE '^\| `[a-z_]+\.[a-z0-9_]+`' "$WORK/catalogue.md" | tr -d '|` ' | sort -u |
  while read -r l; do grep -qF "| \`$l\` |" "$DOC" || echo "$l"; done)
[ -z "$missing" ] || fail "docs/operations.md lacks counters (regenerate its appendix, see there): $missing"
[ "$(grep -cE '^\| `[a-z_]+\.' "$WORK/catalogue.md")" -gt 150 ] || fail "stat --catalogue lists too few counters"
note "docs/operations.md describes every counter stat --catalogue lists"

start_bg pub publish --name "$NAME" --shm-dir "$SHM" --set "feed.control=unix:$SOCK" --rate 20k --duration 60s --instrument-count 100 --idle block
start_bg live publish --name "$NAME-live" --shm-dir "$SHM" --rate 1k --duration 60s --instrument-count 10 --idle block
start_bg sub subscribe --name "$NAME" --shm-dir "$SHM" --idle block
wait_published "$PID_pub" 5000
wait_stat "$PID_sub" sub.messages_delivered 1000 30 || fail "the subscriber delivered nothing"
# Its latency histogram is in the file once the subscriber refreshed it.
wait_stat "$PID_sub" app.latency_max_ns 1 30 || fail "the subscriber published no latency"

# --- JSON
"$MDCAST" stat --json >"$WORK/stat.json" || fail "stat --json exited $?"
python3 - "$WORK/stat.json" "$PID_pub" "$PID_sub" "$PID_live" <<'EOF' || fail "stat --json: see above"
import json, sys
path, pub, sub, live = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
with open(path) as f:
    lines = f.read().splitlines()
assert len(lines) == 1, f"one document, one line: got {len(lines)} lines"
doc = json.loads(lines[0])
assert isinstance(doc["time_unix_ms"], int)
procs = {p["pid"]: p for p in doc["processes"]}
for pid in (pub, sub, live):
    assert pid in procs, f"pid {pid} missing from processes[] ({sorted(procs)})"
for p in procs.values():
    for k, t in (("pid", int), ("role", str), ("name", str), ("medium", str), ("state", str), ("alive", bool),
                 ("counters", dict)):
        assert isinstance(p.get(k), t), f"pid {p.get('pid')}: {k} is {p.get(k)!r}, wanted {t.__name__}"
    assert all(isinstance(v, int) and v >= 0 for v in p["counters"].values())
assert procs[pub]["role"] == "publisher" and procs[pub]["medium"] == "shm" and procs[pub]["alive"]
assert procs[pub]["state"] == "running", procs[pub]["state"]
assert procs[pub]["counters"]["pub.messages_published"] >= 5000
assert procs[sub]["role"] == "subscriber" and procs[sub]["counters"]["sub.messages_delivered"] >= 1000
assert "shm.lapped" in procs[sub]["counters"] and "control.clients" in procs[pub]["counters"]
for p in procs.values():
    assert isinstance(p.get("histograms"), dict), f"pid {p['pid']}: histograms is {p.get('histograms')!r}"
assert procs[pub]["histograms"] == {}, procs[pub]["histograms"]
lat = procs[sub]["histograms"]["app.latency_ns"]
assert lat["count"] > 0 and lat["sum"] > 0 and lat["max"] > 0, lat
assert 0 < lat["p50"] <= lat["p99"] <= lat["p99.9"] <= lat["max"], lat
les = [b[0] for b in lat["buckets"]]
counts = [b[1] for b in lat["buckets"]]
assert les == sorted(les) and counts == sorted(counts) and counts[-1] <= lat["count"], lat["buckets"]
print(f"   json: {len(procs)} processes, {sum(len(p['counters']) for p in procs.values())} counters")
EOF
note "stat --json parses and has every field"

# --- JSON, watching: one document per line until interrupted
"$MDCAST" stat --json --watch --interval 0.2 "$PID_pub" >"$WORK/watch.json" 2>"$WORK/watch.log" &
WPID=$!
PIDS+=($WPID)
# Until it has printed 3 documents and the publisher's count grew between the
# first and the last (the checks below), however long a loaded host takes.
watched() {  # (complete lines only: the last may be half written)
  head -n "$(wc -l <"$WORK/watch.json")" "$WORK/watch.json" | grep -o '"pub.messages_published":[0-9]*' | cut -d: -f2 |
    awk 'NR == 1 {first = $1} {n++; last = $1} END {exit !(n >= 3 && last > first)}'
}
i=0
until watched; do
  kill -0 "$WPID" 2>/dev/null || fail "stat --json --watch ended by itself: $(cat "$WORK/watch.log")"
  sleep 0.1; i=$((i + 1))
  [ $i -le 300 ] || fail "stat --json --watch printed no 3 documents with growing counts in 30 s: $(wc -l <"$WORK/watch.json") lines"
done
kill -INT "$WPID"
wrc=0
wait_rc "$WPID" 10 || wrc=$?
[ "$wrc" = 0 ] || fail "stat --json --watch ended by SIGINT exited $wrc"
python3 - "$WORK/watch.json" "$PID_pub" <<'EOF' || fail "stat --json --watch: see above"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) >= 3, f"wanted a document per refresh, got {len(lines)}"
seen = [json.loads(l)["processes"][0]["counters"]["pub.messages_published"] for l in lines]
assert all(len(json.loads(l)["processes"]) == 1 for l in lines), "the pid filter was not applied"
assert seen == sorted(seen) and seen[-1] > seen[0], f"published counts do not grow: {seen}"
print(f"   watch: {len(lines)} documents")
EOF
note "stat --json --watch prints one document per line"

# --- Prometheus
"$MDCAST" stat --prometheus >"$WORK/stat.prom" 2>"$WORK/prom.log" || fail "stat --prometheus exited $?"
python3 "$CHECK" "$WORK/stat.prom" --require-labels pid,role,name,medium | sed 's/^/   /'
[ "${PIPESTATUS[0]}" = 0 ] || fail "stat --prometheus is not valid text format"
! grep -q 'state=' "$WORK/stat.prom" || fail "a sample carries a state label: $(grep -m1 'state=' "$WORK/stat.prom")"
! grep -q "^# mdcast:" "$WORK/stat.prom" || fail "labels missing from the catalogue: $(grep '^# mdcast:' "$WORK/stat.prom")"
[ ! -s "$WORK/prom.log" ] || fail "stat --prometheus complained: $(cat "$WORK/prom.log")"
grep -q "^mdcast_process_alive{pid=\"$PID_pub\",role=\"publisher\",name=\"$NAME\",medium=\"shm\"} 1$" \
  "$WORK/stat.prom" || fail "no mdcast_process_alive 1 for the publisher"
grep -q "^mdcast_process_state{pid=\"$PID_pub\",role=\"publisher\",name=\"$NAME\",medium=\"shm\"} 1$" \
  "$WORK/stat.prom" || fail "no mdcast_process_state 1 (running) for the publisher"
grep -q '^# TYPE mdcast_pub_messages_published_total counter$' "$WORK/stat.prom" || fail "messages_published is not a counter"
grep -q '^# TYPE mdcast_pub_last_sequence gauge$' "$WORK/stat.prom" || fail "last_sequence is not a gauge"
grep -q '^# TYPE mdcast_app_latency_seconds histogram$' "$WORK/stat.prom" || fail "latency is not a histogram in seconds"
grep -qE "^mdcast_app_latency_seconds_count\{pid=\"$PID_sub\",[^}]*\} [1-9][0-9]*$" "$WORK/stat.prom" ||
  fail "the subscriber's latency histogram is empty"
[ "$(grep -c "^mdcast_app_latency_seconds_bucket{pid=\"$PID_sub\"," "$WORK/stat.prom")" -le 30 ] ||
  fail "more latency buckets than a scrape should carry"
grep -q '^# HELP mdcast_sub_gaps_total gaps detected$' "$WORK/stat.prom" || fail "sub.gaps has not its help text"
note "stat --prometheus passes the format check; names, types, units and labels as documented"

# --- --clean after kill -9 of a publisher
RING="$SHM/mdcast-$NAME.ring"
LIVE_RING="$SHM/mdcast-$NAME-live.ring"
[ -f "$RING" ] && [ -f "$LIVE_RING" ] || fail "rings not in $SHM"
[ -S "$SOCK" ] || fail "the publisher's control socket $SOCK is not there"
kill -9 "$PID_pub"
wait "$PID_pub" 2>/dev/null || true
kill -9 "$PID_sub"
wait "$PID_sub" 2>/dev/null || true
note "killed publisher $PID_pub and its subscriber $PID_sub"
"$MDCAST" stat --prometheus >"$WORK/stale.prom"
grep -q "^mdcast_process_alive{pid=\"$PID_pub\",.*} 0$" "$WORK/stale.prom" || fail "the dead publisher is not alive 0"

# A counters file anyone could have written: the dead subscriber's, its feed
# name rewritten with a terminal escape, quotes, a backslash, a newline and
# a byte that is not UTF-8.
python3 - "$MDCAST_STAT_DIR/mdcast-$PID_sub.stat" <<'PY'
import sys
name = b'evil\x1b[2J"\\\n\xff'
with open(sys.argv[1], "r+b") as f:
    f.seek(84)  # Header::name (src/stats/counters_file.cpp)
    f.write(name + b"\0" * (64 - len(name)))
PY
"$MDCAST" stat -a >"$WORK/evil.txt"
! grep -q $'\x1b' "$WORK/evil.txt" || fail "stat printed a counters file's escape sequence to the terminal"
grep -qF 'evil?[2J' "$WORK/evil.txt" || fail "stat does not show the rewritten name"
"$MDCAST" stat --json >"$WORK/evil.json"
python3 - "$WORK/evil.json" <<'PY' || fail "stat --json: the hostile name did not survive escaping"
import json, sys
names = [p["name"] for p in json.load(open(sys.argv[1]))["processes"]]
assert 'evil\x1b[2J"\\\n\xff' in names, names
PY
"$MDCAST" stat --prometheus >"$WORK/evil.prom"
python3 "$CHECK" "$WORK/evil.prom" >"$WORK/evil.check" || fail "stat --prometheus broke on a hostile name: $(cat "$WORK/evil.check")"
note "a hostile feed name is escaped in text, JSON and Prometheus"

# Hostile neighbours: a link to the live ring, a FIFO under a counters file's
# name (reading it must not block), and - as root - files of another user.
ln -s "$LIVE_RING" "$SHM/mdcast-$NAME-link.ring"
mkfifo "$MDCAST_STAT_DIR/mdcast-999999.stat"
PLANTED=""
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
  # A copy of the dead ring (its header names the dead pid) owned by nobody,
  # and the dead subscriber's counters file given to nobody: nothing proves
  # which process made them, so they are not root's to remove.
  cp "$RING" "$SHM/mdcast-$NAME-planted.ring"
  chown nobody "$SHM/mdcast-$NAME-planted.ring"
  chown nobody "$MDCAST_STAT_DIR/mdcast-$PID_sub.stat"
  PLANTED=yes
else
  note "not root: the other-uid cases are not run"
fi

timeout 20 "$MDCAST" stat --clean --shm-dir "$SHM" --dry-run >"$WORK/dry.log" || fail "stat --clean --dry-run exited $?"
[ -f "$RING" ] && [ -f "$MDCAST_STAT_DIR/mdcast-$PID_pub.stat" ] || fail "--dry-run removed something"
crc=0
timeout 20 "$MDCAST" stat --clean --shm-dir "$SHM" >"$WORK/clean.log" || crc=$?
sed 's/^/   /' "$WORK/clean.log"
[ "$crc" = 0 ] || fail "stat --clean exited $crc"
[ ! -e "$RING" ] || fail "the dead publisher's ring is still there"
[ ! -e "$MDCAST_STAT_DIR/mdcast-$PID_pub.stat" ] || fail "the dead publisher's counters file is still there"
grep -qE "^removed $RING \([0-9.]+ MiB\): shm ring of dead publisher pid $PID_pub" "$WORK/clean.log" ||
  fail "--clean does not say it removed the ring, with its size"
[ ! -e "$SOCK" ] || fail "the dead publisher's control socket is still there"
grep -q "^removed .* 1 shm ring and 1 control socket:" "$WORK/clean.log" || fail "--clean's summary is wrong"
[ -f "$LIVE_RING" ] && [ -f "$MDCAST_STAT_DIR/mdcast-$PID_live.stat" ] || fail "--clean removed a live publisher's files"
[ -L "$SHM/mdcast-$NAME-link.ring" ] || fail "--clean removed the link"
if [ -n "$PLANTED" ]; then
  [ -f "$SHM/mdcast-$NAME-planted.ring" ] || fail "--clean removed a ring of another uid"
  [ -f "$MDCAST_STAT_DIR/mdcast-$PID_sub.stat" ] || fail "--clean removed a lone counters file of another uid"
  grep -q "^kept $SHM/mdcast-$NAME-planted.ring .*belongs to uid 65534" "$WORK/clean.log" ||
    fail "--clean does not say why it kept the planted ring"
  rm -f "$SHM/mdcast-$NAME-planted.ring" "$MDCAST_STAT_DIR/mdcast-$PID_sub.stat"
else
  grep -q "^removed $MDCAST_STAT_DIR/mdcast-$PID_sub.stat" "$WORK/clean.log" || fail "the dead subscriber's file stays"
fi
rm -f "$SHM/mdcast-$NAME-link.ring" "$MDCAST_STAT_DIR/mdcast-999999.stat"
note "stat --clean removed the dead publisher's ring, control socket and counters file, and nothing else"

kill -INT "$PID_live"
wait_rc "$PID_live" 30 >/dev/null || true
