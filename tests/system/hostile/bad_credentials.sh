#!/usr/bin/env bash
# Wrong proofs as fast as the publisher answers them, from two connections
# at once, through the challenge-response handshake (for the real identity
# and for invented ones): answers come at a bounded rate (the publisher's
# delay grows with failures), none is accepted, and the subscribers holding
# the right secret get the whole feed.
source "$(dirname "$0")/hostile_lib.sh"
MAX_ANSWERS_PER_S=${HOSTILE_MAX_ANSWERS_PER_S:-100}

# The one place that knows how a publisher is told who may subscribe: a
# secrets file (mdcast secret new), the subscriber's own line in another.
configure_credentials() {
  (umask 077; "$MDCAST" secret new --identity good >"$WORK/pub.secrets")
  (umask 077; cp "$WORK/pub.secrets" "$WORK/good.secret")
  PUB_ARGS=(--secrets "$WORK/pub.secrets")
  SUB_ARGS=(--identity good --secret-file "$WORK/good.secret")
}

configure_credentials
start_feed
start_attack guess bad-credentials "shm:$NAME" --seconds 3 --clients 2
finish_attack guess 30
rate=$(attack_value guess answered_per_s)
accepted=$(attack_value guess accepted)
figure attempts "$(attack_value guess attempts)"
figure answered_per_s "${rate:-?}"
figure accepted "${accepted:-?}"
expect "wrong credentials answered at ${rate:-?}/s < ${MAX_ANSWERS_PER_S}/s" \
  awk -v r="${rate:-1e9}" -v m="$MAX_ANSWERS_PER_S" 'BEGIN {exit !(r < m)}'
expect "no wrong credential accepted (${accepted:-?})" [ "${accepted:-1}" = 0 ]
finish_feed
conclude
