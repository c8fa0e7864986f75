#!/usr/bin/env bash
# How far a medium reaches outside its folder: for each medium (mem, shm,
# udp, verbs), the files of the library, the command line and the examples
# outside include/mdcast/media/<name>/ and src/media/<name>/ that include one
# of its headers. Adding a medium should be its folder plus the one list
# (settings/media.hpp) and its bench baseline: 2 files. Each medium has a
# limit below; a count above it fails (a new file naming a medium), a count
# below it asks for the limit to come down.
#
#   scripts/check-medium-names.sh [REPO]
set -euo pipefail
repo=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$repo"

# Today's counts. What is left above 2: the counter catalogue
# (src/stats/catalogue.cpp) and the doctor's checks still list every medium,
# the settings keys of udp parse its rail syntax, the stale-ring cleaner knows
# the shm ring, and examples/channels.cpp shows shm channel naming.
declare -A limit=([mem]=1 [shm]=5 [udp]=6 [verbs]=4)

rc=0
for m in mem shm udp verbs; do
  mapfile -t files < <(grep -rlE "#include [<\"]mdcast/media/$m/" include src apps examples \
                         --include='*.hpp' --include='*.cpp' | grep -vE "^(include/mdcast|src)/media/$m/" | sort)
  n=${#files[@]}
  echo "check-medium-names: $m: named by $n file(s) outside its folder (limit ${limit[$m]}): ${files[*]}"
  if [ "$n" -gt "${limit[$m]}" ]; then
    echo "check-medium-names: $m: $n > ${limit[$m]}: bind it by name (settings::with_medium) instead" >&2
    rc=1
  elif [ "$n" -lt "${limit[$m]}" ]; then
    echo "check-medium-names: $m: $n < ${limit[$m]}: lower its limit in $0" >&2
    rc=1
  fi
done
exit $rc
