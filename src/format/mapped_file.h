// A read-only memory map of a model file. Weights are used in place, so the page cache shares
// them between processes and the load costs no copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace pagedllm {

// Thrown for a model file that cannot be used: the message names the file and what is wrong.
class ModelLoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class MappedFile {
 public:
  explicit MappedFile(const std::string& path);
  // Bytes already in memory under a display name (fuzzers, tests): same interface, no file.
  MappedFile(std::string name, std::vector<uint8_t> bytes);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  size_t size() const { return size_; }
  const uint8_t* data() const { return data_; }
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  // Drops the resident pages fully inside [offset, offset + length) (file-backed mappings only;
  // they are read back from the file if touched again).
  void release(size_t offset, size_t length) const;

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::vector<uint8_t> owned_;
};

}  // namespace pagedllm
