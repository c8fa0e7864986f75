#!/usr/bin/env bash
# An authenticated feed across hosts: s1 and s2 hold their identities'
# secrets, s3 a wrong secret for its identity. s3 is refused (non-zero exit,
# a clear message) and s1, s2 deliver every message with books identical.
source "$(dirname "$0")/netns_feed.sh"

umask 077
for s in s1 s2 s3; do "$MDCAST" secret new --identity "desk-$s" >>"$WORK/pub.secrets"; done
for s in s1 s2; do grep "^desk-$s " "$WORK/pub.secrets" >"$WORK/$s.secret"; done
"$MDCAST" secret new --identity desk-s3 >"$WORK/s3.secret"  # the right identity, another secret

netns_topology
PUB_ARGS=(--secrets "$WORK/pub.secrets")
WAIT_SUBS=2
start_publisher
for s in s1 s2 s3; do start_subscriber $s --identity "desk-$s" --secret-file "$WORK/$s.secret"; done
rc=0; wait_rc "$PID_s3" 60 || rc=$?
expect "s3 (wrong secret) exits with an error of its own (exit status $rc)" error_exit "$rc"
msg="publisher could not prove it knows the secret for identity 'desk-s3'"
expect "s3's log says: $msg" grep -qF "$msg" "$WORK/s3.log"
finish s1 s2
finish_publisher
for s in s1 s2; do sub_figures $s; done
figure s3.exit "$rc"
figure pub.auth_ok "$(result_value pub ctl.auth_ok)"
figure pub.auth_failed "$(result_value pub ctl.auth_failed)"

check_books s1 s2
check_all_delivered s1 s2
check_undisturbed s1 s2
# An authenticating subscriber delivers nothing its control plane has not
# named the session of: the refused one hands its application nothing.
figure s3.messages "$(result_value s3 messages)"
expect "the refused s3 delivered nothing to its application" eq "$(result_value s3 messages)" 0
conclude
