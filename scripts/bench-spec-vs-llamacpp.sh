#!/usr/bin/env bash
# Speculative decoding side by side with llama.cpp's tools, greedy, 2 threads, every tool once
# per round (ROUNDS, medians):
#   ngram: the shared trained models retelling their own story (the prompt is the story the
#     model writes from BOS, then its first words): `pagedllm generate` with and without
#     '{"method": "ngram", "num_speculative_tokens": K, "prompt_lookup_min": NGRAM_MIN}' (1, as
#     llama-lookup matches from 1-grams up) against `llama-lookup
#     --spec-draft-n-max K` and llama-bench's tg at the same depth;
#   draft model: TARGET with DRAFT (same vocabulary): `pagedllm bench latency -p 0 -n N` with
#     and without '{"model": DRAFT, ...}' against `llama-speculative` and llama-bench's tg.
# usage: LLAMA_CPP_DIR=<llama.cpp>/build/bin scripts/bench-spec-vs-llamacpp.sh [TARGET DRAFT]
# Env: ROUNDS (3), K (4), N (64: draft-model tokens), THREADS (2), NGRAM_MIN (1), NGRAM_MODELS (GGUF files;
# default the shared stories260K; babyllama and aidreams260K are llama2.c files, which
# llama.cpp's llama-convert-llama2c-to-ggml turns into GGUF).
set -euo pipefail
cd "$(dirname "$0")/.."
llama=${LLAMA_CPP_DIR:?set LLAMA_CPP_DIR to the bin folder of a llama.cpp build}
bin=./build/pagedllm
rounds=${ROUNDS:-3} k=${K:-4} n=${N:-64} threads=${THREADS:-2} ngram_min=${NGRAM_MIN:-1}
models=../shared/models
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
ours_rate() { sed -n 's/.*decoded [0-9]* more tokens in [0-9.]* s, \([0-9.]*\) tokens\/s.*/\1/p'; }
ours_accept() { sed -n 's/.*accepted (\([0-9.]*\) %).*/\1/p'; }
theirs_rate() { sed -n 's/.*decoded *[0-9]* tokens in *[0-9.]* seconds, speed: *\([0-9.]*\) t\/s.*/\1/p' | tail -1; }
theirs_accept() { sed -n 's/.*accept *= *\([0-9.]*\)%.*/\1/p'; }
bench_tg() { "$llama/llama-bench" -m "$1" -p 0 -n "$2" -d "$3" -t "$threads" -r 1 -o csv 2>/dev/null |
  tail -1 | awk -F, '{gsub(/"/, "", $(NF-1)); print $(NF-1)}'; }

