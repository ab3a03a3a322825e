#!/usr/bin/python3
"""Reference ids from Google's SentencePiece (Debian python3-sentencepiece) for pagedllm's tests.

usage: /usr/bin/python3 sentencepiece_reference.py tokenizer.model INPUT.jsonl > OUTPUT.jsonl
Each input line is {"text": ...}; each output line is {"ids": [...]} without BOS/EOS.
"""
import json
import sys

import sentencepiece

processor = sentencepiece.SentencePieceProcessor(model_file=sys.argv[1])
with open(sys.argv[2], encoding="utf-8") as lines:
    for line in lines:
        text = json.loads(line)["text"]
        print(json.dumps({"ids": processor.encode(text)}))
