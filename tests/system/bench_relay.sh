#!/usr/bin/env bash
# `mdcast bench --sections relay --quick`: one-way latency straight from the
# publisher and through a relay process in one run, and the relay's CPU per
# message, in the report and the JSON summary; the relay renumbered nothing.
# No speed is asserted (a 2-core host runs four processes on two CPUs).
source "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to read the JSON report"; exit 77; }

note "mdcast bench --sections relay --rates 20k --quick"
"$MDCAST" bench --medium shm --sections relay --rates 20k --quick --progress false --json "$WORK/bench.json" \
  >"$WORK/bench.log" 2>&1 || { cat "$WORK/bench.log"; fail "mdcast bench --sections relay failed"; }
grep -q "one hop through a relay" "$WORK/bench.log" || { cat "$WORK/bench.log"; fail "the report has no relay section"; }
if grep -q "! relay @" "$WORK/bench.log"; then cat "$WORK/bench.log"; fail "a relay run failed or renumbered"; fi
python3 - "$WORK/bench.json" <<'PY' || { cat "$WORK/bench.log"; fail "the JSON summary lacks the relay's figures"; }
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
for k in ("relay.20k.direct_ns.p50", "relay.20k.relayed_ns.p50", "relay.20k.relayed_ns.p99", "relay.20k.added_ns.p50",
          "relay.20k.added_ns.p99", "relay.20k.relay_cpu_ns_per_msg"):
    if k not in s or "median" not in s[k]:
        print("missing:", k); sys.exit(1)
if not s["relay.20k.relay_cpu_ns_per_msg"]["median"] > 0:
    print("relay CPU per message is not positive"); sys.exit(1)
PY
grep -A3 "one hop through a relay" "$WORK/bench.log"
