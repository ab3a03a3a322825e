#!/usr/bin/python3
"""The Markdown table of scripts/bench-vs-llamacpp.sh from its results.jsonl.

One row per model and shape: each engine's median over the rounds, pagedllm's median over the
faster peer's median, and the median over the rounds of pagedllm's figure over the faster peer's
figure in the same round. On a host whose speed drifts from minute to minute (memory bandwidth
that moves between 35 and 70 GB/s, say), a round's engines meet the same minute while the
medians of the three engines may come from different ones, so the second ratio is the steadier
of the two where the rounds disagree.

usage: bench_vs_table.py RESULTS_JSONL
"""
import json
import statistics
import sys

PEERS = ["llama.cpp", "ik_llama.cpp"]


def load(path):
    """(rows, order, bandwidths): rows[(model, shape)][engine][round] = tokens/s or None."""
    rows, order, bandwidths = {}, [], []
    with open(path) as f:
        for line in f:
            x = json.loads(line)
            if x["shape"] == "read_gb_per_s":
                if x["value"] is not None:
                    bandwidths.append(x["value"])
                continue
            key = (x["model"], x["shape"])
            if key not in rows:
                order.append(key)
            rows.setdefault(key, {}).setdefault(x["engine"], {})[x["round"]] = x["tokens_per_s"]
    return rows, order, bandwidths


def median_of_round_ratios(by_engine):
    """Median over the rounds where pagedllm and a peer ran of pagedllm / the round's faster peer."""
    ratios = []
    for r, mine in by_engine.get("pagedllm", {}).items():
        peers = [by_engine[e][r] for e in PEERS if by_engine.get(e, {}).get(r)]
        if mine and peers:
            ratios.append(mine / max(peers))
    return statistics.median(ratios) if ratios else None


def table(rows, order):
    lines = [
        "| model | shape | pagedllm median | llama.cpp median | ik_llama.cpp median"
        " | pagedllm / faster peer | median of round ratios |",
        "|---|---|---|---|---|---|---|",
    ]
    for key in order:
        by_engine = rows[key]
        med = {}
        for e, runs in by_engine.items():
            ok = [t for t in runs.values() if t is not None]
            if ok:
                med[e] = statistics.median(ok)

        def cell(e):
            if e in med:
                failed = sum(t is None for t in by_engine[e].values())
                return f"{med[e]:.1f}" + (f" ({failed} failed)" if failed else "")
            return "failed" if e in by_engine else "skipped"

        best = max((med[e] for e in PEERS if e in med), default=None)
        ratio = f"{med['pagedllm'] / best:.2f}x" if best and "pagedllm" in med else "—"
        paired = median_of_round_ratios(by_engine)
        paired_cell = f"{paired:.2f}x" if paired is not None else "—"
        lines.append(f"| {key[0]} | {key[1]} | {cell('pagedllm')} | {cell('llama.cpp')}"
                     f" | {cell('ik_llama.cpp')} | {ratio} | {paired_cell} |")
    return lines


def main():
    rows, order, bandwidths = load(sys.argv[1])
    print("\n".join(table(rows, order)))
    if bandwidths:
        print("\npagedllm's bandwidth probe (streaming read after each tg run): "
              f"median {statistics.median(bandwidths):.1f} GB/s")


if __name__ == "__main__":
    main()
