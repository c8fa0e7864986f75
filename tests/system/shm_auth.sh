#!/usr/bin/env bash
# Authenticated feed over shm, as an operator sets it up: `mdcast secret new`
# lines in chmod-600 files; the right secret subscribes and gets every book
# identical; a wrong secret, no secret, an open publisher, a readable secrets
# file and the removed credential settings are clear errors.
source "$(dirname "$0")/lib.sh"

expect_error() {  # expect_error LOG PATTERN ARGS...
  local log=$1 pattern=$2; shift 2
  if "$MDCAST" "$@" >"$WORK/$log.log" 2>&1; then fail "'mdcast $*' succeeded"; fi
  grep -qE -- "$pattern" "$WORK/$log.log" || { cat "$WORK/$log.log"; fail "'mdcast $*' did not say /$pattern/"; }
  note "mdcast $*: $(grep -E -- "$pattern" "$WORK/$log.log" | head -1)"
}

umask 077
"$MDCAST" secret new --identity desk-a >"$WORK/pub.secrets"
"$MDCAST" secret new --identity desk-b --instruments 0-9 >>"$WORK/pub.secrets"
grep desk-a "$WORK/pub.secrets" >"$WORK/desk-a.secret"
"$MDCAST" secret new --identity desk-a >"$WORK/wrong.secret"  # same identity, another secret
[ "$(wc -l <"$WORK/pub.secrets")" = 2 ] || fail "secret new did not print one line each"

chmod 644 "$WORK/pub.secrets"
expect_error mode "has mode 0644: group or others may read or change it; chmod 600" \
  publish --name "$NAME" --duration 1s --secrets "$WORK/pub.secrets"
chmod 600 "$WORK/pub.secrets"
expect_error removed "setting 'subscriber.credential' was removed" subscribe --name "$NAME" --set subscriber.credential=x

start_bg pub publish --name "$NAME" --rate 20k --duration 2s --instrument-count 50 --secrets "$WORK/pub.secrets" \
  --wait-subscribers 1 --linger 1s --result "$WORK/pub.toml"
wait_ring
expect_error wrong "publisher could not prove it knows the secret for identity 'desk-a'" \
  subscribe --name "$NAME" --identity desk-a --secret-file "$WORK/wrong.secret" --wait 5s
expect_error open "authenticated clients only" subscribe --name "$NAME" --wait 5s
start_bg sub subscribe --name "$NAME" --identity desk-a --secret-file "$WORK/desk-a.secret" --result "$WORK/sub.toml"
wait_pid "$PID_sub" 60 || fail "the authenticated subscriber exited non-zero"
wait_pid "$PID_pub" 30 || fail "publisher exited non-zero"
"$MDCAST" verify "$WORK/pub.toml" "$WORK/sub.toml" >"$WORK/verify.log" || { cat "$WORK/verify.log"; fail "books differ"; }
published=$(toml_get "$WORK/pub.toml" messages)
got=$(toml_get "$WORK/sub.toml" messages)
[ "$got" = "$published" ] || fail "the subscriber delivered $got of $published"
[ "$(toml_get "$WORK/sub.toml" sub.auth_failures)" = 0 ] || fail "auth failures counted"

# A publisher without secrets cannot prove anything: no fallback to an open subscription.
start_bg open publish --name "$NAME-open" --rate 1k --duration 3s
wait_pid_ring() { local i=0; until [ -e "/dev/shm/mdcast-$NAME-open.ring" ] || [ -e "/dev/hugepages/mdcast-$NAME-open.ring" ]; do sleep 0.05; i=$((i + 1)); [ $i -lt 200 ] || fail "no ring"; done; }
wait_pid_ring
expect_error fallback "it answered the hello with unsupported" \
  subscribe --name "$NAME-open" --secret-file "$WORK/desk-a.secret" --wait 5s
wait_pid "$PID_open" 30 || fail "open publisher exited non-zero"
note "authenticated subscriber delivered all $published messages; every refusal clear"
