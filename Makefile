# exthost — two commands on a fresh machine: `make demo` and `make test`.
# Each installs missing Debian packages (scripts/install-deps), configures and builds.
.PHONY: package all deps build test test-dev test-asan demo bench clean

ANCHORS ?= ../shared/bench/anchors
BENCH_BUILD_DIR ?= $(CURDIR)/build/bench-anchors
JOBS ?= 2

all: build

deps:
	@scripts/install-deps

build: deps
	@cmake --preset dev >/dev/null
	@cmake --build --preset dev -j $(JOBS)

test-dev: build
	ctest --preset dev -j $(JOBS)

test-asan: deps
	@cmake --preset asan >/dev/null
	@cmake --build --preset asan -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --preset asan -j $(JOBS)

# The whole suite, then the same suite under AddressSanitizer + UndefinedBehaviorSanitizer.
test: test-dev test-asan

package: build
	cd build && cpack

demo: build
	@scripts/demo

bench: build
	@scripts/bench "$(ANCHORS)" "$(BENCH_BUILD_DIR)"

clean:
	rm -rf build build-asan
