#!/usr/bin/env bash
# run.sh - run a command inside a throw-away qemu VM whose kernel has
# Soft-RoCE (rdma_rxe) configured, and return the command's exit status.
#
#   tools/softroce-vm/run.sh [options] -- 'SHELL COMMAND LINE'   # one argument: run by bash -c
#   tools/softroce-vm/run.sh [options] -- PROGRAM [ARGS...]      # several: run as an argv
#   tools/softroce-vm/run.sh --setup                              # prepare the cache only
#   tools/softroce-vm/run.sh --check                              # can a VM run here? (exit 0 / 125)
#
# Why a VM: our build hosts' kernels have no RDMA, and the verbs medium must be
# tested against real libibverbs/librdmacm. The guest runs a stock Debian
# kernel (downloaded, never installed) with rdma_rxe; its userland IS the
# host's (/usr and /etc over virtio-9p, read-only), so host-built binaries run
# unchanged. The work dir (-w, default: the repository) is shared read-write
# at the same absolute path, and the command starts in the caller's $PWD.
#
# Options:
#   -n MODE    dummy (default): one rxe device (rxe0) on dummy0, 10.77.0.1
#              veth: rxe0 on veth0 (10.77.0.1) and rxe1 on veth1 (10.77.0.2), so
#              frames really cross a netdev pair (two "hosts" in one kernel)
#   -M MTU     netdev MTU (default 1500 -> RoCE active_mtu 1024; 9000 -> 4096)
#   -w DIR     directory shared read-write (default: the repository root)
#   -t SECS    wall-clock limit for the whole VM, boot included (default 900)
#   -m MB      guest memory (default 2048)       -c N  vCPUs (default: nproc, at most 4)
#   -e N=V     export N=V to the command (repeatable)
#   -k         keep the per-run directory (console log, output) and print its path
#   -v         print the guest kernel console afterwards (always printed on failure)
#
# Inside the VM: SOFTROCE_DEV=rxe0, SOFTROCE_IP, SOFTROCE_NETDEV, SOFTROCE_MODE,
# SOFTROCE_GID_INDEX (1: RoCE v2 over IPv4), and in veth mode SOFTROCE_DEV2=rxe1
# and SOFTROCE_IP2. `ulimit -l` is unlimited (memory registration needs it).
#
# Exit status: the command's own; 124 = the VM ran past -t; 125 = the VM or its
# setup failed (the message says why; the command did not run or its result is
# unknown).
#
# Cache: ${SOFTROCE_CACHE:-<repo>/.cache/softroce} holds the guest kernel
# (vmlinux + the few modules we need, ~80 MB) and the initramfs; built once
# (apt-get download + extraction, ~15 s), shared by concurrent runs (flock).
# Host packages needed: qemu-system-x86, kmod, xz-utils (scripts/install-deps.sh).
# See README.md beside this script for the design and the findings behind it.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CACHE=${SOFTROCE_CACHE:-$REPO/.cache/softroce}
MODE=dummy MTU=1500 WORKDIR=$REPO TIMEOUT=900 MEM=2048 KEEP=0 VERBOSE=0 ACTION=run
NCPU=$(nproc); [ "$NCPU" -gt 4 ] && NCPU=4
EXPORTS=()

# Guest modules, with their dependencies resolved by modprobe at setup. Only
# these go into the initramfs: the 400 MB module tree stays out of the cache.
# (rdma_rxe computes its ICRC through the crypto API: crc32_generic is a
# runtime request, not a module dependency.)
GUEST_MODULES="virtio_pci 9pnet_virtio 9p rdma_rxe rdma_ucm ib_uverbs dummy veth crc32_generic"

die() { echo "softroce-vm: $*" >&2; exit 125; }
note() { echo "softroce-vm: $*" >&2; }

while [ $# -gt 0 ]; do
  case "$1" in
    -n) MODE=$2; shift 2 ;;
    -M) MTU=$2; shift 2 ;;
    -w) WORKDIR=$(cd "$2" && pwd) || die "no such directory: $2"; shift 2 ;;
    -t) TIMEOUT=$2; shift 2 ;;
    -m) MEM=$2; shift 2 ;;
    -c) NCPU=$2; shift 2 ;;
    -e) EXPORTS+=("$2"); shift 2 ;;
    -k) KEEP=1; shift ;;
    -v) VERBOSE=1; shift ;;
    --setup) ACTION=setup; shift ;;
    --check) ACTION=check; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1 (see -h)" ;;
    *) break ;;
  esac
