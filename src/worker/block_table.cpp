#include "worker/block_table.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace pagedllm {

BlockTable::BlockTable(int max_num_reqs, int max_blocks_per_req)
    : max_blocks_per_req_(max_blocks_per_req),
      table_(static_cast<size_t>(max_num_reqs) * static_cast<size_t>(max_blocks_per_req), 0),
      num_blocks_per_row_(static_cast<size_t>(max_num_reqs), 0) {}

std::span<const int32_t> BlockTable::row(int r) const {
  return std::span(table_).subspan(static_cast<size_t>(r) * max_blocks_per_req_,
                                   static_cast<size_t>(num_blocks(r)));
}

void BlockTable::add_row(std::span<const int32_t> block_ids, int row) {
  clear_row(row);
  append_row(block_ids, row);
}

void BlockTable::append_row(std::span<const int32_t> block_ids, int row) {
  if (block_ids.empty()) return;
  int32_t& count = num_blocks_per_row_[static_cast<size_t>(row)];
  if (count + static_cast<int>(block_ids.size()) > max_blocks_per_req_) {
    throw std::length_error("block table row " + std::to_string(row) + " would exceed " +
                            std::to_string(max_blocks_per_req_) + " blocks");
  }
  std::copy(block_ids.begin(), block_ids.end(), row_ptr(row) + count);
  count += static_cast<int32_t>(block_ids.size());
}

void BlockTable::clear_row(int row) {
  int32_t& count = num_blocks_per_row_[static_cast<size_t>(row)];
  std::fill_n(row_ptr(row), count, 0);
  count = 0;
}

void BlockTable::move_row(int src, int dst) {
  const int n = num_blocks(src);
  clear_row(dst);
  std::copy_n(row_ptr(src), n, row_ptr(dst));
  num_blocks_per_row_[static_cast<size_t>(dst)] = n;
  clear_row(src);
}

void BlockTable::swap_rows(int a, int b) {
  const int n = std::max(num_blocks(a), num_blocks(b));
  std::swap_ranges(row_ptr(a), row_ptr(a) + n, row_ptr(b));
  std::swap(num_blocks_per_row_[static_cast<size_t>(a)],
            num_blocks_per_row_[static_cast<size_t>(b)]);
}

}  // namespace pagedllm
