// pagedllm: the command-line entry point. Each subcommand is a thin client of the library.
#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/bench_command.h"
#include "cli/chat_template_command.h"
#include "cli/generate_command.h"
#include "cli/make_model_command.h"
#include "cli/serve_command.h"
#include "cli/tokenize_command.h"
#include "cli/trace_command.h"
#include "distributed/communicator.h"

#ifndef PAGEDLLM_VERSION
#define PAGEDLLM_VERSION "0.0.0"
#endif

int main(int argc, char** argv) {
  CLI::App app{"pagedllm: a paged-KV, continuously batching LLM engine"};
  app.set_version_flag("--version", PAGEDLLM_VERSION);
  app.require_subcommand(1);
  int exit_code = 0;
  pagedllm::cli::add_bench_command(app, exit_code);
  pagedllm::cli::add_chat_template_command(app, exit_code);
  pagedllm::cli::add_generate_command(app, exit_code);
  pagedllm::cli::add_make_model_command(app, exit_code);
  pagedllm::cli::add_serve_command(app, exit_code);
  pagedllm::cli::add_tokenize_commands(app, exit_code);
  pagedllm::cli::add_trace_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; a bad flag or value exits 2, as command-line tools do.
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  } catch (const pagedllm::distributed::CollectiveError& e) {
    // Every rank found it; rank 0 says it once and each stops on its own.
    if (e.report()) std::cerr << "pagedllm: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "pagedllm: error: " << e.what() << "\n";
    // The other ranks of a tensor-parallel job may be waiting for this one: end them too.
    if (pagedllm::distributed::Communicator::active())
      pagedllm::distributed::Communicator::world().abort("");
    return 1;
  }
  return exit_code;
}
