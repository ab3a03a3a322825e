#!/bin/bash
# pagedllm side by side with llama.cpp and ik_llama.cpp on the same GGUF files (issue 30, "The
# comparison"): per model file and round, the three engines run one after the other (the order
# rotates round by round, so that a noisy minute hits all three) on
#   pp512, tg128  llama-bench -p 512 -n 128 -r 1 -o json | pagedllm bench latency -p 512 -n 128
#            -r 1 --json (one run of each, after the tools' own untimed warm-up)
#   tg128@dD (only with DEPTHS) llama-bench -d D, ik_llama.cpp -gp D,128 | bench latency -d D
#   batched  llama-batched-bench -npp 128 -ntg 128 -npl 32, column "S t/s" (prompt + generated
#            tokens over the whole time) | pagedllm bench throughput, total_tokens_per_s
# then prints one Markdown table (scripts/lib/bench_vs_table.py) of the medians over the rounds,
# the ratio of pagedllm's to the faster peer's and the median of that ratio round by round,
# with the machine, the ISA, the date and every engine's commit.
#
# Usage: LLAMA_CPP_DIR=/path/llama.cpp/build/bin IK_LLAMA_DIR=/path/ik_llama.cpp/build/bin \
#          scripts/bench-vs-llamacpp.sh
# The peers are built outside this repository from their public sources (the script downloads
# nothing), CPU-only, Release, for example
#   cmake -B build -DGGML_NATIVE=ON -DGGML_OPENMP=ON -DCMAKE_BUILD_TYPE=Release \
#     -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF       (llama.cpp)
#   cmake -B build -DGGML_NATIVE=ON -DGGML_OPENMP=ON -DCMAKE_BUILD_TYPE=Release \
#     -DLLAMA_CURL=OFF -DGGML_IQK_FA_ALL_QUANTS=OFF                              (ik_llama.cpp)
#   cmake --build build -j2 --target llama-bench llama-batched-bench llama-quantize llama-server
# and, to compare the AVX2 paths on an AVX-512 host, once more (cmake -B build-avx2) with
# -DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_BMI2=ON -DGGML_FMA=ON
# -DGGML_F16C=ON -DGGML_AVX512=OFF (with NATIVE off, llama.cpp turns every ISA option off unless
# named; ik_llama.cpp has no GGML_SSE42/GGML_BMI2), run with those build-avx2/bin folders and
# PAGEDLLM_ISA=avx2. Where the CPU has AVX-VNNI too, a third build (build-avxvnni) adds
# -DGGML_AVX_VNNI=ON (llama.cpp) or -DGGML_AVXVNNI=ON (ik_llama.cpp) to those options, for
# PAGEDLLM_ISA=avxvnni: what an Intel client CPU without AVX-512 runs.
#
# Environment (defaults in brackets):
#   LLAMA_CPP_DIR  llama.cpp's build/bin (llama-bench, llama-batched-bench, llama-quantize)
#                  [/tmp/peers/llama.cpp/build/bin]; empty or missing: that column is skipped
#   IK_LLAMA_DIR   ik_llama.cpp's build/bin [/tmp/peers/ik_llama.cpp/build/bin]; likewise
#   QUANTIZE       the llama-quantize that makes BF16/Q8_0/Q4_0/Q4_K_M from the f32 file
#                  [llama.cpp's, else ik_llama.cpp's]
#   PAGEDLLM       [./build/pagedllm]      PAGEDLLM_ISA  passed through (avx2, avx512, ...)
#   PAGEDLLM_ARGS [""]  extra flags for every pagedllm bench run, e.g. "--kv-cache-dtype q8_0"
#                  beside LLAMA_CPP_BENCH_ARGS="-ctk q8_0 -ctv q8_0" (and the batched ones)
#   ROUNDS [3]  THREADS [2]
#   MODELS ["llama-110m-f32 llama-110m-bf16 llama-110m-q8_0 llama-110m-q4_0 llama-110m-q4_k_m"]
#                  <preset>-<f32|bf16|q8_0|q4_0|q4_k_m|q5_k_m|q6_k|q3_k_m|iq4_xs|...> (the
#                  llama-quantize types scripts/lib/gguf-models.sh lists); llama-1b-* too
#   MODEL_DIR      where the GGUF files are made, or reused when there [$RESULTS/models]
#   RESULTS        results folder [/tmp/bench-vs-llamacpp]; each run writes run-<UTC time>/
#                  with results.jsonl (one line per engine, model, shape and round), raw/ (every
#                  engine's own output) and table.md
#   PP [512] TG [128]               pp and tg lengths; PP=0: no pp shape, TG=0: no tg shape
#   DEPTHS [""]                     e.g. "4096 16384": also tg$TG after that many tokens
#   BPP [128] BTG [128] NPL [32]    batched: NPL sequences of BPP prompt + BTG generated tokens;
#                                   NPL=0: no batched shape (PP=0 NPL=0 ROUNDS=6: decode alone,
#                                   more rounds in the time, where the host's bandwidth drifts)
#   LLAMA_CPP_BENCH_ARGS [""]  LLAMA_CPP_BATCHED_ARGS [""]   extra llama-bench and
#                                   llama-batched-bench flags for llama.cpp (flash attention is
#                                   "auto" there: on where the backend has the op, as the CPU)
#   IK_BENCH_ARGS ["-fa 1 -rtr 1"]  IK_BATCHED_ARGS ["-fa 1 -rtr"]   the same for ik_llama.cpp:
#                                   flash attention and run-time repacking; its llama-bench
#                                   takes a value after -rtr, its common flags (batched-bench,
#                                   server) take none
#   BANDWIDTH [1]                   pagedllm's tg runs with --bandwidth; its median streaming
#                                   read (GB/s) is printed with the machine
#   PAGEDLLM_COMMIT                 the commit to print where the tree has no .git (a copy on
#                                   another machine: scripts/bundle-for-remote.sh)
# Smoke test: ROUNDS=1 MODELS=llama-110m-q4_0 PP=64 TG=16 BPP=32 BTG=16 NPL=4
#
# One full round of one llama-110m file takes about 1.5-2 minutes on 2 threads (pp512, tg128 and
# 32 x 256 tokens for three engines, mostly the batched runs, plus the models' load and
# ik_llama.cpp's repacking); the default 5 files x 3 rounds, about 25-30 minutes; a llama-1b file,
# about 10x as long per round. Quirks worth knowing:
# - llama-bench's tg128 starts from an empty context, as pagedllm's (a one-token prompt, then
#   128 timed decode steps); both do one untimed warm-up.
# - llama-batched-bench decodes BTG steps after the prefill; pagedllm's first output token comes
#   with the prefill, so it runs BTG - 1 decode steps for the same token count.
# - ik_llama.cpp's llama-batched-bench prints its table on stderr, llama.cpp's on stdout: both
#   streams are kept. llama-batched-bench's -c is NPL * (BPP + BTG).
# - -rtr makes ik_llama.cpp repack the weights at load (and turns mmap off): load time grows,
#   the timed runs do not include it. ik_llama.cpp also writes llama.log into its working folder
#   (the peers run in raw/). Its llama-bench has no -d: -gp D,N is the same test (N tokens
#   generated after D untimed ones), reported as n_prompt D, n_gen N, test "tgN@ppD".
# - llama.cpp's flash attention is left at its default (auto, which the CPU backend turns on).
set -euo pipefail
cd "$(dirname "$0")/.."

