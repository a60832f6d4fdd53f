// Metrics: what /metrics shows for counters, gauges and histograms with and without labels,
// label values escaped, samples from many threads all counted, and the series cap.
#include "common/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace gantry {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(MetricsTest, CountersAndGaugesWithAndWithoutLabels) {
  Metrics m;
  m.Describe("requests_total", "counter", "Requests.");
  m.Add("requests_total", {{"route", "/a"}, {"code", "200"}});
  m.Add("requests_total", {{"route", "/a"}, {"code", "200"}}, 2);
  m.Add("requests_total", {{"route", "/b"}, {"code", "404"}});
  m.Describe("open", "gauge", "Open things.");
  m.Set("open", {}, 4);
  m.Add("open", {}, -1);
  std::string out = m.Render();
  EXPECT_THAT(out, HasSubstr("# HELP requests_total Requests.\n# TYPE requests_total counter\n"));
  EXPECT_THAT(out, HasSubstr("requests_total{route=\"/a\",code=\"200\"} 3\n"));
  EXPECT_THAT(out, HasSubstr("requests_total{route=\"/b\",code=\"404\"} 1\n"));
  EXPECT_THAT(out, HasSubstr("\nopen 3\n"));
}

TEST(MetricsTest, HistogramBucketsSumAndCount) {
  Metrics m;
  m.Describe("latency_seconds", "histogram", "Latency.", {0.1, 1});
  m.Observe("latency_seconds", {{"route", "/a"}}, 0.05);
  m.Observe("latency_seconds", {{"route", "/a"}}, 0.5);
  m.Observe("latency_seconds", {}, 2);
  std::string out = m.Render();
  EXPECT_THAT(out,
              HasSubstr("latency_seconds_bucket{route=\"/a\",le=\"0.10000000000000001\"} 1\n"));
  EXPECT_THAT(out, HasSubstr("latency_seconds_bucket{route=\"/a\",le=\"1\"} 2\n"));
  EXPECT_THAT(out, HasSubstr("latency_seconds_bucket{route=\"/a\",le=\"+Inf\"} 2\n"));
  EXPECT_THAT(out, HasSubstr("latency_seconds_sum{route=\"/a\"} 0.55000000000000004\n"));
  EXPECT_THAT(out, HasSubstr("latency_seconds_count{route=\"/a\"} 2\n"));
  EXPECT_THAT(out, HasSubstr("latency_seconds_bucket{le=\"1\"} 0\n"));
  EXPECT_THAT(out, HasSubstr("latency_seconds_count 1\n"));
}

TEST(MetricsTest, LabelValuesAreEscaped) {
  Metrics m;
  m.Add("x_total", {{"v", "a\"b\\c\nd"}});
  EXPECT_THAT(m.Render(), HasSubstr("x_total{v=\"a\\\"b\\\\c\\nd\"} 1\n"));
}

TEST(MetricsTest, SamplesFromManyThreadsAreAllCounted) {
  Metrics m;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&m, t] {
      for (int i = 0; i < 1000; ++i) {
        m.Add("n_total", {{"code", i % 2 ? "200" : "500"}});
        m.Observe("h", {{"t", std::to_string(t)}}, 1);
      }
    });
  for (auto& th : threads) th.join();
  std::string out = m.Render();
  EXPECT_THAT(out, HasSubstr("n_total{code=\"200\"} 2000\n"));
  EXPECT_THAT(out, HasSubstr("n_total{code=\"500\"} 2000\n"));
  EXPECT_THAT(out, HasSubstr("h_count{t=\"3\"} 1000\n"));
}

TEST(MetricsTest, AFamilyHoldsAtMostTheCapOfSeries) {
  Metrics m;
  for (size_t i = 0; i < Metrics::kMaxSeriesPerFamily + 5; ++i)
    m.Add("many_total", {{"i", std::to_string(i)}});
  std::string out = m.Render();
  EXPECT_THAT(out, HasSubstr("many_total{i=\"0\"} 1\n"));
  EXPECT_THAT(out, Not(HasSubstr("many_total{i=\"" + std::to_string(Metrics::kMaxSeriesPerFamily) +
                                 "\"}")));
  EXPECT_THAT(out, HasSubstr("gantry_metrics_series_dropped_total{family=\"many_total\"} 5\n"));
}

}  // namespace
}  // namespace gantry
