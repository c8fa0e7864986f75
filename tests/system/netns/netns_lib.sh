# Helpers for the multi-host tests: each "host" is a network namespace with
# its own stack, cabled by veth pairs into bridges that live in a "fabric"
# namespace of their own, so nothing is made in (or can disturb) the host's
# namespace. Usage in a scenario:
#   source "$(dirname "$0")/netns_lib.sh"        # args: path/to/mdcast
#   netns_fabric; netns_host pub 10.77.0.1; netns_host s1 10.77.0.2 ...
#   start_in pub pub publish --medium udp --interface 10.77.0.1 ...
#   netns_loss s1 5; netns_cut s2; sleep 5; netns_restore s2
# An EXIT/INT/TERM trap ends the processes the test started (by PID) and
# deletes every namespace it made, also after a failure; a failing test
# prints every log (lib.sh).
#
# Names: namespaces are mdn<PID>-<host> (this shell's PID keeps concurrent
# runs apart, and lets a later run recognise what a SIGKILLed one left);
# interfaces live only inside those namespaces: eth0 (rail A) and eth1
# (rail B) in a host, a-<host> and b-<host> (the bridge ports) in the fabric.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

NETNS_PREFIX="mdn$$-"
NETNS_FABRIC="${NETNS_PREFIX}fab"
NETNS_MADE=()          # namespaces to delete, in creation order
NETNS_HOSTS=()         # host labels (pub, s1, ...)
NETNS_LOSS_HOST=""
NETNS_GROUP_A=${NETNS_GROUP_A:-239.77.1.1:7470}
NETNS_GROUP_B=${NETNS_GROUP_B:-239.77.2.1:7470}
LOSS_MODE=""           # netem | nft | inject, once netns_loss ran
# nft only: narrows the loss to matching packets, to tell the data plane's
# part from the control plane's (e.g. NETNS_LOSS_MATCH="meta l4proto udp").
NETNS_LOSS_MATCH=${NETNS_LOSS_MATCH:-}
LOSS_SUB_ARGS=()       # subscriber flags the loss needs (only for LOSS_MODE=inject)

skip() { echo "SKIP: $*"; exit 77; }

# -------------------------------------------------------------- privilege --

# Only a missing privilege or a missing `ip` skips: everything else the test
# needs is either here or replaced by something that is (see netns_loss).
netns_require() {
  command -v ip >/dev/null 2>&1 || skip "'ip' (iproute2) is not installed: cannot build network namespaces (apt-get install iproute2)"
  local probe="${NETNS_PREFIX}probe" err
  if ! err=$(ip netns add "$probe" 2>&1); then
    skip "cannot create network namespaces as uid $(id -u) ('ip netns add' said: ${err//$'\n'/ }); these tests need root or CAP_NET_ADMIN + CAP_SYS_ADMIN"
  fi
  ip netns del "$probe" 2>/dev/null || true
}