LLAMA_CPP_DIR=${LLAMA_CPP_DIR-/tmp/peers/llama.cpp/build/bin}
IK_LLAMA_DIR=${IK_LLAMA_DIR-/tmp/peers/ik_llama.cpp/build/bin}
PAGEDLLM=${PAGEDLLM:-./build/pagedllm}
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-2}
MODELS=${MODELS:-"llama-110m-f32 llama-110m-bf16 llama-110m-q8_0 llama-110m-q4_0 llama-110m-q4_k_m"}
RESULTS=${RESULTS:-/tmp/bench-vs-llamacpp}
MODEL_DIR=${MODEL_DIR:-$RESULTS/models}
PP=${PP:-512} TG=${TG:-128} DEPTHS=${DEPTHS:-}
BPP=${BPP:-128} BTG=${BTG:-128} NPL=${NPL:-32}
LLAMA_CPP_BENCH_ARGS=${LLAMA_CPP_BENCH_ARGS:-} LLAMA_CPP_BATCHED_ARGS=${LLAMA_CPP_BATCHED_ARGS:-}
IK_BENCH_ARGS=${IK_BENCH_ARGS-"-fa 1 -rtr 1"} IK_BATCHED_ARGS=${IK_BATCHED_ARGS-"-fa 1 -rtr"}
BANDWIDTH=${BANDWIDTH:-1}
read -r -a pagedllm_args <<<"${PAGEDLLM_ARGS:-}"
CTX=$((NPL * (BPP + BTG)))

