#!/usr/bin/env bash
# An authenticated feed over RDMA (docs/security.md 2): a publisher with
# secrets on the verbs medium (UD multicast data, RC control), three
# subscriber processes with identities. s1 and s2 hold their identities'
# secrets: they deliver every message with books identical to the
# publisher's, every datagram they took checked by its tag (sub.untagged and
# sub.bad_tags count only the forger's). s3 holds a wrong secret for its
# identity: refused, with a clear message and an error exit, having
# delivered nothing. Meanwhile a sender on the group that is not the
# publisher (mdcast-verbs-probe forge, its own UD QP) sends datagrams of the
# feed's session and channel, first without a tag, then with a tag no key
# made: each subscriber counts every one (sub.untagged, sub.bad_tags) and
# none reaches its books. The publisher is stopped by SIGINT once they are
# counted, so nothing depends on how many datagrams some seconds make.
# Exit 77 (skip) without an RDMA device.
#
#   auth_verbs.sh path/to/mdcast path/to/mdcast-verbs-probe
source "$(dirname "$0")/../lib.sh"
PROBE=${2:?usage: $0 path/to/mdcast path/to/mdcast-verbs-probe}

compgen -G '/sys/class/infiniband/*' >/dev/null || { echo "SKIP: no RDMA device (/sys/class/infiniband is empty)"; exit 77; }
DEV=${SOFTROCE_DEV:-$(ls /sys/class/infiniband | head -1)}
GIDX=${SOFTROCE_GID_INDEX:-1}
# The device's RoCE v2 IPv4 address: the subscribers' way to the publisher's RC listener.
IP=${SOFTROCE_IP:-$("$PROBE" info | awk -v d="$DEV" -v g="$GIDX:" '$1 == d && $4 == "gid" && $5 == g {print $6; exit}')}
[ -n "$IP" ] || fail "no IPv4 address on $DEV (mdcast-verbs-probe info: $("$PROBE" info | tr '\n' ' '))"
GROUP="239.77.31.$((1 + $$ % 250))"
PORT=$((20000 + $$ % 20000))
FORGED=50

umask 077
for i in 1 2 3; do "$MDCAST" secret new --identity "desk-$i" >>"$WORK/pub.secrets"; done
for i in 1 2; do grep "^desk-$i " "$WORK/pub.secrets" >"$WORK/s$i.secret"; done
"$MDCAST" secret new --identity desk-3 >"$WORK/s3.secret"  # the right identity, another secret

feed=(--medium verbs --device "$DEV" --gid-index "$GIDX" --local-ip "$IP" --group "$GROUP" --control-port "$PORT"
      --idle block)
start_bg pub publish "${feed[@]}" --secrets "$WORK/pub.secrets" --rate 5k --duration 300s --instrument-count 100 \
  --wait-subscribers 2 --linger 30s --result "$WORK/pub.toml"
wait_log pub '^mdcast publish: .*session [0-9a-f]{16}' 60
SESSION=$(grep -oE 'session [0-9a-f]{16}' "$WORK/pub.log" | head -1 | cut -d' ' -f2)
note "publisher: session $SESSION on $DEV ($IP), group $GROUP, RC control port $PORT"
# s3 calls failed proofs a refusal after subscriber.wait: 2 s, not the default 10.
for i in 1 2 3; do
  wait_for=(); if [ "$i" = 3 ]; then wait_for=(--wait 2s); fi
  start_bg "s$i" subscribe "${feed[@]}" --control-ip "$IP" --identity "desk-$i" --secret-file "$WORK/s$i.secret" \
    --result "$WORK/s$i.toml" "${wait_for[@]}"
done

# s1 and s2 have their data key (they deliver): the forger's datagrams come now.
for i in 1 2; do
  wait_stat "$(eval echo "\$PID_s$i")" sub.messages_delivered 1000 120 || fail "s$i delivered too little in 120 s"
done
next=$(stat_value "$PID_s1" sub.next_sequence)
"$PROBE" forge --local-ip "$IP" --group "$GROUP" --session "$SESSION" --from-sequence "$((next + 1))" \
  --count "$FORGED" >"$WORK/forge.log" 2>&1 || fail "the forger failed: $(tail -3 "$WORK/forge.log")"
