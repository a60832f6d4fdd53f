// GpuSampler: how busy the GPUs of this host are, and since when an instance has been idle
// (issue 17 item 4; docs/gpu-sampling.md).
//
// Every `interval` (gantryd's --gpu-sample-interval, default 30s) it runs
//   nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader,nounits
// through the one ProcessLauncher (drivers/common/process.h) and, for every compute
// instance holding GPUs of this host (GpuAllocator, owner keys ns/name/uid) whose driver
// has Capabilities::gpu_metrics, writes
//   status.gpuUtilization  the mean of its GPUs, integer percent
//   status.idleSince       RFC 3339: the first sample at which that mean went below the
//                          threshold, cleared by the first sample at or above it
// The threshold is idle.gpuUtilizationBelow of the profile revision the instance pinned;
// without an idle policy 5 %, so that idleness is still shown. The sampler fires nothing:
// the lifecycle controller acts on idleSince.
//
// Missing data counts as busy (never stop on missing data): when nvidia-smi is missing,
// fails, or lists one of the instance's GPUs without a number ("[N/A]", "[Not Supported]",
// garbage, absent), idleSince is cleared and gpuUtilization is left as it was.
//
// Writes: an instance is written only when one of the two values changes, through a
// test-and-set update on its resourceVersion (read again on a conflict, so it never
// overwrites what the engine wrote meanwhile) with relaxed durability. The sampler runs on
// a thread of its own and waits with Clock::SleepUntil, so a FakeClock drives it in tests;
// it never holds a lock the API or the engine waits for. With several replicas each one
// samples its own host's GPUs: the allocator holds only those.
//
// Metrics: gantry_gpu_utilization{gpu="N"} (gauge, last readable sample of GPU N) and
// gantry_gpu_samples_failed_total (samples with at least one GPU of the inventory unread).
//
// Thread-safety: Start/Stop from one thread; SampleOnce, Record and Read are safe from any
// thread (samples are serialised).
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "common/clock.h"
#include "common/loop_thread.h"
#include "common/metrics.h"
#include "drivers/common/process.h"
#include "drivers/driver.h"
#include "engine/inventory.h"
#include "model/objects.h"
#include "store/store.h"

namespace gantry::engine {

// GPU index -> utilisation in percent, nullopt when that GPU's value cannot be read.
using GpuReadings = std::map<int, std::optional<int>>;

// Parses the CSV of the query above ("0, 37" per line). A value that is not an integer in
// 0..100 ("[N/A]", "[Not Supported]", garbage) is nullopt; a line without an integer index
// is skipped (so that GPU counts as missing).
GpuReadings ParseUtilization(std::string_view csv);

// The integer mean (rounded to nearest) of the GPUs `indices` in `readings`; nullopt when
// `indices` is empty or any of them is missing or unreadable.
std::optional<int> MeanUtilization(const GpuReadings& readings, const std::vector<int>& indices);

// The threshold used without an idle policy (API.md's example policy uses the same).
inline constexpr int kDefaultIdleBelow = 5;

// What one sample (`mean`, nullopt = unreadable) at `now` (RFC 3339) does to `status` with
// threshold `below`; true when it changed. Below: gpuUtilization = mean, idleSince set
// unless already set (an idleSince older than status.startedAt belongs to an earlier run of
// the workload and starts again at `now`). At or above: gpuUtilization = mean, idleSince
// cleared. Unreadable: idleSince cleared, gpuUtilization unchanged.
bool ApplySample(std::optional<int> mean, int below, const std::string& now,
                 model::InstanceStatus* status);

struct GpuSamplerOptions {
  std::chrono::seconds interval{30};
  std::string nvidia_smi = "nvidia-smi";  // looked up in PATH (tests: a stand-in script)
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};  // of one nvidia-smi run
};

// What one SampleOnce did, for tests and the log.
struct SampleReport {
  bool read = false;  // nvidia-smi ran and exited 0
  int instances = 0;  // instances with GPU metrics looked at
  int written = 0;    // of them, written (a value changed)
};

class GpuSampler {
 public:
  // All references must outlive the sampler.
  GpuSampler(store::Store& store, drivers::DriverRegistry& drivers, GpuAllocator& gpus,
             const Clock& clock, Metrics& metrics, drivers::ProcessLauncher& launcher,
             GpuSamplerOptions options);
  GpuSampler(const GpuSampler&) = delete;
  GpuSampler& operator=(const GpuSampler&) = delete;

  // Starts the thread: a sample every interval, the first one interval after the start. A
  // host without GPUs in its inventory runs nothing.
  void Start();
  // Stops and joins the thread (a sample in progress finishes first). Idempotent.
  void Stop();

  // One sample now, as the thread takes it: Record(Read()).
  SampleReport SampleOnce();
  // Records `readings` as the sample taken now (metrics, instances). SampleOnce's second
  // half, public for the lifecycle simulation (bench/lifecycle_sim.cc), which has no GPUs
  // and replays recorded readings instead.
  SampleReport Record(const GpuReadings& readings);

  // nvidia-smi's readings now (empty when it cannot be run or fails).
  GpuReadings Read();

 private:
  // What an instance's pinned revisions say: its threshold, nullopt without GPU metrics.
  using PinKey = std::tuple<std::string, int64_t, int64_t>;  // owner, profile and template rev.
  std::optional<int> ThresholdOf(const model::Instance& instance)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Applies `readings` to the instance `owner` holding GPUs `indices`; true when written.
  bool Update(const std::string& owner, const std::vector<int>& indices,
              const GpuReadings& readings, bool* looked) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Loop(std::stop_token stop);

  // Constant after construction.
  store::Store& store_;
  drivers::DriverRegistry& drivers_;
  GpuAllocator& gpus_;
  const Clock& clock_;
  Metrics& metrics_;
  drivers::ProcessLauncher& launcher_;
  const GpuSamplerOptions options_;

  std::mutex mu_;  // serialises samples
  // Revisions are immutable, so what they say is kept while the owner holds GPUs.
  std::map<PinKey, std::optional<int>> thresholds_ ABSL_GUARDED_BY(mu_);
  bool last_failed_ ABSL_GUARDED_BY(mu_) = false;  // logged on change only
  LoopThread thread_;                              // last: stopped before the rest goes
};

}  // namespace gantry::engine
