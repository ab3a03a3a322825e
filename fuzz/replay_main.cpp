// Replays saved inputs through a fuzz target's LLVMFuzzerTestOneInput without libFuzzer, so the
// g++ build that `make test` uses runs the regression inputs and seeds (libFuzzer needs clang).
// usage: replay_<target> [--repeat N] PATH...
// A directory stands for its regular files (not recursive, dot files skipped), in name order; a
// path that does not exist is an error. The empty input runs first, as libFuzzer's does. Each
// input is passed N times (default 1) in a buffer of exactly its size, so sanitizer builds catch
// reads past its end. A crash, an abort or an escaping exception ends the process non-zero.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& message) {
  std::fprintf(stderr, "replay: %s\n", message.c_str());
  std::exit(2);
}

std::vector<fs::path> collect(const std::vector<std::string>& args) {
  std::vector<fs::path> files;
  for (const std::string& arg : args) {
    const fs::path path(arg);
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      std::vector<fs::path> in_dir;
      for (const fs::directory_entry& e : fs::directory_iterator(path)) {
        if (e.is_regular_file() && e.path().filename().string().rfind('.', 0) != 0) {
          in_dir.push_back(e.path());
        }
      }
      std::sort(in_dir.begin(), in_dir.end());
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else if (fs::is_regular_file(path, ec)) {
      files.push_back(path);
    } else {
      fail("no such file or directory: " + arg);
    }
  }
  return files;
}

std::vector<uint8_t> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read " + path.string());
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void run_one(const std::string& name, const std::vector<uint8_t>& bytes, int repeat) {
  std::fprintf(stderr, "replay: %s (%zu bytes)\n", name.c_str(), bytes.size());
  std::fflush(stderr);
  for (int i = 0; i < repeat; ++i) {
    // A fresh allocation of exactly size bytes each time, as libFuzzer passes it.
    std::unique_ptr<uint8_t[]> copy(new uint8_t[bytes.size()]);
    if (!bytes.empty()) std::memcpy(copy.get(), bytes.data(), bytes.size());
    LLVMFuzzerTestOneInput(copy.get(), bytes.size());
  }
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 1;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--repeat" && i + 1 < argc) {
      repeat = std::atoi(argv[++i]);
      if (repeat < 1) fail("--repeat needs a positive count");
    } else {
      args.push_back(arg);
    }
  }
  const std::vector<fs::path> files = collect(args);
  run_one("<empty input>", {}, repeat);
  for (const fs::path& file : files) run_one(file.string(), read_file(file), repeat);
  std::fprintf(stderr, "replay: %zu inputs (and the empty one) passed, %d time(s) each\n",
               files.size(), repeat);
  return 0;
}
