// Fair share (issue 18, API.md "Sharing GPUs fairly") against a real gantryd with
// `--gpus h100:4` and local workloads: two projects guaranteed 2 of the 4 GPUs each. A borrows
// all four; B deploys one, so A's newest (preemptible) instance is preempted (SIGTERM, its
// profile's grace period, then the kill), goes back to Waiting with reason Preempted and an
// Event naming who reclaimed it, and B runs; B's third waits (A keeps its guarantee) with its
// queue position; once B's instance is destroyed, A's preempted one starts again by itself.
// Bad guarantees and grace periods are refused with 422 naming the field.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "local_fixture.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;

class FairShareTest : public LocalTest {
 protected:
  std::string Gpus() override { return "h100:4"; }

  json::object ProjectBody(const std::string& name, json::object quota) {
    return json::object{{"apiVersion", "paas.gantry.dev/v1"},
                        {"kind", "Project"},
                        {"metadata", {{"name", name}}},
                        {"spec", {{"displayName", "Team " + name}, {"quota", std::move(quota)}}}};
  }

  json::object ProfileBody(const std::string& name, json::object scheduling) {
    return json::object{{"apiVersion", "paas.gantry.dev/v1"},
                        {"kind", "ComputeProfile"},
                        {"metadata", {{"name", name}}},
                        {"spec",
                         {{"displayName", "Profile " + name},
                          {"templateRef", {{"name", "job"}}},
                          {"resources", Gpu(1)},
                          {"scheduling", std::move(scheduling)}}}};
  }

  // Project `name`: at most 4 h100, 2 guaranteed; a local template and a preemptible
  // 1-GPU profile "share" with a 1 s grace period.
  void CreateTeam(const std::string& name) {
    api().MustCreate(ClusterPath("projects"),
                     ProjectBody(name, json::object{{"gpus", {{"h100", 4}}},
                                                    {"guaranteedGpus", {{"h100", 2}}}}));
    CreateLocalTemplate("job", /*http=*/false, {}, name);
    api().MustCreate(
        NsPath(name, "computeprofiles"),
        ProfileBody("share", json::object{{"preemptible", true}, {"preemptionGracePeriod", "1s"}}));
  }

  json::object Run(const std::string& ns, const std::string& name) {
    api().CreateInstance(ns, name, "share");
    Deploy(name, ns);
    return WaitPhase(name, "Success", ns);
  }

  // Back in the queue after its stop: Waiting, reason Preempted, its GPUs released.
  static bool Preempted(const json::object& o) {
    return Str(o, "status.phase") == "Waiting" && Str(o, "status.reason") == "Preempted" &&
           At(o, "status.gpus").is_null() && Str(o, "status.action") == "start";
  }

  // "guaranteed used borrowed" of project `ns`'s h100 GPUs in /metrics (gantry_project_gpus,
  // engine/share_monitor.h), and the preemptions of its instances, once they read `want` (the
  // share monitor's next look after a change updates them).
  std::string Share(const std::string& ns) {
    const std::string text = api().Get("/metrics").raw;
    auto sample = [&](const std::string& series) {
      const size_t at = text.find("\n" + series + " ");
      if (at == std::string::npos) return std::string("-");
      const size_t from = at + series.size() + 2;
      return text.substr(from, text.find('\n', from) - from);
    };
    std::string out;
    for (const char* kind : {"guaranteed", "used", "borrowed"})
      out += sample("gantry_project_gpus{project=\"" + ns + "\",gpu_type=\"h100\",kind=\"" + kind +
                    "\"}") +
             " ";
    return out + "preempted " +
           sample("gantry_preemptions_total{project=\"" + ns + "\",gpu_type=\"h100\"}");
  }
  void ExpectShare(const std::string& ns, const std::string& want) {
    std::string got;
    EXPECT_TRUE(PollUntil([&] { return (got = Share(ns)) == want; }))
        << "project " << ns << ": " << got << ", want " << want;
  }

  std::vector<json::object> EventsOf(const std::string& ns, const std::string& name) {
    Resp r = api().Get("/api/v1/namespaces/" + ns + "/events?fieldSelector=involvedObject.name%3D" +
                       name);
    EXPECT_EQ(r.status, 200) << r.raw;
    std::vector<json::object> out;
    if (r.status == 200)
      for (const auto& e : r.obj().at("items").as_array()) out.push_back(e.as_object());
    return out;
  }
};

