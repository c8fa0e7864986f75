#!/usr/bin/env bash
# The library's includes run one way (docs/architecture.md):
#
#   core <- wire <- book, history <- media contract, media/<name> <- feed <- record, stats, doctor <- runtime <- settings
#
# A module's headers and sources (include/mdcast/<module>/, src/<module>/)
# include only the modules its row below allows; media never include feed.
# Prints every include that runs the other way, with file and line, and exits
# 1 if there is one.
#
#   scripts/check-layering.sh [REPO]
set -euo pipefail
repo=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$repo"

declare -A allowed=(
  [core]="core"
  [wire]="core wire"
  [book]="core wire book"
  [history]="core history"
  [media]="core wire history media"
  [feed]="core wire book history media feed"
  [record]="core wire book history media feed record"
  [stats]="core wire book history media feed stats"
  [doctor]="core wire book history media feed stats doctor"
  [runtime]="core wire book history media feed record stats runtime"
  [settings]="core wire book history media feed record stats doctor runtime settings"
)

bad=0
checked=0
for module in "${!allowed[@]}"; do
  for dir in "include/mdcast/$module" "src/$module"; do
    [ -d "$dir" ] || continue
    while IFS= read -r hit; do
      file=${hit%%:*}
      rest=${hit#*:}
      line=${rest%%:*}
      target=$(sed -E 's|.*#include "mdcast/([a-z_]+)/.*|\1|' <<<"$rest")
      checked=$((checked + 1))
      if [[ " ${allowed[$module]} " != *" $target "* ]]; then
        echo "check-layering: $file:$line: $module includes $target ($(sed -E 's/^[0-9]+://' <<<"$rest" | tr -s ' '))"
        bad=$((bad + 1))
      fi
    done < <(grep -rnE '^#include "mdcast/[a-z_]+/' "$dir" --include='*.hpp' --include='*.cpp' || true)
  done
done

if [ "$bad" -gt 0 ]; then
  echo "check-layering: $bad include(s) run against the layers (of $checked checked): move the code down, or the include up"
  exit 1
fi
echo "check-layering: ok, $checked includes, all one way"
