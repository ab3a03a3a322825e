#!/bin/bash
# The speculative-decoding figures of docs/BENCHMARKS.md, each mode measured in the same round as
# its baseline so that a noisy minute hits both; medians over ROUNDS.
#   tg:         batch-1 decode, -n N tokens: off, replay (every draft accepted), ngram
#   throughput: 32 x (128 + 128) random prompts: off, ngram
# Usage: scripts/bench-speculative.sh [DIR [MODEL...]]  (model files DIR/<preset>-<dtype>.gguf,
# made if missing; a MODEL with a path is used as it is). Env: ROUNDS (3), N (64), K (4),
# THREADS (2), BIN (the pagedllm command, ./build/pagedllm), NO_THROUGHPUT (skip the batch).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/tmp}
read -ra bin <<< "${BIN:-./build/pagedllm}"
[ -n "${BIN:-}" ] || [ -x "${bin[0]}" ] || make build
threads=${THREADS:-2}
rounds=${ROUNDS:-3} n=${N:-64} k=${K:-4}
models=(llama-1b-f32 llama-1b-bf16 llama-1b-q8_0)
[ $# -gt 1 ] && models=("${@:2}")
replay="{\"method\": \"replay\", \"num_speculative_tokens\": $k}"
ngram="{\"method\": \"ngram\", \"num_speculative_tokens\": $k}"

tg() {  # model, speculative config or ""
  local spec=()
  [ -n "$2" ] && spec=(--speculative-config "$2")
  "${bin[@]}" bench latency --model "$1" -p 0 -n "$n" -r 1 --threads "$threads" --json "${spec[@]}" \
    2>/dev/null | grep '^{'
}
throughput() {
  local spec=()
  [ -n "$2" ] && spec=(--speculative-config "$2")
  "${bin[@]}" bench throughput --model "$1" --num-prompts 32 --input-len 128 --output-len 128 \
    --threads "$threads" --json "${spec[@]}" 2>/dev/null | grep '^{'
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
field() { /usr/bin/python3 -c "import json,sys; print(json.loads(sys.stdin.read())['$1'])"; }

echo "| model | tg off | tg replay K=$k (x) | verify step / decode step | tg ngram K=$k (x, accepted) | 32x(128+128) off | ngram (x) |"
echo "|---|---|---|---|---|---|---|"
for m in "${models[@]}"; do
  file=$m
  if [ ! -f "$file" ]; then
    file=$dir/$m.gguf
    [ -f "$file" ] || "${bin[@]}" make-model --preset "${m%-*}" --dtype "${m##*-}" --out "$file" >&2
  fi
  off=() rep=() ng=() acc=() thr_off=() thr_ng=()
  for _ in $(seq "$rounds"); do
    off+=("$(tg "$file" "" | field tg_tokens_per_s)")
    rep+=("$(tg "$file" "$replay" | field tg_tokens_per_s)")
    j=$(tg "$file" "$ngram")
    ng+=("$(echo "$j" | field tg_tokens_per_s)")
    acc+=("$(echo "$j" | field spec_acceptance_rate)")
    if [ -z "${NO_THROUGHPUT:-}" ]; then
      thr_off+=("$(throughput "$file" "" | field output_tokens_per_s)")
      thr_ng+=("$(throughput "$file" "$ngram" | field output_tokens_per_s)")
    fi
  done
  o=$(printf '%s\n' "${off[@]}" | median) r=$(printf '%s\n' "${rep[@]}" | median)
  g=$(printf '%s\n' "${ng[@]}" | median) a=$(printf '%s\n' "${acc[@]}" | median)
  to=$(printf '%s\n' "${thr_off[@]:-0}" | median) tn=$(printf '%s\n' "${thr_ng[@]:-0}" | median)
  awk -v m="$(basename "$m" .gguf)" -v o="$o" -v r="$r" -v g="$g" -v a="$a" -v to="$to" -v tn="$tn" \
    -v k="$k" 'BEGIN {
      printf "| %s | %.2f | %.2f (%.2fx) | %.2fx | %.2f (%.2fx, %.0f %%) | %.1f | %.1f (%.2fx) |\n",
        m, o, r, r / o, (k + 1) * o / r, g, g / o, 100 * a, to, tn, (to > 0 ? tn / to : 0) }'
done
