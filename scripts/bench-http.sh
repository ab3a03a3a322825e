#!/usr/bin/env bash
# The HTTP library load test of docs/BENCHMARKS.md: bench/bench_http_sse serves a token stream
# (one token per INTERVAL ms, no model) with cpp-httplib and with Boost.Beast, and
# `pagedllm bench serve` drives each with CONCURRENCY streams. Reports failures, TTFT/ITL
# overhead, server CPU time and RSS.
# usage: scripts/bench-http.sh [NUM_PROMPTS] [CONCURRENCY] [OUTPUT_LEN] [INTERVAL_MS]
set -euo pipefail
num_prompts=${1:-4000}
concurrency=${2:-256}
output_len=${3:-64}
interval=${4:-5}
port=${PORT:-18200}
out=${OUT:-bench-http-results}
mkdir -p "$out"
for lib in httplib beast; do
  port=$((port + 1))
  ./build/bench/bench_http_sse --lib "$lib" --port "$port" --interval-ms "$interval" &
  pid=$!
  sleep 0.5
  t0=$(awk '{print $14 + $15}' /proc/$pid/stat)
  ./build/pagedllm bench serve --base-url "http://127.0.0.1:$port" --num-prompts "$num_prompts" \
    --max-concurrency "$concurrency" --random-input-len 16 --random-output-len "$output_len" \
    --random-vocab-size 512 --save-result "$out/$lib.json" > "$out/$lib.txt"
  t1=$(awk '{print $14 + $15}' /proc/$pid/stat)
  rss=$(awk '/VmHWM/ {print $2}' /proc/$pid/status)
  threads=$(ls /proc/$pid/task | wc -l)
  kill $pid; wait $pid 2>/dev/null || true
  python3 - "$out/$lib.json" "$lib" "$((t1 - t0))" "$rss" "$threads" <<'PY'
import json, sys, os
r = json.load(open(sys.argv[1]))
ticks = int(sys.argv[3]); hz = os.sysconf("SC_CLK_TCK")
print(f"{sys.argv[2]:8s} completed {r['completed']} failed {r['failed']} "
      f"duration {r['duration']:.2f} s, TTFT median {r['ttft_ms']['median']:.2f} p99 {r['ttft_ms']['p99']:.2f} ms, "
      f"ITL median {r['itl_ms']['median']:.2f} p99 {r['itl_ms']['p99']:.2f} ms, "
      f"server CPU {ticks / hz:.2f} s ({1000 * ticks / hz / r['total_output_tokens']:.3f} ms/token), "
      f"peak RSS {int(sys.argv[4]) // 1024} MiB, threads {sys.argv[5]}")
PY
done
