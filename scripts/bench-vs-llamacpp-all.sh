#!/bin/bash
# Every table of docs/BENCHMARKS.md "Against llama.cpp and ik_llama.cpp" on the machine at hand,
# in one go: scripts/bench-vs-llamacpp.sh for
#   1. the native ISA: the five llama-110m files (ROUNDS_SMALL rounds), then llama-1b bf16, q8_0
#      and q4_k_m (ROUNDS_LARGE rounds);
#   2. the AVX2 paths (PAGEDLLM_ISA=avx2 and the peers' AVX2 builds), the same files, where the
#      CPU has more than AVX2 and the AVX2 builds exist (on an AVX2-only CPU, 1 is that table);
#   3. decode after DEPTHS tokens of context on DEPTH_MODEL, on the AVX2 paths where 2 ran, else
#      natively;
#   4. the AVX-VNNI paths' prefill (PAGEDLLM_ISA=avxvnni and the peers' AVX-VNNI builds) of the
#      quantized files, where the CPU has AVX-512 and AVX-VNNI and those builds exist: what a CPU
#      with AVX-VNNI and no AVX-512 runs (bench-vs-llamacpp.sh's header says how to build them).
# Each step writes its own run-<UTC time>/ under RESULTS, as bench-vs-llamacpp.sh does; this
# script then puts their tables one after the other into RESULTS/all-<UTC time>.md.
#
# Usage: scripts/bench-vs-llamacpp-all.sh   (about 90 minutes on 2 threads with the defaults)
#
# Environment (defaults in brackets), beside bench-vs-llamacpp.sh's own (PAGEDLLM, MODEL_DIR,
# THREADS, BANDWIDTH, PAGEDLLM_COMMIT, ...), which pass through:
#   LLAMA_CPP_DIR / IK_LLAMA_DIR        native builds [/tmp/peers/<peer>/build/bin]
#   LLAMA_CPP_AVX2_DIR / IK_LLAMA_AVX2_DIR   AVX2 builds [/tmp/peers/<peer>/build-avx2/bin]
#   LLAMA_CPP_AVXVNNI_DIR / IK_LLAMA_AVXVNNI_DIR   AVX-VNNI builds [.../build-avxvnni/bin]
#   AVXVNNI_MODELS [the quantized files of SMALL_MODELS and LARGE_MODELS]  ROUNDS_AVXVNNI [3]
#   SMALL_MODELS [llama-110m-{f32,bf16,q8_0,q4_0,q4_k_m}]  ROUNDS_SMALL [2]
#   LARGE_MODELS [llama-1b-{bf16,q8_0,q4_k_m}]             ROUNDS_LARGE [1]
#   DEPTH_MODEL [llama-110m-q8_0]  DEPTHS ["4096 16384"]   empty DEPTHS: no depth step
#   STEPS ["native avx2 depth avxvnni"]    which steps to run
#   RESULTS [/tmp/bench-vs-llamacpp]
set -euo pipefail
cd "$(dirname "$0")/.."

LLAMA_CPP_DIR=${LLAMA_CPP_DIR-/tmp/peers/llama.cpp/build/bin}
IK_LLAMA_DIR=${IK_LLAMA_DIR-/tmp/peers/ik_llama.cpp/build/bin}
LLAMA_CPP_AVX2_DIR=${LLAMA_CPP_AVX2_DIR-/tmp/peers/llama.cpp/build-avx2/bin}
IK_LLAMA_AVX2_DIR=${IK_LLAMA_AVX2_DIR-/tmp/peers/ik_llama.cpp/build-avx2/bin}
LLAMA_CPP_AVXVNNI_DIR=${LLAMA_CPP_AVXVNNI_DIR-/tmp/peers/llama.cpp/build-avxvnni/bin}
IK_LLAMA_AVXVNNI_DIR=${IK_LLAMA_AVXVNNI_DIR-/tmp/peers/ik_llama.cpp/build-avxvnni/bin}
SMALL_MODELS=${SMALL_MODELS-llama-110m-f32 llama-110m-bf16 llama-110m-q8_0 llama-110m-q4_0 llama-110m-q4_k_m}
LARGE_MODELS=${LARGE_MODELS-llama-1b-bf16 llama-1b-q8_0 llama-1b-q4_k_m}
ROUNDS_SMALL=${ROUNDS_SMALL:-2}
ROUNDS_LARGE=${ROUNDS_LARGE:-1}
DEPTH_MODEL=${DEPTH_MODEL:-llama-110m-q8_0}
DEPTHS=${DEPTHS-4096 16384}
STEPS=${STEPS:-native avx2 depth avxvnni}
# The files whose products the AVX-VNNI path changes: the block-quantized ones.
quantized_of() { tr ' ' '\n' <<<"$1" | grep -E -- '-q[0-9]' | tr '\n' ' ' || true; }
AVXVNNI_MODELS=${AVXVNNI_MODELS-$(quantized_of "$SMALL_MODELS $LARGE_MODELS")}
ROUNDS_AVXVNNI=${ROUNDS_AVXVNNI:-3}
RESULTS=${RESULTS:-/tmp/bench-vs-llamacpp}
export RESULTS
unset PAGEDLLM_ISA

