#!/usr/bin/env bash
# `mdcast demo` as a newcomer runs it (short), with loss injected into one
# subscriber: it must end with every book verified and exit 0.
source "$(dirname "$0")/lib.sh"
"$MDCAST" demo --duration 2s --rate 30k --subscribers 3 --loss 0.02 --progress false | tee "$WORK/demo.log"
grep -q "RESULT: all 3 subscribers delivered every message exactly once" "$WORK/demo.log" || fail "demo did not verify"
line=$(grep '^sub-1 ' "$WORK/demo.log")
gaps=$(echo "$line" | awk '{print $3}')
[ "$gaps" -gt 0 ] || fail "the lossy subscriber shows no gaps: $line"
