# Sourced by the side-by-side benchmark scripts: the run folder and the GGUF files they share.

# start_run: checks $PAGEDLLM and makes it absolute, makes $RESULTS and $MODEL_DIR absolute, and
# sets run_dir ($RESULTS/run-<UTC time>), raw (its raw/ folder) and out (an empty
# results.jsonl in it).
start_run() {
  [ -x "$PAGEDLLM" ] || { echo "$0: no pagedllm binary at $PAGEDLLM (make build)" >&2; exit 2; }
  PAGEDLLM=$(realpath "$PAGEDLLM")
  mkdir -p "$RESULTS" "$MODEL_DIR"
  RESULTS=$(realpath "$RESULTS") MODEL_DIR=$(realpath "$MODEL_DIR")
  run_dir=$RESULTS/run-$(date -u +%Y%m%dT%H%M%SZ)
  raw=$run_dir/raw
  mkdir -p "$raw"
  out=$run_dir/results.jsonl
  : >"$out"
}

# gguf_model_file MODEL (<preset>-<f32|bf16|q8_0|q4_0|q4_k_m|q6_k|...>: llama-quantize's type
# names in lower case, as the case below lists) prints the file's
# path in $MODEL_DIR, making it when missing: the preset in f32 with `$PAGEDLLM make-model`, then
# the other formats with llama.cpp's `$QUANTIZE` (as users get them), its log in $LOG_DIR.
# Needs PAGEDLLM, MODEL_DIR, QUANTIZE (may be empty when every file is there), THREADS, LOG_DIR.
gguf_model_file() {
  local m=$1 preset=${1%-*} dtype=${1##*-} f32 file qtype
  f32=$MODEL_DIR/$preset-f32.gguf
  file=$MODEL_DIR/$m.gguf
  if [ ! -f "$f32" ]; then
    "$PAGEDLLM" make-model --preset "$preset" --dtype f32 --out "$f32.tmp" >&2
    mv "$f32.tmp" "$f32"
  fi
  if [ ! -f "$file" ]; then
    case $dtype in
      bf16 | q8_0 | q4_0 | q4_1 | q5_0 | q5_1 | iq4_nl | iq4_xs | q2_k | q3_k_s | q3_k_m | \
        q3_k_l | q4_k_s | q4_k_m | q5_k_s | q5_k_m | q6_k)
        qtype=${dtype^^} ;;
      *) echo "$0: unknown format '$dtype' in $m (f32 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 iq4_nl" \
        "iq4_xs q2_k q3_k_s q3_k_m q3_k_l q4_k_s q4_k_m q5_k_s q5_k_m q6_k)" >&2
        exit 2 ;;
    esac
    [ -n "$QUANTIZE" ] || { echo "$0: no llama-quantize to make $m" >&2; exit 2; }
    "$QUANTIZE" "$f32" "$file.tmp" "$qtype" "$THREADS" >"$LOG_DIR/quantize-$m.log" 2>&1 ||
      { tail -20 "$LOG_DIR/quantize-$m.log" >&2; exit 1; }
    mv "$file.tmp" "$file"
  fi
  echo "$file"
}
