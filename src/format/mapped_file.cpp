#include "format/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace pagedllm {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw ModelLoadError(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw ModelLoadError(path + ": not a regular file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ == 0) {
    ::close(fd);
    throw ModelLoadError(path + ": file is empty");
  }
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) throw ModelLoadError(path + ": mmap failed: " + std::strerror(errno));
  data_ = static_cast<const uint8_t*>(p);
}

MappedFile::MappedFile(std::string name, std::vector<uint8_t> bytes)
    : path_(std::move(name)), owned_(std::move(bytes)) {
  data_ = owned_.data();
  size_ = owned_.size();
}

void MappedFile::release(size_t offset, size_t length) const {
  if (!owned_.empty() || offset >= size_) return;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto start = reinterpret_cast<uintptr_t>(data_) + offset;
  const uintptr_t first = (start + page - 1) / page * page;
  const uintptr_t last = (start + std::min(length, size_ - offset)) / page * page;
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

MappedFile::~MappedFile() {
  if (data_ && owned_.empty()) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace pagedllm