mkdir -p "$RESULTS"
combined="$RESULTS/all-$(date -u +%Y%m%dT%H%M%SZ).md"
has_step() { [[ " $STEPS " == *" $1 "* ]]; }
# The AVX2 step is a separate table only where the CPU goes beyond AVX2 and both AVX2 builds exist.
avx2_step=false
if grep -q -m1 -w avx512f /proc/cpuinfo && [ -x "$LLAMA_CPP_AVX2_DIR/llama-bench" ] &&
  [ -x "$IK_LLAMA_AVX2_DIR/llama-bench" ]; then
  avx2_step=true
fi

# Likewise the AVX-VNNI step: a CPU with AVX-512 and AVX-VNNI (without AVX-512 the native step is
# that table), and both AVX-VNNI builds.
avxvnni_step=false
if grep -q -m1 -w avx512f /proc/cpuinfo && grep -q -m1 -w avx_vnni /proc/cpuinfo &&
  [ -x "$LLAMA_CPP_AVXVNNI_DIR/llama-bench" ] && [ -x "$IK_LLAMA_AVXVNNI_DIR/llama-bench" ]; then
  avxvnni_step=true
fi

# The newest run-<UTC time>/ folder (globs expand sorted), or nothing.
newest_run() {
  local runs=("$RESULTS"/run-*)
  [ -e "${runs[0]}" ] && echo "${runs[-1]}"
  return 0
}

# run TITLE MODELS ROUNDS [VAR=VALUE ...]: one bench-vs-llamacpp.sh run; its table.md goes into
# the combined file under TITLE.
run() {
  local title=$1 models=$2 rounds=$3
  shift 3
  [ -n "$models" ] || return 0
  local before
  before=$(newest_run)
  echo "== $title ($(date -u +%H:%M) UTC)" >&2
  env "$@" MODELS="$models" ROUNDS="$rounds" scripts/bench-vs-llamacpp.sh >&2
  local after
  after=$(newest_run)
  if [ "$after" = "$before" ] || [ ! -f "$after/table.md" ]; then
    echo "bench-vs-llamacpp-all.sh: '$title' left no table" >&2
    exit 1
  fi
  {
    echo "## $title"
    echo
    cat "$after/table.md"
    echo
  } >>"$combined"
}

native=(LLAMA_CPP_DIR="$LLAMA_CPP_DIR" IK_LLAMA_DIR="$IK_LLAMA_DIR" DEPTHS=)
avx2=(PAGEDLLM_ISA=avx2 LLAMA_CPP_DIR="$LLAMA_CPP_AVX2_DIR" IK_LLAMA_DIR="$IK_LLAMA_AVX2_DIR"
  DEPTHS=)
if has_step native; then
  run "Native ISA, small models" "$SMALL_MODELS" "$ROUNDS_SMALL" "${native[@]}"
  run "Native ISA, large models" "$LARGE_MODELS" "$ROUNDS_LARGE" "${native[@]}"
fi
if has_step avx2 && $avx2_step; then
  run "AVX2 paths, small models" "$SMALL_MODELS" "$ROUNDS_SMALL" "${avx2[@]}"
  run "AVX2 paths, large models" "$LARGE_MODELS" "$ROUNDS_LARGE" "${avx2[@]}"
fi
if has_step depth && [ -n "$DEPTHS" ]; then
  if $avx2_step; then
    run "Decode at depth, AVX2 paths" "$DEPTH_MODEL" 1 "${avx2[@]}" DEPTHS="$DEPTHS"
  else
    run "Decode at depth, native ISA" "$DEPTH_MODEL" 1 "${native[@]}" DEPTHS="$DEPTHS"
  fi
fi
if has_step avxvnni && $avxvnni_step; then
  run "AVX-VNNI paths, prefill" "$AVXVNNI_MODELS" "$ROUNDS_AVXVNNI" PAGEDLLM_ISA=avxvnni \
    LLAMA_CPP_DIR="$LLAMA_CPP_AVXVNNI_DIR" IK_LLAMA_DIR="$IK_LLAMA_AVXVNNI_DIR" DEPTHS= TG=0 NPL=0
fi
echo "All tables: $combined" >&2
cat "$combined"
