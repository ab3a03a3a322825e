#!/bin/bash
# Before/after figures of two pagedllm builds on the same model files, in one run: the engines
# alternate round by round (A then B, then B then A), so that a noisy minute hits both. Each
# round runs bench latency (pp512, tg128) and bench throughput (32 x (128 + 128)); the table
# gives the median of each figure per build, the ratio B/A, and each build's range over the
# rounds (the noise a ratio must beat).
# Usage: scripts/bench-ab.sh A_BINARY B_BINARY ROUNDS MODEL_FILE...
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: $0 A_BINARY B_BINARY ROUNDS MODEL_FILE..." >&2; exit 2; }
a=$1 b=$2 rounds=$3
shift 3
out=$(mktemp)
trap 'rm -f "$out"' EXIT
run() {  # LABEL BINARY MODEL
  local lat thr
  lat=$("$2" bench latency --model "$3" -p 512 -n 128 -r 3 --max-model-len 1024 --threads 2 \
    --json 2>/dev/null | grep '^{')
  thr=$("$2" bench throughput --model "$3" --num-prompts 32 --input-len 128 --output-len 128 \
    --max-model-len 1024 --threads 2 --json 2>/dev/null | grep '^{')
  echo "$1 $(basename "$3") $lat $thr" >>"$out"
}
for m in "$@"; do
  for ((r = 0; r < rounds; ++r)); do
    if ((r % 2 == 0)); then run A "$a" "$m"; run B "$b" "$m"; else run B "$b" "$m"; run A "$a" "$m"; fi
    echo "$(basename "$m"): round $((r + 1))/$rounds" >&2
  done
done
/usr/bin/python3 - "$out" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, model, rest = line.split(" ", 2)
    dec = json.JSONDecoder()
    lat, end = dec.raw_decode(rest)
    thr, _ = dec.raw_decode(rest[end:].lstrip())
    r = rows.setdefault(model, {"A": [], "B": []})
    r[label].append((lat["pp_tokens_per_s"], lat["tg_tokens_per_s"], thr["output_tokens_per_s"]))
print("| model | pp512 A / B (tok/s) | B/A | tg128 A / B | B/A | batched 32x(128+128) output A / B | B/A |")
print("|---|---|---|---|---|---|---|")
ranges = []
for model, r in rows.items():
    cells = [model]
    for i in range(3):
        ma = statistics.median(x[i] for x in r["A"])
        mb = statistics.median(x[i] for x in r["B"])
        cells += [f"{ma:.1f} / {mb:.1f}", f"{mb / ma:.3f}"]
        for label in "AB":
            v = [x[i] for x in r[label]]
            ranges.append(f"{model} {['pp512', 'tg128', 'batched'][i]} {label}: "
                          f"{min(v):.1f}-{max(v):.1f}")
    print("| " + " | ".join(cells) + " |")
print("\nRanges over the rounds:\n" + "\n".join("- " + x for x in ranges))
print(f"\n{len(next(iter(rows.values()))['A'])} rounds per build; medians.")
PY
