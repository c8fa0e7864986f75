#!/usr/bin/env bash
# mdcast doctor on this host: text and --json for shm and for udp on lo exit 0
# (no error finding here), the JSON parses and has every field, an error
# (an interface that does not exist) exits 3 and names the interfaces there
# are; without an RDMA device the text says so and points at Soft-RoCE and
# tools/softroce-vm, and --medium verbs is an error (exit 3).
source "$(dirname "$0")/lib.sh"

run() {  # run WANT_RC LABEL ARGS...: mdcast doctor ARGS, its output in $WORK/LABEL.out
  local want=$1 label=$2 rc=0; shift 2
  "$MDCAST" doctor "$@" >"$WORK/$label.out" 2>"$WORK/$label.err" || rc=$?
  [ "$rc" -eq "$want" ] || { cat "$WORK/$label.out" "$WORK/$label.err"; fail "mdcast doctor $* exited $rc, not $want"; }
  note "mdcast doctor $*: exit $rc, $(tail -1 "$WORK/$label.out")"
}

check_json() {  # check_json FILE MEDIUM [AREA...]: parses, has the fields, names these areas
  python3 - "$@" <<'PY' || fail "JSON of $1 is not what doctor --json promises"
import json, sys
path, medium, areas = sys.argv[1], sys.argv[2], sys.argv[3:]
r = json.load(open(path))
for k in ("medium", "errors", "warnings", "notes", "findings"):
    assert k in r, f"no '{k}' in {path}"
assert r["medium"] == medium, r["medium"]
assert isinstance(r["findings"], list) and r["findings"], "no findings"
for f in r["findings"]:
    for k in ("area", "check", "level", "value", "advice"):
        assert k in f, f"finding without '{k}': {f}"
    assert f["level"] in ("ok", "warning", "error"), f
assert r["errors"] == sum(f["level"] == "error" for f in r["findings"])
assert r["warnings"] == sum(f["level"] == "warning" for f in r["findings"])
have = {f["area"] for f in r["findings"]}
for a in areas:
    assert a in have, f"no finding in area '{a}' (have {sorted(have)})"
print(f"  {path}: {len(r['findings'])} findings, {r['errors']} errors, {r['warnings']} warnings")
PY
}

run 0 shm-text --name "$NAME" --shm-dir /dev/shm
grep -q "ring space" "$WORK/shm-text.out" || fail "doctor (shm) does not judge the ring's space"
run 0 shm-json --json --medium shm --name "$NAME"
check_json "$WORK/shm-json.out" shm host shm rdma

run 0 udp-text --medium udp --interface lo
grep -q "rp_filter\|rmem_max" "$WORK/udp-text.out" || fail "doctor (udp) says nothing of rp_filter or rmem_max"
run 0 udp-json --json --medium udp --interface lo
check_json "$WORK/udp-json.out" udp host udp rdma

# An error: exit 3, and the advice names what there is.
run 3 udp-bad --medium udp --interface mdcast-no-such-if0
grep -q "no interface 'mdcast-no-such-if0' (there are: .*lo" "$WORK/udp-bad.out" ||
  { cat "$WORK/udp-bad.out"; fail "doctor does not list the interfaces there are"; }
run 3 udp-bad-json --json --medium udp --interface mdcast-no-such-if0
check_json "$WORK/udp-bad-json.out" udp udp

if compgen -G '/sys/class/infiniband/*' >/dev/null; then
  note "RDMA device(s) here: the no-device text is checked where there are none (tests/system/verbs/doctor_verbs.sh runs in the VM)"
else
  grep -q "No RDMA device here" "$WORK/shm-text.out" || fail "doctor does not say plainly that there is no RDMA device"
  grep -q "tools/softroce-vm" "$WORK/shm-text.out" || fail "doctor does not name the Soft-RoCE VM harness"
  grep -q "rdma_rxe" "$WORK/shm-text.out" || fail "doctor does not explain Soft-RoCE"
  run 3 verbs-none --medium verbs
  grep -q "ERROR devices: no RDMA device" "$WORK/verbs-none.out" || fail "doctor --medium verbs without a device is no error"
  grep -q "qkey: 0x01234567" "$WORK/verbs-none.out" || fail "doctor --medium verbs does not show the QKey"
  # The medium itself says the same plain thing, not which address to set.
  for cmd in "publish --duration 1s" "subscribe --wait 0"; do
    rc=0; "$MDCAST" $cmd --medium verbs --name "$NAME" >"$WORK/verbs-${cmd%% *}.out" 2>&1 || rc=$?
    out="$WORK/verbs-${cmd%% *}.out"
    [ "$rc" -eq 3 ] || { cat "$out"; fail "mdcast $cmd --medium verbs without a device exited $rc, not 3"; }
    grep -q "no RDMA device on this host" "$out" || { cat "$out"; fail "mdcast $cmd --medium verbs does not say there is no RDMA device"; }
    ! grep -q "no local address" "$out" || fail "mdcast $cmd --medium verbs asks for an address"
  done
fi

# Huge pages: the doctor advises the number docs/operations.md gives.
mkdir -p "$WORK/root/proc" "$WORK/root/dev/shm"
printf 'MemTotal: 8000000 kB\nMemAvailable: 4000000 kB\nHugePages_Total:       0\nHugePages_Free:        0\nHugepagesize:    2048 kB\n' \
  >"$WORK/root/proc/meminfo"
"$MDCAST" doctor --root "$WORK/root" --medium shm >"$WORK/huge.out" 2>&1 || true
advised=$(grep -o 'vm.nr_hugepages=[0-9]*' "$WORK/huge.out" | head -1)
[ -n "$advised" ] || { cat "$WORK/huge.out"; fail "doctor advises no vm.nr_hugepages without huge pages"; }
DOC="$(dirname "$0")/../../docs/operations.md"
documented=$(grep -o 'vm.nr_hugepages=[0-9]*' "$DOC" | sort -u)
[ "$documented" = "$advised" ] || fail "doctor advises $advised, docs/operations.md says $documented"
grep -qF "\`hugepages=${advised#vm.nr_hugepages=}\`" "$DOC" || fail "docs/operations.md's boot line is not ${advised#vm.nr_}"
note "huge pages: doctor and docs/operations.md both say $advised"
note "PASS"
