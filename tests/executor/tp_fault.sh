#!/usr/bin/env bash
# One fault of a tensor-parallel server (mpirun -np 2 pagedllm serve): MODE kill sends SIGKILL to
# rank 1 while a request streams, MODE stop freezes it (SIGSTOP, a hung rank), MODE term sends
# SIGTERM to rank 0 (a drain, then every rank stops). Prints what it
# saw, one "key: value" a line, for mpi_executor_test.cpp to check; exits 0 once the job ended.
# usage: tp_fault.sh BINARY MODEL MODE SCRATCH_DIR [MPIRUN_FLAG...]
set -u
binary=$1 model=$2 mode=$3 dir=$4
shift 4
mkdir -p "$dir"
mpirun --allow-run-as-root --oversubscribe "$@" -np 2 "$binary" serve --model "$model" --port 0 \
  --tensor-parallel-size 2 --tensor-parallel-timeout 3 --threads 1 --log-stats-interval 0 \
  >"$dir/out" 2>"$dir/err" </dev/null &
job=$!
port=""
for _ in $(seq 600); do
  port=$(sed -n 's#.*serving .* on http://127.0.0.1:\([0-9]*\).*#\1#p' "$dir/out" | head -1)
  [ -n "$port" ] && break
  kill -0 $job 2>/dev/null || break
  sleep 0.1
done
if [ -z "$port" ]; then echo "started: no"; cat "$dir/err"; kill -9 $job; exit 1; fi
echo "started: yes"
rank0="" rank1=""
for pid in $(pgrep -P $job); do
  env=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null)
  if grep -qx OMPI_COMM_WORLD_RANK=0 <<<"$env"; then rank0=$pid; fi
  if grep -qx OMPI_COMM_WORLD_RANK=1 <<<"$env"; then rank1=$pid; fi
done
if [ -z "$rank1" ]; then echo "rank1: not found"; kill -9 $job; exit 1; fi
# Long enough to be mid-stream at the fault, and, for a drain (term), still streaming when the
# request after the signal arrives.
body='{"prompt": "Once upon a time", "max_tokens": 2000, "ignore_eos": true, "stream": true}'
curl -s -N --max-time 60 "http://127.0.0.1:$port/v1/completions" \
  -H 'Content-Type: application/json' -d "$body" >"$dir/stream" 2>/dev/null &
client=$!
sleep 0.2
start=$(date +%s)
case $mode in
  kill) kill -9 "$rank1" ;;
  stop) kill -STOP "$rank1" ;;
  term) kill -TERM "$rank0" ;;
esac
# A request sent after the fault (or the signal) must not be answered with tokens.
sleep 0.2
curl -s --max-time 60 -o "$dir/after" -w '%{http_code}' "http://127.0.0.1:$port/v1/completions" \
  -H 'Content-Type: application/json' -d '{"prompt": "Hello", "max_tokens": 8}' \
  >"$dir/after_code" 2>/dev/null
ended=no
for _ in $(seq 600); do
  if ! kill -0 $job 2>/dev/null; then ended=yes; break; fi
  sleep 0.1
done
if [ $ended = no ]; then kill -9 $job; kill -CONT "$rank1" 2>/dev/null; kill -9 "$rank1" 2>/dev/null; fi
wait $job
code=$?
wait $client
echo "ended: $ended"
echo "seconds: $(($(date +%s) - start))"
echo "exit: $code"
echo "after_code: $(cat "$dir/after_code")"
echo "stream_done: $(grep -c '\[DONE\]' "$dir/stream")"
echo "stream_tokens: $(grep -c '"text"' "$dir/stream")"
echo "stream_error: $(grep -o '"code": *503' "$dir/stream" | head -1)"
echo "--- stderr"
cat "$dir/err"
