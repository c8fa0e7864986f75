#!/usr/bin/env bash
# mdcast doctor against a real RDMA device (the Soft-RoCE VM): it sees the
# device, its port ACTIVE / LinkUp on an Ethernet link layer, the RoCE v2
# GID that maps the IPv4 address and marks the index mdcast uses, asks
# libibverbs for the MTU and multicast limits, shows the QKey, and exits 0
# with --medium verbs. Exit 77 (skip) without an RDMA device.
source "$(dirname "$0")/../lib.sh"

compgen -G '/sys/class/infiniband/*' >/dev/null || { echo "SKIP: no RDMA device (/sys/class/infiniband is empty)"; exit 77; }
DEV=${SOFTROCE_DEV:-$(ls /sys/class/infiniband | head -1)}
GIDX=${SOFTROCE_GID_INDEX:-1}

rc=0
"$MDCAST" doctor --medium verbs --device "$DEV" --gid-index "$GIDX" >"$WORK/text.log" 2>&1 || rc=$?
cat "$WORK/text.log"
[ "$rc" -eq 0 ] || fail "mdcast doctor --medium verbs exited $rc on $DEV"
rc=0
"$MDCAST" doctor --medium verbs --device "$DEV" --gid-index "$GIDX" --json >"$WORK/doctor.json" 2>"$WORK/json.log" || rc=$?
[ "$rc" -eq 0 ] || fail "mdcast doctor --medium verbs --json exited $rc"

python3 - "$WORK/doctor.json" "$DEV" "$GIDX" "${SOFTROCE_IP:-}" <<'PY' || fail "doctor's findings on $DEV are not what the device is"
import json, sys
path, dev, gidx, ip = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
r = json.load(open(path))
f = {(x["area"], x["check"]): x for x in r["findings"]}
def need(area, check):
    assert (area, check) in f, f"no {area}/{check}; have {sorted(f)}"
    return f[(area, check)]
assert r["errors"] == 0, [x for x in r["findings"] if x["level"] == "error"]
assert "Soft-RoCE" in need("rdma", dev)["value"], need("rdma", dev)
assert need("rdma", f"{dev} port 1 state")["value"].startswith("ACTIVE")
assert need("rdma", f"{dev} port 1 physical state")["value"] == "LinkUp"
assert need("rdma", f"{dev} port 1 link layer")["value"] == "Ethernet (RoCE)"
g = need("rdma", f"{dev} port 1 gid {gidx}")
assert "RoCE v2" in g["value"] and "IPv4" in g["value"], g
assert not ip or ip in g["value"], (ip, g)
assert g["advice"] == "mdcast uses this GID", g
port = need("verbs", "port")
assert port["level"] == "ok" and f"GID {gidx} (RoCE v2" in port["value"], port
assert "active" in need("rdma", f"{dev} port 1 mtu")["value"]
assert "max_mcast_qp_attach" in need("rdma", f"{dev} port 1 multicast limits")["value"]
assert need("verbs", "qkey")["value"].startswith("0x01234567"), need("verbs", "qkey")
print(f"doctor on {dev}: {len(r['findings'])} findings, 0 errors, {r['warnings']} warnings; uses {port['value']}")
PY
note "PASS"
