#include "server/metrics.h"

#include <gtest/gtest.h>

namespace pagedllm::server {
namespace {

TEST(Histogram, RendersCumulativeBucketsSumAndCount) {
  Histogram h({0.1, 1.0});
  h.observe(0.05);
  h.observe(0.5);
  h.observe(0.7);
  h.observe(3.0);
  std::string out;
  h.render(out, "x{m=\"a\"}");
  EXPECT_EQ(out,
            "x_bucket{m=\"a\",le=\"0.1\"} 1\n"
            "x_bucket{m=\"a\",le=\"1\"} 3\n"
            "x_bucket{m=\"a\",le=\"+Inf\"} 4\n"
            "x_sum{m=\"a\"} 4.25\n"
            "x_count{m=\"a\"} 4\n");
}

TEST(ServerMetrics, RendersVllmNamesUnderThePagedllmPrefix) {
  ServerMetrics m("tiny\"model");
  m.set_gauges({2, 3, 0.25, 1, 100, 40, 5, 20, 9, {5, 3, 1, 0}});
  m.add_prompt_tokens(12);
  m.add_generation_tokens(7);
  m.observe_finished("length", 0.5);
  m.observe_ttft(0.01);
  const std::string text = m.render();
  for (const char* line :
       {"pagedllm:num_requests_running{model_name=\"tiny\\\"model\"} 2\n",
        "pagedllm:num_requests_waiting{model_name=\"tiny\\\"model\"} 3\n",
        "pagedllm:kv_cache_usage_perc{model_name=\"tiny\\\"model\"} 0.25\n",
        "pagedllm:prefix_cache_queries_total{model_name=\"tiny\\\"model\"} 100\n",
        "pagedllm:prefix_cache_hits_total{model_name=\"tiny\\\"model\"} 40\n",
        "pagedllm:num_preemptions_total{model_name=\"tiny\\\"model\"} 1\n",
        "pagedllm:spec_decode_num_drafts_total{model_name=\"tiny\\\"model\"} 5\n",
        "pagedllm:spec_decode_num_draft_tokens_total{model_name=\"tiny\\\"model\"} 20\n",
        "pagedllm:spec_decode_num_accepted_tokens_total{model_name=\"tiny\\\"model\"} 9\n",
        "pagedllm:spec_decode_num_accepted_tokens_per_pos_total{model_name=\"tiny\\\"model\","
        "position=\"1\"} 3\n",
        "pagedllm:prompt_tokens_total{model_name=\"tiny\\\"model\"} 12\n",
        "pagedllm:generation_tokens_total{model_name=\"tiny\\\"model\"} 7\n",
        "pagedllm:request_success_total{model_name=\"tiny\\\"model\",finished_reason=\"length\"} "
        "1\n",
        "pagedllm:time_to_first_token_seconds_count{model_name=\"tiny\\\"model\"} 1\n",
        "pagedllm:e2e_request_latency_seconds_count{model_name=\"tiny\\\"model\"} 1\n",
        "# TYPE pagedllm:time_per_output_token_seconds histogram\n",
        "# TYPE pagedllm:request_queue_time_seconds histogram\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line;
  }
}

TEST(ServerMetrics, RendersTheImageEncoderFigures) {
  ServerMetrics m("vl");
  EngineStats stats;
  stats.encoder_cache_usage = 0.375;
  stats.num_encoded_images = 3;
  stats.num_encoded_image_tokens = 768;
  stats.encoder_seconds = 1.5;
  m.set_gauges(stats);
  const std::string text = m.render();
  for (const char* line : {"# TYPE pagedllm:encoder_cache_usage_perc gauge\n",
                           "pagedllm:encoder_cache_usage_perc{model_name=\"vl\"} 0.375\n",
                           "# TYPE pagedllm:encoder_images_total counter\n",
                           "pagedllm:encoder_images_total{model_name=\"vl\"} 3\n",
                           "pagedllm:encoder_image_tokens_total{model_name=\"vl\"} 768\n",
                           "# TYPE pagedllm:encoder_seconds_total counter\n",
                           "pagedllm:encoder_seconds_total{model_name=\"vl\"} 1.5\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace pagedllm::server
