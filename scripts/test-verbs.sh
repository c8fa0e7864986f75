#!/usr/bin/env bash
# Runs the verbs tests (CTest label `verbs`) of BUILD_DIR against real RDMA.
#
#   scripts/test-verbs.sh BUILD_DIR          (make test-verbs does this for build/debug)
#
# On a host with an RDMA device (/sys/class/infiniband/*) they run directly.
# Otherwise they run inside a Soft-RoCE qemu VM (tools/softroce-vm/run.sh),
# twice: one device on a dummy netdev (MTU 1500 -> RoCE MTU 1024) for
# everything but the two-device tests, then two devices on a veth pair (MTU
# 9000 -> 4096) for those (tests named *TwoDevices*). A test that skips inside the VM is a failure: the
# VM exists so that they run.
#
# Exit 0 when every test passed - or, with a SKIP banner, when no VM can run
# here at all (no qemu obtainable, no guest kernel downloadable). Any other
# problem is a failure.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ $# -eq 1 ] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
BUILD=$(cd "$1" 2>/dev/null && pwd) || { echo "test-verbs: no build directory $1 (build first: make debug)" >&2; exit 2; }
VM="$REPO/tools/softroce-vm/run.sh"
export SOFTROCE_CACHE=${SOFTROCE_CACHE:-$REPO/.cache/softroce}

say() { echo "test-verbs: $*"; }
skip() {
  echo "============================================================================"
  echo "test-verbs: SKIP - the verbs tests did NOT run: $*"
  echo "============================================================================"
  exit 0
}

if ! (cd "$BUILD" && ctest -N -L verbs 2>/dev/null | grep -q 'Total Tests: [1-9]'); then
  say "FAIL: $BUILD has no verbs tests: the verbs medium was not built (libibverbs-dev and librdmacm-dev missing at configure time? run scripts/install-deps.sh and reconfigure)"
  exit 1
fi

if compgen -G '/sys/class/infiniband/*' >/dev/null; then
  say "RDMA device(s) here: $(ls /sys/class/infiniband | tr '\n' ' ')- running the tests directly"
  cd "$BUILD"
  exec ctest -L verbs --output-on-failure
fi

# No device: the VM. Its host tools come from install-deps.sh.
if ! "$VM" --check >/dev/null 2>&1; then
  "$REPO/scripts/install-deps.sh" || true
  "$VM" --check || skip "no Soft-RoCE VM can run on this host (see the line above: qemu-system-x86 / kmod not installable)"
fi
if ! "$VM" --setup; then
  skip "the guest kernel could not be prepared in $SOFTROCE_CACHE (apt-get download of linux-image-amd64 failed?)"
fi

# The VM shares one directory read-write: the repository when the build is in
# it, else the build directory itself.
case "$BUILD/" in "$REPO"/*) SHARE=$REPO ;; *) SHARE=$BUILD ;; esac
LOGS="$BUILD/verbs-vm-logs"
mkdir -p "$LOGS"

# Runs ctest with the given selection in the VM; fails on any failure or skip.
run_mode() {
  local mode=$1 mtu=$2 sel=$3 log="$LOGS/ctest-$1.log" t0 rc
  say "---- $mode mode (MTU $mtu): ctest $sel"
  t0=$(date +%s)
  set +e
  (cd "$BUILD" && "$VM" -n "$mode" -M "$mtu" -w "$SHARE" -t 1200 -- \
    "ctest $sel --output-on-failure --timeout 600 >'$log' 2>&1; rc=\$?; tail -n 40 '$log'; \
     if grep -q '(Skipped)\|\*\*\*Skipped' '$log'; then echo 'a test skipped inside the VM'; exit 3; fi; exit \$rc")
  rc=$?
  set -e
  say "$mode mode: exit $rc in $(( $(date +%s) - t0 )) s (full ctest output: $log; test logs: $BUILD/tests/system/verbs/verbs-logs)"
  return $rc
}

fails=0
run_mode dummy 1500 "-L verbs -E TwoDevices" || fails=$((fails + 1))
run_mode veth 9000 "-L verbs -R TwoDevices" || fails=$((fails + 1))

# What the tests measured (counts, not performance: this is an emulator).
if [ -f "$BUILD/Testing/Temporary/LastTest.log" ] || ls "$LOGS"/ctest-*.log >/dev/null 2>&1; then
  grep -h -E '^  (publisher|clean|rc |read|good|slow client|send-only|full-member|qkey|server|rxe)' \
    "$BUILD/Testing/Temporary/LastTest.log" 2>/dev/null | head -40 || true
fi
if [ $fails -ne 0 ]; then say "FAIL: $fails VM run(s) failed"; exit 1; fi
say "all verbs tests passed (dummy and veth modes)"
