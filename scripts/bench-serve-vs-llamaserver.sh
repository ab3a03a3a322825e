#!/bin/bash
# Serving side by side (issue 30, "Shapes: ... serving"): `pagedllm serve` against llama.cpp's
# `llama-server` (and ik_llama.cpp's, when given) on the same GGUF file, each driven by the same
# client, `pagedllm bench serve` (random token prompts of IN tokens, max_tokens OUT with
# ignore_eos, streaming, all requests sent at once under a limit of CLIENTS in flight).
# Per model, client count and round the servers run one after the other (the order rotates round
# by round, so that a noisy minute hits each); every server is started afresh, gets a short
# untimed warm-up, and is stopped after its run. Prints one Markdown table of the medians over
# the rounds: output tokens/s, TTFT and TPOT p50/p99, failed requests, and pagedllm's output
# tokens/s over the faster peer's.
#
# Usage: LLAMA_SERVER=/path/llama.cpp/build/bin/llama-server scripts/bench-serve-vs-llamaserver.sh
# Environment (defaults in brackets):
#   LLAMA_SERVER  llama.cpp's llama-server [/tmp/peers/llama.cpp/build/bin/llama-server]
#   IK_SERVER     ik_llama.cpp's llama-server [""]: empty or missing: that column is skipped
#   IK_SERVER_ARGS ["-fa on -rtr"]  extra flags for ik_llama.cpp's server
#   LLAMA_SERVER_ARGS [""]          extra flags for llama.cpp's server
#   PAGEDLLM_SERVE_ARGS [""]        extra flags for pagedllm serve
#   PAGEDLLM [./build/pagedllm]  PAGEDLLM_ISA passed through (avx2, avx512, ...)
#   MODELS ["llama-110m-q8_0"]      <preset>-<f32|...|q5_k_m|q6_k>, made as in
#                                   scripts/bench-vs-llamacpp.sh (QUANTIZE: llama.cpp's
#                                   llama-quantize beside LLAMA_SERVER)
#   MODEL_DIR [/tmp/bench-vs-llamacpp/models]  RESULTS [/tmp/bench-serve-vs-llamaserver]
#   CLIENTS ["16 64"]  IN [256]  OUT [128]  PROMPTS_PER_CLIENT [4]  ROUNDS [3]  THREADS [2]
#   PORT [18300]  the first server's port is PORT + 1, the next one's PORT + 2, ...
# llama-server gets -np CLIENTS (one slot per client, continuous batching is its default) and a
# context of CLIENTS x SLOT_CTX tokens (IN + OUT + 64 rounded up to a multiple of 256), so that
# every slot holds a whole request; pagedllm
# serve runs with its defaults (its scheduler takes as many sequences as its KV pool holds).
# The client itself runs on the same CPUs as the server; it costs both servers alike.
# Smoke test: ROUNDS=1 CLIENTS=4 IN=32 OUT=8 PROMPTS_PER_CLIENT=1 MODELS=llama-110m-q8_0
set -euo pipefail
cd "$(dirname "$0")/.."

LLAMA_SERVER=${LLAMA_SERVER-/tmp/peers/llama.cpp/build/bin/llama-server}
IK_SERVER=${IK_SERVER-}
IK_SERVER_ARGS=${IK_SERVER_ARGS-"-fa on -rtr"}
LLAMA_SERVER_ARGS=${LLAMA_SERVER_ARGS:-}
PAGEDLLM_SERVE_ARGS=${PAGEDLLM_SERVE_ARGS:-}
PAGEDLLM=${PAGEDLLM:-./build/pagedllm}
MODELS=${MODELS:-llama-110m-q8_0}
RESULTS=${RESULTS:-/tmp/bench-serve-vs-llamaserver}
MODEL_DIR=${MODEL_DIR:-/tmp/bench-vs-llamacpp/models}
CLIENTS=${CLIENTS:-"16 64"} IN=${IN:-256} OUT=${OUT:-128}
PROMPTS_PER_CLIENT=${PROMPTS_PER_CLIENT:-4} ROUNDS=${ROUNDS:-3} THREADS=${THREADS:-2}
PORT=${PORT:-18300}
# llama-server's context per slot: a whole request and some room, in the multiples of 256 that
# llama.cpp rounds its context to.
SLOT_CTX=$(((IN + OUT + 64 + 255) / 256 * 256))

