#!/usr/bin/env bash
# The multi-host harness itself, with plain multicast (mcast_probe.py) and no
# mdcast: namespaces, veths and bridges carry a group from the publisher host
# to every subscriber host on both rails; the loss rule drops about 5 % on one
# link only; a cut link carries nothing and a restored one everything again;
# a scenario that fails, is signalled (TERM, INT) or SIGKILLed leaves no
# namespace, process or host interface behind (the SIGKILLed one's are reaped
# by the next run); without the privilege or without `ip` the scenarios skip.
source "$(dirname "$0")/netns_lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
PROBE=(python3 "$HERE/mcast_probe.py")
command -v python3 >/dev/null || fail "python3 is needed by the harness self-test (apt-get install python3)"

host_links() { ip -o link show | awk -F': ' '{print $2}' | sort; }
LINKS_BEFORE=$(host_links)

netns_fabric
netns_host pub 10.77.0.1 10.78.0.1
netns_host s1 10.77.0.2
netns_host s2 10.77.0.3
netns_host s3 10.77.0.4 10.78.0.4
netns_wait_links
[ "$(host_links)" = "$LINKS_BEFORE" ] || fail "the topology changed the host's interfaces: $(diff <(echo "$LINKS_BEFORE") <(host_links))"

# recv HOST LABEL GROUP IFACE_IP: a member of GROUP on HOST until the
# sender's end mark (or SIGTERM: stop_recv, for a member that hears nothing).
recv() {
  local h=$1 label=$2 i=0
  start_cmd_in "$h" "$label" "${PROBE[@]}" recv "$3" "$4" 60
  until grep -q joined "$WORK/$label.log" 2>/dev/null; do
    sleep 0.05; i=$((i + 1)); [ $i -lt 200 ] || fail "$label never joined $3"
  done
}
send() { in_ns pub "${PROBE[@]}" send "$1" "$2" "$3" >/dev/null || fail "sending to $1 failed"; }
# stop_recv LABEL: ends a member that cannot hear the end mark (a cut link).
stop_recv() { kill -TERM "$(pid_of "$1")" 2>/dev/null || true; }
# expect_got LABEL LOW HIGH: LABEL received LOW..HIGH distinct datagrams
# (waits for it to finish; not in a subshell, which could not wait for it).
expect_got() {
  local rc=0 n
  wait_rc "$(pid_of "$1")" 30 || rc=$?
  [ $rc = 0 ] || fail "probe $1 exited $rc"
  n=$(awk '/^received/ {print $4}' "$WORK/$1.log")
  [ -n "$n" ] && [ "$n" -ge "$2" ] && [ "$n" -le "$3" ] || fail "$1 received ${n:-nothing}, expected $2..$3"
  note "$1 received $n (expected $2..$3)"
}

# 1. Every group reaches every member, on both rails.
A=$NETNS_GROUP_A B=$NETNS_GROUP_B
recv s1 a1 "$A" 10.77.0.2; recv s2 a2 "$A" 10.77.0.3; recv s3 a3 "$A" 10.77.0.4; recv s3 b3 "$B" 10.78.0.4
send "$A" 10.77.0.1 500
send "$B" 10.78.0.1 500
for l in a1 a2 a3 b3; do expect_got $l 500 500; done

# 2. 5 % loss on s1's link only (4000 datagrams: 5 % is 200 ± 14).
netns_loss s1 5
recv s1 l1 "$A" 10.77.0.2; recv s2 l2 "$A" 10.77.0.3; recv s3 l3 "$A" 10.77.0.4
send "$A" 10.77.0.1 4000
expect_got l1 3600 3960
expect_got l2 4000 4000
expect_got l3 4000 4000
note "loss mode $LOSS_MODE; the rule dropped $(netns_loss_dropped) packets"
[ "$LOSS_MODE" != inject ] || fail "no link-level loss available (neither netem nor nftables)"

# 3. A cut link carries nothing (and s2 sees its carrier go); restored, everything.
netns_cut s2
ip -n "$(ns_of s2)" link show eth0 | grep -q NO-CARRIER || fail "s2's eth0 kept its carrier after the cut"
recv s2 c2 "$A" 10.77.0.3; recv s3 c3 "$A" 10.77.0.4
send "$A" 10.77.0.1 300
expect_got c3 300 300
stop_recv c2  # c3 heard the end mark: whatever crossed the fabric has arrived
expect_got c2 0 0
netns_restore s2
netns_wait_links
recv s2 r2 "$A" 10.77.0.3
send "$A" 10.77.0.1 300
expect_got r2 300 300

