#!/usr/bin/env bash
# Tensor parallelism on one machine: `bench latency` of TP 2 (two ranks of one thread) against
# one process of 2 threads, alternating ROUNDS times for each model file (a shared host's
# memory bandwidth drifts between minutes, so only ratios of neighbouring runs are compared);
# each rank's peak resident memory; at the end the median TP/one-process ratio of pp and tg.
# usage: scripts/bench-tp.sh DIR PRESET-DTYPE...   (e.g. /tmp llama-1b-bf16; the file
# DIR/PRESET-DTYPE.gguf is made with `pagedllm make-model` when missing)
# Env: ROUNDS (3), REPS (3), PP (128), TG (32).
set -euo pipefail
dir=$1
shift
bin=./build/pagedllm
rounds=${ROUNDS:-3} reps=${REPS:-3} pp=${PP:-128} tg=${TG:-32}
args=(-p "$pp" -n "$tg" -r "$reps" --max-model-len 1024 --json)
rate() { sed -n "s/.*\"$1_tokens_per_s\":\([0-9.]*\).*/\1/p" | head -1; }
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
summary=""
for row in "$@"; do
  preset=${row%-*} dtype=${row##*-}
  model=$dir/$row.gguf
  [ -f "$model" ] || $bin make-model --preset "$preset" --dtype "$dtype" --out "$model"
  pp_ratios="" tg_ratios=""
  for round in $(seq "$rounds"); do
    echo "== $row, round $round: one process, --threads 2"
    one=$(/usr/bin/time -f "peak_rss_kb %M" $bin bench latency --model "$model" "${args[@]}" \
      --threads 2 2>&1 | tee /dev/stderr)
    echo "== $row, round $round: mpirun -np 2, --tensor-parallel-size 2 --threads 1"
    two=$(mpirun --allow-run-as-root --oversubscribe --bind-to core -np 2 \
      /usr/bin/time -f "rank peak_rss_kb %M" \
      $bin bench latency --model "$model" "${args[@]}" --threads 1 --tensor-parallel-size 2 \
      2>&1 | tee /dev/stderr)
    pp_ratios+="$(awk -v a="$(rate pp <<<"$two")" -v b="$(rate pp <<<"$one")" 'BEGIN {print a / b}') "
    tg_ratios+="$(awk -v a="$(rate tg <<<"$two")" -v b="$(rate tg <<<"$one")" 'BEGIN {print a / b}') "
  done
  summary+="$row: TP 2 / one process, pp ${pp_ratios}(median $(tr ' ' '\n' <<<"$pp_ratios" | grep . | median)), tg ${tg_ratios}(median $(tr ' ' '\n' <<<"$tg_ratios" | grep . | median))"$'\n'
done
printf '%s' "$summary"
