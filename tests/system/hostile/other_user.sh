#!/usr/bin/env bash
# Another local user finds the publisher's control socket (its abstract name
# is listed in /proc/net/unix, as it is for every user) and subscribes four
# times. Each connection is closed at accept, before a byte of it is read,
# and counted; nothing is ever answered; the ring stays unreadable to that
# user; the two real subscribers deliver everything.
source "$(dirname "$0")/hostile_lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root to act as another user"
command -v setpriv >/dev/null || skip "setpriv (util-linux) is not installed"

start_feed
sock=$(grep -o "@mdcast/$NAME\.[0-9a-f]*" /proc/net/unix | head -1)
[ -n "$sock" ] || fail "the control socket of feed $NAME is not in /proc/net/unix"
note "control socket as any user sees it: $sock"
start_attack other --as-uid 65534 subscribers "unix:$sock" --count 4 --seconds 0
finish_attack other 30
figure other_subscribed "$(attack_value other subscribed)"
figure other_unanswered "$(attack_value other unanswered)"
expect "another user is never subscribed" [ "$(attack_value other subscribed)" = 0 ]
expect "another user is never answered (closed before its frame was read)" [ "$(attack_value other unanswered)" = 4 ]
refused=$(stat_value "$PID_pub" control.refused_peers)
figure refused_peers "${refused:-?}"
expect "the publisher counted the refusals (control.refused_peers ${refused:-?} >= 4)" [ "${refused:-0}" -ge 4 ]
unreadable() { ! setpriv --reuid=65534 --regid=65534 --clear-groups head -c 1 "$1" >/dev/null 2>&1; }
expect "the ring is unreadable to another user" unreadable "/dev/shm/mdcast-$NAME.ring"
finish_feed
conclude
