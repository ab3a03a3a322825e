#!/usr/bin/python3
"""Renders chat templates with Python's Jinja2 (Debian python3-jinja2), the reference for
pagedllm's tests, with the settings Hugging Face uses (and ../shared/vectors/chat-templates).

usage: /usr/bin/python3 render_reference.py CASES.json TEMPLATE.jinja...
CASES.json is a list of {"messages": [...], "tools": [...] or null, "add_generation_prompt": bool}.
Prints one JSON object: {template path: [{"text": ...} or {"error": ...} per case]}.
"""
import datetime
import json
import sys

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(msg):
    raise jinja2.exceptions.TemplateError(msg)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                       extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = lambda x, indent=None, ensure_ascii=False, sort_keys=False: json.dumps(
        x, indent=indent, ensure_ascii=ensure_ascii, sort_keys=sort_keys)
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.datetime(2026, 1, 2).strftime(fmt)
    return env


def main():
    cases = json.load(open(sys.argv[1], encoding="utf-8"))
    env = environment()
    results = {}
    for path in sys.argv[2:]:
        template = env.from_string(open(path, encoding="utf-8").read())
        rendered = []
        for case in cases:
            try:
                rendered.append({"text": template.render(
                    messages=case["messages"], tools=case.get("tools"),
                    add_generation_prompt=case["add_generation_prompt"],
                    bos_token="<s>", eos_token="</s>")})
            except Exception as e:  # the reference raised: pagedllm must raise too
                rendered.append({"error": f"{type(e).__name__}: {e}"})
        results[path] = rendered
    json.dump(results, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
