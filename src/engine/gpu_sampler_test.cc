// GpuSampler unit tests: the pure parser and sample rule, then the sampler itself on a real
// SqliteStore in a temporary directory, with a FakeClock, a FakeProcessLauncher and a
// stand-in nvidia-smi script that prints what the test wrote to a file (this machine has no
// GPUs). The instances are stored as a deploy leaves them (phase Success, the GPUs held in
// the allocator), so each test looks at the sampler alone.
#include "engine/gpu_sampler.h"

#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <string>

#include "drivers/common/fake_process_launcher.h"
#include "engine/engine_test_fixture.h"

namespace gantry::engine {
namespace {

namespace json = boost::json;
using model::GetInt;
using model::GetString;
using namespace std::chrono_literals;

TEST(ParseUtilizationTest, ReadsIndexAndPercentPerLine) {
  GpuReadings r = ParseUtilization("0, 37\n1, 0\n2, 100\n");
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0], 37);
  EXPECT_EQ(r[1], 0);
  EXPECT_EQ(r[2], 100);
}

TEST(ParseUtilizationTest, UnreadableValuesAreNullopt) {
  GpuReadings r =
      ParseUtilization("0, [N/A]\n1, [Not Supported]\n2, busy\n3, 101\n4, -1\n5, 12.5\n6,\n");
  ASSERT_EQ(r.size(), 7u);
  for (const auto& [index, value] : r) EXPECT_FALSE(value.has_value()) << "GPU " << index;
}

TEST(ParseUtilizationTest, LinesWithoutAnIndexAreSkipped) {
  GpuReadings r = ParseUtilization(
      "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver\n"
      "x, 5\n, 7\n\n  3 ,  42  \n");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[3], 42);
  EXPECT_TRUE(ParseUtilization("").empty());
}

TEST(MeanUtilizationTest, RoundsTheMeanOfTheInstancesGpus) {
  GpuReadings r = ParseUtilization("0, 3\n1, 6\n2, 90\n");
  EXPECT_EQ(MeanUtilization(r, {0, 1}), 5);  // 4.5 rounds to 5
  EXPECT_EQ(MeanUtilization(r, {2}), 90);
  EXPECT_EQ(MeanUtilization(r, {0, 1, 2}), 33);
}

TEST(MeanUtilizationTest, AMissingOrUnreadableGpuMakesItUnreadable) {
  GpuReadings r = ParseUtilization("0, 3\n1, [N/A]\n");
  EXPECT_EQ(MeanUtilization(r, {0, 1}), std::nullopt);
  EXPECT_EQ(MeanUtilization(r, {0, 7}), std::nullopt);
  EXPECT_EQ(MeanUtilization(r, {}), std::nullopt);
  EXPECT_EQ(MeanUtilization({}, {0}), std::nullopt);
}

TEST(ApplySampleTest, IdleSinceIsTheFirstSampleBelowAndAtOrAboveClearsIt) {
  model::InstanceStatus st;
  EXPECT_TRUE(ApplySample(2, 5, "2026-01-01T00:00:00Z", &st));
  EXPECT_EQ(st.gpu_utilization, 2);
  EXPECT_EQ(st.idle_since, "2026-01-01T00:00:00Z");
  // Still below with the same value: nothing changes, idleSince keeps its first sample.
  EXPECT_FALSE(ApplySample(2, 5, "2026-01-01T00:00:30Z", &st));
  EXPECT_TRUE(ApplySample(4, 5, "2026-01-01T00:01:00Z", &st));
  EXPECT_EQ(st.idle_since, "2026-01-01T00:00:00Z");
  // At the threshold is busy.
  EXPECT_TRUE(ApplySample(5, 5, "2026-01-01T00:01:30Z", &st));
  EXPECT_EQ(st.gpu_utilization, 5);
  EXPECT_FALSE(st.idle_since.has_value());
  EXPECT_FALSE(ApplySample(5, 5, "2026-01-01T00:02:00Z", &st));
}