# shellcheck source=scripts/lib/gguf-models.sh
source scripts/lib/gguf-models.sh
start_run
LOG_DIR=$raw

engines=(pagedllm)
declare -A server=() commit=() notes=()
peer() {  # NAME BINARY VARIABLE
  if [ -n "$2" ] && [ -x "$2" ]; then
    engines+=("$1")
    server[$1]=$(realpath "$2")
    commit[$1]=$(git -C "$(dirname "${server[$1]}")" rev-parse --short=9 HEAD 2>/dev/null || echo unknown)
  else
    notes[$1]="$1 skipped: no llama-server at '$2' ($3)"
    echo "${notes[$1]}" >&2
  fi
}
peer llama.cpp "$LLAMA_SERVER" LLAMA_SERVER
peer ik_llama.cpp "$IK_SERVER" IK_SERVER
commit[pagedllm]=$(git rev-parse --short HEAD)

QUANTIZE=${QUANTIZE:-}
if [ -z "$QUANTIZE" ] && [ -n "$LLAMA_SERVER" ] && [ -x "$(dirname "$LLAMA_SERVER")/llama-quantize" ]; then
  QUANTIZE=$(dirname "$LLAMA_SERVER")/llama-quantize
fi

vocab_size() {  # PRESET: random prompt ids are drawn below it
  case $1 in
    llama-1b) echo 128256 ;;
    *) echo 32000 ;;
  esac
}

# Each server start takes the next port: a server that was just stopped may still hold its
# address (ik_llama.cpp's does not set SO_REUSEADDR and fails to bind).
server_pid=
port=$PORT
stop_server() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=
  fi
}
trap stop_server EXIT

start_server() {  # ENGINE FILE CLIENTS LOG: starts it on the next port and waits until it answers
  local e=$1 f=$2 c=$3 log=$4 i
  port=$((port + 1))
  case $e in
    pagedllm)
      # shellcheck disable=SC2086
      "$PAGEDLLM" serve --model "$f" --port "$port" --threads "$THREADS" --log-level warning \
        $PAGEDLLM_SERVE_ARGS >"$log" 2>&1 &
      ;;
    *)
      local extra=$LLAMA_SERVER_ARGS
      [ "$e" = ik_llama.cpp ] && extra=$IK_SERVER_ARGS
      # From the run's raw/ folder: ik_llama.cpp's server writes a llama.log into its working
      # directory. (The subshell execs the server, so $! is the server's pid.)
      # shellcheck disable=SC2086
      (cd "$raw" && exec "${server[$e]}" -m "$f" --host 127.0.0.1 --port "$port" -t "$THREADS" \
        -tb "$THREADS" -np "$c" -c $((c * SLOT_CTX)) $extra) >"$log" 2>&1 &
      ;;
  esac
  server_pid=$!
  for i in $(seq 1 600); do
    if curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 &&
      curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1; then
      return 0
    fi
    kill -0 "$server_pid" 2>/dev/null || { echo "$0: $e exited; see $log" >&2; server_pid=; return 1; }
    sleep 0.5
  done
  echo "$0: $e did not answer within 300 s; see $log" >&2
  stop_server
  return 1
}

record() {  # ENGINE MODEL CLIENTS ROUND RESULT_JSON (missing: that run failed)
  /usr/bin/python3 - "$@" >>"$out" <<'PY'
import json, sys
engine, model, clients, rnd, path = sys.argv[1:]
row = {"engine": engine, "model": model, "clients": int(clients), "round": int(rnd), "raw": path}
try:
    r = json.load(open(path))
    row.update(output_tokens_per_s=r["output_throughput"], ttft_p50=r["ttft_ms"]["median"],
               ttft_p99=r["ttft_ms"]["p99"], tpot_p50=r["tpot_ms"]["median"],
               tpot_p99=r["tpot_ms"]["p99"], completed=r["completed"], failed=r["failed"])
except (OSError, ValueError, KeyError):
    row["failed_run"] = True
print(json.dumps(row))
PY
}

