#!/usr/bin/env bash
# cmake --install, then build and run examples/embed against the installed package.
set -euo pipefail
build=$1 source=$2 shared=${PAGEDLLM_SHARED_DIR:-$3}  # the env var wins, as in the C++ tests
prefix=$build/test-install
rm -rf "$prefix" "$build/embed-build"
cmake --install "$build" --prefix "$prefix" > /dev/null
cmake -S "$source/examples/embed" -B "$build/embed-build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$build/embed-build" > /dev/null
out=$("$build/embed-build/embed" "$shared/models/stories260K/stories260K.gguf")
echo "$out"
[[ "$out" == "Once upon a time, there was a little girl"* ]]