echo "| ngram, retelling (K = $k, tokens) | pagedllm off | pagedllm ngram (accepted) | llama.cpp tg | llama-lookup (accepted) | pagedllm ngram / llama-lookup |"
echo "|---|---|---|---|---|---|"
for model in ${NGRAM_MODELS:-$models/stories260K/stories260K.gguf}; do
  m=$model
  # A story of up to 150 tokens and 128 generated, within the model's context.
  context=$($bin generate --model "$model" --max-tokens 1 2>&1 >/dev/null |
    sed -n 's/.* max_model_len=\([0-9]*\).*/\1/p')
  len=$((context / 3 < 128 ? context / 3 : 128))
  story=$($bin generate --model "$model" --max-tokens $((len + 22)) --temperature 0 2>/dev/null)
  prompt="$story $(head -c 16 <<<"$story")"
  depth=$($bin generate --model "$model" --prompt "$prompt" --max-tokens 1 2>&1 >/dev/null |
    sed -n 's/.*prompt \([0-9]*\) tokens.*/\1/p')
  off=() on=() acc=() ll=() lk=() lka=()
  for _ in $(seq "$rounds"); do
    gen=(generate --model "$model" --prompt "$prompt" --max-tokens $((len + 1)) --ignore-eos
      --temperature 0 --threads "$threads")
    off+=("$($bin "${gen[@]}" 2>&1 >/dev/null | ours_rate)")
    out=$($bin "${gen[@]}" --speculative-config \
      "{\"method\": \"ngram\", \"num_speculative_tokens\": $k, \"prompt_lookup_min\": $ngram_min}" 2>&1 >/dev/null)
    on+=("$(ours_rate <<<"$out")") acc+=("$(ours_accept <<<"$out")")
    ll+=("$(bench_tg "$model" "$len" "$depth")")
    out=$("$llama/llama-lookup" -m "$model" -p "$prompt" -n "$len" --spec-draft-n-max "$k" \
      --temp 0 -t "$threads" -c "$context" 2>&1)
    lk+=("$(theirs_rate <<<"$out")") lka+=("$(theirs_accept <<<"$out")")
  done
  o=$(printf '%s\n' "${off[@]}" | median) g=$(printf '%s\n' "${on[@]}" | median)
  a=$(printf '%s\n' "${acc[@]}" | median) t=$(printf '%s\n' "${ll[@]}" | median)
  l=$(printf '%s\n' "${lk[@]}" | median) la=$(printf '%s\n' "${lka[@]}" | median)
  awk -v m="$(basename "$m" .gguf)" -v o="$o" -v g="$g" -v a="$a" -v t="$t" -v l="$l" -v la="$la" \
    -v n="$len" 'BEGIN {printf "| %s (%d) | %.0f | %.0f (%.1f %%) | %.0f | %.0f (%.1f %%) | %.2fx |\n", m, n, o, g, a, t, l, la, g / l}'
done

[ $# -ge 2 ] || exit 0
target=$1 draft=$2
echo
echo "| draft model ($(basename "$draft") for $(basename "$target"), K = $k, $n tokens) | pagedllm off | pagedllm draft (accepted) | llama.cpp tg | llama-speculative (accepted) | pagedllm draft / llama-speculative |"
echo "|---|---|---|---|---|---|"
off=() on=() acc=() ll=() ls=() lsa=()
field() { /usr/bin/python3 -c "import json, sys; print(json.loads(sys.stdin.read()).get('$1', 0))"; }
for _ in $(seq "$rounds"); do
  lat=(bench latency --model "$target" -p 0 -n "$n" -r 1 --threads "$threads" --json)
  off+=("$($bin "${lat[@]}" 2>/dev/null | grep '^{' | field tg_tokens_per_s)")
  j=$($bin "${lat[@]}" --speculative-config "{\"model\": \"$draft\", \"num_speculative_tokens\": $k}" 2>/dev/null | grep '^{')
  on+=("$(field tg_tokens_per_s <<<"$j")") acc+=("$(awk -v r="$(field spec_acceptance_rate <<<"$j")" 'BEGIN {print 100 * r}')")
  ll+=("$(bench_tg "$target" "$n" 0)")
  out=$("$llama/llama-speculative" -m "$target" -md "$draft" -p "Once upon a time" -n "$n" \
    --spec-draft-n-max "$k" --spec-draft-n-min 0 --temp 0 -t "$threads" -td "$threads" -c 1024 2>&1)
  ls+=("$(theirs_rate <<<"$out")") lsa+=("$(theirs_accept <<<"$out")")
done
o=$(printf '%s\n' "${off[@]}" | median) g=$(printf '%s\n' "${on[@]}" | median)
a=$(printf '%s\n' "${acc[@]}" | median) t=$(printf '%s\n' "${ll[@]}" | median)
l=$(printf '%s\n' "${ls[@]}" | median) la=$(printf '%s\n' "${lsa[@]}" | median)
awk -v o="$o" -v g="$g" -v a="$a" -v t="$t" -v l="$l" -v la="$la" \
  'BEGIN {printf "| random weights | %.2f | %.2f (%.1f %%) | %.2f | %.2f (%.1f %%) | %.2fx |\n", o, g, a, t, l, la, g / l}'
