#include "worker/encoder_runner.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "multimodal/mrope.h"

namespace pagedllm {

namespace {

GridTHW grid_of(const MultiModalFeature& f) {
  return {f.input->grid_t, f.input->grid_h, f.input->grid_w};
}

}  // namespace

EncoderRunner::EncoderRunner(std::shared_ptr<const VisionModel> vision)
    : vision_(std::move(vision)) {
  if (!vision_ || !vision_->encoder) throw std::invalid_argument("EncoderRunner needs an encoder");
}

void EncoderRunner::init_request(CachedRequestState& s) const {
  s.mrope_positions.clear();
  s.mrope_delta = 0;
  if (s.mm_features.empty()) return;  // text: the three positions are the sequence position
  std::vector<GridTHW> grids;
  for (const MultiModalFeature& f : s.mm_features) grids.push_back(grid_of(f));
  const auto prompt = std::span(s.token_ids).first(static_cast<size_t>(s.num_prompt_tokens));
  MropePositions p = mrope_positions(prompt, vision_->mrope, {.image_grids = grids});
  s.mrope_positions = std::move(p.positions);
  s.mrope_delta = p.delta;
}

void EncoderRunner::execute(const SchedulerOutput& out,
                            const std::unordered_map<std::string, CachedRequestState>& requests) {
  for (const std::string& id : out.free_encoder_identifiers) cache_.erase(id);
  if (out.scheduled_encoder_inputs.empty()) return;
  std::vector<const MultiModalFeature*> features;
  for (const ScheduledEncoderInputs& e : out.scheduled_encoder_inputs) {
    const auto it = requests.find(e.req_id);
    if (it == requests.end())
      throw std::logic_error("encoder input of unknown request '" + e.req_id + "'");
    for (int i : e.inputs) features.push_back(&it->second.mm_features.at(static_cast<size_t>(i)));
  }
  // One pass over every image of the step: the matrix products run on all their patches.
  std::vector<float> pixels;
  std::vector<GridTHW> grids;
  for (const MultiModalFeature* f : features) {
    pixels.insert(pixels.end(), f->input->pixel_values.begin(), f->input->pixel_values.end());
    grids.push_back(grid_of(*f));
  }
  const auto start = std::chrono::steady_clock::now();
  const std::vector<float> embeddings = vision_->encoder->encode(pixels, grids);
  encoder_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto hidden = static_cast<size_t>(hidden_size());
  size_t row = 0;
  for (const MultiModalFeature* f : features) {
    const size_t rows = static_cast<size_t>(f->length);
    if ((row + rows) * hidden > embeddings.size())
      throw std::logic_error("the encoder returned fewer rows than the image's placeholders");
    cache_[f->identifier].assign(
        embeddings.begin() + static_cast<std::ptrdiff_t>(row * hidden),
        embeddings.begin() + static_cast<std::ptrdiff_t>((row + rows) * hidden));
    row += rows;
  }
}

void EncoderRunner::prepare(const InputBatch& batch, ModelInputs& in) {
  bool any_images = false;
  for (int r = 0; r < in.num_reqs && !any_images; ++r)
    any_images = !batch.state(r)->mm_features.empty();
  in.embed_rows = {};
  in.embed_values = {};
  if (!any_images) {
    in.mrope_positions.clear();
    in.mrope_stride = 0;
    return;
  }
  compute_mrope_positions(batch, in);
  gather_embeddings(batch, in);
}

// A prompt token takes its row of the request's table; a later token (an output or a draft)
// sits at position + delta in all three rows, as HF continues after the prompt.
void EncoderRunner::compute_mrope_positions(const InputBatch& batch, ModelInputs& in) {
  const size_t stride = in.positions.size();
  in.mrope_stride = static_cast<int>(stride);
  in.mrope_positions.assign(3 * stride, 0);
  for (int j = 0; j < in.num_actual_tokens; ++j) {
    const auto t = static_cast<size_t>(j);
    const CachedRequestState& s = *batch.state(in.req_indices[t]);
    const int32_t pos = in.positions[t];
    const auto table_len = static_cast<int32_t>(s.mrope_positions.size() / 3);
    for (size_t row = 0; row < 3; ++row) {
      in.mrope_positions[row * stride + t] =
          pos < table_len
              ? s.mrope_positions[row * static_cast<size_t>(table_len) + static_cast<size_t>(pos)]
              : static_cast<int32_t>(pos + s.mrope_delta);
    }
  }
}

// Request row r computes tokens [computed, computed + n) at step rows query_start_loc[r] on;
// each image's placeholders in that range take their rows of the image's encoder output.
void EncoderRunner::gather_embeddings(const InputBatch& batch, ModelInputs& in) {
  embed_rows_.clear();
  embed_values_.clear();
  const auto hidden = static_cast<size_t>(hidden_size());
  for (int r = 0; r < in.num_reqs; ++r) {
    const CachedRequestState& s = *batch.state(r);
    const int64_t start = in.num_computed_tokens[static_cast<size_t>(r)];
    const int64_t end = start + in.num_scheduled_tokens[static_cast<size_t>(r)];
    const int64_t base = in.query_start_loc[static_cast<size_t>(r)];
    for (const MultiModalFeature& f : s.mm_features) {
      if (f.offset >= end) break;
      if (f.end() <= start) continue;
      const auto it = cache_.find(f.identifier);
      if (it == cache_.end())
        throw std::logic_error("image '" + f.identifier + "' is not in the encoder cache");
      for (int64_t p = std::max(start, f.offset); p < std::min(end, f.end()); ++p) {
        embed_rows_.push_back(static_cast<int32_t>(base + p - start));
        const auto* row = it->second.data() + static_cast<size_t>(p - f.offset) * hidden;
        embed_values_.insert(embed_values_.end(), row, row + hidden);
      }
    }
  }
  in.embed_rows = embed_rows_;
  in.embed_values = embed_values_;
}

}  // namespace pagedllm
