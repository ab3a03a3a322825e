// The prologue every subcommand shares: its options live in one shared object that the parsed
// flags write and the callback reads (CLI11 keeps the callback, so the options must outlive
// add_*_command), and the run function's return value becomes the process's exit code.
#pragma once

#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include <CLI/CLI.hpp>

namespace pagedllm::cli {

template <typename Options>
struct Subcommand {
  CLI::App* cmd;
  std::shared_ptr<Options> options;
};

// Adds `name` under `parent`. `run` takes (Options&), or (Options&, const CLI::App&) when it
// must ask which flags were given, and returns the exit code.
template <typename Options, typename Run>
Subcommand<Options> add_subcommand(CLI::App& parent, const std::string& name,
                                   const std::string& help, int& exit_code, Run run,
                                   Options defaults = {}) {
  auto options = std::make_shared<Options>(std::move(defaults));
  CLI::App* cmd = parent.add_subcommand(name, help);
  cmd->callback([options, cmd, run, &exit_code] {
    if constexpr (std::is_invocable_v<Run, Options&, const CLI::App&>) {
      exit_code = run(*options, *cmd);
    } else {
      (void)cmd;  // only runs that ask which flags were given need it
      exit_code = run(*options);
    }
  });
  return {cmd, options};
}

}  // namespace pagedllm::cli