TEST(ApplySampleTest, AnUnreadableSampleCountsAsBusyAndKeepsTheLastValue) {
  model::InstanceStatus st;
  ASSERT_TRUE(ApplySample(1, 5, "2026-01-01T00:00:00Z", &st));
  EXPECT_TRUE(ApplySample(std::nullopt, 5, "2026-01-01T00:00:30Z", &st));
  EXPECT_EQ(st.gpu_utilization, 1);
  EXPECT_FALSE(st.idle_since.has_value());
  EXPECT_FALSE(ApplySample(std::nullopt, 5, "2026-01-01T00:01:00Z", &st));
  // Readable and below again: idle from this sample on, not from the first one.
  EXPECT_TRUE(ApplySample(1, 5, "2026-01-01T00:01:30Z", &st));
  EXPECT_EQ(st.idle_since, "2026-01-01T00:01:30Z");
}

TEST(ApplySampleTest, AnIdleSinceFromBeforeTheLastStartStartsAgain) {
  model::InstanceStatus st;
  st.gpu_utilization = 0;
  st.idle_since = "2026-01-01T00:00:00Z";
  st.started_at = "2026-01-01T05:00:00Z";  // stopped and started again since
  EXPECT_TRUE(ApplySample(0, 5, "2026-01-01T05:00:30Z", &st));
  EXPECT_EQ(st.idle_since, "2026-01-01T05:00:30Z");
}

// The shared fixture (engine_test_fixture.h) on 4 H100s with two drivers: "metered" (GPU
// metrics) and "unmetered", and a stand-in nvidia-smi; no engine runs.
class GpuSamplerTest : public EngineFixture {
 protected:
  std::string GpuFlag() override { return "h100:4"; }
  void RegisterDrivers() override {
    registry_.Register(std::make_unique<drivers::fake::FakeDriver>(
        "metered", drivers::Capabilities{.host_bound = true, .gpu_metrics = true}));
    registry_.Register(std::make_unique<drivers::fake::FakeDriver>("unmetered"));
  }

  void SetUp() override {
    EngineFixture::SetUp();
    if (HasFatalFailure()) return;
    // The stand-in: prints the file `smi-out`, exits with the code in `smi-rc` (0 without).
    script_ = dir_ + "/nvidia-smi";
    std::ofstream(script_) << "#!/bin/sh\nD='" << dir_ << "'\ncat \"$D/smi-out\" 2>/dev/null\n"
                           << "exit $(cat \"$D/smi-rc\" 2>/dev/null || echo 0)\n";
    ::chmod(script_.c_str(), 0755);
    Sample("");
  }

  void TearDown() override {
    sampler_.reset();
    EngineFixture::TearDown();
  }

  GpuSampler& Sampler() {
    if (!sampler_)
      sampler_ =
          std::make_unique<GpuSampler>(*store_, registry_, *gpus_, clock_, metrics_, launcher_,
                                       GpuSamplerOptions{.interval = 30s, .nvidia_smi = script_});
    return *sampler_;
  }

  // What the stand-in prints next, and its exit code.
  void Sample(const std::string& csv, int rc = 0) {
    std::ofstream(dir_ + "/smi-out", std::ios::trunc) << csv;
    std::ofstream(dir_ + "/smi-rc", std::ios::trunc) << rc;
  }

  // Profile `name` on a template of `driver`, with spec.lifecycle `lifecycle` (none when empty).
  void CreateProfile(const std::string& name, const std::string& driver,
                     json::object lifecycle = {}) {
    CreateVersioned("EnvironmentTemplate", name + "-tmpl",
                    json::object{{"driver", driver}, {driver, json::object{}}});
    json::object spec{{"templateRef", json::object{{"name", name + "-tmpl"}}},
                      {"resources", json::object{{"gpu", json::object{{"count", 1}}}}}};
    if (!lifecycle.empty()) spec["lifecycle"] = std::move(lifecycle);
    CreateVersioned("ComputeProfile", name, std::move(spec));
  }

  // A deployed instance on `profile` holding GPUs `indices` of this host.
  void CreateDeployed(const std::string& name, const std::string& profile,
                      const std::vector<int>& indices, const std::string& phase = "Success") {
    json::array gpus;
    for (int i : indices) gpus.push_back(json::string(std::to_string(i)));
    json::object o{
        {"apiVersion", "paas.gantry.dev/v1"},
        {"kind", "ComputeInstance"},
        {"metadata",
         json::object{
             {"name", name}, {"namespace", "p"}, {"uid", name + "-uid"}, {"generation", 1}}},
        {"spec", json::object{{"profileRef", json::object{{"name", profile}}}}},
        {"status", json::object{{"phase", phase},
                                {"profileRevision", 1},
                                {"templateRevision", 1},
                                {"gpus", gpus},
                                {"startedAt", FormatRfc3339(clock_.Now())}}}};
    Commit({store::Write::Op::kCreate, "ComputeInstance", o, 0, 0});
    EXPECT_TRUE(gpus_->Restore("p/" + name + "/" + name + "-uid", indices).empty());
  }

