// Host-bound runs with several replicas (PostgreSQL): two gantryd on one database with
// different --host-id, each with its own (configured) GPUs. A local instance deployed by
// replica A belongs to host-a: a destroy posted to replica B waits for a replica on host-a,
// while B goes on claiming the runs it may run, and A's return finishes it. Fair share with
// both replicas up: one deploy within its guarantee that fits nowhere preempts the fewest
// borrowing instances on one host only, each once (both replicas see the request).
#include <gtest/gtest.h>

#include <map>

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

// Both replicas run, each with its own two h100 (the same GPU indices 0 and 1 on both hosts).
class ReplicasFairShareTest : public TwoReplicaTest<LocalTest> {
 protected:
  std::string Gpus() override { return "h100:2"; }
  std::vector<std::string> OneReplicaArgs(int index) override {
    return {"--host-id", index == 0 ? "host-a" : "host-b"};
  }

  // Project `ns` (at most 4 h100, `guaranteed` of them guaranteed) with a local template and
  // a profile "p" of `gpus` h100, preemptible or not, with a 1 s grace period.
  void CreateTeam(const std::string& ns, int guaranteed, int gpus, bool preemptible) {
    json::object quota{{"gpus", {{"h100", 4}}}};
    if (guaranteed > 0) quota["guaranteedGpus"] = {{"h100", guaranteed}};
    api().MustCreate(ClusterPath("projects"),
                     json::object{{"metadata", {{"name", ns}}}, {"spec", {{"quota", quota}}}});
    CreateLocalTemplate("job", /*http=*/false, {}, ns);
    api().MustCreate(
        NsPath(ns, "computeprofiles"),
        json::object{
            {"metadata", {{"name", "p"}}},
            {"spec",
             {{"templateRef", {{"name", "job"}}},
              {"resources", Gpu(gpus)},
              {"scheduling", {{"preemptible", preemptible}, {"preemptionGracePeriod", "1s"}}}}}});
  }

  // gantry_preemptions_total of project `ns` on one replica (0 when never counted).
  static int64_t Preemptions(Api& on, const std::string& ns) {
    const std::string text = on.Get("/metrics").raw;
    const std::string series =
        "\ngantry_preemptions_total{project=\"" + ns + "\",gpu_type=\"h100\"} ";
    const size_t at = text.find(series);
    return at == std::string::npos ? 0 : std::stoll(text.substr(at + series.size()));
  }
};

TEST_F(ReplicasFairShareTest, AReclaimPreemptsTheFewestOnOneHostEachOnce) {
  CreateTeam("vision", 0, 1, /*preemptible=*/true);  // all it holds is borrowed
  CreateTeam("nlp", 2, 2, /*preemptible=*/false);
  // vision borrows all four GPUs: two on each host (each replica claims what fits its own).
  const std::vector<std::string> borrowers = {"v1", "v2", "v3", "v4"};
  for (const auto& n : borrowers) {
    api().CreateInstance("vision", n, "p");
    Deploy(n, "vision");
  }
  std::map<std::string, std::string> host_of;
  for (const auto& n : borrowers)
    host_of[n] = Str(WaitPhase(n, "Success", "vision"), "status.host");
  std::map<std::string, int> per_host;
  for (const auto& [n, host] : host_of) ++per_host[host];
  ASSERT_EQ(per_host, (std::map<std::string, int>{{"host-a", 2}, {"host-b", 2}}));

  // nlp asks for its guarantee, 2 GPUs on one host: both replicas see the request, and only
  // the two borrowers of one host give their GPUs back.
  api().CreateInstance("nlp", "n1", "p");
  Deploy("n1", "nlp");
  const std::string n1_host = Str(WaitPhase("n1", "Success", "nlp"), "status.host");
  std::vector<std::string> preempted, running;
  for (const auto& n : borrowers) {
    json::object o = Get(n, "vision");
    (Str(o, "status.reason") == "Preempted" ? preempted : running).push_back(n);
    if (Str(o, "status.reason") == "Preempted") {
      EXPECT_EQ(host_of[n], n1_host) << n << " was preempted on the other host";
      EXPECT_EQ(Str(o, "status.phase"), "Waiting") << json::serialize(o);
    } else {
      EXPECT_EQ(Str(o, "status.phase"), "Success") << json::serialize(o);
    }
  }
  EXPECT_EQ(preempted.size(), 2u) << "running: " << running.size();
  // Counted once per victim, across both replicas; one Preempted event each.
  Api b(second_->base_url());
  EXPECT_EQ(Preemptions(api(), "vision") + Preemptions(b, "vision"), 2);
  for (const auto& n : preempted) {
    Resp r = api().Get("/api/v1/namespaces/vision/events?fieldSelector=involvedObject.name%3D" + n);
    int events = 0;
    for (const auto& e : r.obj().at("items").as_array())
      events += Str(e.as_object(), "reason") == "Preempted";
    EXPECT_EQ(events, 1) << n << ": " << r.raw;
  }
}

// The overcommit condition sums both hosts (engine/fleet_gpus.h): 2 + 2 h100.
TEST_F(ReplicasFairShareTest, GuaranteesAreComparedWithEveryReplicasGpus) {
  auto condition = [&](const std::string& want_status) {
    json::object c;
    EXPECT_TRUE(PollUntil([&] {
      Resp r = api().Get(ClusterPath("projects", "nlp"));
      const json::value cs = At(r.obj(), "status.conditions");
      if (!cs.is_array()) return false;
      for (const auto& v : cs.get_array())
        if (Str(v.as_object(), "type") == "GuaranteesOvercommitted") c = v.as_object();
      return Str(c, "status") == want_status;
    })) << json::serialize(c);
    return c;
  };
  CreateTeam("nlp", 3, 1, /*preemptible=*/false);
  CreateTeam("vision", 2, 1, /*preemptible=*/false);
  json::object over = condition("True");
  EXPECT_NE(Str(over, "message")
                .find("sum to 5 over 2 projects (nlp 3, vision 2) but the fleet "
                      "has 4 h100 GPUs"),
            std::string::npos)
      << Str(over, "message");
  // 3 + 1 fit the fleet (not one host's 2): the condition clears.
  Resp patched =
      api().Patch(ClusterPath("projects", "vision"),
                  json::object{{"spec", {{"quota", {{"guaranteedGpus", {{"h100", 1}}}}}}}});
  ASSERT_EQ(patched.status, 200) << patched.raw;
  EXPECT_EQ(Str(condition("False"), "reason"), "WithinCapacity");
}

}  // namespace
}  // namespace gantry::testing
