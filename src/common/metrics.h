// Metrics: a small Prometheus registry (counters, gauges, histograms with labels) rendered
// in the text exposition format at /metrics.
//
// Label values must come from fixed sets (a normalised method, a route template, a status
// code): a label taken from request text would let anyone grow the registry, and /metrics,
// without bound. As a last line of defence each family holds at most kMaxSeriesPerFamily
// series; samples of further label sets are dropped and counted in
// gantry_metrics_series_dropped_total{family=...} (a family name is fixed by the code).
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
  static constexpr size_t kMaxSeriesPerFamily = 2000;

  Metrics();

  // Declares a metric family; `type` is counter, gauge or histogram.
  void Describe(const std::string& name, const std::string& type, const std::string& help,
                std::vector<double> buckets = {});
  void Add(const std::string& name, const MetricLabels& labels, double value = 1);
  void Set(const std::string& name, const MetricLabels& labels, double value);
  void Observe(const std::string& name, const MetricLabels& labels, double value);
  // Replaces every series of gauge `name` with `samples` in one step: a label set that is
  // not among them (a project deleted, a GPU type no longer held) leaves /metrics.
  void Replace(const std::string& name,
               const std::vector<std::pair<MetricLabels, double>>& samples);
  std::string Render();

 private:
  struct Family {
    std::string type, help;
    std::vector<double> buckets;
    std::map<std::string, double> values;               // rendered labels -> value
    std::map<std::string, std::vector<double>> counts;  // histogram bucket counts (+Inf last)
    std::map<std::string, double> sums;
  };
  // Whether `f` may hold the series `key` (it has it, or has room for it); counts a refusal.
  bool Admit(const std::string& name, const Family& f, const std::string& key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::mutex mu_;
  std::map<std::string, Family> families_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gantry
