#!/usr/bin/env bash
# Publisher throughput by channel count: `mdcast publish` over N shm channels
# on N publishing threads, thread t pinned to the t-th CPU this process may
# use, offered far more than it can take (100M msg/s), for DURATION; no
# subscribers, so the figure is what the publishing threads alone sustain
# (books, sequencing, the ring writes). Every count is run REPEAT times,
# interleaved (1, 2, 1, 2 ...) so a noisy neighbour hits all alike; the
# report gives each count's median msg/s with min-max and its ratio to the
# median of 1 channel in the same run.
#
#   bench/channel_scaling.sh MDCAST [COUNTS=1,2] [REPEAT=3] [DURATION=3s]
#   make bench-channels BENCH_CHANNELS="1,4,8,16 3 3s"       (16 cores)
set -euo pipefail

MDCAST=${1:?usage: $0 MDCAST [COUNTS] [REPEAT] [DURATION]}
IFS=, read -r -a COUNTS <<<"${2:-1,2}"
REPEAT=${3:-3}
DURATION=${4:-3s}
mapfile -t CPUS < <(python3 -c 'import os; print("\n".join(map(str, sorted(os.sched_getaffinity(0)))))')
for n in "${COUNTS[@]}"; do
  [ "$n" -le "${#CPUS[@]}" ] || { echo "channel_scaling: $n channels need $n CPUs; this process may use ${#CPUS[@]}" >&2; exit 2; }
done
WORK=$(mktemp -d /tmp/mdcast-channel-scaling.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
export MDCAST_STAT_DIR="$WORK"

echo "channel_scaling: $(date -u +%FT%TZ), $(nproc) CPUs online, load $(cut -d' ' -f1-3 /proc/loadavg), $MDCAST"
declare -A RATES
for r in $(seq 1 "$REPEAT"); do
  for n in "${COUNTS[@]}"; do
    cpus=$(IFS=,; echo "${CPUS[*]:0:$n}")
    line=$("$MDCAST" publish --name "scale-$$-$n" --channels "$n" --threads "$n" --cpu "$cpus" --rate 100M \
      --duration "$DURATION" --instrument-count 1000 --idle spin --linger 0s 2>&1 | grep -E '^mdcast publish: [0-9]+ messages' || true)
    rate=$(sed -nE 's/.*\(([0-9]+) msg\/s\).*/\1/p' <<<"$line")
    [ -n "$rate" ] || { echo "channel_scaling: $n channels: no result line" >&2; exit 1; }
    RATES[$n]+="$rate "
    printf '  run %d: %2d channel(s) on CPUs %-12s %12s msg/s\n' "$r" "$n" "$cpus" "$rate"
  done
done
python3 - "${COUNTS[0]}" "$(for n in "${COUNTS[@]}"; do echo "$n:${RATES[$n]}"; done)" <<'PY'
import statistics, sys
base_n = sys.argv[1]
rows = [l.split(":") for l in sys.argv[2].splitlines() if l]
med = {n: statistics.median(map(int, v.split())) for n, v in rows}
print(f"{'channels':>8} {'median msg/s':>14} {'min-max':>25} {'vs ' + base_n + ' channel(s)':>18}")
for n, v in rows:
    xs = list(map(int, v.split()))
    print(f"{n:>8} {med[n]:>14,.0f} {min(xs):>12,}-{max(xs):<12,} {med[n] / med[base_n]:>17.2f}x")
PY
