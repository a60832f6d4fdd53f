// Host-bound runs with several replicas (PostgreSQL): two gantryd on one database with
// different --host-id, each with its own (configured) GPUs. A local instance deployed by
// replica A belongs to host-a: a destroy posted to replica B waits for a replica on host-a,
// while B goes on claiming the runs it may run, and A's return finishes it.
#include <gtest/gtest.h>

#include "gantryd_test.h"
#include "local_fixture.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
using local_test::Assignments;
using local_test::GetNode;

// Replica A (gantryd_) on host-a, B (second_) on host-b; B starts when the test says.
class ReplicasLocalTest : public TwoReplicaTest<LocalTest> {
 protected:
  std::string Gpus() override { return "h100:2"; }
  std::vector<std::string> OneReplicaArgs(int index) override {
    return {"--host-id", index == 0 ? "host-a" : "host-b"};
  }
  bool StartSecondReplica() override { return false; }
};

TEST_F(ReplicasLocalTest, ALocalInstanceStaysWithTheHostThatDeployedIt) {
  CreateLocalTemplate("wl", /*http=*/false);
  CreateLocalProfile("one-gpu", "wl", json::object{{"gpu", {{"type", "h100"}, {"count", 1}}}});
  api().CreateInstance("default", "a1", "one-gpu");
  // Only replica A runs: it deploys a1 on host-a.
  ASSERT_EQ(Action("a1", "deploy").status, 202);
  json::object a1 = WaitPhase("a1", "Success");
  EXPECT_EQ(Str(a1, "status.host"), "host-a");
  EXPECT_EQ(Assignments(GetNode(api()))[0], "default/a1");

  // A stops (its workload keeps running); B starts and must not take a1's workload or GPU.
  EXPECT_EQ(gantryd_->Terminate(), 0);
  ASSERT_TRUE(second_->Start().ok());
  Api b(second_->base_url());
  for (const auto& [index, holder] : Assignments(GetNode(b))) EXPECT_EQ(holder, "") << index;

  // Destroy through B: queued for host-a. B skips it but deploys b1, queued after it.
  ASSERT_EQ(b.Post(NsPath("default", "computeinstances", "a1") + "/destroy", json::object{}).status,
            202);
  b.CreateInstance("default", "b1", "one-gpu");
  ASSERT_EQ(b.Post(NsPath("default", "computeinstances", "b1") + "/deploy", json::object{}).status,
            202);
  json::object b1;
  ASSERT_TRUE(PollUntil([&] {
    Resp r = b.Get(NsPath("default", "computeinstances", "b1"));
    b1 = r.obj();
    return Str(b1, "status.phase") == "Success";
  })) << second_->Log();
  EXPECT_EQ(Str(b1, "status.host"), "host-b");
  // The pass that claimed b1 looked at a1's older destroy run and left it.
  Resp run = b.Get(NsPath("default", "runs", "a1-2"));
  EXPECT_EQ(Str(run.obj(), "status.phase"), "Queued") << run.raw;
  EXPECT_EQ(Str(b.Get(NsPath("default", "computeinstances", "a1")).obj(), "status.phase"),
            "Waiting");

  // A comes back: it destroys a1 and frees its GPU.
  ASSERT_TRUE(gantryd_->Restart().ok());
  Reconnect();
  WaitPhase("a1", "NotDeployed");
  EXPECT_EQ(Str(GetRun("a1-2"), "status.phase"), "Succeeded");
  // The engine frees GPUs right after it records the end of the destroy.
  EXPECT_TRUE(PollUntil([&] {
    for (const auto& [index, holder] : Assignments(GetNode(api())))
      if (!holder.empty()) return false;
    return true;
  }));
  // b1 is B's, untouched.
  EXPECT_EQ(Assignments(GetNode(b))[0], "default/b1");
  EXPECT_EQ(Str(b.Get(NsPath("default", "computeinstances", "b1")).obj(), "status.phase"),
            "Success");
  // B destroys its own instance.
  ASSERT_EQ(b.Post(NsPath("default", "computeinstances", "b1") + "/destroy", json::object{}).status,
            202);
  ASSERT_TRUE(PollUntil([&] {
    return Str(b.Get(NsPath("default", "computeinstances", "b1")).obj(), "status.phase") ==
           "NotDeployed";
  }));
}

}  // namespace
}  // namespace gantry::testing
