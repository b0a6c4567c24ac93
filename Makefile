# The two commands of the README. Both install missing Debian packages first
# (scripts/install-deps.sh), then configure and build into build/.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)

.PHONY: all deps configure build demo test clean

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

clean:
	rm -rf $(BUILD_DIR)
