#include "engine/gpu_sampler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "engine/dependencies.h"
#include "engine/deployment.h"
#include "engine/engine_internal.h"
#include "model/lifecycle_policy.h"

namespace gantry::engine {

namespace {

constexpr char kUtilizationMetric[] = "gantry_gpu_utilization";
constexpr char kFailedMetric[] = "gantry_gpu_samples_failed_total";

// An integer that is the whole of `text` (after trimming), else nullopt.
std::optional<int> WholeInt(std::string_view text) {
  const absl::string_view t =
      absl::StripAsciiWhitespace(absl::string_view(text.data(), text.size()));
  int value = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size()) return std::nullopt;
  return value;
}

// "ns/name/uid" -> its parts; false for anything else.
bool SplitOwner(const std::string& owner, std::string* ns, std::string* name, std::string* uid) {
  std::vector<std::string> parts = absl::StrSplit(owner, '/');
  if (parts.size() != 3) return false;
  *ns = parts[0];
  *name = parts[1];
  *uid = parts[2];
  return true;
}

// Whether idleSince `since` began before the workload's last start `started` (both RFC 3339).
bool BeforeStart(const std::string& since, const std::optional<std::string>& started) {
  if (!started) return false;
  auto s = internal::ParseRfc3339(since);
  auto t = internal::ParseRfc3339(*started);
  return s && t && *s < *t;
}

}  // namespace

GpuReadings ParseUtilization(std::string_view csv) {
  GpuReadings out;
  while (!csv.empty()) {
    const size_t end = std::min(csv.find('\n'), csv.size());
    const std::string_view line = csv.substr(0, end);
    csv.remove_prefix(std::min(end + 1, csv.size()));
    const size_t comma = line.find(',');
    if (comma == std::string_view::npos) continue;
    std::optional<int> index = WholeInt(line.substr(0, comma));
    if (!index || *index < 0) continue;
    std::optional<int> value = WholeInt(line.substr(comma + 1));
    if (value && (*value < 0 || *value > 100)) value.reset();
    out[*index] = value;
  }
  return out;
}

std::optional<int> MeanUtilization(const GpuReadings& readings, const std::vector<int>& indices) {
  if (indices.empty()) return std::nullopt;
  double sum = 0;
  for (int i : indices) {
    auto it = readings.find(i);
    if (it == readings.end() || !it->second) return std::nullopt;
    sum += *it->second;
  }
  return static_cast<int>(std::lround(sum / static_cast<double>(indices.size())));
}

bool ApplySample(std::optional<int> mean, int below, const std::string& now,
                 model::InstanceStatus* status) {
  const model::InstanceStatus before = *status;
  if (!mean) {
    status->idle_since.reset();
  } else {
    status->gpu_utilization = *mean;
    if (*mean >= below)
      status->idle_since.reset();
    else if (!status->idle_since || BeforeStart(*status->idle_since, status->started_at))
      status->idle_since = now;
  }
  return status->gpu_utilization != before.gpu_utilization ||
         status->idle_since != before.idle_since;
}

GpuSampler::GpuSampler(store::Store& store, drivers::DriverRegistry& drivers, GpuAllocator& gpus,
                       const Clock& clock, Metrics& metrics, drivers::ProcessLauncher& launcher,
                       GpuSamplerOptions options)
    : store_(store),
      drivers_(drivers),
      gpus_(gpus),
      clock_(clock),
      metrics_(metrics),
      launcher_(launcher),
      options_(std::move(options)) {
  metrics_.Describe(kUtilizationMetric, "gauge",
                    "GPU utilisation in percent at the last readable sample, by GPU index.");
  metrics_.Describe(kFailedMetric, "counter",
                    "GPU samples in which nvidia-smi failed or a GPU had no readable value.");
}

void GpuSampler::Start() {
  thread_.Start([this](std::stop_token stop) { Loop(stop); });
}

void GpuSampler::Stop() { thread_.Stop(); }

void GpuSampler::Loop(std::stop_token stop) {
  auto next = clock_.SteadyNow() + options_.interval;
  while (clock_.SleepUntil(next, stop)) {
    SampleOnce();
    // The next period starts from now when a sample took longer than one.
    next = std::max(next + options_.interval, clock_.SteadyNow());
  }
}

