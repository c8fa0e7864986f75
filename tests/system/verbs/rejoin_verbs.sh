#!/usr/bin/env bash
# A verbs feed that loses its port and its group while it runs, and nothing
# restarted (issue 26 item 3): a publisher and two subscribers on the
# Soft-RoCE device, then
# (a) the RDMA netdev taken down and up: every process sees its port go down
#     (IBV_EVENT_PORT_ERR; link.down), the publisher stops posting meanwhile
#     (sink.dropped_link_down), and once the port is ACTIVE again each joins
#     the group again by itself (link.rejoins) and data flows (link.down_ns);
# (b) a real fabric event with the port up: an address added to the RDMA
#     netdev changes the port's GID table (IBV_EVENT_GID_CHANGE, a kernel
#     event each process reads): each joins again at once (link.fabric_events);
# (c) the group deleted under a subscriber and under the publisher: rxe has
#     no subnet manager and no outside way to delete another process's group,
#     so RDMA_CM_EVENT_MULTICAST_ERROR never comes there; the test knob
#     MDCAST_VERBS_GROUP_ERROR_TRIGGER (verbs_link.cpp) makes the process act
#     on one: the group left (the QP detached; rxe deletes a group with its
#     last member) and joined again (link.group_errors).
# Every subscriber delivers every message, books identical to the
# publisher's; what was missed came back by retransmission. The feed runs
# until the test saw what it waits for, then the publisher is stopped with
# SIGTERM. Only in the Soft-RoCE VM (it takes the netdev down): exit 77 elsewhere.
#
#   rejoin_verbs.sh path/to/mdcast path/to/mdcast-verbs-probe
source "$(dirname "$0")/../lib.sh"
PROBE=${2:?usage: $0 path/to/mdcast path/to/mdcast-verbs-probe}

compgen -G '/sys/class/infiniband/*' >/dev/null || { echo "SKIP: no RDMA device (/sys/class/infiniband is empty)"; exit 77; }
# Taking the netdev down would cut a real host off its fabric: only the VM's.
[ -n "${SOFTROCE_NETDEV:-}" ] || { echo "SKIP: not in the Soft-RoCE VM (SOFTROCE_NETDEV unset): this test takes the RDMA netdev down"; exit 77; }
DEV=${SOFTROCE_DEV:-rxe0}
GIDX=${SOFTROCE_GID_INDEX:-1}
IP=${SOFTROCE_IP:?}
NETDEV=$SOFTROCE_NETDEV
GROUP="239.77.32.$((1 + $$ % 250))"
PORT=$((20000 + $$ % 20000))
SUBS=(s1 s2)

# Three processes that spin would leave the emulated VM's vCPUs none for the
# test's own `mdcast stat` reads (seconds each, and more on a loaded host):
# they sleep until data comes (completion channel), as on a crowded host.
feed=(--medium verbs --device "$DEV" --gid-index "$GIDX" --local-ip "$IP" --group "$GROUP" --control-port "$PORT"
  --idle block)
# The subscribers' window holds a whole outage: what they miss comes back by
# retransmission from the publisher's ring, not by a snapshot.
MDCAST_VERBS_GROUP_ERROR_TRIGGER=$WORK/pub.trigger start_bg pub publish "${feed[@]}" --rate 1k --duration 600s \
  --instrument-count 100 --wait-subscribers 2 --linger 30s --result "$WORK/pub.toml"
wait_log pub '^mdcast publish: .*session [0-9a-f]{16}' 60
for s in "${SUBS[@]}"; do
  MDCAST_VERBS_GROUP_ERROR_TRIGGER=$WORK/$s.trigger start_bg "$s" subscribe "${feed[@]}" --control-ip "$IP" \
    --result "$WORK/$s.toml"
done
pid() { eval echo "\$PID_$1"; }
pids() { local l; for l in "$@"; do pid "$l"; done | tr '\n' ' '; }
# "LABEL=VALUE ..." of counter KEY for the processes in LABELS..., from one read
values() {
  local key=$1 l v; shift
  v=$(stat_each "$key" $(pids "$@"))
  for l in "$@"; do echo -n "$l=$(awk -v p="$(pid "$l")" '$1 == p {print $2}' <<<"$v") "; done
}
# what a process shows when a wait fails: its recovery and link counters, its log's end
counters() {
  "$MDCAST" stat -a "$(pid "$1")" 2>/dev/null |
    awk '$1 ~ /^(sub\.(gaps|datagrams_recovered|recovery|snapshots)|link\.|ctl\.|sink\.dropped)/ && $2 != 0 {printf "%s=%s ", $1, $2}'
  echo "| $(tail -3 "$WORK/$1.log" | tr '\n' ' ')"
}
# waits until counter KEY of every process in LABELS... reaches MIN
all_reach() {
  local key=$1 min=$2 t=$3 l; shift 3
  wait_stat_each "$key" "$min" "$t" $(pids "$@") && return 0
  for l in "$@"; do echo "$l: $(counters "$l")" >&2; done
  fail "$key is not $min after ${t}s everywhere: $(values "$key" "$@")"
}
# data moves past what the processes had when called: 500 messages delivered
# by every subscriber, 100 datagrams posted by the publisher
moved_on() {
  local n
  n=$(stat_each sub.messages_delivered $(pids "${SUBS[@]}") | awk '$2 > m {m = $2} END {print m + 0}')
  all_reach sub.messages_delivered $((n + 500)) 120 "${SUBS[@]}"
  n=$(stat_value "$PID_pub" sink.datagrams_posted)
  all_reach sink.datagrams_posted $((n + 100)) 60 pub
}

