// GPU capacity and quotas (issue 6) against a real gantryd with `--gpus h100:8` and local
// workloads: 100 deploys racing for 8 GPUs (never a GPU twice, the rest queued first come
// first served), InsufficientCapacity with the numbers, Unschedulable at once, and project
// quotas (QuotaExceeded with its message; raising the quota lets the deploy start by itself).
#include <gtest/gtest.h>

#include <algorithm>
#include <latch>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "local_fixture.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
using local_test::Assignments;
using local_test::GetNode;
using local_test::Items;

constexpr char kFreeMessage[] = "needs 1 h100 GPU; 0 of 8 are free";
constexpr char kBehindMessage[] =
    "needs 1 h100 GPU; queued behind earlier deploys waiting for h100 GPUs";

// "MODIFIED Waiting"-style phase changes of a watch of one instance, repeats folded.
std::vector<std::string> PhaseChanges(const std::vector<json::object>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) {
    json::value obj = At(e, "object");
    if (!obj.is_object()) continue;
    std::string s = Str(e, "type") + " " + Str(obj.get_object(), "status.phase");
    if (out.empty() || out.back() != s) out.push_back(s);
  }
  return out;
}

class CapacityTest : public LocalTest {
 protected:
  void SetUp() override {
    LocalTest::SetUp();
    if (HasFatalFailure()) return;
    CreateLocalTemplate("job", /*http=*/false);
    CreateLocalProfile("one", "job", Gpu(1));
  }

  // All instances of `ns` by name (one page).
  std::map<std::string, json::object> Instances(const std::string& ns = "default") {
    Resp r = api().Get(NsPath(ns, "computeinstances") + "?limit=1000");
    EXPECT_EQ(r.status, 200) << r.raw;
    EXPECT_TRUE(r.meta("continue").empty()) << "the list was paged";
    std::map<std::string, json::object> out;
    for (auto& i : Items(r)) out[Str(i, "metadata.name")] = std::move(i);
    return out;
  }

  // The invariant, checked on one look at the instances and one at the node: no GPU index is
  // held by two deployed instances; every Success instance's GPUs (as many as its profile
  // asks) are assigned to it in the node view, and no others; no more than 8 are allocated.
  // Returns the Success instances' names.
  std::set<std::string> CheckNoGpuTwice(const std::string& ns = "default") {
    auto instances = Instances(ns);
    json::object node = GetNode(api());
    auto assigned = Assignments(node);
    std::map<std::string, std::string> holder;  // index -> instance
    std::set<std::string> success;
    for (const auto& [name, o] : instances) {
      std::string phase = Str(o, "status.phase");
      if (phase != "Success" && phase != "InProgress") continue;
      if (phase == "Success") success.insert(name);
      json::value gpus = At(o, "status.gpus");
      if (!gpus.is_array()) {
        EXPECT_NE(phase, "Success") << name << " is Success without GPUs: " << json::serialize(o);
        continue;
      }
      EXPECT_EQ(static_cast<int64_t>(gpus.get_array().size()), Int(o, "status.resources.gpu.count"))
          << json::serialize(o);
      for (const auto& g : gpus.get_array()) {
        std::string index(g.get_string());
        auto [it, fresh] = holder.emplace(index, name);
        EXPECT_TRUE(fresh) << "GPU " << index << " is held by " << it->second << " and by " << name;
        if (phase == "Success") {
          EXPECT_EQ(assigned[std::atoi(index.c_str())], ns + "/" + name)
              << "node view of GPU " << index << ": " << json::serialize(node);
        }
      }
    }
    EXPECT_LE(Int(node, "status.allocated.h100"), 8) << json::serialize(node);
    // The node assigns each Success instance exactly as many GPUs as it shows.
    std::map<std::string, int64_t> held;
    for (const auto& [index, owner] : assigned)
      if (!owner.empty()) ++held[owner];
    for (const auto& name : success)
      EXPECT_EQ(held[ns + "/" + name], Int(instances[name], "status.resources.gpu.count"))
          << name << " in " << json::serialize(node);
    return success;
  }
};

