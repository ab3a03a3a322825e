// A varied text corpus for comparing tokenizers with their references: generated mixes of
// English, code, CJK, emoji, Arabic, whitespace runs, digits, special-token text and odd Unicode,
// plus real text that Debian ships (/usr/share/doc/*/copyright). Deterministic for a seed.
#pragma once

#include <string>
#include <vector>

namespace pagedllm::test {

std::vector<std::string> tokenizer_corpus(size_t generated, size_t from_docs, unsigned seed = 7);

// Writes {"text": ...} lines.
void write_jsonl(const std::string& path, const std::vector<std::string>& texts);

// Runs a shell command and returns its standard output; fails the test on a non-zero exit.
std::string run_command(const std::string& command);

}  // namespace pagedllm::test
