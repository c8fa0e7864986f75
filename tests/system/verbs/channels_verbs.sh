#!/usr/bin/env bash
# A feed over 4 channels on RDMA: 4 UD QPs, each on its own multicast group
# (verbs.group + index), one RC control endpoint for all four (each
# connection request moved to its channel's thread), published by 2 threads;
# one subscriber process on all four. Books identical to the publisher's,
# every message exactly once, each channel its own sequence space. Exit 77
# (skip) without an RDMA device.
source "$(dirname "$0")/../lib.sh"

compgen -G '/sys/class/infiniband/*' >/dev/null || { echo "SKIP: no RDMA device (/sys/class/infiniband is empty)"; exit 77; }
DEV=${SOFTROCE_DEV:-$(ls /sys/class/infiniband | head -1)}
GIDX=${SOFTROCE_GID_INDEX:-1}

rc=0
"$MDCAST" demo --medium verbs --device "$DEV" --gid-index "$GIDX" --channels 4 --threads 2 -n 1 --rate 20k \
  --duration 2s --progress false --keep >"$WORK/demo.log" 2>&1 || rc=$?
cat "$WORK/demo.log"
[ "$rc" -eq 0 ] || fail "mdcast demo over verbs with 4 channels exited $rc"
grep -q "^RESULT: all 1 subscribers delivered every message exactly once" "$WORK/demo.log" || fail "no clean RESULT line"
RUN=$(sed -nE 's/^ +run directory (.*)$/\1/p' "$WORK/demo.log")
[ -f "$RUN/publisher.toml" ] && [ -f "$RUN/sub-1.toml" ] || fail "demo --keep left no result files in '$RUN'"
for c in 1 2 3 4; do
  sent=$(toml_get "$RUN/publisher.toml" "pub@$c.datagrams_sent")
  got=$(toml_get "$RUN/sub-1.toml" "sub@$c.datagrams_delivered")
  [ "${sent:-0}" -gt 0 ] || fail "channel $c carried ${sent:-no} datagrams"  # (how many 2 s make is the host's business)
  [ "$got" = "$sent" ] || fail "channel $c: $sent datagrams sent, $got delivered"
  note "channel $c: $sent datagrams on its own UD QP and group, all delivered"
done
[ "$(toml_get "$RUN/publisher.toml" door.routed)" = 4 ] ||
  fail "the shared RC endpoint routed $(toml_get "$RUN/publisher.toml" door.routed) connections, not the subscriber's 4"
note "one RC control endpoint: 4 connection requests, each served by its channel's thread"
rm -rf "$RUN"
note "4 verbs channels, one subscriber process on all four: books identical"
