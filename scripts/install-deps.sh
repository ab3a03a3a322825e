#!/usr/bin/env bash
# Installs pagedllm's build and test dependencies from Debian's packages.
# Idempotent: packages already present are skipped, and apt-get runs only when
# something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libxxhash-dev libcli11-dev libpcre2-dev libutf8proc-dev libcpp-httplib-dev
  libboost-dev
  libdnnl-dev ocl-icd-opencl-dev
  libpng-dev libjpeg62-turbo-dev libwebp-dev libgif-dev libcurl4-openssl-dev
  openmpi-bin libopenmpi-dev
  libomp-dev  # LLVM's OpenMP runtime, which every build links (CMakeLists.txt says why)
  clang libclang-rt-14-dev clang-format
  python3 python3-numpy python3-jinja2 python3-sentencepiece python3-pil
)
# Node and npm bundle the chat page (webui/) at build time, and run reference tokenizers, the
# openai client and the browser tests in tests. A machine that already has npm (e.g. from
# NodeSource) keeps it: Debian's npm would conflict with it.
if ! command -v npm >/dev/null 2>&1; then packages+=(nodejs npm); fi
# Debian's Chromium runs the chat page's browser tests (headless, driven by playwright-core).
packages+=(chromium)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
