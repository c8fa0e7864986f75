#!/usr/bin/env bash
# Installs what mdcast needs to build and test on Debian 12 (bookworm).
# Idempotent and quiet when everything is already present; needs root (or sudo)
# only when something is missing.
set -euo pipefail

PKGS=(
  build-essential cmake ninja-build pkg-config git
  clang libclang-rt-14-dev            # libFuzzer + sanitizer runtimes
  libcli11-dev libtomlplusplus-dev libfmt-dev
  libsodium-dev                       # the control plane's challenge-response (HMAC-SHA-256, CSPRNG)
  libgtest-dev libgmock-dev libbenchmark-dev
  libibverbs-dev librdmacm-dev ibverbs-providers
  perftest                            # the verbs bench's independent baseline (ib_send_lat/_bw)
  liburing-dev                        # io_uring readiness: an idle control poll makes no system call
  libpcap-dev                         # mdcast record/replay: nanosecond pcap written, pcap/pcapng read through libpcap
  tshark tcpdump tcpreplay            # the dissector's test (tools/wireshark), captures; tcpreplay sends a recording
  prometheus                          # promtool check metrics: stat --prometheus as Prometheus parses it (stat_promtool.sh)
  iproute2 procps nftables            # nftables: the netns tests' link loss where the kernel lacks netem
  qemu-system-x86 kmod xz-utils       # the Soft-RoCE VM (tools/softroce-vm): never rdma-core (it pulls udev)
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: missing ${missing[*]} and not root (no sudo)" >&2; exit 1; }
  SUDO=sudo
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp /tmp/mdcast-apt.XXXXXX)
if ! $SUDO apt-get install -y --no-install-recommends "${missing[@]}" >"$log" 2>&1; then
  $SUDO apt-get update >>"$log" 2>&1 || true
  $SUDO apt-get install -y --no-install-recommends "${missing[@]}" >>"$log" 2>&1 \
    || { tail -20 "$log" >&2; echo "install-deps: apt-get install failed (log: $log)" >&2; exit 1; }
fi
rm -f "$log"