done
case "$MODE" in dummy|veth) ;; *) die "-n $MODE: use dummy or veth (rdma_cm cannot resolve addresses on lo)" ;; esac
case "$WORKDIR" in /|/usr|/usr/*|/etc|/etc/*|/proc*|/sys*|/dev*)
  die "refusing to share $WORKDIR read-write with the guest" ;; esac
[ "$ACTION" = run ] && [ $# -eq 0 ] && die "no command given (usage: $0 [options] -- COMMAND...; see -h)"

# ------------------------------------------------------------ host checks --
missing_host_tools() {
  local t out=()
  for t in qemu-system-x86_64 depmod modprobe xz apt-get dpkg-deb flock; do
    command -v "$t" >/dev/null 2>&1 || out+=("$t")
  done
  echo "${out[*]}"
}
if [ "$ACTION" = check ]; then
  m=$(missing_host_tools)
  [ -z "$m" ] || die "missing host tools: $m (scripts/install-deps.sh installs them)"
  [ -f "$CACHE/ready" ] || note "cache $CACHE not built yet; the first run downloads the guest kernel"
  exit 0
fi
m=$(missing_host_tools)
[ -z "$m" ] || die "missing host tools: $m (run scripts/install-deps.sh)"

# ------------------------------------------------------------------ setup --
# The uncompressed ELF vmlinux boots through PVH: qemu enters the kernel
# directly, skipping SeaBIOS and the in-guest xz decompression (3-4 s of a
# ~9 s boot under TCG).
extract_vmlinux() {
  local off
  off=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$1" | head -1 | cut -d: -f1) || return 1
  [ -n "$off" ] || return 1
  tail -c +$((off + 1)) "$1" | xz -dc --single-stream >"$2.tmp" 2>/dev/null || true
  [ "$(head -c 4 "$2.tmp" | od -An -c | tr -d ' ')" = '177ELF' ] || { rm -f "$2.tmp"; return 1; }
  mv "$2.tmp" "$2"
}

# Downloads (never installs) the kernel and busybox-static packages, keeps the
# kernel image and the modules we need.
fetch_guest() {
  local tmp kpkg kv
  kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  if [ -z "$kpkg" ]; then
    apt-get update >/dev/null 2>&1 || true
    kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  fi
  [ -n "$kpkg" ] || die "apt-cache cannot resolve linux-image-amd64 (is a Debian package source configured?)"
  kv=${kpkg#linux-image-}
  tmp=$(mktemp -d "$CACHE/.fetch.XXXXXX")
  note "one-time setup: downloading $kpkg and busybox-static into $CACHE"
  (cd "$tmp" && apt-get download "$kpkg" busybox-static) >"$tmp/download.log" 2>&1 \
    || { cat "$tmp/download.log" >&2; rm -rf "$tmp"; die "apt-get download $kpkg busybox-static failed"; }
  dpkg-deb -x "$tmp/${kpkg}"_*.deb "$tmp/k"
  dpkg-deb -x "$tmp"/busybox-static_*.deb "$tmp/bb"
  depmod -b "$tmp/k" "$kv"
  local g="$CACHE/guest-$kv"
  rm -rf "$g"; mkdir -p "$g/modules"
  extract_vmlinux "$tmp/k/boot/vmlinuz-$kv" "$g/vmlinux" \
    || { note "could not unpack vmlinux; booting the bzImage (slower)"; cp "$tmp/k/boot/vmlinuz-$kv" "$g/bzImage"; }
  local m f
  for m in $GUEST_MODULES; do
    modprobe -d "$tmp/k" -S "$kv" --show-depends "$m" 2>/dev/null | awk '$1=="insmod"{print $2}' \
      || die "module $m not found in $kpkg"
  done | awk '!seen[$0]++' >"$tmp/mods"
  [ -s "$tmp/mods" ] || die "no modules resolved from $kpkg"
  while read -r f; do
    local rel=${f#"$tmp/k/"}
    mkdir -p "$g/modules/$(dirname "$rel")"; cp "$f" "$g/modules/$rel"
  done <"$tmp/mods"
  cp "$tmp/k/lib/modules/$kv"/modules.{order,builtin,builtin.modinfo} "$g/modules/lib/modules/$kv/" 2>/dev/null || true
  depmod -b "$g/modules" "$kv"
  cp "$tmp/bb/bin/busybox" "$g/busybox"
  echo "$kv" >"$CACHE/kver"
  rm -rf "$tmp"
}

# Stage 1 (/init, static busybox): mounts, then hands over to the host's bash.
# busybox's standalone shell prefers its own applets over $PATH (its `ip` fails
# on veth pairs), which is why everything past mounting runs in stage 2.
write_init() {
cat <<'INIT'
#!/.sr/bin/sh
export PATH=/.sr/bin
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc; mount -t sysfs sysfs /sys
mkdir -p /dev/pts /dev/shm; mount -t devpts devpts /dev/pts; mount -t tmpfs tmpfs /dev/shm
fail() { echo "softroce-init: FATAL: $*"; echo "SOFTROCE-RC 125" >/dev/ttyS1; sync; poweroff -f; }
. /.sr/job/env
KV=$(uname -r)
for m in virtio_pci 9pnet_virtio 9p; do modprobe "$m" || fail "modprobe $m"; done
p9() { mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,$3 "$1" "$2" || fail "mount 9p $1 on $2"; }
p9 usr /usr ro,cache=loose
p9 etc /etc ro,cache=loose
# merged-/usr layout; /lib stays a real directory so our module tree lives in it
ln -s usr/bin /bin; ln -s usr/sbin /sbin; ln -s usr/lib64 /lib64
for e in /usr/lib/*; do n=${e##*/}; [ "$n" = modules ] || ln -s "$e" "/lib/$n"; done
mkdir -p /var/tmp /var/run /var/lib /var/log /home /tmp /root
if [ -n "$SR_WORKDIR" ]; then mkdir -p "$SR_WORKDIR"; p9 work "$SR_WORKDIR" rw,cache=mmap; fi
[ -x /bin/bash ] || fail "the host's /bin/bash is not visible over 9p"
exec /bin/bash /.sr/stage2
INIT
}

