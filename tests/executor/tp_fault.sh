#!/usr/bin/env bash
# One fault of a tensor-parallel server (mpirun -np 2 pagedllm serve): MODE kill sends SIGKILL to
# rank 1 while a request streams, MODE stop freezes it (SIGSTOP, a hung rank), MODE term sends
# SIGTERM to rank 0 (a drain, then every rank stops). Prints what it
# saw, one "key: value" a line, for mpi_executor_test.cpp to check; exits 0 once the job ended.
# usage: tp_fault.sh BINARY MODEL MODE SCRATCH_DIR [MPIRUN_FLAG...]
# Env: NP (2) ranks; FAULT_RANK (1), the rank that kill and stop hit.
set -u
np=${NP:-2} fault_rank=${FAULT_RANK:-1}
binary=$1 model=$2 mode=$3 dir=$4
shift 4
mkdir -p "$dir"
mpirun --allow-run-as-root --oversubscribe "$@" -np "$np" "$binary" serve --model "$model" --port 0 \
  --tensor-parallel-size "$np" --tensor-parallel-timeout 3 --threads 1 --log-stats-interval 0 \
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
rank0="" faulty=""
for pid in $(pgrep -P $job); do
  env=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null)
  if grep -qx OMPI_COMM_WORLD_RANK=0 <<<"$env"; then rank0=$pid; fi
  if grep -qx "OMPI_COMM_WORLD_RANK=$fault_rank" <<<"$env"; then faulty=$pid; fi
done
if [ -z "$faulty" ]; then echo "rank $fault_rank: not found"; kill -9 $job; exit 1; fi
# Long enough to be mid-stream at the fault, and, for a drain (term), still streaming when the
# request after the signal arrives.
body='{"prompt": "Once upon a time", "max_tokens": 2000, "ignore_eos": true, "stream": true}'
curl -s -N --max-time 60 "http://127.0.0.1:$port/v1/completions" \
  -H 'Content-Type: application/json' -d "$body" >"$dir/stream" 2>/dev/null &
client=$!
sleep 0.2
start=$(date +%s)
case $mode in
  kill) kill -9 "$faulty" ;;
  stop) kill -STOP "$faulty" ;;
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
if [ $ended = no ]; then kill -9 $job; kill -CONT "$faulty" 2>/dev/null; kill -9 "$faulty" 2>/dev/null; fi
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
