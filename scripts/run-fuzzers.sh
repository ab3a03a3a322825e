#!/usr/bin/env bash
# Runs each libFuzzer target for a bounded time on a seed corpus made of real model files.
# usage: run-fuzzers.sh BUILD_DIR SECONDS
set -euo pipefail
build=$1
seconds=$2
corpus=$build/corpus
mkdir -p "$corpus/gguf" "$corpus/safetensors" "$corpus/tokenizer" "$corpus/chat_template" \
  "$corpus/openai_request" "$corpus/http" "$corpus/image" "$corpus/data_url" "$corpus/image_url" \
  "$corpus/json_schema" \
  "$corpus/regex" "$corpus/gbnf" "$corpus/tool_call"
cp -f fuzz/seeds/openai_request/*.json "$corpus/openai_request/"
cp -f fuzz/seeds/http/*.txt "$corpus/http/"
cp -f fuzz/seeds/image/* "$corpus/image/"
cp -f fuzz/seeds/data_url/*.txt "$corpus/data_url/"
cp -f fuzz/seeds/image_url/*.txt "$corpus/image_url/"
cp -f fuzz/seeds/tokenizer_*.json "$corpus/tokenizer/"
cp -f fuzz/seeds/json_schema/* "$corpus/json_schema/"
cp -f fuzz/seeds/regex/* "$corpus/regex/"
cp -f fuzz/seeds/gbnf/* "$corpus/gbnf/"
cp -f fuzz/seeds/tool_call/* "$corpus/tool_call/"
shared=$(bash "$(dirname "$0")/shared-dir.sh")
cp -f "$shared"/vectors/chat-templates/*.jinja "$corpus/chat_template/" 2>/dev/null || true
cp -f "$shared/models/stories260K/stories260K.gguf" "$corpus/gguf/" 2>/dev/null || true
# Every 40th MaskBench file (the target takes their "schema").
find "$shared/vectors/json-schema/maskbench" -name '*.json' 2>/dev/null | sort | awk 'NR % 40 == 0' |
  xargs -r cp -t "$corpus/json_schema/"
"$build/pagedllm" make-model --preset tiny --dtype q8_0 --out "$corpus/gguf/tiny-q8_0.gguf" 2>/dev/null
"$build/pagedllm" make-model --preset tiny-qwen3 --dtype f16 --out "$corpus/gguf/tiny-qwen3.gguf" 2>/dev/null
"$build/pagedllm" make-model --preset tiny --dtype bf16 --format safetensors --out "$corpus/st" 2>/dev/null
cp -f "$corpus/st/model.safetensors" "$corpus/safetensors/tiny.safetensors"
# Crash, leak, timeout and oom inputs go to $build/artifacts/<target>/, never the checkout; keep
# one that reproduces, named for what it exercises, in fuzz/regressions/<target>/ (make test
# replays those).
# A per-input time limit (120 s) turns a superlinear path into a reported slow unit (a timeout-*
# artifact and a failure): text parsers get inputs up to 1 MiB, which linear code handles in a
# few tens of seconds at most under the sanitizers and coverage instrumentation.
for target in gguf safetensors tokenizer chat_template openai_request http image data_url image_url \
    json_schema regex gbnf tool_call; do
  echo "fuzz_$target: ${seconds}s"
  mkdir -p "$build/artifacts/$target"
  max_len=1048576
  case $target in gguf | safetensors) max_len=2000000 ;; image | data_url | image_url) max_len=262144 ;; esac
  "$build/fuzz/fuzz_$target" -max_total_time="$seconds" -max_len="$max_len" -timeout=120 \
    -rss_limit_mb=4096 \
    -artifact_prefix="$build/artifacts/$target/" -print_final_stats=1 "$corpus/$target" 2>&1 |
    tail -n 12
done
