#!/usr/bin/env bash
# The command line as a new user meets it: exit codes by kind (docs/operations.md),
# --help with types and defaults, a subscriber that says at once what it waits
# for, --print's shape, a demo stopped by Ctrl-C, a publisher held below its rate.
source "$(dirname "$0")/lib.sh"

expect_rc() {  # expect_rc RC PATTERN ARGS...: exit status RC and output matching PATTERN
  local want=$1 pattern=$2; shift 2
  local rc=0
  "$MDCAST" "$@" >"$WORK/out.log" 2>&1 || rc=$?
  [ "$rc" = "$want" ] || { cat "$WORK/out.log"; fail "'mdcast $*' exited $rc, not $want"; }
  grep -qE -- "$pattern" "$WORK/out.log" || { cat "$WORK/out.log"; fail "'mdcast $*' did not say /$pattern/"; }
  note "mdcast $* -> $rc: $(grep -E -m1 -- "$pattern" "$WORK/out.log")"
}

# Usage (2): the command line or a settings file is wrong.
expect_rc 2 "mdcast publish: unknown flag --no-such-flag$" publish --no-such-flag
# A typo is answered with the flag meant, a settings key with the key meant,
# a renamed flag with its new name, a mistyped subcommand with the right one.
expect_rc 2 "^mdcast publish: unknown flag --rat: did you mean --rate\?" publish --rat 100k
expect_rc 2 "unknown flag --duraton: did you mean --duration\?" subscribe --duraton 1s
expect_rc 2 "unknown flag --intervall: did you mean --interval\?" stat --intervall 2
expect_rc 2 "unknown flag --rotate-sise: did you mean --rotate-size\?" record --out x --rotate-sise 1G
expect_rc 2 "mdcast publish: --instruments is now --instrument-count" publish --instruments 100
expect_rc 2 "mdcast demo: --filter is now --instruments" demo --filter 0-9
expect_rc 2 "^mdcast: --set feed.nmae: unknown setting 'feed.nmae': did you mean feed.name\?" subscribe --set feed.nmae=x
expect_rc 2 "publsher.rate': did you mean publisher.rate\?" publish --set publsher.rate=1k
expect_rc 2 "unknown subcommand 'pubish': did you mean publish\?" pubish --rate 1k
printf '[feed]\nnmae = "x"\n' >"$WORK/near.toml"
expect_rc 2 "near.toml:2: unknown config key 'feed.nmae': did you mean feed.name\?" --config "$WORK/near.toml" publish
# An error names the flag typed, not the setting's own name.
expect_rc 2 "^mdcast: --cpu: publisher.cpus: CPU 1000 is not available" publish --cpu 1000
expect_rc 2 "^mdcast: --subscribers: demo.subscribers: " demo -n 0
expect_rc 2 "^mdcast: --instruments: subscriber.instruments: " subscribe --instruments x-y
expect_rc 2 "publisher.rate: '12x' is not a rate" publish --rate 12x
printf '[publisher]\nrat = 5\n' >"$WORK/typo.toml"
expect_rc 2 "typo.toml:2: unknown config key 'publisher.rat'" --config "$WORK/typo.toml" publish
expect_rc 2 "a subcommand is required" --config "$WORK/typo.toml"
expect_rc 2 "an identity is 1-64 characters" secret new --identity 'bad identity'
# Setup (3): the host refuses.
expect_rc 3 "shm ring .*not found" subscribe --name "$NAME-none" --wait 0
expect_rc 3 "nothing from a publisher in" subscribe --medium udp \
  --udp-group "239.77.16.$((1 + $$ % 250)):$((20000 + $$ % 20000))" --wait 1s
