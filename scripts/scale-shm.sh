#!/usr/bin/env bash
# N real subscriber processes on one host, reading one publisher's shm ring:
# does every one deliver every message with books identical to the
# publisher's, and what does each cost in memory? (The per-host half of a
# relay layout: a host's relay publishes over shm to that host's processes.)
#
#   scripts/scale-shm.sh MDCAST N [RATE] [DURATION] [-- SUBSCRIBER ARGS...]
#   scripts/scale-shm.sh build/release/apps/mdcast/mdcast 64 2k 10s -- --max-orders 65536
#
# Subscribers sleep until data comes (--idle block). Memory is sampled from
# /proc/PID/smaps_rollup while they run: Pss splits the shared ring among its
# readers, so the sum of Pss is what N subscribers take from the machine.
# Writes the summary to stdout (and $OUT/scale-N$SCALE_TAG.txt when OUT is set).
set -uo pipefail
MDCAST=$(readlink -f "${1:?usage: $0 MDCAST N [RATE] [DURATION] [-- SUBSCRIBER ARGS...]}")
N=${2:?subscriber count}
RATE=${3:-2k}
DUR=${4:-10s}
shift $(( $# < 4 ? $# : 4 ))
[ "${1:-}" = "--" ] && shift
SUB_ARGS=("$@")
[[ $N =~ ^[0-9]+$ ]] && [ "$N" -ge 1 ] || { echo "scale-shm: N=$N is not a count" >&2; exit 2; }

NAME="scale-$N-$$"
WORK=$(mktemp -d "/tmp/mdcast-$NAME.XXXXXX")
export MDCAST_STAT_DIR="$WORK/stat"
mkdir -p "$MDCAST_STAT_DIR" "$WORK/sub"
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -f "/dev/shm/mdcast-$NAME".* 2>/dev/null
}
trap cleanup EXIT
say() { echo "-- [${SECONDS}s] $*"; }

# A control connection per subscriber, and the publisher's own descriptors.
need_fds=$((N + 256))
if [ "$(ulimit -Sn)" != unlimited ] && [ "$(ulimit -Sn)" -lt "$need_fds" ]; then
  ulimit -Sn "$need_fds" 2>/dev/null || ulimit -Sn "$(ulimit -Hn)"
fi
say "$N subscribers, $RATE msg/s for $DUR; open-files limit $(ulimit -Sn); $(nproc) cpus; $(awk '/MemAvailable/ {printf "%.1f GiB available", $2/1048576}' /proc/meminfo)"

"$MDCAST" publish --medium shm --name "$NAME" --rate "$RATE" --duration "$DUR" --instrument-count 200 \
  --idle block --wait-subscribers "$N" --linger "${SCALE_LINGER:-60s}" --result "$WORK/pub.toml" \
  --set control.max_clients="$((N > 1024 ? N : 1024))" --set shm.readers="$((N > 1024 ? N : 1024))" \
  >"$WORK/pub.log" 2>&1 &
PUB=$!
PIDS+=("$PUB")
end=$((SECONDS + 20))
until [ -e "/dev/shm/mdcast-$NAME.ring" ] || [ -e "/dev/hugepages/mdcast-$NAME.ring" ]; do
  kill -0 "$PUB" 2>/dev/null || { cat "$WORK/pub.log"; echo "scale-shm: the publisher exited" >&2; exit 1; }
  [ $SECONDS -le $end ] || { echo "scale-shm: no ring in 20 s" >&2; exit 1; }
  sleep 0.05
done

SUBS=()
for i in $(seq "$N"); do
  "$MDCAST" subscribe --medium shm --name "$NAME" --idle block --wait 120s --give-up "${SCALE_GIVE_UP:-30s}" \
    --result "$WORK/sub/$i.toml" "${SUB_ARGS[@]}" >"$WORK/sub/$i.log" 2>&1 &
  SUBS+=($!)
  PIDS+=($!)
done
say "started $N subscribers"

# Sample memory while they run; keep the sample that saw the most running
# (the ring's pages are shared: Pss totals are comparable only at equal n).
peak_pss=0 peak_rss=0 peak_n=0 pub_rss=0
sample() {
  local v pss rss n
  # One reader for all: a process per file is seconds at N=1024 on a busy host.
  v=$(printf '/proc/%s/smaps_rollup\n' "${SUBS[@]}" | xargs cat 2>/dev/null |
    awk '/rollup/ {n++} /^Pss:/ {p += $2} /^Rss:/ {r += $2} END {print n+0, p+0, r+0}')
  read -r n pss rss <<<"$v"
  if [ "$n" -gt "$peak_n" ] || { [ "$n" = "$peak_n" ] && [ "$pss" -gt "$peak_pss" ]; }; then
    peak_pss=$pss peak_rss=$rss peak_n=$n
  fi
  v=$(awk '/^Rss:/ {print $2}' "/proc/$PUB/smaps_rollup" 2>/dev/null)
  if [ -n "$v" ] && [ "$v" -gt "$pub_rss" ]; then pub_rss=$v; fi
}
end=$((SECONDS + 600))
while :; do
  running=0
  for p in "${SUBS[@]}"; do kill -0 "$p" 2>/dev/null && running=$((running + 1)); done
  [ "$running" -gt 0 ] || break
  sample
  [ $SECONDS -le $end ] || { say "$running subscribers still running after 600 s"; break; }
  sleep 1
done
failed=0
for i in "${!SUBS[@]}"; do
  if ! wait "${SUBS[$i]}"; then
    failed=$((failed + 1))
    [ "$failed" -le 3 ] && { echo "== subscriber $((i + 1)) failed:"; tail -5 "$WORK/sub/$((i + 1)).log"; }
  fi
done
wait "$PUB"; pub_rc=$?
say "subscribers done ($failed failed); publisher exit $pub_rc"

published=$(grep -E '^messages = ' "$WORK/pub.toml" 2>/dev/null | head -1 | sed 's/.*= //')
short=0 snaps=0
for f in "$WORK"/sub/*.toml; do
  got=$(grep -E '^messages = ' "$f" | head -1 | sed 's/.*= //')
  [ "$got" = "$published" ] || short=$((short + 1))
  s=$(grep -E '^"?sub.snapshots_applied"? = ' "$f" | head -1 | sed 's/.*= //')
  [ "${s:-0}" = 0 ] || snaps=$((snaps + 1))
done
results=$(ls "$WORK"/sub/*.toml 2>/dev/null | wc -l)
verify_rc=1
if [ "$results" -gt 0 ]; then
  "$MDCAST" verify "$WORK/pub.toml" "$WORK"/sub/*.toml >"$WORK/verify.log" 2>&1; verify_rc=$?
fi
{
  echo "scale-shm: subscribers=$N rate=$RATE duration=$DUR subscriber-args='${SUB_ARGS[*]}'"
  echo "  published=$published results=$results failed=$failed short=$short needed-snapshot=$snaps verify-rc=$verify_rc publisher-rc=$pub_rc"
  if [ "$peak_n" -gt 0 ]; then
    echo "  memory at peak ($peak_n running): Pss total $((peak_pss / 1024)) MiB, per subscriber $((peak_pss / peak_n)) KiB Pss, $((peak_rss / peak_n)) KiB Rss; publisher Rss $((pub_rss / 1024)) MiB"
  fi
  # What N subscribers cost the publisher's control plane.
  echo "  publisher control: $(grep -E '^"(ctl.client_connects|control.evicted_unadmitted|ctl.subscribes|ctl.longest_poll_ns|control.refused_descriptors)"' "$WORK/pub.toml" | tr -d '"' | tr '\n' ' ')"
  tail -2 "$WORK/verify.log" | sed 's/^/  verify: /'
  if [ "$pub_rc" != 0 ] || [ "$failed" != 0 ]; then tail -15 "$WORK/pub.log" | sed 's/^/  pub.log: /'; fi
} | tee ${OUT:+"$OUT/scale-$N${SCALE_TAG:-}.txt"}
if [ -n "${OUT:-}" ] && { [ "$pub_rc" != 0 ] || [ "$failed" != 0 ]; }; then
  # What explains it: the publisher's and two subscribers' results and logs.
  tar czf "$OUT/scale-$N${SCALE_TAG:-}-diag.tgz" -C "$WORK" pub.toml pub.log verify.log sub/1.toml sub/1.log \
    "sub/$N.toml" "sub/$N.log" 2>/dev/null
fi
[ "$failed" = 0 ] && [ "$short" = 0 ] && [ "$verify_rc" = 0 ] && [ "$pub_rc" = 0 ] && [ "$results" = "$N" ]
