#!/usr/bin/env bash
# make demo-rdma: the demo over the real RDMA path - UD multicast data, RC
# control, RDMA READ retransmission - inside a Soft-RoCE (rdma_rxe) VM, since
# this host's kernel has no RDMA. On a host with an RDMA device it runs directly.
# Usage: scripts/demo-rdma.sh BUILD_DIR [demo options...]
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR [demo options]}; shift
root=$(cd "$(dirname "$0")/.." && pwd)
mdcast="$root/$build/apps/mdcast/mdcast"
[ -x "$mdcast" ] || { echo "demo-rdma: $mdcast not built" >&2; exit 1; }
# Software emulation is slow: modest defaults, overridable.
args=(demo --medium verbs --subscribers 3 --rate 10k --duration 5s --instrument-count 50 --loss 0.01 "$@")
if compgen -G "/sys/class/infiniband/*" >/dev/null; then
  exec "$mdcast" "${args[@]}"
fi
echo "demo-rdma: no RDMA device on this host; running in a Soft-RoCE VM (qemu, ~10 s to boot)"
cd "$root"
printf -v cmd '%q ' "$mdcast" "${args[@]}"
exec "$root/tools/softroce-vm/run.sh" -t 600 -- "MDCAST_STAT_DIR=/dev/shm $cmd"
