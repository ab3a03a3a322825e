#!/usr/bin/python3
"""Reads pythonic tool calls with Python's own parser, the reference for pagedllm's pythonic
tool-call parser: the output must be a list of calls with keyword arguments whose values are
literals (ast.literal_eval), and the arguments become JSON as json.dumps writes them.

usage: /usr/bin/python3 pythonic_reference.py CASES.json
CASES.json is a list of texts. Prints a JSON list with, per text, {"calls": [{"name",
"arguments"}]} or {"error": ...}.
"""
import ast
import json
import sys


def calls(text):
    body = ast.parse(text.strip(), mode="eval").body
    if not isinstance(body, ast.List):
        raise ValueError("not a list")
    out = []
    for call in body.elts:
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name) or call.args:
            raise ValueError("not a call with keyword arguments")
        arguments = {}
        for keyword in call.keywords:
            if keyword.arg is None:
                raise ValueError("**kwargs")
            arguments[keyword.arg] = ast.literal_eval(keyword.value)
        out.append({"name": call.func.id,
                    "arguments": json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))})
    return out


def main():
    results = []
    for text in json.load(open(sys.argv[1], encoding="utf-8")):
        try:
            results.append({"calls": calls(text)})
        except (SyntaxError, ValueError, TypeError) as e:
            results.append({"error": str(e)})
    json.dump(results, sys.stdout, ensure_ascii=False)


main()
