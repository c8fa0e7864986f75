#!/usr/bin/env bash
# forged_chain.sh against a feed with secrets (its data tagged): see there.
CHAIN_AUTH=1
source "$(dirname "$0")/forged_chain.sh"
