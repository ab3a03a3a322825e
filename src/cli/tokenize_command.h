// `pagedllm tokenize` and `pagedllm detokenize`: the model's tokenizer from the command line.
#pragma once

#include <CLI/CLI.hpp>

namespace pagedllm::cli {

void add_tokenize_commands(CLI::App& app, int& exit_code);

}  // namespace pagedllm::cli
