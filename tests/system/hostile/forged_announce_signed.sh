#!/usr/bin/env bash
# forged_announce.sh against a publisher that signs its announcements: see there.
FA_SIGNED=1
source "$(dirname "$0")/forged_announce.sh"