# shellcheck source=scripts/lib/gguf-models.sh
source scripts/lib/gguf-models.sh
start_run
LOG_DIR=$raw

# The peers that are there: engine name -> its build/bin folder.
engines=(pagedllm)
declare -A bindir=() commit=() notes=()
peer() {  # NAME DIR VARIABLE
  if [ -n "$2" ] && [ -x "$2/llama-bench" ] && [ -x "$2/llama-batched-bench" ]; then
    engines+=("$1")
    bindir[$1]=$(realpath "$2")
    commit[$1]=$(git -C "${bindir[$1]}" rev-parse --short=9 HEAD 2>/dev/null || echo unknown)
  else
    notes[$1]="$1 skipped: no llama-bench and llama-batched-bench in '$2' ($3)"
    echo "${notes[$1]}" >&2
  fi
}
peer llama.cpp "$LLAMA_CPP_DIR" LLAMA_CPP_DIR
peer ik_llama.cpp "$IK_LLAMA_DIR" IK_LLAMA_DIR
# outside a git checkout (a copied tree on another machine), PAGEDLLM_COMMIT names the commit
commit[pagedllm]=$(git rev-parse --short HEAD 2>/dev/null || echo "${PAGEDLLM_COMMIT:-unknown}")

QUANTIZE=${QUANTIZE:-}
for d in "$LLAMA_CPP_DIR" "$IK_LLAMA_DIR"; do
  if [ -z "$QUANTIZE" ] && [ -n "$d" ] && [ -x "$d/llama-quantize" ]; then
    QUANTIZE=$d/llama-quantize
  fi
done


record() {  # ENGINE MODEL SHAPE ROUND VALUE RAW_FILE  (VALUE null: that run failed)
  printf '{"engine":"%s","model":"%s","shape":"%s","round":%s,"tokens_per_s":%s,"raw":"%s"}\n' \
    "$@" >>"$out"
  [ "$5" != null ] || echo "$0: $1 $2 $3 failed; see $6 and the .log beside it" >&2
}

# llama-bench -o json: an array of tests; avg_ts of the one with N_PROMPT prompt and N_GEN
# generated tokens (ik_llama.cpp's -gp D,N test has n_prompt D and n_gen N).
bench_ts() {  # FILE N_PROMPT N_GEN
  /usr/bin/python3 -c '
import json, sys
for t in json.load(open(sys.argv[1])):
    if t["n_prompt"] == int(sys.argv[2]) and t["n_gen"] == int(sys.argv[3]):
        print(t["avg_ts"]); break
else:
    sys.exit(1)' "$@" 2>/dev/null || echo null
}
json_field() {  # FILE KEY: the key of the last line (pagedllm --json prints one object)
  /usr/bin/python3 -c '
import json, sys
print(json.dumps(json.loads(open(sys.argv[1]).read().splitlines()[-1])[sys.argv[2]]))' "$@" 2>/dev/null ||
    echo null
}
# llama-batched-bench's table row "| PP | TG | B | N_KV | T_PP s | S_PP t/s | T_TG s | S_TG t/s |
# T s | S t/s |" for this shape: its last column.
batched_ts() {
  awk -F'|' -v pp="$BPP" -v tg="$BTG" -v pl="$NPL" '
    NF >= 12 && $2 + 0 == pp && $3 + 0 == tg && $4 + 0 == pl { v = $11 + 0 }
    END { if (v == "") print "null"; else print v }' "$1"
}