# Stage 2 (host bash, host iproute2/kmod): rxe setup, the job, power-off.
write_stage2() {
cat <<'STAGE2'
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb LANG=C.UTF-8
off() { sync; /.sr/bin/poweroff -f; }
fail() { echo "softroce-init: FATAL: $*"; echo "SOFTROCE-RC 125" >/dev/ttyS1; off; }
. /.sr/job/env
echo /usr/sbin/modprobe >/proc/sys/kernel/modprobe
hostname softroce-vm
ip link set lo up
modprobe -a rdma_rxe rdma_ucm ib_uverbs || fail "modprobe rdma_rxe rdma_ucm ib_uverbs"
export SOFTROCE_MODE=$SR_MODE SOFTROCE_DEV=rxe0 SOFTROCE_IP=10.77.0.1 SOFTROCE_GID_INDEX=1
case "$SR_MODE" in
  dummy)
    export SOFTROCE_NETDEV=dummy0
    ip link add dummy0 type dummy || fail "ip link add dummy0"
    ip addr add 10.77.0.1/24 dev dummy0 || fail "address on dummy0"
    NETDEVS="dummy0" ;;
  veth)
    export SOFTROCE_NETDEV=veth0 SOFTROCE_DEV2=rxe1 SOFTROCE_IP2=10.77.0.2
    ip link add veth0 type veth peer name veth1 || fail "ip link add veth0/veth1"
    ip addr add 10.77.0.1/24 dev veth0 && ip addr add 10.77.0.2/24 dev veth1 || fail "addresses on veth"
    # Both ends live in one netns: frames from veth1 carry a local source
    # address; without these, ARP is refused and cross-device RC/UD fails
    # ("Failed to modify QP to RTR") and multicast from rxe1 never reaches rxe0.
    for c in all default veth0 veth1; do
      sysctl -qw net.ipv4.conf.$c.accept_local=1 net.ipv4.conf.$c.rp_filter=0
    done
    NETDEVS="veth0 veth1" ;;