TEST_F(CapacityTest, HundredConcurrentDeploysNeverShareAGpuAndQueueFirstComeFirstServed) {
  constexpr int kDeploys = 100;
  std::vector<std::string> names;
  for (int i = 0; i < kDeploys; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "i%03d", i);
    names.push_back(name);
    api().CreateInstance("default", name, "one");
  }

  // All deploys at once, each on its own connection; remember the answers.
  struct Answer {
    std::string name;
    int status = 0;
    int64_t rv = 0;  // the commit that queued the run: the order deploys were accepted
    std::string run;
  };
  std::vector<Answer> answers(kDeploys);
  std::latch go(kDeploys);
  std::vector<std::thread> threads;
  const std::string base = gantryd_->base_url();
  for (int i = 0; i < kDeploys; ++i)
    threads.emplace_back([&, i] {
      Api client(base);
      go.arrive_and_wait();
      Resp r =
          client.Post(NsPath("default", "computeinstances", names[i]) + "/deploy", json::object{});
      answers[i] = {names[i], r.status, std::atoll(r.meta("resourceVersion").c_str()),
                    Str(r.obj(), "status.lastRunRef.name")};
    });
  // While they race and settle, the invariant holds at every look.
  int looks = 0;
  auto settled = [&] {
    ++looks;
    std::set<std::string> success = CheckNoGpuTwice();
    if (success.size() != 8) return false;
    int waiting = 0;
    for (const auto& [name, o] : Instances())
      if (Str(o, "status.phase") == "Waiting" && Str(o, "status.reason") == "InsufficientCapacity")
        ++waiting;
    return waiting == kDeploys - 8;
  };
  bool ok = PollUntil(settled);
  for (auto& t : threads) t.join();
  ASSERT_TRUE(ok || PollUntil(settled)) << "never 8 Success and 92 Waiting; log:\n"
                                        << gantryd_->Log();
  ASSERT_FALSE(HasFailure());

  // The order deploys were accepted.
  std::set<int64_t> rvs;
  for (const auto& a : answers) {
    ASSERT_EQ(a.status, 202) << a.name;
    EXPECT_EQ(a.run, a.name + "-1");
    EXPECT_TRUE(rvs.insert(a.rv).second) << "two deploys answered with resourceVersion " << a.rv;
  }
  std::vector<Answer> accepted = answers;
  std::sort(accepted.begin(), accepted.end(),
            [](const Answer& a, const Answer& b) { return a.rv < b.rv; });
  std::vector<std::string> order;
  for (const auto& a : accepted) order.push_back(a.name);

  // The first 8 accepted hold the GPUs; the rest wait in order with the numbers.
  auto instances = Instances();
  std::set<std::string> first8(order.begin(), order.begin() + 8);
  std::set<std::string> success = CheckNoGpuTwice();
  EXPECT_EQ(success, first8);
  for (size_t i = 8; i < order.size(); ++i) {
    const json::object& o = instances[order[i]];
    EXPECT_EQ(Str(o, "status.phase"), "Waiting") << order[i];
    EXPECT_EQ(Str(o, "status.reason"), "InsufficientCapacity") << order[i];
    EXPECT_EQ(Str(o, "status.message"), i == 8 ? kFreeMessage : kBehindMessage)
        << order[i] << " (position " << i << " in the queue)";
  }
  json::object node = GetNode(api());
  EXPECT_EQ(Int(node, "status.allocated.h100"), 8) << json::serialize(node);

  // Freeing GPUs one at a time starts the earliest queued deploy, and only it.
  size_t next = 8;
  for (int k = 0; k < 3; ++k, ++next) {
    SCOPED_TRACE("destroy " + order[k]);
    ASSERT_EQ(Action(order[k], "destroy").status, 202);
    WaitPhase(order[k], "NotDeployed");
    WaitPhase(order[next], "Success");
    std::set<std::string> now = CheckNoGpuTwice();
    std::set<std::string> expected(order.begin() + k + 1, order.begin() + next + 1);
    EXPECT_EQ(now, expected);
    auto all = Instances();
    for (size_t j = next + 1; j < order.size(); ++j)
      EXPECT_EQ(Str(all[order[j]], "status.phase"), "Waiting") << order[j];
  }
  // Four at once: the next four start, the rest keep waiting.
  for (int k = 3; k < 7; ++k) ASSERT_EQ(Action(order[k], "destroy").status, 202);
  std::set<std::string> expected(order.begin() + 7, order.begin() + 15);
  ASSERT_TRUE(PollUntil([&] { return CheckNoGpuTwice() == expected; }))
      << ::testing::PrintToString(CheckNoGpuTwice());
  auto all = Instances();
  for (int k = 3; k < 7; ++k) EXPECT_EQ(Str(all[order[k]], "status.phase"), "NotDeployed");
  for (size_t j = 15; j < order.size(); ++j) {
    EXPECT_EQ(Str(all[order[j]], "status.phase"), "Waiting") << order[j];
  }
  EXPECT_TRUE(PollUntil([&] { return Str(Get(order[15]), "status.message") == kFreeMessage; }))
      << json::serialize(Get(order[15]));
  EXPECT_GT(looks, 0);
}

