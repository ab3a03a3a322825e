#!/usr/bin/env bash
# The serving benchmark of docs/BENCHMARKS.md: `pagedllm serve` on a model, then
# `pagedllm bench serve` at several request rates, and the share of the server's CPU time spent
# on HTTP threads (parsing, tokenizing, detokenizing, writing) rather than in the engine.
# usage: scripts/bench-serve.sh MODEL.gguf [NUM_PROMPTS] [RATES...]
set -euo pipefail
model=$1
num_prompts=${2:-1000}
shift 2 || true
rates=("$@")
[ ${#rates[@]} -eq 0 ] && rates=(4 8 16 inf)
bin=./build/pagedllm
port=${PORT:-18123}
out=${OUT:-bench-serve-results}
mkdir -p "$out"

$bin serve --model "$model" --port "$port" --log-stats-interval 0 --log-level warning \
  > "$out/serve.out" 2> "$out/serve.err" &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
  sleep 0.2
done

# Sum of utime+stime (clock ticks) over the server's threads, by thread name.
cpu_ticks() {
  local name=$1 total=0
  for t in /proc/$pid/task/*; do
    if [ -z "$name" ] || [ "$(cat "$t/comm")" = "$name" ]; then
      read -r -a f < "$t/stat"
      total=$((total + f[13] + f[14]))
    fi
  done
  echo $total
}

for rate in "${rates[@]}"; do
  http0=$(cpu_ticks pagedllm-http); all0=$(cpu_ticks "")
  $bin bench serve --base-url "http://127.0.0.1:$port" --num-prompts "$num_prompts" \
    --random-input-len "${INPUT_LEN:-128}" --random-output-len "${OUTPUT_LEN:-128}" \
    --random-vocab-size "${VOCAB:-32000}" --ignore-eos --request-rate "$rate" \
    --max-concurrency "${CONCURRENCY:-256}" --goodput ttft:1000 tpot:100 \
    --save-result "$out/rate-$rate.json" | tee "$out/rate-$rate.txt"
  http1=$(cpu_ticks pagedllm-http); all1=$(cpu_ticks "")
  rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
  echo "rate $rate: server CPU $(( (all1 - all0) )) ticks, HTTP threads $(( http1 - http0 )) ticks," \
       "RSS ${rss} KiB" | tee -a "$out/cpu.txt"
done
