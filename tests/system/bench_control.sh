#!/usr/bin/env bash
# `mdcast bench --sections control --control-clients 64 --quick`: the run
# without clients and the one with 64 real control connections from one
# load process both complete, every client is admitted and active
# throughout the window, every kind of request is sent and answered, and
# the publisher counts them all. No speed is asserted.
#   bench_control.sh MDCAST
source "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to read the JSON report"; exit 77; }

note "mdcast bench --sections control --control-clients 64 --quick"
"$MDCAST" bench --sections control --control-clients 64 --quick --progress false --json "$WORK/control.json" \
  >"$WORK/control.log" 2>&1 || { cat "$WORK/control.log"; fail "mdcast bench --control-clients 64 failed"; }
for line in "control plane @ 100k msg/s" "with 64 clients / without" "load client: 64 of 64 clients" \
            "publisher as the window closed: 65 control connections open, 65 subscribed"; do
  grep -q "$line" "$WORK/control.log" || { cat "$WORK/control.log"; fail "the report has no '$line'"; }
done

python3 - "$WORK/control.json" <<'PY' || fail "the JSON report is incomplete or clients went missing"
import json, sys
d = json.load(open(sys.argv[1]))
def need(cond, what):
    if not cond:
        print("missing or wrong:", what); sys.exit(1)
need(d["settings"]["control_clients"] == 64, "settings.control_clients")
c = d["runs"][0]["control"]
need([x["clients"] for x in c] == [0, 64], "a run without and a run with clients")
for x in c:
    for k in ("latency_run", "cpu_run"):
        need(x[k]["completed"], f"control {x['clients']} {k} completed ({x[k].get('error')})")
    need(x["one_way_ns"]["count"] > 0, f"control {x['clients']} latency samples")
    need(isinstance(x["publisher_cpu_ns_per_msg"], (int, float)), f"control {x['clients']} publisher_cpu_ns_per_msg")
need(c[0]["latency_run"]["control"]["clients"] == 0 and c[0]["latency_run"]["control"]["publisher"]["clients_open"] == 1, "the run without clients: the publisher holds its subscriber only")
for k in ("latency_run", "cpu_run"):
    f = c[1][k]["control"]
    need(f["load_ok"] and f["all_admitted_through_window"], f"{k}: every client admitted throughout ({f['load']['problems']})")
    s, e = f["load"]["window_start"], f["load"]["window_end"]
    need(s["active"] == 64 and e["active"] == 64, f"{k}: 64 active at the window's edges")
    need(e["refused"] == 0 and e["cut"] == 0 and e["connect_failures"] == 0, f"{k}: none refused, cut or failed")
    need(e["sent_status"] > s["sent_status"], f"{k}: status reports in the window")
    for sent, got in (("sent_retransmit", "retransmit_replies"), ("sent_snapshot", "snapshot_done"),
                      ("sent_session_query", "session_status"), ("sent_subscribe", "acks")):
        need(e[sent] > 0 and e[got] > 0, f"{k}: {sent} answered by {got} ({e[sent]}, {e[got]})")
    need(e["malformed"] == 0 and e["unexpected"] == 0, f"{k}: every reply understood")
    p = f["publisher"]
    need(p["measured"] and p["clients_open"] == 65 and p["subscribed"] == 65, f"{k}: the publisher holds 64 + 1 subscribed")
    need(p["refused"] == 0 and p["refused_admission"] == 0 and p["evicted_unadmitted"] == 0 and p["cut"] == 0,
         f"{k}: the publisher refused or cut nobody")
    need(p["status_reports"] > 0 and p["retransmit_requests"] > 0 and p["snapshot_requests"] > 0 and p["session_queries"] > 0,
         f"{k}: the publisher counted every kind of request")
    need(p["frames_in_window"] > 0, f"{k}: control frames inside the window")
for k in ("control.0.one_way_ns.p50", "control.64.one_way_ns.p99", "control.64.pub_cpu_ns_per_msg",
          "control.ratio.p50", "control.ratio.p99", "control.ratio.pub_cpu_ns_per_msg"):
    need(k in d["summary"], f"summary.{k}")
PY

note "clients that cannot connect are reported, with the open-files limit that stopped them, and fail the run"
# 48 descriptors: enough for the bench's own processes, not for 64 clients.
if (ulimit -Sn 48 && ulimit -Hn 48 && exec "$MDCAST" bench --sections control --control-clients 64 --quick \
      --progress false) >"$WORK/short.log" 2>&1; then
  cat "$WORK/short.log"; fail "a run whose clients could not all connect passed"
fi
grep -q "open-files hard limit (RLIMIT_NOFILE) is 48, below the 320 descriptors needed: raise" "$WORK/short.log" \
  || { cat "$WORK/short.log"; fail "the open-files shortfall is not named with its numbers"; }
# Reported either as a run whose clients were not all admitted, or (a slow
# sanitizer build, where the load client gives up before the window) client
# by client with the errno that stopped it.
grep -qE "not every client was admitted throughout|client [0-9]+: socket: Too many open files" "$WORK/short.log" \
  || { cat "$WORK/short.log"; fail "clients that could not connect are not reported"; }
echo "PASS"