  static int64_t Util(const json::object& i) { return GetInt(i, "status.gpuUtilization", -1); }
  static std::string IdleSince(const json::object& i) { return GetString(i, "status.idleSince"); }
  static int64_t Version(const json::object& i) {
    return std::stoll(GetString(i, "metadata.resourceVersion"));
  }

  std::string script_;
  drivers::FakeProcessLauncher launcher_;
  std::unique_ptr<GpuSampler> sampler_;
};

TEST_F(GpuSamplerTest, RunsTheQueryThroughTheLauncher) {
  Sample("0, 10\n1, 20\n2, 30\n3, 40\n");
  Sampler().SampleOnce();
  ASSERT_EQ(launcher_.started().size(), 1u);
  EXPECT_EQ(launcher_.started()[0].argv,
            (std::vector<std::string>{script_, "--query-gpu=index,utilization.gpu",
                                      "--format=csv,noheader,nounits"}));
  const std::string m = metrics_.Render();
  EXPECT_NE(m.find("gantry_gpu_utilization{gpu=\"0\"} 10"), std::string::npos) << m;
  EXPECT_NE(m.find("gantry_gpu_utilization{gpu=\"3\"} 40"), std::string::npos) << m;
  EXPECT_EQ(m.find("gantry_gpu_samples_failed_total 1"), std::string::npos) << m;
}

TEST_F(GpuSamplerTest, IdleBelowTheProfilesThresholdThenBusyClearsIt) {
  CreateProfile(
      "nb", "metered",
      json::object{{"idle", json::object{{"gpuUtilizationBelow", 10}, {"after", "30m"}}}});
  CreateDeployed("a", "nb", {0, 1});
  Sample("0, 3\n1, 14\n2, 99\n3, 99\n");  // mean 8.5 -> 9 < 10
  const std::string first = FormatRfc3339(clock_.Now());
  SampleReport r = Sampler().SampleOnce();
  EXPECT_TRUE(r.read);
  EXPECT_EQ(r.instances, 1);
  EXPECT_EQ(r.written, 1);
  json::object a = Instance("a");
  EXPECT_EQ(Util(a), 9);
  EXPECT_EQ(IdleSince(a), first);

  // The same again, later: nothing is written.
  clock_.Advance(30s);
  EXPECT_EQ(Sampler().SampleOnce().written, 0);
  EXPECT_EQ(Version(Instance("a")), Version(a));

  // Busy: idleSince goes.
  Sample("0, 10\n1, 10\n");
  EXPECT_EQ(Sampler().SampleOnce().written, 1);
  a = Instance("a");
  EXPECT_EQ(Util(a), 10);
  EXPECT_EQ(IdleSince(a), "");
  EXPECT_FALSE(a.at("status").as_object().contains("idleSince")) << json::serialize(a);
}

TEST_F(GpuSamplerTest, WithoutAnIdlePolicyFivePercentIsTheThreshold) {
  CreateProfile("plain", "metered");
  CreateDeployed("a", "plain", {2});
  CreateDeployed("b", "plain", {3});
  Sample("2, 4\n3, 5\n");
  EXPECT_EQ(Sampler().SampleOnce().written, 2);
  EXPECT_EQ(Util(Instance("a")), 4);
  EXPECT_EQ(IdleSince(Instance("a")), FormatRfc3339(clock_.Now()));
  EXPECT_EQ(Util(Instance("b")), 5);
  EXPECT_EQ(IdleSince(Instance("b")), "");
}