esac
for d in $NETDEVS; do ip link set "$d" mtu "$SR_MTU" up || fail "mtu $SR_MTU / up on $d"; done
# IPv4 multicast leaves through the rxe netdev (rdma_cm's IGMP join needs a route)
ip route add 224.0.0.0/4 dev "$SOFTROCE_NETDEV" || fail "multicast route on $SOFTROCE_NETDEV"
rdma link add rxe0 type rxe netdev "$SOFTROCE_NETDEV" || fail "rdma link add rxe0 netdev $SOFTROCE_NETDEV"
[ "$SR_MODE" = veth ] && { rdma link add rxe1 type rxe netdev veth1 || fail "rdma link add rxe1 netdev veth1"; }
ulimit -l unlimited
cd "$SR_CWD" 2>/dev/null || cd /root
read -r up _ </proc/uptime
echo "SOFTROCE-BEGIN $up" >/dev/ttyS1
/bin/bash /.sr/job/run >/dev/ttyS1 2>&1 </dev/null
rc=$?
read -r up _ </proc/uptime
echo "SOFTROCE-RC $rc $up" >/dev/ttyS1
cd /
[ -n "$SR_WORKDIR" ] && { sync; umount "$SR_WORKDIR" 2>/dev/null; }
off
STAGE2
}

# The base initramfs: busybox, the guest modules, stage 1 and 2. Its name
# carries a hash of its inputs, so an edited script never boots a stale one.
build_initrd() {
  local kv=$1 g="$CACHE/guest-$1" key st
  key=$( { write_init; write_stage2; echo "$kv $GUEST_MODULES"; } | sha256sum | cut -c1-16)
  INITRD="$CACHE/initrd-$key.cpio"
  [ -f "$INITRD" ] && return 0
  st=$(mktemp -d "$CACHE/.stage.XXXXXX")
  mkdir -p "$st"/{.sr/bin,.sr/job,dev,proc,sys,tmp,run,root,usr,etc,mnt,lib}
  cp "$g/busybox" "$st/.sr/bin/busybox"
  local a
  for a in $("$st/.sr/bin/busybox" --list); do [ "$a" = busybox ] || ln -s busybox "$st/.sr/bin/$a"; done
  cp -a "$g/modules/lib/modules" "$st/lib/"
  write_init >"$st/init"; chmod 755 "$st/init"
  write_stage2 >"$st/.sr/stage2"
  (cd "$st" && find . -mindepth 1 | "$st/.sr/bin/busybox" cpio -o -H newc 2>/dev/null) >"$INITRD.tmp"
  mv "$INITRD.tmp" "$INITRD"
  rm -rf "$st"
}

setup() {
  mkdir -p "$CACHE" || die "cannot create cache directory $CACHE (set SOFTROCE_CACHE to a writable place)"
  exec 9>"$CACHE/.lock"
  flock 9   # concurrent runs share one cache: only one of them builds it
  if [ ! -f "$CACHE/kver" ] || [ ! -d "$CACHE/guest-$(cat "$CACHE/kver")" ]; then fetch_guest; fi
  KV=$(cat "$CACHE/kver")
  build_initrd "$KV"
  : >"$CACHE/ready"
  flock -u 9
}

setup
[ "$ACTION" = setup ] && { note "setup done: guest kernel $KV, cache $CACHE"; exit 0; }

