#!/usr/bin/env bash
# forged_announce.sh against a feed with secrets: see there.
FA_AUTH=1
source "$(dirname "$0")/forged_announce.sh"