note "$(grep '^forged:' "$WORK/forge.log")"
for i in 1 2; do
  pid=$(eval echo "\$PID_s$i")
  wait_stat "$pid" sub.untagged "$FORGED" 30 || fail "s$i counted $(stat_value "$pid" sub.untagged) of $FORGED untagged datagrams"
  wait_stat "$pid" sub.bad_tags "$FORGED" 30 || fail "s$i counted $(stat_value "$pid" sub.bad_tags) of $FORGED wrong tags"
done

# s3: refused at the handshake, and says why.
rc=0; wait_rc "$PID_s3" 60 || rc=$?
{ [ "$rc" -ge 1 ] && [ "$rc" -le 123 ]; } || fail "s3 (wrong secret) exit status $rc, not an error exit of its own"
msg="publisher could not prove it knows the secret for identity 'desk-3'"
grep -qF "$msg" "$WORK/s3.log" || fail "s3's log does not say: $msg ($(tail -3 "$WORK/s3.log"))"
note "s3 (wrong secret for desk-3) refused, exit $rc: $(grep -F "$msg" "$WORK/s3.log" | head -1)"

kill -INT "$PID_pub"
rc=0; wait_rc "$PID_pub" 60 || rc=$?
[ "$rc" = 0 ] || fail "publisher exited $rc after SIGINT"
for i in 1 2; do
  rc=0; wait_rc "$(eval echo "\$PID_s$i")" 60 || rc=$?
  [ "$rc" = 0 ] || fail "s$i exited $rc"
done

"$MDCAST" verify "$WORK/pub.toml" "$WORK/s1.toml" "$WORK/s2.toml" | tee "$WORK/verify.log" ||
  fail "mdcast verify: books of s1, s2 differ from the publisher's"
published=$(toml_get "$WORK/pub.toml" messages)
[ "$(toml_get "$WORK/pub.toml" ctl.auth_ok)" = 2 ] || fail "publisher: ctl.auth_ok $(toml_get "$WORK/pub.toml" ctl.auth_ok), not 2"
# (s3 stops at the publisher's proof, which its secret does not check: it sends none of its own to refuse.)
note "publisher: ctl.auth_ok 2, ctl.auth_failed $(toml_get "$WORK/pub.toml" ctl.auth_failed)"
for i in 1 2; do
  r="$WORK/s$i.toml"
  [ "$(toml_get "$r" messages)" = "$published" ] || fail "s$i delivered $(toml_get "$r" messages) of $published messages"
  # Only the forger's: every datagram of the publisher's carried a good tag.
  [ "$(toml_get "$r" sub.untagged)" = "$FORGED" ] || fail "s$i: sub.untagged $(toml_get "$r" sub.untagged), not $FORGED"
  [ "$(toml_get "$r" sub.bad_tags)" = "$FORGED" ] || fail "s$i: sub.bad_tags $(toml_get "$r" sub.bad_tags), not $FORGED"
  [ "$(toml_get "$r" sub.datagrams_delivered)" -gt 0 ] || fail "s$i delivered no datagram"
  [ "$(toml_get "$r" sub.forged_datagrams)" = 0 ] || fail "s$i: a forged datagram got past the tag to the claim check"
  note "s$i: $published messages in $(toml_get "$r" sub.datagrams_delivered) datagrams, each tag checked;" \
    "untagged $FORGED, bad tags $FORGED (the forger's), unverifiable $(toml_get "$r" sub.unverifiable)," \
    "gaps $(toml_get "$r" sub.gaps), recovered $(toml_get "$r" sub.datagrams_recovered)"
done
s3_messages=$(toml_get "$WORK/s3.toml" messages 2>/dev/null || true)
[ "${s3_messages:-0}" = 0 ] || fail "the refused s3 delivered $s3_messages messages"
note "verbs with secrets: 2 subscribers with books identical, 1 refused, $((2 * FORGED)) forged datagrams dropped at the tag"
