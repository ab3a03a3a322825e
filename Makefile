# Thin wrapper over CMake. `make test` and `make run` install what they need first.
BUILD      ?= build
SAN_BUILD  ?= build-sanitize
GENERATOR  ?= Ninja
SCENARIO   ?= examples/design-notes.json
SOURCES     = $(shell git ls-files '*.cpp' '*.h' 2>/dev/null)

.PHONY: all deps build test test-sanitize run bench format format-check clean

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -G $(GENERATOR) -DCMAKE_BUILD_TYPE=Release

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD)

test: build
	ctest --test-dir $(BUILD) --output-on-failure --timeout 600

# The same tests under AddressSanitizer and UndefinedBehaviorSanitizer, in a second build tree.
test-sanitize: deps
	cmake -S . -B $(SAN_BUILD) -G $(GENERATOR) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DPAGEDLLM_SANITIZE=address,undefined -DPAGEDLLM_BUILD_BENCH=OFF
	cmake --build $(SAN_BUILD)
	ctest --test-dir $(SAN_BUILD) --output-on-failure --timeout 900

# Until the model issue lands, the main job is tracing the design notes' scenario.
run: build
	./$(BUILD)/pagedllm trace --scenario $(SCENARIO)

bench: build
	./$(BUILD)/bench/bench_engine_step --benchmark_repetitions=5 --benchmark_report_aggregates_only=true

format:
	clang-format -i $(SOURCES)

format-check:
	clang-format --dry-run --Werror $(SOURCES)

clean:
	rm -rf $(BUILD) $(SAN_BUILD)
