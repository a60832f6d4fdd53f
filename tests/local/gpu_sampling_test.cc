// GPU utilisation sampling against a real gantryd (issue 17 item 4, docs/gpu-sampling.md):
// `--gpus h100:8 --gpu-sample-interval 1s` with the stand-in nvidia-smi of tests/local first
// on gantryd's PATH, so the test sets what each GPU reports (this machine has no GPUs). A
// deployed local instance gets status.gpuUtilization and status.idleSince, a busy sample
// clears idleSince, and a sample that cannot be read ([N/A], a GPU left out, nvidia-smi
// failing) counts as busy while gpuUtilization keeps its value. Every wait polls a condition.
#include "gpu_standin.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
using local_test::JoinStrings;

using GpuSamplingTest = GpuStandinTest;

TEST_F(GpuSamplingTest, ADeployedInstanceGetsUtilisationAndIdleSince) {
  // GPUs 0 and 1 go to the instance (lowest free first); the others are busy and not its own.
  Report("0 0\n1 2\n2 90\n3 90\n4 90\n5 90\n6 90\n7 90\n");
  CreateLocalTemplate("plain", false);
  CreateLocalProfile("two", "plain", Gpu(2));
  api().CreateInstance("default", "nb", "two");
  Deploy("nb");
  json::object nb = WaitPhase("nb", "Success");
  ASSERT_EQ(JoinStrings(At(nb, "status.gpus")), "0,1") << json::serialize(nb);

  // Mean 1 % < 5 % (the threshold without an idle policy): idle since a first sample.
  nb = WaitUtil("nb", 1, true);
  const std::string since = Str(nb, "status.idleSince");
  // RFC 3339 in UTC as the other timestamps: 2026-12-02T01:48:40Z.
  EXPECT_TRUE(since.size() == 20 && since[10] == 'T' && since.back() == 'Z') << since;
  EXPECT_GE(since, Str(nb, "status.startedAt")) << json::serialize(nb);

  // Still idle at another low value: idleSince keeps its first sample.
  Report("0 4\n1 4\n2 90\n3 90\n4 90\n5 90\n6 90\n7 90\n");
  nb = WaitUtil("nb", 4, true);
  EXPECT_EQ(Str(nb, "status.idleSince"), since);

  // Busy: idleSince goes.
  Report("0 80\n1 60\n2 90\n3 90\n4 90\n5 90\n6 90\n7 90\n");
  WaitUtil("nb", 70, false);

  // The metrics show each GPU.
  Resp metrics = api().Get("/metrics");
  ASSERT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.raw.find("gantry_gpu_utilization{gpu=\"0\"} 80"), std::string::npos)
      << metrics.raw;
  EXPECT_NE(metrics.raw.find("gantry_gpu_utilization{gpu=\"7\"} 90"), std::string::npos);
}

TEST_F(GpuSamplingTest, AnUnreadableSampleCountsAsBusy) {
  const std::string others = "2 0\n3 0\n4 0\n5 0\n6 0\n7 0\n";
  Report("0 0\n1 0\n" + others);
  CreateLocalTemplate("plain", false);
  CreateLocalProfile("two", "plain", Gpu(2));
  api().CreateInstance("default", "nb", "two");
  Deploy("nb");
  WaitPhase("nb", "Success");
  WaitUtil("nb", 0, true);

  // One of its GPUs [N/A]: busy; the last utilisation stays.
  Report("0 0\n1 [N/A]\n" + others);
  WaitUtil("nb", 0, false);

  // Idle again, then one of its GPUs left out.
  Report("0 0\n1 0\n" + others);
  WaitUtil("nb", 0, true);
  Report("0 0\n" + others);
  WaitUtil("nb", 0, false);

  // Idle again, then nvidia-smi fails altogether.
  Report("0 0\n1 0\n" + others);
  WaitUtil("nb", 0, true);
  Fail();
  json::object nb = WaitUtil("nb", 0, false);
  EXPECT_EQ(Str(nb, "status.phase"), "Success") << json::serialize(nb);
  ASSERT_TRUE(PollUntil([&] {
    return api().Get("/metrics").raw.find("gantry_gpu_samples_failed_total") != std::string::npos;
  }));
}

}  // namespace
}  // namespace gantry::testing
