# exthost — two commands on a fresh machine: `make demo` and `make test`.
# Each installs missing Debian packages (scripts/install-deps), configures and builds.
.PHONY: all deps build test test-dev test-asan test-tsan demo bench package fuzz clean

ANCHORS ?= ../shared/bench/anchors
BENCH_BUILD_DIR ?= $(CURDIR)/build/bench-anchors
JOBS ?= 2
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := frame_parser classify events results

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

# The suite under ThreadSanitizer (CI runs it after `make test`).
test-tsan: deps
	@cmake --preset tsan >/dev/null
	@cmake --build --preset tsan -j $(JOBS)
	TSAN_OPTIONS=halt_on_error=1 ctest --preset tsan -j $(JOBS)

# The whole suite, then the same suite under AddressSanitizer + UndefinedBehaviorSanitizer.
test: test-dev test-asan

package: build
	cd build && cpack

demo: build
	@scripts/demo

bench: build
	@scripts/bench "$(ANCHORS)" "$(BENCH_BUILD_DIR)"

# Each libFuzzer target for FUZZ_SECONDS, starting from its seed corpus (fuzz/corpus/);
# what it learns stays in build-fuzz/corpus, crashes in build-fuzz/crashes.
fuzz:
	@scripts/install-deps --fuzz
	@cmake --preset fuzz >/dev/null
	@cmake --build --preset fuzz -j $(JOBS)
	@mkdir -p build-fuzz/crashes
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p build-fuzz/corpus/$$t; \
	  echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
	  build-fuzz/bin/$${t}_fuzz -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -print_final_stats=1 \
	    -artifact_prefix=build-fuzz/crashes/$$t- build-fuzz/corpus/$$t fuzz/corpus/$$t > build-fuzz/$$t.log 2>&1; \
	  rc=$$?; tail -6 build-fuzz/$$t.log; [ $$rc -eq 0 ] || { echo "fuzz: $$t failed, see build-fuzz/$$t.log"; exit $$rc; }; \
	done

clean:
	rm -rf build build-asan build-tsan build-fuzz
