# The two commands of the README. Both install missing Debian packages first
# (scripts/install-deps.sh), then configure and build into build/.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)

SANITIZE_DIR ?= build-sanitize
FUZZ_SECONDS ?= 120
FUZZERS = store_protocol handshake frame
SANITIZE_ENV = ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 HWLOC_COMPONENTS=-pci
# Under ASan the full matrices would take an hour: a slice of each instead.
SANITIZE_MATRIX = AllreduceMatrix.*/(ring_4ranks|auto_3ranks|halving_doubling_5ranks)|AllreduceOnNodes.*/hierarchical_4ranks|Collectives.*/(broadcast_tree_5ranks|allgather_ring_3ranks|reduce_scatter_ring_4ranks|alltoall_direct_3ranks)

.PHONY: all deps configure build demo test sanitize-build sanitize tsan fuzz clean

all: build

deps:
	scripts/install-deps.sh

configure: deps
	cmake --preset release

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The main job: a local 4-rank allreduce benchmark over 8 B .. 64 MiB.
demo: build
	$(BUILD_DIR)/tools/collrun -n 4 $(BUILD_DIR)/bench/coll_perf -b 8 -e 64M -f 4 -w 20

# The whole test suite through ctest.
test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 600

# ASan + UBSan (clang): the unit and multi-rank tests, with a slice of the
# exactness matrices. Installs clang's runtime first. hwloc's PCI plugin
# (libpciaccess) leaks a kilobyte that LeakSanitizer can only show as an
# "unknown module" once hwloc unloads the plugin: it is left out here (the
# tests that need PCI devices read topology files, not the live bus).
sanitize-build: deps
	scripts/install-deps.sh clang libclang-rt-14-dev
	cmake --preset sanitize
	cmake --build $(SANITIZE_DIR) -j $(JOBS)

sanitize: sanitize-build
	cd $(SANITIZE_DIR) && $(SANITIZE_ENV) \
	  ctest --output-on-failure -j $(JOBS) --timeout 600 -L 'unit|multirank' \
	    -E 'AllreduceMatrix|AllreduceOnNodes|Collectives\.'
	cd $(SANITIZE_DIR) && $(SANITIZE_ENV) \
	  ctest --output-on-failure -j $(JOBS) --timeout 600 -R '$(SANITIZE_MATRIX)'

# ThreadSanitizer (clang) over the tests whose ranks run threads: the
# bootstrap store's server, async operations and their worker, abort and
# async errors from other threads, the flight recorder's signal dumps,
# shrink, abort of non-blocking operations, the direct-access allreduce in
# both forms (non-blocking ones run on the worker), the one-shot allreduce
# (an abort from another thread, non-blocking calls), and the staged form's
# own tests without its matrix, which ASan runs. (fault_test is left out: its
# time bounds and thread counts are for uninstrumented builds; ASan runs it.)
TSAN_DIR ?= build-tsan
TSAN_TESTS = unit_tests api_test p2p_async_test p2p_semantics_test bootstrap_test failure_test shrink_test timeout_test direct_access_test \
  oneshot_test
tsan: deps
	scripts/install-deps.sh clang libclang-rt-14-dev
	cmake --preset tsan
	cmake --build $(TSAN_DIR) -j $(JOBS) --target $(TSAN_TESTS) staged_access_test colldiag
	for t in $(TSAN_TESTS); do \
	  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" HWLOC_COMPONENTS=-pci \
	    timeout 900 $(TSAN_DIR)/tests/$$t --gtest_brief=1 || exit 1; \
	done
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" HWLOC_COMPONENTS=-pci \
	  timeout 900 $(TSAN_DIR)/tests/staged_access_test --gtest_brief=1 --gtest_filter='StagedAccess.*'

# Each libFuzzer target for FUZZ_SECONDS on the corpus in fuzz/corpus (new
# inputs go to $(SANITIZE_DIR)/corpus, not into the repository).
fuzz: sanitize-build
	for f in $(FUZZERS); do \
	  mkdir -p $(SANITIZE_DIR)/corpus/$$f && \
	  $(SANITIZE_DIR)/fuzz/$${f}_fuzz -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    $(SANITIZE_DIR)/corpus/$$f fuzz/corpus/$$f || exit 1; \
	done

clean:
	rm -rf $(BUILD_DIR) $(SANITIZE_DIR) $(TSAN_DIR)