# Help: types and defaults, from the code's own defaults.
"$MDCAST" publish --help >"$WORK/help.txt"
grep -qE -- "--rate RATE=100k" "$WORK/help.txt" || { cat "$WORK/help.txt"; fail "--help shows no type/default for --rate"; }
grep -qE -- "--duration DURATION=10s" "$WORK/help.txt" || fail "--help shows no type/default for --duration"
grep -qE -- "--crc \[BOOL\].*default: false" "$WORK/help.txt" || fail "--help shows no default for --crc"
"$MDCAST" --help-config >"$WORK/help-config.txt"
grep -qE "publisher.retransmit_bytes +SIZE .*\(default: 64MiB\)" "$WORK/help-config.txt" || fail "--help-config shows no defaults"
grep -qE "feed.idle_backoff_max +DURATION .*\(default: 100us\)" "$WORK/help-config.txt" || fail "the idle back-off is not a setting"
grep -qE -- "--threads N=0 .*0: one per --cpu entry" "$WORK/help.txt" || fail "publish --help does not say what --threads 0 means"
# Every option of every subcommand shows its default: TYPE=VALUE, or "default" in its text.
for cmd in publish subscribe demo stat bench record replay doctor verify "secret new"; do
  # shellcheck disable=SC2086
  "$MDCAST" $cmd --help >"$WORK/help-$$.txt"
  python3 - "$WORK/help-$$.txt" "$cmd" <<'PY' || fail "mdcast $cmd --help: an option without its default"
import re, sys
lines = open(sys.argv[1]).read().splitlines()
bad = []
for i, l in enumerate(lines):
    m = re.match(r"^  (-\S+(?: \S+)*?)(?:  +(.*))?$", l)
    if not m or not l.lstrip().startswith("-"):
        continue
    opts, text = m.group(1), m.group(2) or ""
    if not text and i + 1 < len(lines) and not lines[i + 1].lstrip().startswith("-"):
        text = lines[i + 1]
    words = opts.split()
    if len(words) < 2 or words[1] in ("Excludes:", "Needs:") or not re.match(r"^\[?[A-Z]", words[1]):
        continue  # a flag: no value, no default
    if "=" in opts or "REQUIRED" in opts or "default" in text:
        continue
    bad.append(l.strip())
if bad:
    print(f"mdcast {sys.argv[2]} --help: no default shown for:", *bad, sep="\n  ")
    sys.exit(1)
PY
done

# Said at once: what a subscriber waits for (it may wait long).
start_bg waiting subscribe --name "$NAME-late" --wait 20s
wait_log waiting "^mdcast subscribe: waiting up to 20s for the shm ring .*of feed '$NAME-late'" 15
kill -TERM "$PID_waiting"; rc=0; wait_rc "$PID_waiting" 10 || rc=$?
[ "$rc" = 130 ] || fail "a subscriber stopped by SIGTERM exited $rc, not 130 (interrupted)"

# --print: every line has seq=, prices scaled by the instrument's exponent.
start_bg pub publish --name "$NAME-p" --rate 2k --duration 1s --wait-subscribers 1
"$MDCAST" subscribe --name "$NAME-p" --print >"$WORK/print.log" 2>"$WORK/print.err" || { cat "$WORK/print.err"; fail "subscriber --print failed"; }
wait_rc "$PID_pub" 20 || fail "publisher failed"
grep -q " add id=" "$WORK/print.log" || fail "--print showed no adds"
bad=$(grep -vE "^seq=[0-9]+ inst=[0-9]+#[0-9]+ |^session [0-9a-f]+: books reset" "$WORK/print.log" | head -3 || true)
[ -z "$bad" ] || fail "--print lines without seq=: $bad"
grep -E " add id=[0-9]+ (buy|sell) [0-9]+@[0-9]+\.[0-9]{4}$" "$WORK/print.log" >/dev/null \
  || { head "$WORK/print.log"; fail "--print prices are not scaled (price_exponent -4)"; }
grep -qE "define symbol=SYM[0-9]+ lot=[0-9]+ price_exponent=-4" "$WORK/print.log" || fail "--print shows no definitions"
# Latency in units a person reads (3.11 ms, not 3112959 ns).
grep -qE "latency p50 [0-9.]+ (ns|us|ms|s) p99 [0-9.]+ (ns|us|ms|s) max [0-9.]+ (ns|us|ms|s)$" "$WORK/print.err" ||
  { cat "$WORK/print.err"; fail "subscribe's summary shows latency in raw units"; }