# Namespaces left by a run that was SIGKILLed (its trap never ran): ours by
# name, and their owner's PID is gone. Deleting them frees their veths too.
netns_reap_stale() {
  local ns pid
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^mdn[0-9]+-' || true); do
    pid=${ns#mdn}; pid=${pid%%-*}
    [ "$pid" = $$ ] && continue
    [ -d "/proc/$pid" ] && continue
    note "removing namespace $ns left by a dead run (PID $pid)"
    netns_kill_inside "$ns"
    ip netns del "$ns" 2>/dev/null || true
  done
}

# ---------------------------------------------------------------- teardown --

# Every process still inside NS: this test started it (the name is ours).
netns_kill_inside() {
  local p
  for p in $(ip netns pids "$1" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
}

netns_teardown() {
  local p ns
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  for ns in "${NETNS_MADE[@]}"; do netns_kill_inside "$ns"; done
  # Hosts first: deleting a host namespace frees its veth peers in the fabric.
  for ((p = ${#NETNS_MADE[@]} - 1; p >= 0; p--)); do ip netns del "${NETNS_MADE[$p]}" 2>/dev/null || true; done
  local left
  left=$(ip netns list 2>/dev/null | awk '{print $1}' | grep -F "$NETNS_PREFIX" || true)
  [ -z "$left" ] || echo "WARNING: namespaces left behind: $left" >&2
}

_netns_exit() {
  local rc=$?
  set +e  # errexit would end the trap at its first failing command, before cleanup
  netns_teardown
  [ $rc -ne 77 ] || { rm -rf "$WORK"; exit 77; }  # a skip has no logs worth printing
  (exit $rc)
  cleanup  # lib.sh: keeps the exit status, prints the logs on failure
}
trap _netns_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- topology --

ns_of() { echo "${NETNS_PREFIX}$1"; }
in_ns() { local h=$1; shift; ip netns exec "$(ns_of "$h")" "$@"; }

_netns_add() {
  ip netns add "$1" || fail "ip netns add $1 failed"
  NETNS_MADE+=("$1")
  ip -n "$1" link set lo up
}

# netns_fabric: the fabric namespace with bridge br-a (rail A, 10.77.0.0/24)
# and br-b (rail B, 10.78.0.0/24). Snooping off: every port gets every group,
# so no querier is needed for IGMP joins to take effect.
netns_fabric() {
  _netns_add "$NETNS_FABRIC"
  local br
  for br in br-a br-b; do
    ip -n "$NETNS_FABRIC" link add "$br" type bridge mcast_snooping 0 || fail "cannot create bridge $br in $NETNS_FABRIC"
    ip -n "$NETNS_FABRIC" link set "$br" up
  done
}

# _netns_cable HOST RAIL(a|b) DEV IP: a veth from HOST's DEV to the rail's bridge.
_netns_cable() {
  local h=$1 rail=$2 dev=$3 ip=$4 ns
  ns=$(ns_of "$h")
  ip -n "$NETNS_FABRIC" link add "$rail-$h" type veth peer name "$dev" netns "$ns" \
    || fail "cannot cable $h ($dev) to rail $rail"
  ip -n "$NETNS_FABRIC" link set "$rail-$h" master "br-$rail" up
  ip -n "$ns" addr add "$ip/24" dev "$dev"
  ip -n "$ns" link set "$dev" up
}

# netns_host LABEL IP_A [IP_B]: a host on rail A (eth0), and on rail B (eth1) with IP_B.
netns_host() {
  local h=$1 ip_a=$2 ip_b=${3:-}
  [ ${#h} -le 12 ] || fail "host label '$h' too long for interface names (≤ 12)"
  _netns_add "$(ns_of "$h")"
  NETNS_HOSTS+=("$h")
  _netns_cable "$h" a eth0 "$ip_a"
  [ -z "$ip_b" ] || _netns_cable "$h" b eth1 "$ip_b"
}

# netns_wait_links: every bridge port forwarding (a fresh port may pass a
# moment in "listening"/"learning" on some kernels).
netns_wait_links() {
  local i=0
  while ip -n "$NETNS_FABRIC" -o link show type veth | grep -qv 'state UP'; do
    sleep 0.05; i=$((i + 1))
    [ $i -lt 100 ] || { ip -n "$NETNS_FABRIC" link show >&2; fail "fabric ports not up after 5 s"; }
  done
}

# --------------------------------------------------------------- impairment --

# netns_loss HOST PCT: PCT % random loss on HOST's rail-A link, both ways.
# Where the kernel has netem, also reordering on the way to HOST; without it
# (sch_netem not built), nftables drops PCT % at the bridge port (numgen
# random) and reordering at the link is not tested here (component tests
# cover it); with neither, the subscriber drops PCT % on arrival
# (--inject-loss, in LOSS_SUB_ARGS). LOSS_MODE says which.
netns_loss() {
  local h=$1 pct=$2 port="a-$1" err
  NETNS_LOSS_HOST=$h
  if err=$(ip netns exec "$NETNS_FABRIC" tc qdisc add dev "$port" root netem delay 1ms reorder 75% 50% loss "$pct%" 2>&1) \
    && ip netns exec "$(ns_of "$h")" tc qdisc add dev eth0 root netem loss "$pct%" 2>/dev/null; then
    LOSS_MODE=netem
    note "loss on $h: netem $pct % loss both ways, 25 % of datagrams to $h delayed 1 ms (reordered)"
    return 0
  fi
  ip netns exec "$NETNS_FABRIC" tc qdisc del dev "$port" root 2>/dev/null || true
  note "netem not available (tc said: ${err//$'\n'/ }): NO REORDERING at the link in this run (component tests cover reordering)"
  if command -v nft >/dev/null 2>&1 && ip netns exec "$NETNS_FABRIC" nft -f - <<EOF
table bridge mdcast_loss {
  chain forward {
    type filter hook forward priority 0; policy accept;
    oifname "$port" $NETNS_LOSS_MATCH numgen random mod 100 < $pct counter drop
    iifname "$port" $NETNS_LOSS_MATCH numgen random mod 100 < $pct counter drop
  }
}
EOF
  then
    LOSS_MODE=nft
    note "loss on $h: nftables drops $pct % at bridge port $port, both ways (numgen random)"
    return 0
  fi
  LOSS_MODE=inject
  LOSS_SUB_ARGS=(--inject-loss "$(awk -v p="$pct" 'BEGIN {print p / 100}')")
  note "neither netem nor nftables (install nftables: scripts/install-deps.sh): $h drops $pct % on arrival (--inject-loss) instead of at the link"
}

# netns_loss_dropped: packets the loss rule dropped so far, both ways ("?" for inject).
netns_loss_dropped() {
  case "$LOSS_MODE" in
    nft) ip netns exec "$NETNS_FABRIC" nft list table bridge mdcast_loss 2>/dev/null \
           | awk '/counter packets/ {for (i = 1; i < NF; i++) if ($i == "packets") s += $(i + 1)} END {print s + 0}' ;;
    netem) { ip netns exec "$NETNS_FABRIC" tc -s qdisc show dev "a-$NETNS_LOSS_HOST"
             ip netns exec "$(ns_of "$NETNS_LOSS_HOST")" tc -s qdisc show dev eth0; } 2>/dev/null \
           | awk '/dropped/ {gsub(/[(),]/, ""); for (i = 1; i < NF; i++) if ($i == "dropped") s += $(i + 1)} END {print s + 0}' ;;
    *) echo "?" ;;
  esac
}

# netns_cut HOST [RAIL]: pulls HOST's cable on RAIL (a) at the bridge: its
# interface loses carrier, as when a cable or a switch port dies.
netns_cut() { ip -n "$NETNS_FABRIC" link set "${2:-a}-$1" down || fail "cannot cut ${2:-a}-$1"; note "cut $1's rail ${2:-a} link"; }
netns_restore() { ip -n "$NETNS_FABRIC" link set "${2:-a}-$1" up || fail "cannot restore ${2:-a}-$1"; note "restored $1's rail ${2:-a} link"; }

# ---------------------------------------------------------------- processes --

# start_in HOST LABEL ARGS...: mdcast ARGS in HOST's namespace, in the
# background, logging to $WORK/LABEL.log; PID_<LABEL> is its PID (`ip netns
# exec` execs mdcast, so it is mdcast's own and `mdcast stat PID` works).
start_in() {
  local h=$1 label=$2; shift 2
  ip netns exec "$(ns_of "$h")" "$MDCAST" "$@" >"$WORK/$label.log" 2>&1 &
  PIDS+=($!)
  eval "PID_${label//-/_}=$!"
}

# start_cmd_in HOST LABEL CMD...: any command, as start_in.
start_cmd_in() {
  local h=$1 label=$2; shift 2
  ip netns exec "$(ns_of "$h")" "$@" >"$WORK/$label.log" 2>&1 &
  PIDS+=($!)
  eval "PID_${label//-/_}=$!"
}

pid_of() { eval echo "\$PID_${1//-/_}"; }


# A value from a result file, 0 when absent (a counter a medium lacks).
result_value() { local v; v=$(toml_get "$WORK/$1.toml" "$2" 2>/dev/null || true); echo "${v:-0}"; }

netns_require
netns_reap_stale