# 4. Teardown: a scenario that fails or is signalled leaves nothing behind.
CHILD="$HERE/harness_child.sh"
# child MODE: starts harness_child.sh in the background, its own process group
# (set -m) so that INT reaches it as a keyboard's would; CHILD_PID, CHILD_OUT.
child() {
  CHILD_OUT="$WORK/child-$1-$RANDOM.out"
  rm -f "$WORK/ready"
  set -m
  bash "$CHILD" "$MDCAST" "$1" "$WORK/ready" >"$CHILD_OUT" 2>&1 &
  CHILD_PID=$!
  set +m
  PIDS+=("$CHILD_PID")
}
wait_ready() {
  local i=0
  until [ -s "$WORK/ready" ]; do
    sleep 0.05; i=$((i + 1))
    [ $i -lt 300 ] || { cat "$CHILD_OUT"; fail "child $CHILD_PID never got ready"; }
  done
  SLEEPER=$(cat "$WORK/ready")
  PIDS+=("$SLEEPER")
}
child_namespaces() { ip netns list | awk '{print $1}' | grep "^mdn$1-" || true; }
# the child's scratch directory, kept because it failed (lib.sh prints it)
forget_child_work() { local d; d=$(sed -n 's/^--- logs (\(.*\)) ---$/\1/p' "$CHILD_OUT"); [ -z "$d" ] || rm -rf "$d"; }
# running PID: alive and not a zombie (a killed orphan is one until init reaps it).
running() { [ -r "/proc/$1/status" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }
expect_clean() {  # expect_clean WHAT: nothing of CHILD_PID left
  local i=0
  [ -z "$(child_namespaces "$CHILD_PID")" ] || fail "$1: namespaces left: $(child_namespaces "$CHILD_PID")"
  while running "$SLEEPER"; do
    sleep 0.05; i=$((i + 1)); [ $i -lt 100 ] || fail "$1: its process $SLEEPER still runs"
  done
  [ "$(host_links)" = "$LINKS_BEFORE" ] || fail "$1: host interfaces changed"
  note "$1: no namespace, process or interface left"
}

child fail
wait_ready
rc=0; wait_rc "$CHILD_PID" 30 || rc=$?
[ $rc = 1 ] || { cat "$CHILD_OUT"; fail "the failing child exited $rc, not 1"; }
grep -q -- '--- logs' "$CHILD_OUT" || { cat "$CHILD_OUT"; fail "the failing child printed no logs"; }
grep -q 'child: started sleep' "$CHILD_OUT" || { cat "$CHILD_OUT"; fail "the failing child's logs miss its process log"; }
forget_child_work
expect_clean "a failing scenario"

for sig in TERM INT; do
  child wait
  wait_ready
  kill -s $sig "$CHILD_PID"
  rc=0; wait_rc "$CHILD_PID" 30 || rc=$?
  want=$((128 + $(kill -l $sig)))
  [ $rc = $want ] || { cat "$CHILD_OUT"; fail "the child exited $rc after SIG$sig, not $want"; }
  forget_child_work
  expect_clean "a scenario ended by SIG$sig"
done

# SIGKILL: no trap runs, so its namespaces stay until the next run reaps them.
child wait
wait_ready
kill -9 "$CHILD_PID"
wait "$CHILD_PID" 2>/dev/null || true
for ns in $(child_namespaces "$CHILD_PID"); do NETNS_MADE+=("$ns"); done  # ours to delete if reaping fails
[ -n "$(child_namespaces "$CHILD_PID")" ] || fail "a SIGKILLed child left no namespace (the reap check would prove nothing)"
KILLED=$CHILD_PID
child ok
rc=0; wait_rc "$CHILD_PID" 30 || rc=$?
[ $rc = 0 ] || { cat "$CHILD_OUT"; fail "the reaping child exited $rc"; }
grep -q "left by a dead run (PID $KILLED)" "$CHILD_OUT" || { cat "$CHILD_OUT"; fail "the next run did not say it reaped PID $KILLED's namespaces"; }
CHILD_PID=$KILLED
expect_clean "a SIGKILLed scenario, after the next run"
rm -rf /tmp/mdcast-sys-harness_child-"$KILLED".*  # its scratch directory (lib.sh's trap never ran either)

# 5. The skip path: no privilege (uid nobody), no `ip`.
if command -v setpriv >/dev/null; then
  rc=0
  setpriv --reuid=65534 --regid=65534 --clear-groups bash "$CHILD" "$MDCAST" ok /nonexistent >"$WORK/skip-uid.out" 2>&1 || rc=$?
  [ $rc = 77 ] && grep -q '^SKIP: cannot create network namespaces as uid 65534' "$WORK/skip-uid.out" \
    || { cat "$WORK/skip-uid.out"; fail "unprivileged: exit $rc, expected 77 and a SKIP reason"; }
  note "unprivileged: $(cat "$WORK/skip-uid.out")"
else
  note "setpriv missing: the unprivileged skip path was not checked"
fi
mkdir "$WORK/bin"
for d in /usr/local/bin /usr/bin /bin /usr/sbin /sbin; do
  for f in "$d"/*; do
    b=${f##*/}; [ "$b" = ip ] || [ -e "$WORK/bin/$b" ] || ln -s "$f" "$WORK/bin/$b"
  done
done
rc=0
PATH="$WORK/bin" bash "$CHILD" "$MDCAST" ok /nonexistent >"$WORK/skip-ip.out" 2>&1 || rc=$?
[ $rc = 77 ] && grep -q "^SKIP: 'ip' (iproute2) is not installed" "$WORK/skip-ip.out" \
  || { cat "$WORK/skip-ip.out"; fail "without ip: exit $rc, expected 77 and a SKIP reason"; }
note "without ip: $(cat "$WORK/skip-ip.out")"
note "harness ok: rails A and B flood, loss ($LOSS_MODE) on one link, cut and restore, teardown after fail/TERM/INT/KILL, skip paths"
