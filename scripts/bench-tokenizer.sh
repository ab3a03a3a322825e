#!/bin/bash
# SentencePiece-style tokenization side by side with Google's SentencePiece
# (python3-sentencepiece) on the same 1 MB of mixed text (English from /usr/share/doc and a
# multilingual mix) and the same Llama 2 vocabulary: both encode the whole text in one call, the
# ids are compared, then bench_tokenizer times pagedllm on the file.
# Usage: scripts/bench-tokenizer.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shared=$(bash scripts/shared-dir.sh)
text=$(mktemp)
trap 'rm -f "$text" "$text.ids"' EXIT
/usr/bin/python3 - "$text" <<'PY'
import glob, random, sys
english = ""
for f in sorted(glob.glob("/usr/share/doc/*/copyright")):
    english += open(f, encoding="utf-8", errors="replace").read()
    if len(english.encode()) >= 1 << 19:
        break
parts = ["The quick brown fox jumps over the lazy dog. ", "日本語のテキストです。", "中文字符测试，",
         "한국어 문장입니다. ", "مرحبا بالعالم ", "Привет, мир! ", "नमस्ते दुनिया ", "🙂👍🏽 ",
         "for (int i = 0; i < n; ++i) { sum += a[i]; }\n", "1234567890 ", "Γειά σου Κόσμε. "]
rng = random.Random(1)
mix = ""
while len(mix.encode()) < 1 << 19:
    mix += parts[rng.randrange(len(parts))]
open(sys.argv[1], "w", encoding="utf-8").write(english.encode()[: 1 << 19].decode(errors="ignore") + mix)
PY
echo "text: $(wc -c <"$text") bytes"
/usr/bin/python3 - "$shared/models/llama2-tokenizer/tokenizer.model" "$text" <<'PY'
import json, statistics, sys, time
import sentencepiece
sp = sentencepiece.SentencePieceProcessor(model_file=sys.argv[1])
text = open(sys.argv[2], encoding="utf-8").read()
times = []
for _ in range(5):
    t0 = time.perf_counter()
    ids = sp.encode(text)
    times.append(time.perf_counter() - t0)
json.dump(ids, open(sys.argv[2] + ".ids", "w"))
size = len(text.encode())
print(f"python3-sentencepiece: {len(ids)} tokens, median {statistics.median(times) * 1e3:.1f} ms "
      f"({size / statistics.median(times) / 1e6:.2f} MB/s)")
PY
/usr/bin/python3 - "$text" "$build/pagedllm" "$shared/models/llama2-tokenizer/tokenizer.bin" <<'PY'
import json, subprocess, sys, tempfile
text = open(sys.argv[1], encoding="utf-8").read()
with tempfile.NamedTemporaryFile("w", suffix=".jsonl", encoding="utf-8") as f:
    f.write(json.dumps({"text": text}) + "\n")
    f.flush()
    out = subprocess.run([sys.argv[2], "tokenize", "--model", sys.argv[3], "--texts-file", f.name,
                          "--no-add-special", "--json"], capture_output=True, check=True).stdout
ours = json.loads(out)["ids"]
ref = json.load(open(sys.argv[1] + ".ids"))
print("ids: " + ("equal" if ours == ref else f"DIFFER ({len(ours)} vs {len(ref)} tokens)"))
sys.exit(0 if ours == ref else 1)
PY
PAGEDLLM_BENCH_TEXT=$text "$build/bench/bench_tokenizer" --benchmark_filter=SentencePiece \
  --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