TEST_F(GpuSamplerTest, AnUnreadableSampleCountsAsBusy) {
  CreateProfile("plain", "metered");
  CreateDeployed("a", "plain", {0, 1});
  Sample("0, 0\n1, 0\n2, 50\n3, 50\n");
  ASSERT_EQ(Sampler().SampleOnce().written, 1);
  ASSERT_NE(IdleSince(Instance("a")), "");

  // One of its GPUs [N/A]: busy, the last value stays.
  Sample("0, 0\n1, [N/A]\n2, 50\n3, 50\n");
  EXPECT_EQ(Sampler().SampleOnce().written, 1);
  EXPECT_EQ(IdleSince(Instance("a")), "");
  EXPECT_EQ(Util(Instance("a")), 0);
  EXPECT_NE(metrics_.Render().find("gantry_gpu_samples_failed_total 1"), std::string::npos);

  // Idle again, then nvidia-smi fails (exit 9), then an index is missing.
  Sample("0, 0\n1, 0\n2, 50\n3, 50\n");
  Sampler().SampleOnce();
  ASSERT_NE(IdleSince(Instance("a")), "");
  Sample("", 9);
  EXPECT_FALSE(Sampler().SampleOnce().read);
  EXPECT_EQ(IdleSince(Instance("a")), "");
  Sample("0, 0\n1, 0\n2, 50\n3, 50\n");
  Sampler().SampleOnce();
  ASSERT_NE(IdleSince(Instance("a")), "");
  Sample("0, 0\n2, 50\n3, 50\n");
  Sampler().SampleOnce();
  EXPECT_EQ(IdleSince(Instance("a")), "");
  EXPECT_NE(metrics_.Render().find("gantry_gpu_samples_failed_total 3"), std::string::npos)
      << metrics_.Render();
}

TEST_F(GpuSamplerTest, ANvidiaSmiThatCannotStartCountsAsBusy) {
  CreateProfile("plain", "metered");
  CreateDeployed("a", "plain", {0});
  Sample("0, 0\n");
  ASSERT_EQ(Sampler().SampleOnce().written, 1);
  launcher_.FailWith(absl::UnavailableError("no more processes"));
  SampleReport r = Sampler().SampleOnce();
  EXPECT_FALSE(r.read);
  EXPECT_EQ(r.written, 1);
  EXPECT_EQ(IdleSince(Instance("a")), "");
  EXPECT_EQ(Util(Instance("a")), 0);
}

TEST_F(GpuSamplerTest, OnlyRunningInstancesOfDriversWithGpuMetrics) {
  CreateProfile("plain", "metered");
  CreateProfile("other", "unmetered");
  CreateDeployed("metered", "plain", {0});
  CreateDeployed("unmetered", "other", {1});
  CreateDeployed("deploying", "plain", {2}, "InProgress");
  const int64_t before = Version(Instance("unmetered"));
  Sample("0, 0\n1, 0\n2, 0\n3, 0\n");
  SampleReport r = Sampler().SampleOnce();
  EXPECT_EQ(r.instances, 1);
  EXPECT_EQ(r.written, 1);
  EXPECT_EQ(Version(Instance("unmetered")), before);
  EXPECT_EQ(Util(Instance("unmetered")), -1);
  EXPECT_EQ(Util(Instance("deploying")), -1);
  EXPECT_EQ(Util(Instance("metered")), 0);
}

TEST_F(GpuSamplerTest, AnInstanceReplacedUnderTheSameNameIsLeftAlone) {
  CreateProfile("plain", "metered");
  CreateDeployed("a", "plain", {0});
  gpus_->Release("p/a/a-uid");
  EXPECT_TRUE(gpus_->Restore("p/a/an-older-uid", {0}).empty());
  Sample("0, 0\n");
  EXPECT_EQ(Sampler().SampleOnce().written, 0);
  EXPECT_EQ(Util(Instance("a")), -1);
}

TEST_F(GpuSamplerTest, TheClockDrivesThePeriod) {
  CreateProfile("plain", "metered");
  CreateDeployed("a", "plain", {0});
  Sample("0, 1\n");
  Sampler().Start();
  ASSERT_TRUE(clock_.WaitForSleepers(1));
  EXPECT_TRUE(launcher_.started().empty());  // the first sample is one interval away
  clock_.Advance(30s);
  ASSERT_TRUE(clock_.WaitForSleepers(1));  // sampled, parked on the next period
  EXPECT_EQ(launcher_.started().size(), 1u);
  EXPECT_EQ(Util(Instance("a")), 1);
  EXPECT_EQ(IdleSince(Instance("a")), FormatRfc3339(clock_.Now()));
  Sample("0, 60\n");
  clock_.Advance(30s);
  ASSERT_TRUE(clock_.WaitForSleepers(1));
  EXPECT_EQ(launcher_.started().size(), 2u);
  EXPECT_EQ(Util(Instance("a")), 60);
  EXPECT_EQ(IdleSince(Instance("a")), "");
  Sampler().Stop();
}

}  // namespace
}  // namespace gantry::engine