TEST_F(CapacityTest, NotEnoughFreeGpusWaitsWithTheNumbersAndLaterDeploysQueueBehind) {
  CreateLocalProfile("seven", "job", Gpu(7));
  CreateLocalProfile("two", "job", Gpu(2));
  api().CreateInstance("default", "big", "seven");
  api().CreateInstance("default", "pair", "two");
  api().CreateInstance("default", "single", "one");
  Deploy("big");
  WaitPhase("big", "Success");
  Deploy("pair");
  json::object pair = WaitInstance(
      "pair",
      [](const json::object& o) { return Str(o, "status.reason") == "InsufficientCapacity"; },
      "InsufficientCapacity");
  EXPECT_EQ(Str(pair, "status.phase"), "Waiting");
  EXPECT_EQ(Str(pair, "status.message"), "needs 2 h100 GPUs; 1 of 8 are free");
  // One GPU is free, but an earlier deploy waits for GPUs of that type: first come, first served.
  Deploy("single");
  json::object single = WaitInstance(
      "single",
      [](const json::object& o) { return Str(o, "status.reason") == "InsufficientCapacity"; },
      "InsufficientCapacity");
  EXPECT_EQ(Str(single, "status.message"), kBehindMessage);
  EXPECT_EQ(Int(GetNode(api()), "status.allocated.h100"), 7);

  ASSERT_EQ(Action("big", "destroy").status, 202);
  WaitPhase("pair", "Success");
  WaitPhase("single", "Success");
  CheckNoGpuTwice();
  EXPECT_EQ(Int(GetNode(api()), "status.allocated.h100"), 3);
}

TEST_F(CapacityTest, MoreGpusThanTheHostHasFailAtOnceAsUnschedulable) {
  CreateLocalProfile("nine", "job", Gpu(9));
  CreateLocalProfile("a100", "job", Gpu(1, "a100"));
  CreateLocalProfile("any-nine", "job", Gpu(9, ""));
  api().CreateInstance("default", "huge", "nine");
  api().CreateInstance("default", "other", "a100");
  api().CreateInstance("default", "anyhuge", "any-nine");
  // Even with every GPU taken, it fails instead of queueing.
  CreateLocalProfile("eight", "job", Gpu(8));
  api().CreateInstance("default", "all", "eight");
  Deploy("all");
  WaitPhase("all", "Success");

  LineStreamReader watch(gantryd_->port(),
                         NsPath("default", "computeinstances", "huge") + "?watch=true",
                         [](const std::string& line) {
                           return line.find("\"phase\":\"Failed\"") != std::string::npos;
                         });
  ASSERT_TRUE(watch.WaitFor([](const auto& lines) { return !lines.empty(); }));
  Deploy("huge");
  Deploy("other");
  Deploy("anyhuge");
  struct Case {
    std::string name, message;
  };
  for (const Case& c : {
           Case{"huge", "instance huge needs 9 h100 GPUs but this host has 8 (8 h100, configured)"},
           Case{"other",
                "instance other needs 1 a100 GPU but this host has none (8 h100, configured)"},
           Case{"anyhuge",
                "instance anyhuge needs 9 GPUs but this host has 8 (8 h100, configured)"},
       }) {
    SCOPED_TRACE(c.name);
    json::object o = WaitPhase(c.name, "Failed");
    EXPECT_EQ(Str(o, "status.reason"), "Unschedulable");
    EXPECT_EQ(Str(o, "status.message"), "deploy run " + c.name + "-1 failed: " + c.message);
    EXPECT_TRUE(At(o, "status.gpus").is_null()) << json::serialize(o);
    json::object run = GetRun(c.name + "-1");
    EXPECT_EQ(Str(run, "status.phase"), "Failed");
    EXPECT_EQ(Str(run, "status.reason"), "Unschedulable");
    EXPECT_EQ(Str(run, "status.message"), c.message);
  }
  // "At once": straight from Waiting to Failed, never InProgress.
  ASSERT_TRUE(watch.WaitDone());
  EXPECT_EQ(PhaseChanges(watch.objects()),
            (std::vector<std::string>{"ADDED NotDeployed", "MODIFIED Waiting", "MODIFIED Failed"}));
  json::object node = GetNode(api());
  EXPECT_EQ(Int(node, "status.allocated.h100"), 8) << json::serialize(node);
  for (const auto& [index, owner] : Assignments(node)) EXPECT_EQ(owner, "default/all");
}

