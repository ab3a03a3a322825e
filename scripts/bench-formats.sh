#!/bin/bash
# The model table of docs/BENCHMARKS.md: per model file, bench latency (pp512, tg128, with the
# in-run bandwidth probe and peak RSS) then bench throughput (32 x (128 + 128)), back to back.
# Usage: scripts/bench-formats.sh [DIR [MODEL...]]   (model files DIR/<preset>-<dtype>.gguf, made
# if missing; MODEL names such as llama-1b-q8_0 pick some of the rows)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/tmp}
bin=./build/pagedllm
[ -x "$bin" ] || make build
models=(llama-110m-f32 llama-110m-bf16 llama-110m-q8_0 llama-110m-q4_0 llama-110m-q4_k_m
  llama-110m-q5_k_m llama-110m-q6_k llama-1b-f32 llama-1b-bf16 llama-1b-q8_0 llama-1b-q4_k_m)
[ $# -gt 1 ] && models=("${@:2}")
for m in "${models[@]}"; do
  preset=${m%-*} dtype=${m##*-}
  file=$dir/$m.gguf
  [ -f "$file" ] || "$bin" make-model --preset "$preset" --dtype "$dtype" --out "$file"
  reps=5
  [ "$preset" = llama-1b ] && reps=3
  echo "== $m"
  /usr/bin/time -f "peak_rss_kb %M (includes the 512 MiB probe)" "$bin" bench latency \
    --model "$file" -p 512 -n 128 -r "$reps" --max-model-len 1024 --threads 2 --json \
    --bandwidth 2>&1 | grep -E '^\{|peak_rss'
  "$bin" bench throughput --model "$file" --num-prompts 32 --input-len 128 --output-len 128 \
    --max-model-len 1024 --threads 2 --json 2>/dev/null | grep -E '^\{'
done
