#!/usr/bin/env bash
# Every test of the project, in the order that fails fastest, each stage
# timed; `make test` and CI (.ci/run) run this. Where each suite runs:
#
#   checks  before any build (scripts/checks.sh): the include layering
#           (check-layering.sh) and every C++ block of the docs compiled
#           (check-doc-snippets.py; also CTest's system.doc_snippets, label
#           `docs`, which the asan stage leaves out for that reason)
#   debug   build the command line and the verbs test executables only
#           (target debug-suite); the benchmark smoke tests (label `bench`:
#           timing-heavy runs that a sanitizer only slows), the tests at the
#           open-files limit (label `fdlimit` and unit_stream_server_peers'
#           ControlPeers: a sanitizer's runtime needs descriptors there), and
#           the binaries the verbs tests run in the
#           Soft-RoCE VM
#   asan    build (no benchmarks); every other host test: unit, component,
#           system, hostile, netns - the multi-process suites run here only,
#           where a memory error in a real process is caught as well
#   fuzz    the libFuzzer targets only, SECONDS each (MDCAST_FUZZ_SECONDS, 20),
#           JOBS at a time
#   verbs   the `verbs` label in the Soft-RoCE VM (debug binaries)
#   tsan    the unit and component tests that start threads (target
#           thread-tests: ThreadSanitizer reports races between threads, so
#           a single-threaded test has nothing to show it; the selection
#           and its guard are in tests/CMakeLists.txt, check-threads.sh);
#           ctest runs the tests of the executables built (the others have
#           no tests discovered, and their placeholders carry no label)
#
# A table of stage durations is printed at the end, also when a stage fails
# (then the stages after it did not run, and the table says so).
#
#   scripts/test-all.sh            every stage
#   scripts/test-all.sh asan tsan  only these (names from the list above)
set -uo pipefail
cd "$(dirname "$0")/.."

JOBS=${JOBS:-$(nproc)}
CTEST_ARGS=${CTEST_ARGS:-}
FUZZ_SECONDS=${MDCAST_FUZZ_SECONDS:-20}
all=(deps checks debug-build debug-tests asan-build asan-tests fuzz-build fuzz-run verbs tsan-build tsan-tests)
want=("$@")

declare -a names=() secs=() results=()
t_all=$(date +%s)

selected() {  # selected STAGE: runs when no stage was named, or its group was
  [ ${#want[@]} -eq 0 ] && return 0
  local w
  for w in "${want[@]}"; do [ "$w" = "$1" ] || [ "$w" = "${1%-*}" ] && return 0; done
  return 1
}

report() {
  local i total=$(( $(date +%s) - t_all ))
  echo
  echo "test-all: stage durations"
  for i in "${!names[@]}"; do
    printf '  %-12s %6d s  %s\n' "${names[$i]}" "${secs[$i]}" "${results[$i]}"
  done
  printf '  %-12s %6d s  (%d min %d s)\n' total "$total" $((total / 60)) $((total % 60))
}

run_stage() {  # run_stage NAME COMMAND...
  local name=$1 t0 rc
  shift
  selected "$name" || return 0
  echo "=== test-all: $name: $*"
  t0=$(date +%s)
  "$@"
  rc=$?
  names+=("$name"); secs+=($(( $(date +%s) - t0 )))
  if [ $rc -ne 0 ]; then
    results+=("FAILED (exit $rc)")
    local s skipped=()
    for s in "${all[@]}"; do
      local seen=0 n
      for n in "${names[@]}"; do [ "$n" = "$s" ] && seen=1; done
      [ $seen = 1 ] || { selected "$s" && skipped+=("$s"); }
    done
    report
    [ ${#skipped[@]} -eq 0 ] || echo "test-all: not run after the failure: ${skipped[*]}"
    echo "test-all: FAILED in stage $name"
    exit $rc
  fi
  results+=("ok")
}

configure() { cmake --preset "$1" >/dev/null; }
build() { configure "$1" && cmake --build --preset "$1" -j "$JOBS" ${2:+--target "$2"}; }
ctest_in() { local dir=$1; shift; (cd "build/$dir" && ctest --output-on-failure -j "$JOBS" $CTEST_ARGS "$@"); }

run_stage deps        ./scripts/install-deps.sh
run_stage checks      ./scripts/checks.sh
run_stage debug-build build debug debug-suite
debug_tests() { ctest_in debug -L 'bench|fdlimit' && ctest_in debug -R '^ControlPeers\.'; }
run_stage debug-tests debug_tests
run_stage asan-build  build asan
run_stage asan-tests  ctest_in asan -LE 'verbs|bench|docs'
run_stage fuzz-build  build fuzz fuzzers
run_stage fuzz-run    env MDCAST_FUZZ_JOBS="$JOBS" ./scripts/run-fuzzers.sh build/fuzz "$FUZZ_SECONDS"
run_stage verbs       ./scripts/test-verbs.sh build/debug
run_stage tsan-build  build tsan thread-tests
run_stage tsan-tests  ctest_in tsan -L 'unit|component'

report
echo "make test: all suites passed"
