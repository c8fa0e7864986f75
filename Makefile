# mdcast front end. The two commands a newcomer needs:
#   make demo   - install what is missing, build release, run the demo
#   make test   - install what is missing, build, run every test
# Everything else here is a building block of those two.

SHELL := /bin/bash
JOBS ?= $(shell nproc)
CTEST_ARGS ?=

.PHONY: bench-channels all demo test deps release debug asan tsan fuzz-build \
        test-debug test-asan test-tsan test-fuzz test-verbs test-under-load demo-rdma bench bench-verbs bench-micro clean

all: release

deps:
	@./scripts/install-deps.sh

release debug asan tsan: deps
	@cmake --preset $@ >/dev/null
	@cmake --build --preset $@ -j $(JOBS)

fuzz-build: deps
	@cmake --preset fuzz >/dev/null
	@cmake --build --preset fuzz -j $(JOBS) --target fuzzers

# The demo needs only the mdcast binary (a release build of everything is `make release`).
demo: deps
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j $(JOBS) --target mdcast
	./build/release/apps/mdcast/mdcast demo $(DEMO_ARGS)

# Every host test of one build (unit, component, system, hostile, netns); the
# verbs label runs in the VM. `make test` runs the multi-process suites in the
# ASan build only (scripts/test-all.sh says where each suite runs).
test-debug: debug
	cd build/debug && ctest -LE verbs --output-on-failure -j $(JOBS) $(CTEST_ARGS)

test-asan: asan
	cd build/asan && ctest -LE verbs --output-on-failure -j $(JOBS) $(CTEST_ARGS)

# The threaded tests (the shm ring's writer/reader race) and everything else
# that runs in one process; processes talking over shm are beyond TSan's view,
# so only the unit and component executables are built.
test-tsan: deps
	@cmake --preset tsan >/dev/null
	@cmake --build --preset tsan -j $(JOBS) --target thread-tests
	cd build/tsan && ctest -L 'unit|component' --output-on-failure -j $(JOBS) $(CTEST_ARGS)

test-fuzz: fuzz-build
	./scripts/run-fuzzers.sh build/fuzz 20

test-verbs: debug
	./scripts/test-verbs.sh build/debug

# Every suite, each stage timed (scripts/test-all.sh; TEST_STAGES="asan tsan" for some).
test:
	@./scripts/test-all.sh $(TEST_STAGES)

# The same beside a CPU hog on every core (LOAD_HOGS=N for another count):
# finds the tests that assume an idle machine. TEST_STAGES as for `make test`.
test-under-load:
	@./scripts/test-under-load.sh $(TEST_STAGES)

demo-rdma: deps
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j $(JOBS) --target mdcast
	./scripts/demo-rdma.sh build/release $(DEMO_ARGS)

# End-to-end numbers (docs/performance.md). The full set, 3 times: make bench BENCH_ARGS="--repeat 3 --json bench.json"
bench: deps
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j $(JOBS) --target mdcast
	./build/release/apps/mdcast/mdcast bench $(BENCH_ARGS)

# The verbs medium's numbers with perftest's UD baseline beside them: directly
# on an RDMA device, else in the Soft-RoCE VM (functional figures only).
bench-verbs: deps
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j $(JOBS) --target mdcast
	./scripts/bench-verbs.sh build/release $(BENCH_ARGS)

# Publisher throughput over 1, 2 ... channels, one pinned thread each (docs/performance.md):
# make bench-channels BENCH_CHANNELS="1,4,8,16 3 3s" on a machine with 16 cores.
BENCH_CHANNELS ?= 1,2 3 3s
bench-channels: deps
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j $(JOBS) --target mdcast
	./bench/channel_scaling.sh build/release/apps/mdcast/mdcast $(BENCH_CHANNELS)

# Microbenchmarks (Google Benchmark, bench/README.md): median and spread of 5 repetitions.
bench-micro: deps
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j $(JOBS) --target mdcast_micro
	./build/release/bench/mdcast_micro --benchmark_repetitions=5 --benchmark_report_aggregates_only=true $(BENCH_MICRO_ARGS)

clean:
	rm -rf build
