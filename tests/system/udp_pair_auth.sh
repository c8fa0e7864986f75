#!/usr/bin/env bash
# udp_pair.sh with secrets: both members tag their data with one derived key.
PAIR_AUTH=1
source "$(dirname "$0")/udp_pair.sh"