all_reach sub.messages_delivered 1000 120 "${SUBS[@]}"
note "feed running: publisher and ${#SUBS[@]} subscribers on $DEV ($NETDEV, $IP), group $GROUP"

# (a) the port down and up.
ip link set dev "$NETDEV" down || fail "cannot take $NETDEV down"
note "$NETDEV down"
# Up again as soon as the publisher held back a datagram: every process
# counts the port's IBV_EVENT_PORT_ERR even if it is back by its next look,
# and a loaded host's counter reads should not stretch the outage.
wait_stat "$PID_pub" sink.dropped_link_down 1 30 || fail "the publisher did not stop posting while the port was down"
# The outage itself (not a wait for readiness): REJOIN_DOWN_S=35 outlasts the
# control server's idle timeout (30 s), which cuts the subscribers then.
sleep "${REJOIN_DOWN_S:-0}"
ip link set dev "$NETDEV" up || fail "cannot bring $NETDEV up"
note "$NETDEV up"
all_reach link.down 1 30 pub "${SUBS[@]}"
note "every process saw its port go down: link.down $(values link.down pub "${SUBS[@]}")"
all_reach link.rejoins 1 60 pub "${SUBS[@]}"
all_reach link.down_ns 1 60 pub "${SUBS[@]}"
note "rejoined by themselves, data flowing again: link.down_ns $(values link.down_ns pub "${SUBS[@]}")"
# From the port ACTIVE again to the group joined, as each process logged it.
for l in pub "${SUBS[@]}"; do
  back=$(sed -nE 's/.* is ACTIVE again after ([0-9.]+) s.*/\1/p' "$WORK/$l.log" | head -1)
  joined=$(sed -nE 's/.* joined again on .*, ([0-9.]+) s after it was lost.*/\1/p' "$WORK/$l.log" | head -1)
  [ -n "$back" ] && [ -n "$joined" ] || fail "$l logged no 'ACTIVE again' / 'joined again' lines"
  note "$l: port ACTIVE again ${back} s after it went down, group joined $(awk "BEGIN{printf \"%.0f\", ($joined - $back) * 1000}") ms later"
done
moved_on

# (b) a GID change, the port up all along.
ip addr add 10.77.0.199/24 dev "$NETDEV" || fail "cannot add an address to $NETDEV"
note "an address added to $NETDEV (its port's GID table changes)"
all_reach link.fabric_events 1 30 pub "${SUBS[@]}"
all_reach link.rejoins 2 60 pub "${SUBS[@]}"
note "every process joined again after the GID change: link.fabric_events $(values link.fabric_events pub "${SUBS[@]}")"
ip addr del 10.77.0.199/24 dev "$NETDEV" || fail "cannot remove the address from $NETDEV"
moved_on

# (c) the group deleted under s1, then under the publisher.
for l in s1 pub; do
  r=$(stat_value "$(pid "$l")" link.rejoins)
  : >"$WORK/$l.trigger"
  all_reach link.group_errors 1 30 "$l"
  all_reach link.rejoins $((r + 1)) 60 "$l"
  note "$l: its group deleted and joined again (link.group_errors 1, link.rejoins $((r + 1)))"
  moved_on
done

kill -TERM "$PID_pub"
rc=0; wait_rc "$PID_pub" 90 || rc=$?
[ "$rc" = 0 ] || fail "publisher exited $rc after SIGTERM"
for s in "${SUBS[@]}"; do
  rc=0; wait_rc "$(pid "$s")" 90 || rc=$?
  [ "$rc" = 0 ] || fail "$s exited $rc"
done

subs_toml=()
for s in "${SUBS[@]}"; do subs_toml+=("$WORK/$s.toml"); done
"$MDCAST" verify "$WORK/pub.toml" "${subs_toml[@]}" | tee "$WORK/verify.log" ||
  fail "mdcast verify: books of the subscribers differ from the publisher's"
for l in pub "${SUBS[@]}"; do
  f=$WORK/$l.toml
  note "$l: link.down $(toml_get "$f" link.down), link.rejoins $(toml_get "$f" link.rejoins), link.rejoin_failures $(toml_get "$f" link.rejoin_failures), link.group_errors $(toml_get "$f" link.group_errors), link.fabric_events $(toml_get "$f" link.fabric_events), link.down_ns $(toml_get "$f" link.down_ns)"
done
note "publisher: $(toml_get "$WORK/pub.toml" pub.messages_published) messages, sink.dropped_link_down $(toml_get "$WORK/pub.toml" sink.dropped_link_down), sink.qp_recoveries $(toml_get "$WORK/pub.toml" sink.qp_recoveries)"
published=$(toml_get "$WORK/pub.toml" pub.messages_published)
for s in "${SUBS[@]}"; do
  delivered=$(toml_get "$WORK/$s.toml" sub.messages_delivered)
  snapshots=$(toml_get "$WORK/$s.toml" sub.snapshots_applied)
  note "$s: $delivered messages delivered, $(toml_get "$WORK/$s.toml" sub.datagrams_recovered) datagrams recovered, $snapshots snapshots"
  # An outage longer than the subscriber's window is bridged by a snapshot
  # (REJOIN_DOWN_S=35): books identical, the messages it covers not delivered.
  if [ "${snapshots:-0}" = 0 ]; then
    [ "$delivered" = "$published" ] || fail "$s delivered $delivered of $published messages"
  fi
done
note "port down/up, a GID change and deleted groups while a verbs feed ran: everyone rejoined by themselves, books identical"
