#!/usr/bin/env bash
# Wrong credentials as fast as the publisher answers them, from two
# connections at once: answers come at a bounded rate (a guesser learns
# little per second), none is accepted, and the subscribers holding the
# right credential get the whole feed.
source "$(dirname "$0")/hostile_lib.sh"
MAX_ANSWERS_PER_S=${HOSTILE_MAX_ANSWERS_PER_S:-100}

# The one place that knows how a publisher is told who may subscribe. Today:
# a [[publisher.entitlement]] credential in a config file and --credential on
# the subscriber. When challenge-response authentication replaces them, this
# changes (and CredentialAttempt in attack_control.cpp).
configure_credentials() {
  local good="hostile-good-$$"
  printf '[[publisher.entitlement]]\ncredential = "%s"\ninstruments = "all"\n' "$good" >"$WORK/entitlements.toml"
  PUB_PRE=(--config "$WORK/entitlements.toml")
  SUB_ARGS=(--credential "$good")
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
