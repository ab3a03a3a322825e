#!/usr/bin/env bash
# Measures total tokens/s of `pagedllm bench throughput` (128 in + 128 out per request) for
# batch sizes 1..128 and plots it with gnuplot (Debian's gnuplot-nox) to PNG (default
# docs/batch-scaling.png).
# usage: scripts/plot-batch-scaling.sh MODEL.gguf [THREADS] [OUT.png]
set -euo pipefail
model=$1
threads=${2:-2}
out=${3:-docs/batch-scaling.png}
if ! command -v gnuplot >/dev/null 2>&1; then  # a docs tool, so not in install-deps.sh
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get install -y -qq --no-install-recommends gnuplot-nox
fi
data=$(mktemp)
for b in 1 4 16 32 64 128; do
  tps=$(./build/pagedllm bench throughput --model "$model" --num-prompts "$b" --input-len 128 \
        --output-len 128 --max-num-seqs "$b" --max-num-batched-tokens 4096 --max-model-len 1024 \
        --threads "$threads" --json 2>/dev/null | sed -E 's/.*"total_tokens_per_s":([0-9.]+).*/\1/')
  echo "$b $tps" | tee -a "$data"
done
gnuplot <<GP
set terminal pngcairo size 800,480
set output "$out"
set title "pagedllm bench throughput, $(basename "$model"), $threads threads (128 in + 128 out)" noenhanced
set xlabel "batch (max-num-seqs = requests)"
set ylabel "total tokens/s"
set logscale x 2
set grid
set key off
plot "$data" using 1:2 with linespoints lw 2 pt 7
GP
rm -f "$data"
echo "wrote $out"