class QuotaTest : public CapacityTest {
 protected:
  // Project `name` with spec.quota `quota`, a local template and the 1-GPU profile in it.
  void CreateProjectWithQuota(const std::string& name, json::object quota) {
    api().MustCreate(
        ClusterPath("projects"),
        json::object{{"apiVersion", "paas.gantry.dev/v1"},
                     {"kind", "Project"},
                     {"metadata", {{"name", name}}},
                     {"spec", {{"displayName", "Quota " + name}, {"quota", std::move(quota)}}}});
    CreateLocalTemplate("job", /*http=*/false, {}, name);
    CreateLocalProfile("one", "job", Gpu(1), name);
  }

  json::object WaitReason(const std::string& name, const std::string& reason,
                          const std::string& ns) {
    return WaitInstance(
        name, [&](const json::object& o) { return Str(o, "status.reason") == reason; },
        "reason " + reason, ns);
  }
};

TEST_F(QuotaTest, GpuQuotaMakesDeploysWaitAndRaisingItLetsThemStart) {
  CreateProjectWithQuota("ml", json::object{{"gpus", {{"h100", 2}}}});
  for (const char* n : {"a", "b", "c"}) api().CreateInstance("ml", n, "one");
  Deploy("a", "ml");
  Deploy("b", "ml");
  WaitPhase("a", "Success", "ml");
  WaitPhase("b", "Success", "ml");
  Deploy("c", "ml");
  json::object c = WaitReason("c", "QuotaExceeded", "ml");
  EXPECT_EQ(Str(c, "status.phase"), "Waiting");
  EXPECT_EQ(Str(c, "status.message"),
            "project ml has a quota of 2 h100 GPUs; 2 are in use and c needs 1");
  // GPUs are free on the host: only the quota holds it back. Other projects are not limited.
  api().CreateInstance("default", "elsewhere", "one");
  Deploy("elsewhere");
  WaitPhase("elsewhere", "Success");
  EXPECT_EQ(Str(Get("c", "ml"), "status.reason"), "QuotaExceeded");
  EXPECT_EQ(Int(GetNode(api()), "status.allocated.h100"), 3);

  // Raising the quota (merge patch) lets it start by itself.
  Resp patched = api().Patch(ClusterPath("projects", "ml"),
                             json::object{{"spec", {{"quota", {{"gpus", {{"h100", 3}}}}}}}});
  ASSERT_EQ(patched.status, 200) << patched.raw;
  WaitPhase("c", "Success", "ml");
  EXPECT_EQ(Int(GetNode(api()), "status.allocated.h100"), 4);
}