run_engine() {  # ENGINE MODEL FILE ROUND
  local e=$1 m=$2 f=$3 r=$4 base d bin
  base=$raw/$m-$e-r$r
  if [ "$e" = pagedllm ]; then
    local bw=()
    [ "$BANDWIDTH" = 1 ] && bw=(--bandwidth)
    "$PAGEDLLM" bench latency --model "$f" -p "$PP" -n "$TG" -r 1 --threads "$THREADS" --json \
      "${pagedllm_args[@]}" \
      "${bw[@]}" >"$base-latency.json" 2>"$base-latency.log" || true
    [ "$PP" -gt 0 ] && record "$e" "$m" "pp$PP" "$r" \
      "$(json_field "$base-latency.json" pp_tokens_per_s)" "$base-latency.json"
    [ "$TG" -gt 0 ] && record "$e" "$m" "tg$TG" "$r" \
      "$(json_field "$base-latency.json" tg_tokens_per_s)" "$base-latency.json"
    if [ "$BANDWIDTH" = 1 ] && [ "$TG" -gt 0 ]; then
      printf '{"engine":"pagedllm","model":"%s","shape":"read_gb_per_s","round":%s,"value":%s}\n' \
        "$m" "$r" "$(json_field "$base-latency.json" read_gb_per_s)" >>"$out"
    fi
    for d in $DEPTHS; do
      # Past a preset's context (llama-110m's is 2048), as the peers allow with a warning.
      PAGEDLLM_ALLOW_LONG_MAX_MODEL_LEN=1 "$PAGEDLLM" bench latency --model "$f" -p 0 -n "$TG" \
        "${pagedllm_args[@]}" \
        -d "$d" -r 1 --threads "$THREADS" --json >"$base-tg-d$d.json" 2>"$base-tg-d$d.log" || true
      record "$e" "$m" "tg$TG@d$d" "$r" "$(json_field "$base-tg-d$d.json" tg_tokens_per_s)" \
        "$base-tg-d$d.json"
    done
    [ "$NPL" -gt 0 ] || return 0
    "$PAGEDLLM" bench throughput --model "$f" --num-prompts "$NPL" --input-len "$BPP" \
      "${pagedllm_args[@]}" \
      --output-len "$BTG" --threads "$THREADS" --json >"$base-batched.json" \
      2>"$base-batched.log" || true
    record "$e" "$m" "batched" "$r" "$(json_field "$base-batched.json" total_tokens_per_s)" \
      "$base-batched.json"
    return
  fi
  local -a x=() xb=()  # the engine's extra flags (llama-bench, llama-batched-bench)
  if [ "$e" = ik_llama.cpp ]; then
    read -ra x <<<"$IK_BENCH_ARGS"
    read -ra xb <<<"$IK_BATCHED_ARGS"
  else
    read -ra x <<<"$LLAMA_CPP_BENCH_ARGS"
    read -ra xb <<<"$LLAMA_CPP_BATCHED_ARGS"
  fi
  bin=${bindir[$e]}
  # The peers run in the raw folder: whatever log file they leave stays there.
  (cd "$raw" && "$bin/llama-bench" -m "$f" -p "$PP" -n "$TG" -r 1 -t "$THREADS" -o json "${x[@]}" \
    >"$base-latency.json" 2>"$base-latency.log") || true
  [ "$PP" -gt 0 ] && record "$e" "$m" "pp$PP" "$r" "$(bench_ts "$base-latency.json" "$PP" 0)" \
    "$base-latency.json"
  [ "$TG" -gt 0 ] && record "$e" "$m" "tg$TG" "$r" "$(bench_ts "$base-latency.json" 0 "$TG")" \
    "$base-latency.json"
  for d in $DEPTHS; do
    local depth=(-p 0 -n "$TG" -d "$d") want=(0 "$TG")
    if [ "$e" = ik_llama.cpp ]; then  # no -d there: -gp D,N times N tokens after D
      depth=(-p 0 -n 0 -gp "$d,$TG") want=("$d" "$TG")
    fi
    (cd "$raw" && "$bin/llama-bench" -m "$f" "${depth[@]}" -r 1 -t "$THREADS" -o json "${x[@]}" \
      >"$base-tg-d$d.json" 2>"$base-tg-d$d.log") || true
    record "$e" "$m" "tg$TG@d$d" "$r" "$(bench_ts "$base-tg-d$d.json" "${want[@]}")" \
      "$base-tg-d$d.json"
  done
  [ "$NPL" -gt 0 ] || return 0
  (cd "$raw" && "$bin/llama-batched-bench" -m "$f" -c "$CTX" -b 2048 -ub 512 -npp "$BPP" \
    -ntg "$BTG" -npl "$NPL" -t "$THREADS" "${xb[@]}" >"$base-batched.txt" 2>&1) || true
  record "$e" "$m" "batched" "$r" "$(batched_ts "$base-batched.txt")" "$base-batched.txt"
}