run_engine() {  # ENGINE MODEL FILE CLIENTS ROUND
  local e=$1 m=$2 f=$3 c=$4 r=$5 base bench_args
  base=$raw/$m-c$c-$e-r$r
  bench_args=(--random-vocab-size "$(vocab_size "${m%-*}")"
    --ignore-eos --max-concurrency "$c")
  if start_server "$e" "$f" "$c" "$base-server.log"; then
    bench_args+=(--base-url "http://127.0.0.1:$port")
    "$PAGEDLLM" bench serve "${bench_args[@]}" --num-prompts "$c" --random-input-len 16 \
      --random-output-len 4 --seed 7 >"$base-warmup.log" 2>&1 || true
    "$PAGEDLLM" bench serve "${bench_args[@]}" --num-prompts $((c * PROMPTS_PER_CLIENT)) \
      --random-input-len "$IN" --random-output-len "$OUT" --seed "$r" \
      --save-result "$base.json" >"$base.log" 2>&1 || true
    stop_server
  fi
  record "$e" "$m" "$c" "$r" "$base.json"
}

n=${#engines[@]}
for m in $MODELS; do
  f=$(gguf_model_file "$m")
  for c in $CLIENTS; do
    for r in $(seq 1 "$ROUNDS"); do
      for k in $(seq 0 $((n - 1))); do
        e=${engines[$(((k + r - 1) % n))]}
        echo "[$(date -u +%H:%M:%S)] $m, $c clients, round $r/$ROUNDS: $e" >&2
        run_engine "$e" "$m" "$f" "$c" "$r"
      done
    done
  done
done

{
  echo "Machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs"
  echo "Date: $(date -u '+%Y-%m-%d %H:%M UTC'); threads: $THREADS; rounds: $ROUNDS (medians)"
  echo "Requests: $PROMPTS_PER_CLIENT x CLIENTS, $IN random prompt tokens, $OUT output tokens (ignore_eos), streamed"
  echo "pagedllm $(git rev-parse --short HEAD) (PAGEDLLM_ISA=${PAGEDLLM_ISA:-unset}; serve flags: ${PAGEDLLM_SERVE_ARGS:-none})"
  for e in llama.cpp ik_llama.cpp; do
    if [ -n "${server[$e]:-}" ]; then
      a=$LLAMA_SERVER_ARGS
      [ "$e" = ik_llama.cpp ] && a=$IK_SERVER_ARGS
      echo "$e ${commit[$e]} (${server[$e]} -np CLIENTS -c CLIENTS*$SLOT_CTX; flags: ${a:-none})"
    else
      echo "${notes[$e]}"
    fi
  done
  echo
  /usr/bin/python3 - "$out" <<'PY'
import json, statistics, sys
rows, order = {}, []
for line in open(sys.argv[1]):
    x = json.loads(line)
    key = (x["model"], x["clients"])
    if key not in order:
        order.append(key)
    rows.setdefault(key, {}).setdefault(x["engine"], []).append(x)
peers = ["llama.cpp", "ik_llama.cpp"]
print("| model | clients | engine | output tok/s | TTFT p50 / p99 ms | TPOT p50 / p99 ms | failed | pagedllm / this |")
print("|---|---|---|---|---|---|---|---|")
for key in order:
    med = {}
    for e, runs in rows[key].items():
        ok = [x for x in runs if not x.get("failed_run")]
        if ok:
            med[e] = {k: statistics.median(x[k] for x in ok) for k in
                      ("output_tokens_per_s", "ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99")}
            med[e]["failed"] = sum(x["failed"] for x in ok) + (len(runs) - len(ok)) * 10**6
    for e in ["pagedllm"] + peers:
        if e not in rows[key]:
            continue
        if e not in med:
            print(f"| {key[0]} | {key[1]} | {e} | every run failed | | | | |")
            continue
        v = med[e]
        ratio = (f"{med['pagedllm']['output_tokens_per_s'] / v['output_tokens_per_s']:.2f}x"
                 if e != "pagedllm" and "pagedllm" in med and v["output_tokens_per_s"] else "")
        failed = v["failed"] if v["failed"] < 10**6 else "runs failed"
        print(f"| {key[0]} | {key[1]} | {e} | {v['output_tokens_per_s']:.1f} | "
              f"{v['ttft_p50']:.0f} / {v['ttft_p99']:.0f} | {v['tpot_p50']:.1f} / {v['tpot_p99']:.1f} | "
              f"{failed} | {ratio} |")
PY
  echo
  echo "Raw results: $out"
} | tee "$run_dir/table.md"