TEST_F(QuotaTest, InstanceQuotaMakesDeploysWaitUntilRaisedOrOneIsDestroyed) {
  CreateProjectWithQuota("team", json::object{{"instances", 1}});
  for (const char* n : {"a", "b", "c"}) api().CreateInstance("team", n, "one");
  Deploy("a", "team");
  WaitPhase("a", "Success", "team");
  Deploy("b", "team");
  json::object b = WaitReason("b", "QuotaExceeded", "team");
  EXPECT_EQ(Str(b, "status.phase"), "Waiting");
  EXPECT_EQ(Str(b, "status.message"),
            "project team allows 1 deployed instance and has 1; b waits until one is destroyed");

  // Raising the quota with a PUT of the whole project.
  Resp got = api().Get(ClusterPath("projects", "team"));
  ASSERT_EQ(got.status, 200) << got.raw;
  json::object project = got.obj();
  project["spec"].as_object()["quota"].as_object()["instances"] = 2;
  Resp put = api().Put(ClusterPath("projects", "team"), project);
  ASSERT_EQ(put.status, 200) << put.raw;
  WaitPhase("b", "Success", "team");

  Deploy("c", "team");
  json::object c = WaitReason("c", "QuotaExceeded", "team");
  EXPECT_EQ(Str(c, "status.message"),
            "project team allows 2 deployed instances and has 2; c waits until one is destroyed");
  // A destroy makes room.
  ASSERT_EQ(Action("a", "destroy", "team").status, 202);
  WaitPhase("a", "NotDeployed", "team");
  WaitPhase("c", "Success", "team");
  CheckNoGpuTwice("team");
}

TEST_F(QuotaTest, GpusHeldByAFailedWorkloadCountAgainstTheQuota) {
  // A workload that exits under restartPolicy Never leaves its instance Failed, still holding
  // its GPU until a destroy (docs/drivers.md: GPUs are held until a destroy succeeds). The
  // project's GPU quota must count that GPU too: the project never holds more than its quota.
  api().MustCreate(
      ClusterPath("projects"),
      json::object{{"apiVersion", "paas.gantry.dev/v1"},
                   {"kind", "Project"},
                   {"metadata", {{"name", "solo"}}},
                   {"spec", {{"displayName", "Solo"}, {"quota", {{"gpus", {{"h100", 1}}}}}}}});
  CreateLocalTemplate("once", /*http=*/false, json::object{{"restartPolicy", "Never"}}, "solo");
  CreateLocalProfile("one", "once", Gpu(1), "solo");
  api().CreateInstance("solo", "a", "one");
  api().CreateInstance("solo", "b", "one");
  Deploy("a", "solo");
  int pid = DriverPid(WaitPhase("a", "Success", "solo"));
  ASSERT_TRUE(WaitWorkloadChild(pid));
  ASSERT_TRUE(local_test::KillWorkload(pid));
  WaitPhase("a", "Failed", "solo");
  auto held_by_solo = [&] {
    int n = 0;
    for (const auto& [index, owner] : Assignments(GetNode(api())))
      if (owner.rfind("solo/", 0) == 0) ++n;
    return n;
  };
  EXPECT_EQ(held_by_solo(), 1) << "the Failed instance keeps its GPU until destroyed";

  Deploy("b", "solo");
  json::object b = WaitInstance(
      "b",
      [](const json::object& o) {
        return Str(o, "status.phase") == "Success" || Str(o, "status.reason") == "QuotaExceeded";
      },
      "Success or QuotaExceeded", "solo");
  EXPECT_LE(held_by_solo(), 1) << "project solo holds more GPUs than its quota of 1";
  EXPECT_EQ(Str(b, "status.reason"), "QuotaExceeded") << json::serialize(b);
  EXPECT_EQ(Str(b, "status.message"),
            "project solo has a quota of 1 h100 GPUs; 1 are in use and b needs 1");
  // Destroying the failed one makes room.
  ASSERT_EQ(Action("a", "destroy", "solo").status, 202);
  WaitPhase("b", "Success", "solo");
  // a's GPU is released right after its destroy commits, which may be just after b was
  // admitted: the project settles at exactly one GPU.
  EXPECT_TRUE(PollUntil([&] { return held_by_solo() == 1; })) << held_by_solo();
}

}  // namespace
}  // namespace gantry::testing
