// Idle reclaim against a real gantryd (issue 17 item 4, docs/lifecycle-controller.md): the
// local driver's GPUs sampled every second through the stand-in nvidia-smi (gpu_standin.h),
// a profile whose idle policy stops an instance after 2s below 5 %. An idle instance is
// stopped with reason Idle after an IdleSoon Warning event, the stop is audited as done by
// system:lifecycle and its GPU goes back to the node; a busy instance beside it keeps
// running; while nvidia-smi cannot be read (it exits 1) an instance whose GPU would read 0 is
// never stopped, and it is once readable idle samples have lasted 2s.
//
// No sleeps: each step waits for a condition (a phase, a count of failed samples in
// /metrics) with PollUntil, whose deadline only bounds a failure.
#include <gmock/gmock.h>

#include "gpu_standin.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
using local_test::Assignments;
using local_test::GetNode;
using local_test::JoinStrings;
using ::testing::HasSubstr;

class IdleReclaimTest : public GpuStandinTest {
 protected:
  void SetUp() override {
    GpuStandinTest::SetUp();
    if (HasFatalFailure()) return;
    CreateLocalTemplate("plain", false);
    api().MustCreate(NsPath("default", "computeprofiles"),
                     json::object{{"apiVersion", "paas.gantry.dev/v1"},
                                  {"kind", "ComputeProfile"},
                                  {"metadata", {{"name", "idle2s"}}},
                                  {"spec",
                                   {{"displayName", "Stops after 2s idle"},
                                    {"templateRef", {{"name", "plain"}}},
                                    {"resources", Gpu(1)},
                                    {"lifecycle", json::parse(R"({"idle": {"gpuUtilizationBelow": 5,
                                                  "after": "2s", "action": "Stop"}})")}}}});
  }

  json::object DeployToSuccess(const std::string& name) {
    api().CreateInstance("default", name, "idle2s");
    Deploy(name);
    return WaitPhase(name, "Success");
  }

  int StopRuns(const std::string& name) {
    int n = 0;
    for (const auto& r : RunsOf(name)) n += Str(r, "spec.action") == "stop" ? 1 : 0;
    return n;
  }

  // gantry_gpu_samples_failed_total in /metrics (-1 before the first failure is counted).
  int64_t FailedSamples() {
    const std::string raw = api().Get("/metrics").raw;
    const std::string name = "\ngantry_gpu_samples_failed_total ";
    size_t at = raw.find(name);
    if (at == std::string::npos) return -1;
    return std::atoll(raw.c_str() + at + name.size());
  }
};

TEST_F(IdleReclaimTest, AnIdleInstanceIsStoppedAfterAWarningABusyOneKeepsRunning) {
  // GPU 0 (the first deploy's) is busy, GPU 1 (the second's) idle.
  Report("0 80\n1 0\n2 0\n3 0\n4 0\n5 0\n6 0\n7 0\n");
  json::object busy = DeployToSuccess("busy");
  ASSERT_EQ(JoinStrings(At(busy, "status.gpus")), "0") << json::serialize(busy);
  WaitUtil("busy", 80, false);
  json::object idle = DeployToSuccess("idle");
  ASSERT_EQ(JoinStrings(At(idle, "status.gpus")), "1") << json::serialize(idle);

  json::object stopped = WaitPhase("idle", "Stopped");
  EXPECT_EQ(Str(stopped, "status.reason"), "Idle") << json::serialize(stopped);
  EXPECT_EQ(StopRuns("idle"), 1);
  EXPECT_FALSE(HasIdleSince(stopped));
  EXPECT_TRUE(At(stopped, "status.gpus").is_null() || JoinStrings(At(stopped, "status.gpus")) == "")
      << json::serialize(stopped);

  bool warned = false;
  for (const auto& e : EventsOf("idle"))
    if (Str(e, "reason") == "IdleSoon") {
      warned = true;
      EXPECT_EQ(Str(e, "type"), "Warning");
      EXPECT_EQ(Str(e, "involvedObject.uid"), Str(stopped, "metadata.uid"));
      EXPECT_THAT(Str(e, "message"), HasSubstr("the instance will be stopped at "));
      EXPECT_THAT(Str(e, "message"), HasSubstr("GPUs idle 2s (below 5% utilisation)"));
    }
  EXPECT_TRUE(warned) << "no IdleSoon event";

  std::vector<json::object> audit;
  ASSERT_TRUE(PollUntil([&] { return !(audit = SystemAudit("idle")).empty(); }));
  ASSERT_EQ(audit.size(), 1u);
  EXPECT_EQ(Str(audit[0], "verb"), "stop");
  EXPECT_EQ(Str(audit[0], "objectRef.resource"), "computeinstances");
  EXPECT_EQ(Str(audit[0], "message"), "Idle: GPUs idle 2s (below 5% utilisation)");

  // Its GPU is free again; the busy one's is still held.
  std::map<int64_t, std::string> gpus = Assignments(GetNode(api()));
  EXPECT_EQ(gpus[1], "");
  EXPECT_THAT(gpus[0], HasSubstr("busy"));

  // The busy instance ran longer than the idle one and is still running, never idle.
  busy = Get("busy");
  EXPECT_EQ(Str(busy, "status.phase"), "Success") << json::serialize(busy);
  EXPECT_FALSE(HasIdleSince(busy));
  EXPECT_EQ(StopRuns("busy"), 0);
  EXPECT_TRUE(SystemAudit("busy").empty());
}

TEST_F(IdleReclaimTest, AnUnreadableSampleCountsAsBusy) {
  ExitWith(1);
  json::object nb = DeployToSuccess("nb");
  // Failed samples spanning more than the 2s idle policy after the instance started.
  int64_t before = 0;
  ASSERT_TRUE(PollUntil([&] { return (before = FailedSamples()) >= 0; }));
  ASSERT_TRUE(PollUntil([&] { return FailedSamples() >= before + 4; }));
  nb = Get("nb");
  EXPECT_EQ(Str(nb, "status.phase"), "Success") << json::serialize(nb);
  EXPECT_FALSE(HasIdleSince(nb)) << json::serialize(nb);
  EXPECT_EQ(StopRuns("nb"), 0);

  // Readable and idle: stopped once that has lasted 2s.
  Report("0 0\n1 0\n2 0\n3 0\n4 0\n5 0\n6 0\n7 0\n");
  json::object stopped = WaitPhase("nb", "Stopped");
  EXPECT_EQ(Str(stopped, "status.reason"), "Idle");
}

}  // namespace
}  // namespace gantry::testing
