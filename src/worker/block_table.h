// The worker's block table: row r lists the physical KV blocks of the request in batch row r,
// in logical order. Unused entries hold 0, the null block.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace pagedllm {

class BlockTable {
 public:
  BlockTable(int max_num_reqs, int max_blocks_per_req);

  int max_blocks_per_req() const { return max_blocks_per_req_; }
  int num_blocks(int row) const { return num_blocks_per_row_[static_cast<size_t>(row)]; }
  std::span<const int32_t> row(int r) const;
  // Flat [max_num_reqs, max_blocks_per_req] view, as kernels index it.
  std::span<const int32_t> flat() const { return table_; }

  // Replaces row `row` with block_ids.
  void add_row(std::span<const int32_t> block_ids, int row);
  void append_row(std::span<const int32_t> block_ids, int row);
  void clear_row(int row);
  void move_row(int src, int dst);
  void swap_rows(int a, int b);

 private:
  int32_t* row_ptr(int r) { return table_.data() + static_cast<size_t>(r) * max_blocks_per_req_; }

  int max_blocks_per_req_;
  std::vector<int32_t> table_;
  std::vector<int32_t> num_blocks_per_row_;
};

}  // namespace pagedllm
