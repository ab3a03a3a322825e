#!/usr/bin/env bash
# The layering check itself: it passes on a tree that respects the layers and fails, naming the
# file and the header, on an include upwards, one across a layer, and an unplaced directory.
# usage: check_layers_test.sh SOURCE_DIR
set -euo pipefail
check=$1/scripts/check-layers.py
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/src/kernels" "$tree/src/engine" "$tree/src/tokenizer"
echo '#include "util/log.h"' > "$tree/src/kernels/ok.h"
echo '#include "kernels/ok.h"' > "$tree/src/engine/uses_lower.cpp"
python3 "$check" "$tree/src" >/dev/null || { echo "FAIL: a valid tree was refused"; exit 1; }

expect_refusal() {  # FILE CONTENT WHAT
  printf '%s\n' "$2" > "$tree/src/$1"
  if out=$(python3 "$check" "$tree/src" 2>&1); then
    echo "FAIL: $3 was accepted"; exit 1
  fi
  grep -qF "$1" <<<"$out" || { echo "FAIL: $3: message does not name $1: $out"; exit 1; }
  rm "$tree/src/$1"
}
expect_refusal kernels/bad.h '#include "engine/engine_core.h"' "an include upwards"
expect_refusal tokenizer/bad.cpp '#include "kernels/ok.h"' "an include across one layer"
mkdir -p "$tree/src/mystery"
expect_refusal mystery/x.h '#include "util/log.h"' "a directory in no layer"
echo "check-layers.py: refusals and acceptance as expected"
