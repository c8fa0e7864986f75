#!/usr/bin/env bash
# The checks that need no build, `make test`'s first stage (test-all.sh
# `checks`): the include layering (check-layering.sh), how far each medium
# reaches outside its folder (check-medium-names.sh), that the TSan stage's
# test selection sees every thread the library starts (check-threads.sh),
# that no standalone fence breaks the TSan build (check-fences.sh) and the
# code in the docs (check-doc-snippets.py: every C++ block compiles). Runs
# all five, then exits 1 if any failed.
#
#   scripts/checks.sh [REPO]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rc=0
"$here/check-layering.sh" "$@" || rc=1
"$here/check-medium-names.sh" "$@" || rc=1
"$here/check-threads.sh" "$@" || rc=1
"$here/check-fences.sh" "$@" || rc=1
"$here/check-doc-snippets.py" "$@" || rc=1
exit $rc
