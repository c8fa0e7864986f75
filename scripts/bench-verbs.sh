#!/usr/bin/env bash
# make bench-verbs: `mdcast bench --medium verbs` and, beside it in the same
# run, perftest's UD baseline (ib_send_lat / ib_send_bw, 64-byte messages) on
# the same device. On a host with an RDMA device it runs directly; otherwise
# inside the Soft-RoCE VM (tools/softroce-vm), where every figure is a
# functional one: rdma_rxe under qemu's software CPU emulation.
#
#   scripts/bench-verbs.sh BUILD_DIR [mdcast bench options...]
#
# perftest runs UD *unicast* to itself: its multicast mode (-g) joins an MGID
# that maps to no IP group, which Soft-RoCE never loops back (the client
# waits forever); on a real fabric add PERFTEST_ARGS=-g for the multicast
# variant. perftest's out-of-band exchange goes over TCP to 127.0.0.1.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR [mdcast bench options]}; shift
root=$(cd "$(dirname "$0")/.." && pwd)
mdcast="$root/$build/apps/mdcast/mdcast"
[ -x "$mdcast" ] || { echo "bench-verbs: $mdcast not built" >&2; exit 1; }

if [ "${BENCH_VERBS_INSIDE:-0}" != 1 ] && ! compgen -G "/sys/class/infiniband/*" >/dev/null; then
  echo "bench-verbs: no RDMA device on this host; running in a Soft-RoCE VM (qemu, ~10 s to boot)"
  cd "$root"
  printf -v cmd '%q ' "$0" "$build" "$@"
  exec "$root/tools/softroce-vm/run.sh" -t 1800 -e BENCH_VERBS_INSIDE=1 -- "$cmd"
fi

dev=${SOFTROCE_DEV:-$(ls /sys/class/infiniband | head -1)}
gid=${SOFTROCE_GID_INDEX:-${GID_INDEX:-1}}
cd "$root"
rc=0
"$mdcast" bench --medium verbs "$@" || rc=$?

echo
echo "perftest baseline on $dev (GID index $gid), 64-byte UD messages, unicast to itself:"
if ! command -v ib_send_lat >/dev/null; then
  echo "  perftest is not installed (scripts/install-deps.sh installs it)"
  exit $rc
fi
# Server in the background, client against it; both bounded in time.
pt() {
  local log; log=$(mktemp)
  timeout 60 "$@" -d "$dev" -x "$gid" ${PERFTEST_ARGS:-} >"$log" 2>&1 &
  local srv=$!
  sleep 1
  timeout 60 "$@" -d "$dev" -x "$gid" ${PERFTEST_ARGS:-} 127.0.0.1 2>&1 | tail -n 3 | sed 's/^/  /' || true
  wait "$srv" 2>/dev/null || true
  rm -f "$log"
}
echo "  ib_send_lat -c UD -s 64 -n 5000 (t_typical and percentiles are half a round trip, in usec):"
pt ib_send_lat -c UD -s 64 -n 5000
echo "  ib_send_bw -c UD -s 64 -n 20000 (MsgRate in M messages/s):"
pt ib_send_bw -c UD -s 64 -n 20000
exit $rc
