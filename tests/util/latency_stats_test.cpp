#include "util/latency_stats.h"

#include <gtest/gtest.h>

namespace pagedllm {
namespace {

TEST(LatencyStats, PercentilesInterpolateLikeNumpy) {
  const std::vector<double> v = {4, 1, 3, 2, 10};
  EXPECT_DOUBLE_EQ(percentile(v, 50), 3.0);
  EXPECT_DOUBLE_EQ(percentile(v, 90), 7.6);   // numpy.percentile([1,2,3,4,10], 90)
  EXPECT_DOUBLE_EQ(percentile(v, 99), 9.76);  // numpy.percentile([1,2,3,4,10], 99)
  EXPECT_DOUBLE_EQ(percentile(v, 0), 1.0);
  EXPECT_DOUBLE_EQ(percentile(v, 100), 10.0);
}

TEST(LatencyStats, SummaryOfSamplesAndOfNone) {
  const LatencySummary s = summarize({2, 4, 6, 8});
  EXPECT_DOUBLE_EQ(s.mean, 5.0);
  EXPECT_DOUBLE_EQ(s.median, 5.0);
  EXPECT_DOUBLE_EQ(s.max, 8.0);
  const LatencySummary none = summarize({});
  EXPECT_EQ(none.mean, 0.0);
  EXPECT_EQ(none.p99, 0.0);
}

}  // namespace
}  // namespace pagedllm