GpuReadings GpuSampler::Read() {
  drivers::ProcessSpec spec;
  spec.argv = {options_.nvidia_smi, "--query-gpu=index,utilization.gpu",
               "--format=csv,noheader,nounits"};
  spec.timeout = options_.timeout;
  spec.kill_grace = std::chrono::seconds(1);
  std::string out;
  drivers::ProcessHooks hooks;
  hooks.on_line = [&out](std::string_view line) {
    out.append(line);
    out.push_back('\n');
  };
  auto result = drivers::RunProcess(spec, hooks, launcher_);
  if (!result.ok() || result->exit_code != 0) {
    spdlog::debug("gpu sampler: {} cannot be read: {}", options_.nvidia_smi,
                  result.ok() ? "exit code " + std::to_string(result->exit_code)
                              : std::string(result.status().message()));
    return {};
  }
  return ParseUtilization(out);
}

SampleReport GpuSampler::SampleOnce() {
  if (gpus_.inventory().gpus.empty()) return {};  // no GPUs here: nothing to sample
  return Record(Read());
}

SampleReport GpuSampler::Record(const GpuReadings& readings) {
  std::lock_guard<std::mutex> lock(mu_);
  SampleReport report;
  report.read = !readings.empty();
  bool failed = !report.read;
  for (const Gpu& g : gpus_.inventory().gpus) {
    auto it = readings.find(g.index);
    if (it == readings.end() || !it->second) {
      failed = true;
      continue;
    }
    metrics_.Set(kUtilizationMetric, {{"gpu", std::to_string(g.index)}}, *it->second);
  }
  if (failed) metrics_.Add(kFailedMetric, {});
  if (failed && !last_failed_)
    spdlog::info("gpu sampler: {} gives no utilisation for some GPUs; they count as busy",
                 options_.nvidia_smi);
  if (!failed && last_failed_) spdlog::info("gpu sampler: every GPU is read again");
  last_failed_ = failed;
  std::map<std::string, std::vector<int>> held;
  for (const auto& [index, owner] : gpus_.Assignments()) held[owner].push_back(index);
  for (auto it = thresholds_.begin(); it != thresholds_.end();)
    it = held.count(std::get<0>(it->first)) ? std::next(it) : thresholds_.erase(it);
  for (const auto& [owner, indices] : held) {
    bool looked = false;
    if (Update(owner, indices, readings, &looked)) ++report.written;
    if (looked) ++report.instances;
  }
  return report;
}

std::optional<int> GpuSampler::ThresholdOf(const model::Instance& instance) {
  const PinKey key{instance.metadata.OwnerKey(), instance.status.profile_revision,
                   instance.status.template_revision};
  if (auto it = thresholds_.find(key); it != thresholds_.end()) return it->second;
  auto deployment = ResolvePinned(store_, instance);
  if (!deployment.ok()) return std::nullopt;  // not cached: a store error may pass
  std::optional<int> threshold;
  const drivers::Driver* driver = drivers_.Find(deployment->tmpl.driver);
  if (driver && driver->Caps().gpu_metrics) {
    model::LifecyclePolicy policy = model::DecodeLifecyclePolicy(deployment->profile.raw);
    threshold = policy.idle ? policy.idle->gpu_utilization_below : kDefaultIdleBelow;
  }
  thresholds_[key] = threshold;
  return threshold;
}

bool GpuSampler::Update(const std::string& owner, const std::vector<int>& indices,
                        const GpuReadings& readings, bool* looked) {
  std::string ns, name, uid;
  if (!SplitOwner(owner, &ns, &name, &uid)) return false;
  const std::optional<int> mean = MeanUtilization(readings, indices);
  const std::string now = FormatRfc3339(clock_.Now());
  for (int attempt = 0; attempt < internal::kMaxRetries; ++attempt) {
    auto instance = internal::LoadInstance(store_, kComputeInstanceKind, ns, name);
    if (!instance.ok() || instance->metadata.uid != uid) return false;
    // Only a running workload is sampled: a deploy, stop or destroy in progress is left be.
    if (instance->status.PhaseOr() != model::Phase::kSuccess) return false;
    std::optional<int> below = ThresholdOf(*instance);
    if (!below) return false;
    *looked = true;
    if (!ApplySample(mean, *below, now, &instance->status)) return false;
    std::vector<store::Write> writes;
    writes.push_back(internal::UpdateOf(*instance));
    absl::Status s = internal::CommitRelaxed(store_, std::move(writes));
    if (s.ok()) return true;
    if (!internal::IsConflict(s)) {
      spdlog::warn("gpu sampler: cannot record the sample of {}/{}: {}", ns, name,
                   std::string(s.message()));
      return false;
    }
  }
  return false;
}

}  // namespace gantry::engine
