#!/bin/bash
# Regenerates tests/format/data/ggml_block_vectors.json: reference vectors for the GGUF
# block-quantization formats (Q4_0 ... Q6_K, IQ4_NL, IQ4_XS) made by llama.cpp's own ggml
# library. scripts/make-ggml-block-vectors.cpp quantizes three fixed-seed rows of 256 floats per
# type with ggml_quantize_chunk and dequantizes them with the type's to_float; the JSON holds the
# bytes and the dequantized floats' bit patterns, so pagedllm's decoders are tested bit for bit
# against llama.cpp's. The output is committed because CI has no llama.cpp: rerun this only to
# refresh the vectors (for example after a llama.cpp update or when adding a type).
#
# Usage: scripts/make-ggml-block-vectors.sh
#   LLAMA_CPP_SRC  llama.cpp checkout (default /tmp/peers/llama.cpp); its ggml/include is used
#   LLAMA_CPP_LIB  folder with its built libggml-base.so (default $LLAMA_CPP_SRC/build-avxvnni/bin)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LLAMA_CPP_SRC=${LLAMA_CPP_SRC:-/tmp/peers/llama.cpp}
LLAMA_CPP_LIB=${LLAMA_CPP_LIB:-$LLAMA_CPP_SRC/build-avxvnni/bin}
[ -f "$LLAMA_CPP_SRC/ggml/include/ggml.h" ] || { echo "no ggml.h under $LLAMA_CPP_SRC/ggml/include" >&2; exit 1; }
[ -e "$LLAMA_CPP_LIB/libggml-base.so" ] || { echo "no libggml-base.so in $LLAMA_CPP_LIB" >&2; exit 1; }
LLAMA_CPP_LIB=$(cd "$LLAMA_CPP_LIB" && pwd)
commit=$(git -C "$LLAMA_CPP_SRC" rev-parse --short=9 HEAD)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
g++ -std=c++20 -O1 -Wall -Wextra -I"$LLAMA_CPP_SRC/ggml/include" \
  "$repo/scripts/make-ggml-block-vectors.cpp" -o "$tmp/make-ggml-block-vectors" \
  -L"$LLAMA_CPP_LIB" -Wl,-rpath,"$LLAMA_CPP_LIB" -lggml-base

out=$repo/tests/format/data/ggml_block_vectors.json
mkdir -p "$(dirname "$out")"
"$tmp/make-ggml-block-vectors" "$commit" >"$tmp/out.json"
mv "$tmp/out.json" "$out"
echo "wrote $out (llama.cpp $commit)" >&2
