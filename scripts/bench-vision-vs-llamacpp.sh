#!/usr/bin/env bash
# Encodes one image with pagedllm and with llama.cpp's llama-mtmd-cli on the same GGUF language
# model + mmproj pair, interleaved round by round so that a noisy minute hits both, and prints
# the medians: the vision encoder's time per image and the time to first token (encoder plus
# the prefill of the image and text tokens; llama.cpp's "prompt eval time", which covers both),
# with the ratios. Never downloads anything.
#
# usage: scripts/bench-vision-vs-llamacpp.sh LLAMA_BUILD_DIR MODEL.gguf MMPROJ.gguf [ROUNDS] [SIZE]
#   LLAMA_BUILD_DIR  a CPU build of llama.cpp holding bin/llama-mtmd-cli
#   SIZE             the image's WxH (default 448x448)
# Example (the 3B-shaped preset): pagedllm make-model --preset qwen25-vl-3b --dtype q4_0 \
#   --out vl3b.gguf --mmproj vl3b-mmproj-f16.gguf   (the mmproj is f16 with --dtype f16)
set -euo pipefail
llama=$1 model=$2 mmproj=$3 rounds=${4:-3} size=${5:-448x448}
threads=${THREADS:-2}
here=$(cd "$(dirname "$0")/.." && pwd)
pagedllm=${PAGEDLLM:-$here/build/pagedllm}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
w=${size%x*} h=${size#*x}
/usr/bin/python3 -c "import numpy as np; from PIL import Image; \
Image.fromarray(np.random.RandomState(7).randint(0, 256, ($h, $w, 3), dtype=np.uint8)).save('$work/image.png')"

for round in $(seq "$rounds"); do
  "$pagedllm" bench throughput --model "$model" --mmproj "$mmproj" --image-size "$size" \
    --num-prompts 1 --input-len 32 --output-len 1 --threads "$threads" --json \
    2>/dev/null | tail -1 >> "$work/pagedllm.jsonl"
  "$llama/bin/llama-mtmd-cli" -m "$model" --mmproj "$mmproj" --image "$work/image.png" \
    -p "Describe the picture in a few words." -n 1 -t "$threads" --temp 0 -v \
    > "$work/llama-$round.log" 2>&1
  echo "round $round done" >&2
done

/usr/bin/python3 - "$work" "$rounds" <<'PY'
import glob, json, re, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
runs = [json.loads(l) for l in open(f"{work}/pagedllm.jsonl")]
p_enc = statistics.median(r["encoder_ms_per_image"] for r in runs)
p_ttft = statistics.median(1e3 * r["elapsed_s"] for r in runs)
l_enc, l_ttft = [], []
for path in sorted(glob.glob(f"{work}/llama-*.log")):
    text = open(path).read()
    enc = re.search(r"mtmd batch encoding done in (\d+) ms", text)
    prompt = re.search(r"prompt eval time =\s+([\d.]+) ms", text)
    if enc:
        l_enc.append(float(enc.group(1)))
    if prompt:  # llama.cpp's prompt eval time covers the encoder and the prefill
        l_ttft.append(float(prompt.group(1)))
if not l_enc:
    sys.exit("llama-mtmd-cli printed no encoder time:\n" + text[-2000:])
l_enc, l_ttft = statistics.median(l_enc), statistics.median(l_ttft) if l_ttft else float("nan")
print(f"| engine | encoder ms per image | time to first token ms |")
print(f"|---|---|---|")
print(f"| pagedllm | {p_enc:.0f} | {p_ttft:.0f} |")
print(f"| llama.cpp (llama-mtmd-cli) | {l_enc:.0f} | {l_ttft:.0f} |")
print(f"| llama.cpp / pagedllm | {l_enc / p_enc:.2f}x | {l_ttft / p_ttft:.2f}x |")
print(f"(medians of {rounds} interleaved rounds)")
PY
