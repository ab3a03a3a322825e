#!/bin/bash
# Packs what scripts/bench-vs-llamacpp.sh needs into one folder, to run it on a machine that has
# none of the build's libraries and cannot install them (a lent machine with another distribution
# and no network): pagedllm and pagedllm_tests, the peers' llama-bench, llama-batched-bench and
# llama-quantize, every shared library they load (from ldd, the loader included, xz-compressed),
# and wrapper scripts that start each binary through the carried loader
# (`ld-linux-x86-64.so.2 --library-path`), so that the other machine's own libraries are never
# mixed in. The models are made there by the script, as here.
#
# usage: scripts/bundle-for-remote.sh OUT_DIR
#   then, on the other machine, from a copy of this repository with OUT_DIR beside it:
#   bash OUT_DIR/run.sh [bench-vs-llamacpp.sh's environment, e.g. MODELS=... ROUNDS=...]
#   (BENCH_SCRIPT=bench-vs-llamacpp-all.sh: every table, as scripts/bench-vs-llamacpp-all.sh)
# Env: LLAMA_CPP_DIR, IK_LLAMA_DIR (as bench-vs-llamacpp.sh; folders missing are left out),
#      PAGEDLLM [./build/pagedllm], TESTS [./build/tests/pagedllm_tests].
# The extracted files go to /tmp/pagedllm-remote there. The binaries must suit that CPU: the
# peers' native builds use this CPU's instructions (build-avx2 ones run on any AVX2 machine);
# pagedllm picks its kernels at run time.
set -euo pipefail
out=${1:?usage: bundle-for-remote.sh OUT_DIR}
pagedllm=${PAGEDLLM:-./build/pagedllm}
tests=${TESTS:-./build/tests/pagedllm_tests}
llama_dir=${LLAMA_CPP_DIR:-/tmp/peers/llama.cpp/build/bin}
ik_dir=${IK_LLAMA_DIR:-/tmp/peers/ik_llama.cpp/build/bin}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$out" "$stage/bin" "$stage/libs"

# A binary and the libraries it loads (the folders of its own libraries first, as its RUNPATH).
add_binary() {  # SOURCE NAME_IN_BUNDLE
  cp -L "$1" "$stage/bin/$2"
  ldd "$1" | awk '/=> \// { print $3 } /^\t\/.*ld-linux/ { print $1 }' |
    while read -r lib; do cp -Ln "$lib" "$stage/libs/" 2>/dev/null || true; done
}
add_binary "$pagedllm" pagedllm
[ -x "$tests" ] && add_binary "$tests" pagedllm_tests
peers=()
for peer in "llama:$llama_dir" "ik:$ik_dir"; do
  name=${peer%%:*} dir=${peer#*:}
  [ -x "$dir/llama-bench" ] && [ -x "$dir/llama-batched-bench" ] || continue
  peers+=("$name")
  for tool in llama-bench llama-batched-bench llama-quantize; do
    [ -x "$dir/$tool" ] && add_binary "$dir/$tool" "$name-$tool"
  done
done
[ -e "$stage/libs/ld-linux-x86-64.so.2" ] || { echo "no loader found by ldd" >&2; exit 1; }
tar -C "$stage" -cf - bin libs | xz -T0 -6 >"$out/bundle.tar.xz"

# One wrapper per tool, in the folder layout bench-vs-llamacpp.sh expects of a peer.
mkdir -p "$out/wrappers"
wrap() {  # BUNDLE_NAME WRAPPER_PATH
  mkdir -p "$(dirname "$2")"
  printf '#!/bin/bash\nexec /tmp/pagedllm-remote/libs/ld-linux-x86-64.so.2 --library-path /tmp/pagedllm-remote/libs /tmp/pagedllm-remote/bin/%s "$@"\n' \
    "$1" >"$2"
  chmod +x "$2"
}
wrap pagedllm "$out/wrappers/pagedllm"
[ -x "$tests" ] && wrap pagedllm_tests "$out/wrappers/pagedllm_tests"
for name in "${peers[@]}"; do
  for tool in llama-bench llama-batched-bench llama-quantize; do
    [ -e "$stage/bin/$name-$tool" ] && wrap "$name-$tool" "$out/wrappers/$name/$tool"
  done
done

cat >"$out/run.sh" <<'RUN'
#!/bin/bash
# Unpacks the bundle to /tmp/pagedllm-remote and runs scripts/bench-vs-llamacpp.sh with it
# (from the repository's root; BENCH_SCRIPT=bench-vs-llamacpp-all.sh runs every table of the
# host instead); the environment passes through.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/pagedllm-remote
tar -C /tmp/pagedllm-remote -xJf "$here/bundle.tar.xz"
export PAGEDLLM=$here/wrappers/pagedllm
export LLAMA_CPP_DIR="" IK_LLAMA_DIR=""  # a peer left out stays out
[ -d "$here/wrappers/llama" ] && LLAMA_CPP_DIR=$here/wrappers/llama
[ -d "$here/wrappers/ik" ] && IK_LLAMA_DIR=$here/wrappers/ik
exec bash "scripts/${BENCH_SCRIPT:-bench-vs-llamacpp.sh}"
RUN
chmod +x "$out/run.sh"
echo "$out: $(du -sh "$out" | cut -f1) (peers: ${peers[*]:-none}); on the other machine:" \
  "PAGEDLLM_COMMIT=$(git rev-parse --short HEAD) bash $out/run.sh"
