#!/bin/bash
# Prints the shared directory (models, tokenizer and chat-template vectors): $PAGEDLLM_SHARED_DIR
# if set; else ../shared beside this checkout; else, for a clone of a local checkout (git clone
# /work/main /tmp/x), the shared directory beside the checkout it was cloned from; else
# ../shared, so that what is missing is named in the errors.
cd "$(dirname "$0")/.."
if [ -n "${PAGEDLLM_SHARED_DIR:-}" ]; then
  echo "$PAGEDLLM_SHARED_DIR"
  exit 0
fi
beside=$(cd .. && pwd)/shared
if [ ! -d "$beside" ]; then
  origin=$(git config --get remote.origin.url 2>/dev/null || true)
  if [ -n "$origin" ] && [ -d "$origin/../shared" ]; then
    echo "$(cd "$origin/../shared" && pwd)"
    exit 0
  fi
fi
echo "$beside"
