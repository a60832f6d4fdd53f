#include "common/metrics.h"

#include <cstdio>

namespace gantry {
namespace {

// Appends `v` escaped as a label value of the text format.
void AppendEscaped(const std::string& v, std::string& out) {
  bool plain = true;
  for (char c : v) plain = plain && c != '\\' && c != '"' && c != '\n';
  if (plain) {  // the usual case: at once
    out += v;
    return;
  }
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
}

// Appends `k1="v1",k2="v2"` (no braces).
void AppendLabels(const MetricLabels& labels, std::string& out) {
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out += ',';
    first = false;
    out += k;
    out += "=\"";
    AppendEscaped(v, out);
    out += '"';
  }
}

// Sets `out` to a series' key in its family: `{k1="v1",...}` ("" without labels) for a
// counter or gauge, without braces for a histogram.
void SeriesKeyInto(const MetricLabels& labels, bool braces, std::string& out) {
  out.clear();
  if (braces && !labels.empty()) out += '{';
  AppendLabels(labels, out);
  if (braces && !labels.empty()) out += '}';
}

// The key in the calling thread's buffer: made before the lock is taken, and once the buffer
// has grown, without allocating (every request adds to two families). Valid until the
// thread's next call.
const std::string& SeriesKey(const MetricLabels& labels, bool braces) {
  thread_local std::string key;
  SeriesKeyInto(labels, braces, key);
  return key;
}

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

Metrics::Metrics() {
  Describe("gantry_metrics_series_dropped_total", "counter",
           "Samples dropped because their metric family already holds the most series allowed.");
}

bool Metrics::Admit(const std::string& name, const Family& f, const std::string& key) {
  if (f.values.size() + f.counts.size() < kMaxSeriesPerFamily || f.values.count(key) ||
      f.counts.count(key))
    return true;
  // The refusal counter has one series per family, so it is itself bounded. Its key is not
  // made in the thread's buffer, which may hold `key`.
  std::string dropped;
  SeriesKeyInto({{"family", name}}, /*braces=*/true, dropped);
  families_["gantry_metrics_series_dropped_total"].values[dropped] += 1;
  return false;
}

void Metrics::Describe(const std::string& name, const std::string& type, const std::string& help,
                       std::vector<double> buckets) {
  std::lock_guard<std::mutex> lock(mu_);
  Family& f = families_[name];
  f.type = type;
  f.help = help;
  f.buckets = std::move(buckets);
}

void Metrics::Add(const std::string& name, const MetricLabels& labels, double value) {
  const std::string& key = SeriesKey(labels, /*braces=*/true);
  std::lock_guard<std::mutex> lock(mu_);
  Family& f = families_[name];
  if (Admit(name, f, key)) f.values[key] += value;
}

void Metrics::Set(const std::string& name, const MetricLabels& labels, double value) {
  const std::string& key = SeriesKey(labels, /*braces=*/true);
  std::lock_guard<std::mutex> lock(mu_);
  Family& f = families_[name];
  if (Admit(name, f, key)) f.values[key] = value;
}

void Metrics::Replace(const std::string& name,
                      const std::vector<std::pair<MetricLabels, double>>& samples) {
  std::lock_guard<std::mutex> lock(mu_);
  Family& f = families_[name];
  f.values.clear();
  for (const auto& [labels, value] : samples) {
    const std::string& key = SeriesKey(labels, /*braces=*/true);
    if (Admit(name, f, key)) f.values[key] = value;
  }
}

void Metrics::Observe(const std::string& name, const MetricLabels& labels, double value) {
  const std::string& key = SeriesKey(labels, /*braces=*/false);
  std::lock_guard<std::mutex> lock(mu_);
  Family& f = families_[name];
  if (!Admit(name, f, key)) return;
  auto& counts = f.counts[key];
  counts.resize(f.buckets.size() + 1);
  for (size_t i = 0; i < f.buckets.size(); ++i)
    if (value <= f.buckets[i]) counts[i] += 1;
  counts.back() += 1;
  f.sums[key] += value;
}

std::string Metrics::Render() {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& [name, f] : families_) {
    if (!f.help.empty()) out += "# HELP " + name + " " + f.help + "\n";
    out += "# TYPE " + name + " " + (f.type.empty() ? "untyped" : f.type) + "\n";
    for (const auto& [labels, v] : f.values) out += name + labels + " " + Num(v) + "\n";
    for (const auto& [key, counts] : f.counts) {
      auto with = [&](const std::string& extra) {
        std::string l = key;
        if (!extra.empty()) l += (l.empty() ? "" : ",") + extra;
        return l.empty() ? std::string() : "{" + l + "}";
      };
      for (size_t i = 0; i < f.buckets.size(); ++i)
        out += name + "_bucket" + with("le=\"" + Num(f.buckets[i]) + "\"") + " " + Num(counts[i]) +
               "\n";
      out += name + "_bucket" + with("le=\"+Inf\"") + " " + Num(counts.back()) + "\n";
      out += name + "_sum" + with("") + " " + Num(f.sums.at(key)) + "\n";
      out += name + "_count" + with("") + " " + Num(counts.back()) + "\n";
    }
  }
  return out;
}

}  // namespace gantry