# On a terminal, a live progress line while it runs (script(1) gives it one).
if command -v script >/dev/null; then
  start_bg tty-pub publish --name "$NAME-tty" --rate 2k --duration 2s --wait-subscribers 1
  script -qec "'$MDCAST' subscribe --name '$NAME-tty'" /dev/null </dev/null >"$WORK/tty.out" 2>&1 ||
    { cat -v "$WORK/tty.out"; fail "subscribe on a terminal failed"; }
  wait_rc "$PID_tty_pub" 20 || fail "publisher for the terminal check failed"
  grep -qaE $'\r  +[0-9.]+s  delivered +[0-9,]+ msg' "$WORK/tty.out" ||
    { cat -v "$WORK/tty.out"; fail "subscribe on a terminal shows no progress line"; }
fi

# A publisher held below its rate says why.
expect_rc 0 "published [0-9]+ msg/s of the 20000 asked .*publisher.pacing = fixed held it down" \
  demo --name "$NAME-pace" --rate 20k --pacing fixed --pacing-rate 4k --duration 1s -n 1 --progress false

# Ctrl-C twice on the demo: interrupted (130), not FAILED. (Once stops the
# feed cleanly and verifies it: tests/system/clean_stop.sh.)
"$MDCAST" demo --name "$NAME-int" --rate 10k --duration 30s -n 1 --progress false >"$WORK/demo-int.log" 2>&1 &
DEMO=$!; PIDS+=($DEMO)
# Mid-feed: once its subscriber delivers (its counters, as `mdcast stat` shows
# them; its own output, to a file, comes in one block at the end).
i=0
until SUB=$("$MDCAST" stat --json 2>/dev/null | python3 -c '
import json, sys
procs = json.load(sys.stdin)["processes"]
pids = [p["pid"] for p in procs if p["name"] == sys.argv[1] and p["role"] == "subscriber" and p["alive"]
        and p["counters"].get("sub.messages_delivered", 0) > 0]
print(pids[0] if pids else ""); sys.exit(not pids)' "$NAME-int"); do
  kill -0 "$DEMO" 2>/dev/null || { cat "$WORK/demo-int.log"; fail "the demo ended before its subscriber delivered anything"; }
  sleep 0.1; i=$((i + 1))
  [ $i -le 300 ] || { cat "$WORK/demo-int.log"; "$MDCAST" stat -a; fail "the demo's subscriber delivered nothing in 30 s"; }
done
# The subscriber held (stopped) keeps the demo from finishing on the first
# SIGINT; the second, once the demo says it is stopping, ends everything now.
kill -STOP "$SUB"
kill -INT "$DEMO"
i=0
until grep -q "^mdcast demo: stopping" "$WORK/demo-int.log"; do
  kill -0 "$DEMO" 2>/dev/null || { cat "$WORK/demo-int.log"; fail "the demo ended on one SIGINT with its subscriber held"; }
  sleep 0.05; i=$((i + 1)); [ $i -le 600 ] || fail "the demo did not say it was stopping in 30 s"
done
kill -INT "$DEMO"; rc=0; wait_rc "$DEMO" 30 || rc=$?
[ "$rc" = 130 ] || { cat "$WORK/demo-int.log"; fail "an interrupted demo exited $rc, not 130"; }
grep -q "RESULT: interrupted" "$WORK/demo-int.log" || { cat "$WORK/demo-int.log"; fail "no 'RESULT: interrupted'"; }
! grep -q "FAILED" "$WORK/demo-int.log" || { cat "$WORK/demo-int.log"; fail "an interrupted demo reads FAILED"; }
rm -rf "$(grep -o '/tmp/mdcast-demo-[A-Za-z0-9]*' "$WORK/demo-int.log" | head -1)"
note "command line ok"
