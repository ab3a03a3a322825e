#!/usr/bin/env bash
# scripts/lib/bench_vs_table.py, the table of bench-vs-llamacpp.sh, on results with known medians:
# the engines' medians, their ratio, and the median of the per-round ratios, which differ where
# the rounds drift; failed runs are counted and left out.
# usage: bench_vs_table_test.sh SOURCE_DIR
set -euo pipefail
results=$(mktemp)
trap 'rm -f "$results"' EXIT
row() {  # ENGINE MODEL SHAPE ROUND VALUE
  printf '{"engine":"%s","model":"%s","shape":"%s","round":%s,"tokens_per_s":%s,"raw":"x"}\n' \
    "$@" >>"$results"
}
row pagedllm m tg128 1 100
row llama.cpp m tg128 1 90
row ik_llama.cpp m tg128 1 95
row pagedllm m tg128 2 150
row llama.cpp m tg128 2 140
row ik_llama.cpp m tg128 2 100
row pagedllm m tg128 3 120
row llama.cpp m tg128 3 130
row ik_llama.cpp m tg128 3 null
row pagedllm m pp512 1 null
row llama.cpp m pp512 1 500
echo '{"engine":"pagedllm","model":"m","shape":"read_gb_per_s","round":1,"value":40}' >>"$results"
echo '{"engine":"pagedllm","model":"m","shape":"read_gb_per_s","round":2,"value":50}' >>"$results"
out=$(python3 "$1/scripts/lib/bench_vs_table.py" "$results")
expect() {  # LINE WHAT
  grep -qxF "$1" <<<"$out" || { printf 'FAIL: %s: no line\n  %s\nin\n%s\n' "$2" "$1" "$out"; exit 1; }
}
# Medians 120 / 130 / 97.5: 0.92x; rounds 100/95, 150/140, 120/130: median 1.05x.
expect '| m | tg128 | 120.0 | 130.0 | 97.5 (1 failed) | 0.92x | 1.05x |' "medians and round ratios"
expect '| m | pp512 | failed | 500.0 | skipped | — | — |' "a failed engine and a skipped one"
expect "pagedllm's bandwidth probe (streaming read after each tg run): median 45.0 GB/s" "the probe"
echo "bench_vs_table.py: medians, ratios and failures as expected"
