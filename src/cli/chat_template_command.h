// `pagedllm chat-template`: renders a model's (or a file's) chat template for a conversation and
// prints exactly the prompt, nothing added.
#pragma once

#include <CLI/CLI.hpp>

namespace pagedllm::cli {

void add_chat_template_command(CLI::App& app, int& exit_code);

}  // namespace pagedllm::cli
