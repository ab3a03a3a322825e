#!/usr/bin/env bash
# Tensor parallelism on one machine: `bench latency` of TP 2 (two ranks of one thread) against
# one process of 2 threads, back to back, for each model file; each rank's peak resident memory.
# usage: scripts/bench-tp.sh DIR PRESET-DTYPE...   (e.g. /tmp llama-1b-bf16; the file
# DIR/PRESET-DTYPE.gguf is made with `pagedllm make-model` when missing)
# Env: REPS (3), PP (128), TG (32).
set -euo pipefail
dir=$1
shift
bin=./build/pagedllm
reps=${REPS:-3} pp=${PP:-128} tg=${TG:-32}
args=(-p "$pp" -n "$tg" -r "$reps" --max-model-len 1024 --json)
for row in "$@"; do
  preset=${row%-*} dtype=${row##*-}
  model=$dir/$row.gguf
  [ -f "$model" ] || $bin make-model --preset "$preset" --dtype "$dtype" --out "$model"
  echo "== $row: one process, --threads 2"
  /usr/bin/time -f "peak_rss_kb %M" $bin bench latency --model "$model" "${args[@]}" --threads 2
  echo "== $row: mpirun -np 2, --tensor-parallel-size 2 --threads 1"
  mpirun --allow-run-as-root --oversubscribe --bind-to core -np 2 \
    /usr/bin/time -f "rank peak_rss_kb %M" \
    $bin bench latency --model "$model" "${args[@]}" --threads 1 --tensor-parallel-size 2
done