for m in $MODELS; do
  f=$(gguf_model_file "$m")
  for ((r = 1; r <= ROUNDS; ++r)); do
    n=${#engines[@]}
    for ((i = 0; i < n; ++i)); do  # the order rotates: round 2 starts with the second engine
      e=${engines[$(((i + r - 1) % n))]}
      echo "$m: round $r/$ROUNDS: $e" >&2
      run_engine "$e" "$m" "$f" "$r"
    done
  done
done

isa_flags=$(grep -o -w -E 'avx2|avx_vnni|avx512f|avx512_vnni|avx512_bf16|amx_tile|amx_bf16|amx_int8' \
  <(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n') | tr '\n' ' ' || true)
pagedllm_isa=$(grep -h -m1 -o 'isa=[^ ]*' "$raw"/*-pagedllm-r*-latency.log 2>/dev/null | head -1 || true)
{
  echo "Machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs; ISA flags: ${isa_flags:-none}"
  echo "Date: $(date -u '+%Y-%m-%d %H:%M UTC'); threads: $THREADS; rounds: $ROUNDS (medians)"
  echo "pagedllm ${commit[pagedllm]} (${pagedllm_isa:-isa=?}, PAGEDLLM_ISA=${PAGEDLLM_ISA:-unset}; flags: ${PAGEDLLM_ARGS:-none})"
  for e in llama.cpp ik_llama.cpp; do
    if [ -n "${bindir[$e]:-}" ]; then
      a=$LLAMA_CPP_BENCH_ARGS b=$LLAMA_CPP_BATCHED_ARGS
      [ "$e" = ik_llama.cpp ] && a=$IK_BENCH_ARGS b=$IK_BATCHED_ARGS
      echo "$e ${commit[$e]} (${bindir[$e]}; llama-bench flags: ${a:-none}; llama-batched-bench flags: ${b:-none})"
    else
      echo "${notes[$e]}"
    fi
  done
  if [ -n "$QUANTIZE" ]; then
    qdir=$(dirname "$(realpath "$QUANTIZE")")
    echo "Model files in $MODEL_DIR; missing ones made by $QUANTIZE ($(git -C "$qdir" \
      rev-parse --short=9 HEAD 2>/dev/null || echo unknown)), quantize-*.log in raw/ when made"
  fi
  [ "$NPL" -gt 0 ] && echo "Batched: $NPL x ($BPP + $BTG) tokens, prompt + generated tokens per second (llama-batched-bench S t/s, pagedllm total_tokens_per_s)"
  echo
  /usr/bin/python3 scripts/lib/bench_vs_table.py "$out"
  echo
  echo "Raw results: $out"
} | tee "$run_dir/table.md"
