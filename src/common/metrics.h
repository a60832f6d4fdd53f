// Metrics: a small Prometheus registry (counters, gauges, histograms with labels) rendered
// in the text exposition format at /metrics.
//
// Thread-safety: all methods are safe from any thread (one mutex; metrics are cheap).
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"

namespace gantry {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

class Metrics {
 public:
  // Declares a metric family; `type` is counter, gauge or histogram.
  void Describe(const std::string& name, const std::string& type, const std::string& help,
                std::vector<double> buckets = {});
  void Add(const std::string& name, const MetricLabels& labels, double value = 1);
  void Set(const std::string& name, const MetricLabels& labels, double value);
  void Observe(const std::string& name, const MetricLabels& labels, double value);
  std::string Render();

 private:
  struct Family {
    std::string type, help;
    std::vector<double> buckets;
    std::map<std::string, double> values;                 // rendered labels -> value
    std::map<std::string, std::vector<double>> counts;    // histogram bucket counts (+Inf last)
    std::map<std::string, double> sums;
  };
  static std::string RenderLabels(const MetricLabels& labels, const std::string& extra = "");
  std::mutex mu_;
  std::map<std::string, Family> families_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gantry