TEST_F(FairShareTest, OwnerReclaimsItsGuaranteeAndThePreemptedInstanceComesBack) {
  CreateTeam("a");
  CreateTeam("b");
  for (const char* n : {"a1", "a2", "a3", "a4"}) {
    json::object o = Run("a", n);
    const std::string want =
        std::string(n) == "a1" || std::string(n) == "a2" ? "Guaranteed" : "Borrowed";
    EXPECT_EQ(Str(o, "status.admission"), want) << n << ": " << json::serialize(o);
  }
  const int a4_pid = DriverPid(Get("a4", "a"));
  ASSERT_GT(a4_pid, 0);
  // Prometheus: A holds all 4 (2 of them borrowed), B nothing; nobody preempted yet.
  ExpectShare("a", "2 4 2 preempted -");
  ExpectShare("b", "2 0 0 preempted -");

  // B asks for its guaranteed share: A's newest borrowed instance gives its GPU back.
  api().CreateInstance("b", "b1", "share");
  Deploy("b1", "b");
  json::object b1 = WaitPhase("b1", "Success", "b");
  EXPECT_EQ(Str(b1, "status.admission"), "Guaranteed");
  json::object a4 = WaitInstance("a4", Preempted, "preempted (Waiting, Preempted, no GPUs)", "a");
  EXPECT_EQ(Str(a4, "status.phase"), "Waiting") << json::serialize(a4);
  EXPECT_TRUE(At(a4, "status.gpus").is_null()) << json::serialize(a4);
  EXPECT_TRUE(PollUntil([&] { return local_test::ProcessesInGroup(a4_pid).empty(); }));
  for (const char* n : {"a1", "a2", "a3"}) EXPECT_EQ(Str(Get(n, "a"), "status.phase"), "Success");
  ExpectShare("a", "2 3 1 preempted 1");
  ExpectShare("b", "2 1 0 preempted -");
  std::vector<json::object> events;
  for (auto& e : EventsOf("a", "a4"))
    if (Str(e, "reason") == "Preempted") events.push_back(std::move(e));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(Str(events[0], "reason"), "Preempted");
  EXPECT_NE(Str(events[0], "message").find("instance b1 of project b reclaimed them"),
            std::string::npos)
      << Str(events[0], "message");

  // B's second is within its guarantee too (a3 goes); its third is beyond: it waits, A keeps
  // its guarantee.
  Run("b", "b2");
  WaitInstance("a3", Preempted, "preempted (Waiting, Preempted, no GPUs)", "a");
  api().CreateInstance("b", "b3", "share");
  Deploy("b3", "b");
  json::object b3 = WaitInstance(
      "b3", [](const json::object& o) { return Int(o, "status.queuePosition", 0) > 0; },
      "a queue position", "b");
  EXPECT_EQ(Str(b3, "status.phase"), "Waiting");
  EXPECT_EQ(Str(b3, "status.reason"), "InsufficientCapacity");
  // Both projects hold their guarantee: age decides (a4's and a3's starts are older).
  EXPECT_EQ(Int(b3, "status.queuePosition"), 3) << json::serialize(b3);
  EXPECT_EQ(Str(b3, "status.message"),
            "3rd for h100: 0 of 4 free, needs 1, project b is over its guarantee (2 held, 2 "
            "guaranteed)");
  for (const char* n : {"a1", "a2"}) EXPECT_EQ(Str(Get(n, "a"), "status.phase"), "Success");
  json::object a3 = Get("a3", "a");
  EXPECT_EQ(Int(a3, "status.queuePosition"), 2) << json::serialize(a3);
  ExpectShare("a", "2 2 0 preempted 2");  // both hold their guarantee, nobody borrows
  ExpectShare("b", "2 2 0 preempted -");

  // b3 gives up; when b1 goes, A's first preempted instance starts again by itself.
  ASSERT_EQ(Action("b3", "destroy", "b").status, 202);
  WaitPhase("b3", "NotDeployed", "b");
  ASSERT_EQ(Action("b1", "destroy", "b").status, 202);
  json::object back = WaitPhase("a4", "Success", "a");
  EXPECT_EQ(Str(back, "status.admission"), "Borrowed");
  EXPECT_FALSE(At(back, "status.queuePosition").is_int64()) << json::serialize(back);
  EXPECT_EQ(Str(Get("a3", "a"), "status.phase"), "Waiting");
}

TEST_F(FairShareTest, BadGuaranteesAndGracePeriodsAreRefusedNamingTheField) {
  Resp over = api().Post(ClusterPath("projects"),
                         ProjectBody("over", json::object{{"gpus", {{"h100", 2}}},
                                                          {"guaranteedGpus", {{"h100", 3}}}}));
  EXPECT_EQ(over.status, 422) << over.raw;
  EXPECT_EQ(over.cause_fields(), std::vector<std::string>{"spec.quota.guaranteedGpus.h100"});
  EXPECT_EQ(over.cause_message("spec.quota.guaranteedGpus.h100"),
            "must not be above spec.quota.gpus.h100 (2): a project cannot be guaranteed more "
            "than it may hold; it is 3");
  Resp negative = api().Post(ClusterPath("projects"),
                             ProjectBody("neg", json::object{{"guaranteedGpus", {{"h100", -1}}}}));
  EXPECT_EQ(negative.status, 422) << negative.raw;
  EXPECT_EQ(negative.cause_fields(), std::vector<std::string>{"spec.quota.guaranteedGpus.h100"});
  // Raising a guarantee above the cap later is refused the same way.
  CreateTeam("t");
  Resp patched =
      api().Patch(ClusterPath("projects", "t"),
                  json::object{{"spec", {{"quota", {{"guaranteedGpus", {{"h100", 5}}}}}}}});
  EXPECT_EQ(patched.status, 422) << patched.raw;
  Resp grace = api().Post(NsPath("t", "computeprofiles"),
                          ProfileBody("slow", json::object{{"preemptionGracePeriod", "2h"}}));
  EXPECT_EQ(grace.status, 422) << grace.raw;
  EXPECT_EQ(grace.cause_fields(),
            std::vector<std::string>{"spec.scheduling.preemptionGracePeriod"});
  Resp word = api().Post(NsPath("t", "computeprofiles"),
                         ProfileBody("word", json::object{{"preemptionGracePeriod", "soon"}}));
  EXPECT_EQ(word.status, 422) << word.raw;
  Resp type = api().Post(NsPath("t", "computeprofiles"),
                         ProfileBody("type", json::object{{"priority", "high"}}));
  EXPECT_EQ(type.status, 422) << type.raw;
  EXPECT_EQ(type.cause_fields(), std::vector<std::string>{"spec.scheduling.priority"});
}

}  // namespace
}  // namespace gantry::testing
