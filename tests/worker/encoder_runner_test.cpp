// The worker's image path against its definitions: through the scheduler and the runner, at
// every chunk size, each placeholder token reaches the model with its row of the encoder's
// output for its image, text tokens with none, and every token with HF's M-RoPE positions.
#include "worker/encoder_runner.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "core/scheduler.h"
#include "model/stand_in_model.h"
#include "multimodal/mrope.h"
#include "worker/model_runner.h"

namespace pagedllm {
namespace {

std::shared_ptr<VisionModel> tiny_vision_model() {
  VisionEncoderConfig c;
  c.family = VisionFamily::kQwen2VL;
  c.depth = 1, c.hidden_size = 16, c.num_heads = 2, c.intermediate_size = 32;
  c.out_hidden_size = 8;
  auto weights = [](const std::string& name, size_t elements) {
    std::mt19937 rng(static_cast<unsigned>(std::hash<std::string>{}(name)));
    std::normal_distribution<float> normal(0.0f, 0.05f);
    std::vector<float> w(elements);
    for (float& x : w) x = normal(rng);
    if (name.find("norm") != std::string::npos && name.find("weight") != std::string::npos)
      for (float& x : w) x += 1.0f;
    return w;
  };
  auto vm = std::make_shared<VisionModel>();
  vm->encoder = std::make_unique<VisionEncoder>(c, weights);
  return vm;
}

std::shared_ptr<EncoderInput> random_image(int64_t grid_h, int64_t grid_w, unsigned seed) {
  auto in = std::make_shared<EncoderInput>();
  in->grid_h = grid_h, in->grid_w = grid_w;
  in->pixel_values.resize(static_cast<size_t>(grid_h * grid_w * 3 * 2 * 14 * 14));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& x : in->pixel_values) x = u(rng);
  return in;
}

// Records, per prompt position of one request, the embedding row and M-RoPE positions the
// model was handed.
class RecordingModel : public StandInModel {
 public:
  using StandInModel::StandInModel;
  void forward(const ModelInputs& in, std::span<float> logits) override {
    const size_t hidden = in.embed_rows.empty() ? 0 : in.embed_values.size() / in.embed_rows.size();
    for (int j = 0; j < in.num_actual_tokens; ++j) {
      const int pos = in.positions[static_cast<size_t>(j)];
      for (int r = 0; r < 3; ++r) {
        mrope[pos][r] = in.mrope_positions.empty()
                            ? pos
                            : in.mrope_positions[static_cast<size_t>(r * in.mrope_stride + j)];
      }
      for (size_t i = 0; i < in.embed_rows.size(); ++i) {
        if (in.embed_rows[i] != j) continue;
        auto& row = embeddings[pos];
        EXPECT_TRUE(row.empty()) << "position " << pos << " got two embedding rows";
        row.assign(in.embed_values.begin() + static_cast<std::ptrdiff_t>(i * hidden),
                   in.embed_values.begin() + static_cast<std::ptrdiff_t>((i + 1) * hidden));
      }
    }
    StandInModel::forward(in, logits);
  }
  std::map<int, std::array<int32_t, 3>> mrope;
  std::map<int, std::vector<float>> embeddings;
};

TEST(EncoderRunner, EveryChunkSizeGivesEachPlaceholderItsEncoderRowAndHfPositions) {
  const auto vision = tiny_vision_model();
  const VisionTokenIds ids;
  // text, image 1 (4 x 6 patches: 6 tokens), text, image 2 (2 x 4 patches: 2 tokens), text
  const auto a = random_image(4, 6, 1), b = random_image(2, 4, 2);
  std::vector<int32_t> prompt = {1, 2, 3, ids.vision_start};
  const auto a_offset = static_cast<int64_t>(prompt.size());
  prompt.insert(prompt.end(), 6, ids.image_pad);
  prompt.insert(prompt.end(), {ids.vision_end, 4, 5, ids.vision_start});
  const auto b_offset = static_cast<int64_t>(prompt.size());
  prompt.insert(prompt.end(), 2, ids.image_pad);
  prompt.insert(prompt.end(), {ids.vision_end, 6});
  const std::vector<GridTHW> grids = {{1, 4, 6}, {1, 2, 4}};
  const std::vector<float> a_out =
      vision->encoder->encode(a->pixel_values, std::span(grids).first(1));
  const std::vector<float> b_out =
      vision->encoder->encode(b->pixel_values, std::span(grids).last(1));
  const MropePositions expected = mrope_positions(prompt, vision->mrope, {.image_grids = grids});

  for (int chunk = 1; chunk <= static_cast<int>(prompt.size()) + 1; ++chunk) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    EngineConfig cfg;
    cfg.cache.block_size = 4, cfg.cache.num_blocks = 32;
    cfg.scheduler.max_model_len = 64, cfg.scheduler.max_num_batched_tokens = chunk;
    cfg.scheduler.max_num_seqs = 1;
    cfg.scheduler.max_num_encoder_input_tokens = 8, cfg.scheduler.encoder_cache_size = 8;
    Scheduler scheduler(cfg);
    RunnerOptions options;
    options.vision = vision;
    ModelRunner runner(cfg, options);
    RecordingModel model(512);
    SamplingParams p;
    p.max_tokens = 3, p.ignore_eos = true;
    auto r = std::make_unique<Request>("r", prompt, p);
    r->mm_features = {{"a", a_offset, 6, a}, {"b", b_offset, 2, b}};
    scheduler.add_request(std::move(r));
    SchedulerOutput out;
    ModelRunnerOutput result;
    std::vector<EngineCoreOutput> outputs;
    while (scheduler.has_unfinished_requests()) {
      scheduler.schedule(out);
      runner.execute_model(out, model, result);
      outputs.clear();
      scheduler.update_from_output(out, result, outputs);
    }
    for (int64_t t = 0; t < static_cast<int64_t>(prompt.size()); ++t) {
      const bool in_a = t >= a_offset && t < a_offset + 6, in_b = t >= b_offset && t < b_offset + 2;
      const auto& got = model.embeddings[static_cast<int>(t)];
      if (!in_a && !in_b) {
        EXPECT_TRUE(got.empty()) << "text token " << t << " took an image row";
      } else {
        const std::vector<float>& source = in_a ? a_out : b_out;
        const auto row = static_cast<size_t>(t - (in_a ? a_offset : b_offset));
        ASSERT_EQ(got.size(), 8u) << t;
        EXPECT_EQ(got,
                  std::vector<float>(source.begin() + static_cast<std::ptrdiff_t>(row * 8),
                                     source.begin() + static_cast<std::ptrdiff_t>(row * 8 + 8)));
      }
      for (int row = 0; row < 3; ++row)
        EXPECT_EQ(model.mrope[static_cast<int>(t)][row], expected.at(row, t)) << t << "/" << row;
    }
    // Decode tokens continue at position + delta in all three rows.
    const int first_decode = static_cast<int>(prompt.size());
    for (int row = 0; row < 3; ++row)
      EXPECT_EQ(model.mrope[first_decode][row], first_decode + expected.delta);
    EXPECT_LT(expected.delta, 0);  // the images' positions are compressed, so delta is negative
  }
}

}  // namespace
}  // namespace pagedllm
