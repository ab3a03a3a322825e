#!/usr/bin/env python3
"""Fails when a source file includes a header from a higher layer.

Layers, lowest first (docs/ARCHITECTURE.md explains each). A file may include headers of its own
directory and of lower layers only; directories that share a layer stay independent of each
other. A directory missing from the table is an error, so a new one must be placed in it.

usage: check-layers.py SRC_DIR [PUBLIC_INCLUDE_DIR]
"""
import pathlib
import re
import sys

LAYERS = [
    ["util", "pagedllm"],                       # helpers; the public API types (include/pagedllm)
    ["format", "distributed"],                  # file formats, tensors, element conversions;
                                                # the MPI communicator of tensor parallelism
    ["kernels", "tokenizer", "chat"],           # compute, text, templates
    ["loader", "core", "sampling", "multimodal", "structured"],  # model assembly/export;
                                                # scheduler and KV manager; token choice (on the
                                                # kernels' row passes); image decoding,
                                                # preprocessing, M-RoPE; grammars and token masks
    ["model"],                                  # forward contract, models, model factory
    ["spec_decode"],                            # draft-token proposers, draft lengths
    ["worker"],                                 # persistent batch, prepare_inputs, sampling
    ["executor"],                               # where the runner runs
    ["engine"],                                 # engine core, the public Engine, traces
    ["server"],                                 # the OpenAI-compatible HTTP server
    ["cli"],                                    # the pagedllm command
]
RANK = {d: i for i, layer in enumerate(LAYERS) for d in layer}
INCLUDE = re.compile(r'^\s*#\s*include\s+"(([^"/]+)/[^"]+)"', re.M)


def check(root: pathlib.Path, layer_of_file) -> list[str]:
    problems = []
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".h", ".cpp") or not path.is_file():
            continue
        own = layer_of_file(path)
        if own not in RANK:
            problems.append(f"{path}: directory '{own}' is in no layer (scripts/check-layers.py)")
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for line_no, m in ((text.count("\n", 0, m.start()) + 1, m) for m in INCLUDE.finditer(text)):
            header, target = m.group(1), m.group(2)
            if target == own:
                continue
            if target not in RANK:
                problems.append(f"{path}:{line_no}: includes from '{target}', which is in no layer")
            elif RANK[target] >= RANK[own]:
                how = "a higher" if RANK[target] > RANK[own] else "the same"
                problems.append(f"{path}:{line_no}: '{own}' includes {header} from {how} layer")
    return problems


def main() -> int:
    if len(sys.argv) not in (2, 3):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    src = pathlib.Path(sys.argv[1])
    problems = check(src, lambda p: p.relative_to(src).parts[0] if len(p.relative_to(src).parts) > 1
                     else "")
    if len(sys.argv) == 3:
        problems += check(pathlib.Path(sys.argv[2]), lambda p: "pagedllm")
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"{len(problems)} include(s) break the layering", file=sys.stderr)
        return 1
    print("layering holds: no include from a lower layer to a higher one")
    return 0


if __name__ == "__main__":
    sys.exit(main())
