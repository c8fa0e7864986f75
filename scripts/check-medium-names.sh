#!/usr/bin/env bash
# How far a medium reaches outside its folder: for each medium (mem, shm,
# udp, verbs), the files of the library, the command line and the examples
# outside include/mdcast/media/<name>/ and src/media/<name>/ that include one
# of its headers. Adding a medium should be its folder plus its binding
# (settings/media/<name>.hpp, in the one list settings/media.hpp) and its
# bench baseline: 2 files. Each medium has a
# limit below; a count above it fails (a new file naming a medium), a count
# below it asks for the limit to come down.
#
#   scripts/check-medium-names.sh [REPO]
set -euo pipefail
repo=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$repo"

# Each medium is named only by its binding (settings/media/<name>.hpp: its
# entry, its counter catalogue, what it tells the doctor and stat --clean)
# and by the bench's raw baseline (apps/bench/raw_<name>.cpp); mem, which the
# tests bind directly and the bench does not measure, only by the list
# (settings/media.hpp: its counter catalogue).
declare -A limit=([mem]=1 [shm]=2 [udp]=2 [verbs]=2)

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