# -------------------------------------------------------------------- run --
RUN=$(mktemp -d "${TMPDIR:-/tmp}/softroce-run.XXXXXX")
QPID=""
cleanup() {
  [ -n "$QPID" ] && kill "$QPID" 2>/dev/null || true
  if [ $KEEP = 1 ]; then note "run directory kept: $RUN"; else rm -rf "$RUN"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The job travels as a second cpio appended to the base one (the kernel
# unpacks concatenated archives), so a run costs no initramfs rebuild.
mkdir -p "$RUN/job/.sr/job"
if [ $# -eq 1 ]; then printf '%s\n' "$1"; else printf '%q ' "$@"; echo; fi >"$RUN/job/.sr/job/run"
{
  printf 'SR_MODE=%q\nSR_MTU=%q\nSR_WORKDIR=%q\nSR_CWD=%q\n' "$MODE" "$MTU" "$WORKDIR" "$PWD"
  for e in "${EXPORTS[@]}"; do printf 'export %q\n' "$e"; done
} >"$RUN/job/.sr/job/env"
(cd "$RUN/job" && find . -mindepth 1 | "$CACHE/guest-$KV/busybox" cpio -o -H newc 2>/dev/null) >"$RUN/job.cpio"
cat "$INITRD" "$RUN/job.cpio" >"$RUN/initrd"

KIMG=$CACHE/guest-$KV/vmlinux; [ -f "$KIMG" ] || KIMG=$CACHE/guest-$KV/bzImage
VFS=security_model=none,multidevs=remap
QEMU=(qemu-system-x86_64 -accel tcg,thread=multi,tb-size=256 -cpu max -M q35 -smp "$NCPU" -m "$MEM"
  -nodefaults -no-user-config -display none -no-reboot
  -kernel "$KIMG" -initrd "$RUN/initrd"
  -append "console=ttyS0 panic=-1 quiet loglevel=4 8250.nr_uarts=2 mitigations=off tsc=reliable no_timer_check"
  -serial "file:$RUN/console.log" -serial "file:$RUN/out.log"
  -virtfs "local,path=/usr,mount_tag=usr,readonly=on,$VFS"
  -virtfs "local,path=/etc,mount_tag=etc,readonly=on,$VFS")
[ -n "$WORKDIR" ] && QEMU+=(-virtfs "local,path=$WORKDIR,mount_tag=work,$VFS")

T0=$(date +%s.%N)
: >"$RUN/out.log"
"${QEMU[@]}" >"$RUN/qemu.log" 2>&1 &
QPID=$!
# Stream the job's output while the VM runs (markers filtered out).
tail -n +1 -f --pid=$QPID "$RUN/out.log" 2>/dev/null | grep --line-buffered -a -v -E '^SOFTROCE-(BEGIN|RC) ' &
TPID=$!
timed_out=0
deadline=$(($(date +%s) + TIMEOUT))
while kill -0 "$QPID" 2>/dev/null; do
  if [ "$(date +%s)" -ge $deadline ]; then timed_out=1; kill "$QPID" 2>/dev/null || true; break; fi
  sleep 0.2
done
wait "$QPID" 2>/dev/null || true
QPID=""
wait "$TPID" 2>/dev/null || true
T1=$(date +%s.%N)

begin=$(grep -a '^SOFTROCE-BEGIN ' "$RUN/out.log" | tail -1 || true)
rcline=$(grep -a '^SOFTROCE-RC ' "$RUN/out.log" | tail -1 || true)
if [ $VERBOSE = 1 ] || [ -z "$rcline" ] || [ -z "$begin" ] || [ "$(echo "$rcline" | awk '{print $2}')" = 125 ]; then
  echo "----- guest console -----" >&2
  tr -d '\r' <"$RUN/console.log" >&2 || true
  [ -s "$RUN/qemu.log" ] && { echo "----- qemu -----" >&2; cat "$RUN/qemu.log" >&2; }
fi
wall=$(awk "BEGIN{printf \"%.1f\", $T1-$T0}")
[ $timed_out = 1 ] && { note "TIMEOUT: the VM ran past ${TIMEOUT}s (-t) and was killed"; exit 124; }
[ -n "$begin" ] || die "the VM failed before the command started (wall ${wall}s; console above)"
[ -n "$rcline" ] || die "the VM stopped without reporting the command's exit status (wall ${wall}s)"
rc=$(echo "$rcline" | awk '{print $2}')
job=$(echo "$begin $rcline" | awk '{printf "%.1f", $5-$2}')
boot=$(echo "$begin" | awk '{print $2}')
note "exit $rc; mode $MODE mtu $MTU; guest boot ${boot}s, command ${job}s, wall ${wall}s"
exit "$rc"
