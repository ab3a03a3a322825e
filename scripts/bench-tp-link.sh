#!/usr/bin/env bash
# Tensor parallelism across a link: `bench latency` of TP 2 with the two ranks in two network
# namespaces joined by a veth pair (MPI over TCP, tests/executor/tp_netns.sh), the link unshaped
# and shaped to each rate in RATES with a token bucket (tc tbf), next to TP 2 over shared memory
# and one process of 2 threads, back to back. Link latency (tc netem) is added when DELAY is set
# and the kernel has sch_netem.
# usage: scripts/bench-tp-link.sh MODEL
# Prints pp and tg (tokens/s) and, for TP, the share of tg time rank 0 waited in collectives.
# Env: RATES ("10gbit 1gbit"), DELAY (unset), REPS (3), PP (64), TG (32).
set -euo pipefail
model=$1
bin=$(realpath ./build/pagedllm)
reps=${REPS:-3} pp=${PP:-64} tg=${TG:-32}
args=(bench latency --model "$model" -p "$pp" -n "$tg" -r "$reps" --max-model-len 1024 --json)
summary() {
  /usr/bin/python3 -c 'import json, sys
for line in sys.stdin:
    if not line.startswith("{"): continue
    j = json.loads(line)
    out = "pp %.1f tg %.2f" % (j["pp_tokens_per_s"], j["tg_tokens_per_s"])
    if "tg_collective_wait_share" in j:
        out += ", %.1f %% of tg waiting in collectives" % (100 * j["tg_collective_wait_share"])
    print(out)'
}
echo "== one process, --threads 2: $($bin "${args[@]}" --threads 2 2>/dev/null | summary)"
echo "== TP 2 over shared memory: $(mpirun --allow-run-as-root --oversubscribe --bind-to core -np 2 \
  "$bin" "${args[@]}" --threads 1 --tensor-parallel-size 2 2>/dev/null | summary)"
for rate in unshaped ${RATES:-10gbit 1gbit}; do
  shaped=$([ "$rate" = unshaped ] || echo "$rate")
  out=$(LINK_RATE=$shaped LINK_DELAY=${DELAY:-} bash tests/executor/tp_netns.sh \
    "/tmp/pagedllm-tp-link" "$bin" "${args[@]}" --threads 1 2>/tmp/pagedllm-tp-link.err) ||
    { echo "== TP 2 over TCP, $rate${DELAY:+, delay $DELAY}: failed: $(tail -1 /tmp/pagedllm-tp-link.err)"; continue; }
  echo "== TP 2 over TCP, $rate${DELAY:+, delay $DELAY}: $(summary <<<"$out")"
done
