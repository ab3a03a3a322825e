#!/usr/bin/env bash
# Tensor parallelism across a link: `bench latency` of TP 2 with the two ranks in two network
# namespaces (MPI over TCP, tests/executor/tp_netns.sh), for each link in LINKS, next to TP 2 over
# shared memory and one process of 2 threads, back to back. A link is RATE[/DELAY]: a rate alone
# is a token bucket (tc tbf) on a veth pair; a delay (each way) is tc netem, or, where the kernel
# has no sch_netem, build/tests/link_emulator (delay and rate in user space between two TUN
# devices); "unshaped" is the bare veth pair.
# usage: scripts/bench-tp-link.sh MODEL
# Prints pp and tg (tokens/s) and, for TP, the share of tg time rank 0 waited in collectives.
# Env: LINKS ("unshaped 10gbit 1gbit 10gbit/0.1ms 1gbit/0.5ms"), REPS (3), PP (64), TG (32).
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
emulator=$(realpath ./build/tests/link_emulator 2>/dev/null || true)
for link in ${LINKS:-unshaped 10gbit 1gbit 10gbit/0.1ms 1gbit/0.5ms}; do
  rate=${link%%/*} delay=
  [[ $link == */* ]] && delay=${link#*/}
  [ "$rate" = unshaped ] && rate=
  name="${rate:-unshaped}${delay:+, $delay each way}"
  out=$(LINK_RATE=$rate LINK_DELAY=$delay LINK_EMULATOR=$emulator bash tests/executor/tp_netns.sh \
    "/tmp/pagedllm-tp-link" "$bin" "${args[@]}" --threads 1 2>/tmp/pagedllm-tp-link.err) ||
    { echo "== TP 2 over TCP, $name: failed: $(tail -1 /tmp/pagedllm-tp-link.err)"; continue; }
  grep -q "link_emulator carries" /tmp/pagedllm-tp-link.err && name+=" (link_emulator)"
  echo "== TP 2 over TCP, $name: $(summary <<<"$out")"
done
