// Table-driven tests of the pure admission (engine/admission.h): a snapshot, queued runs in
// queue order, and the decisions and messages expected for each.
#include "engine/admission.h"

#include <boost/json.hpp>
#include <functional>
#include <string>
#include <vector>

#include "engine/dependencies.h"
#include "gtest/gtest.h"

// Cases name only the fields they set (`{.gpus = 2}`); the rest keep their defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace gantry::engine {
namespace {

namespace json = boost::json;
using model::Phase;
using model::RunAction;
using D = Admission::Decision;

model::Instance MakeInstance(const std::string& kind, const std::string& ns,
                             const std::string& name, Phase phase) {
  model::Instance i;
  i.kind = kind;
  i.metadata.ns = ns;
  i.metadata.name = name;
  i.metadata.uid = name + "-uid";
  i.status.phase = phase;
  i.raw = json::object{{"kind", kind},
                       {"metadata", json::object{{"name", name}, {"namespace", ns}}},
                       {"status", json::object{{"phase", model::PhaseName(phase)}}}};
  return i;
}

Inventory Gpus(const std::vector<std::string>& types) {
  Inventory inv;
  inv.source = "configured";
  for (size_t i = 0; i < types.size(); ++i)
    inv.gpus.push_back({static_cast<int>(i), "", types[i], types[i], 0});
  return inv;
}

// One queued run of the table.
struct Queued {
  std::string instance;  // compute instance (or service with `service`) in project "p"
  RunAction action = RunAction::kApply;
  std::string gpu_type;
  int gpu_count = 0;
  bool host_bound = true;
  bool service = false;
  bool delete_instance = false;
};

struct Expected {
  D decision;
  std::string reason;
  std::string message;  // "" = not checked
  std::vector<int> gpus = {};
};

struct Case {
  std::string name;
  std::function<void(AdmissionSnapshot&)> setup;
  std::vector<Queued> queue;
  std::vector<Expected> expected;
};

// Runs the queue through one pass over `s` (the instances are created Waiting when absent).
std::vector<Admission> Pass(AdmissionSnapshot& s, const std::vector<Queued>& queue) {
  std::vector<model::Instance> services;
  for (const auto& q : queue)
    if (q.service)
      services.push_back(MakeInstance(kServiceInstanceKind, "p", q.instance, Phase::kWaiting));
  for (auto& svc : services) svc.compute_ns = "p", svc.compute_name = "gpu-1";
  AdmissionPass pass(s);
  std::vector<Admission> out;
  size_t next_service = 0;
  for (const auto& q : queue) {
    QueuedRun qr;
    qr.run.metadata.ns = "p";
    qr.run.metadata.name = q.instance + "-1";
    qr.run.instance_kind = q.service ? kServiceInstanceKind : kComputeInstanceKind;
    qr.run.instance_name = q.instance;
    qr.run.action = q.action;
    qr.run.delete_instance = q.delete_instance;
    if (q.service) {
      qr.instance = &services[next_service++];
    } else {
      auto [it, added] = s.computes.try_emplace(
          {"p", q.instance}, MakeInstance(kComputeInstanceKind, "p", q.instance, Phase::kWaiting));
      qr.instance = &it->second;
    }
    Target t;
    t.caps.host_bound = q.host_bound;
    t.resources.gpu_type = q.gpu_type;
    t.resources.gpu_count = q.gpu_count;
    qr.target = t;
    out.push_back(Admit(s, qr, &pass));
  }
  return out;
}

void Deployed(AdmissionSnapshot& s, const std::string& name, const std::string& type, int n) {
  model::Instance i = MakeInstance(kComputeInstanceKind, "p", name, Phase::kSuccess);
  i.status.resources = json::object{{"gpu", json::object{{"type", type}, {"count", n}}}};
  s.computes.insert_or_assign({"p", name}, std::move(i));
}

std::vector<Case> CapacityCases() {
  return {
      {"NoGpusAdmitted", [](AdmissionSnapshot&) {}, {{"a"}}, {{D::kAdmit, ""}}},
      {"GpusOfTheTypeAssignedLowestFirst",
       [](AdmissionSnapshot& s) {
         s.inventory = Gpus({"a100", "h100", "h100", "h100"});
       },
       {{"a", RunAction::kApply, "h100", 2}},
       {{D::kAdmit, "", "", {1, 2}}}},
      {"AnyTypeTakesTheTypeWithMostFree",
       [](AdmissionSnapshot& s) {
         s.inventory = Gpus({"a100", "h100", "h100", "h100"});
         s.gpu_owners[1] = "p/x/u";
       },
       {{"a", RunAction::kApply, "", 1}},
       {{D::kAdmit, "", "", {2}}}},
      {"FirstComeFirstServedPerType",
       [](AdmissionSnapshot& s) {
         s.inventory = Gpus({"h100", "h100", "a100"});
       },
       {{"a", RunAction::kApply, "h100", 1},
        {"b", RunAction::kApply, "h100", 2},
        {"c", RunAction::kApply, "h100", 1},
        {"d", RunAction::kApply, "a100", 1}},
       {{D::kAdmit, "", "", {0}},
        {D::kWait, "InsufficientCapacity", "needs 2 h100 GPUs; 1 of 2 are free"},
        {D::kWait, "InsufficientCapacity",
         "needs 1 h100 GPU; queued behind earlier deploys waiting for h100 GPUs"},
        {D::kAdmit, "", "", {2}}}},
      {"UnschedulableFailsOnOneReplica",
       [](AdmissionSnapshot& s) {
         s.inventory = Gpus({"a100", "a100"});
       },
       {{"a", RunAction::kApply, "h100", 1}},
       {{D::kFail, "Unschedulable",
         "instance a needs 1 h100 GPU but this host has none (2 a100, configured)"}}},
      {"UnschedulableWaitsWithSeveralReplicas",
       [](AdmissionSnapshot& s) {
         s.sole_owner = false;
         s.inventory = Gpus({});
         s.inventory.source = "none";
       },
       {{"a", RunAction::kApply, "h100", 2}},
       {{D::kWait, "Unschedulable",
         "instance a needs 2 h100 GPUs but this host has none (no GPUs, none)"}}},
      {"DriverNotHostBoundAssignsNothing",
       [](AdmissionSnapshot&) {},
       {{"a", RunAction::kApply, "h100", 4, false}},
       {{D::kAdmit, ""}}},
  };
}

// Budgets (engine/budgets.h): the dispatcher names the projects whose Block budget is spent.
std::vector<Case> BudgetCases() {
  return {
      {"SpentBlockBudgetHoldsDeploysAndStartsNotRedeploysOrStops",
       [](AdmissionSnapshot& s) {
         s.over_budget["p"] = "project p has spent 12 USD of its monthly budget of 10 USD";
         Deployed(s, "running", "", 0);
         s.computes.insert_or_assign(
             {"p", "off"}, MakeInstance(kComputeInstanceKind, "p", "off", Phase::kSuccess));
       },
       {{"a"}, {"b", RunAction::kStart}, {"running"}, {"off", RunAction::kStop}},
       {{D::kWait, "BudgetExceeded",
         "project p has spent 12 USD of its monthly budget of 10 USD; a waits until the budget "
         "is raised or the month ends"},
        {D::kWait, "BudgetExceeded"},
        {D::kAdmit, ""},
        {D::kAdmit, ""}}},
      {"OtherProjectsBudgetHoldsNothing",
       [](AdmissionSnapshot& s) { s.over_budget["q"] = "spent"; },
       {{"a"}},
       {{D::kAdmit, ""}}},
  };
}

std::vector<Case> QuotaCases() {
  return {
      {"InstanceQuota",
       [](AdmissionSnapshot& s) {
         s.quotas["p"].instances = 1;
         Deployed(s, "old", "", 0);
       },
       {{"a"}},
       {{D::kWait, "QuotaExceeded",
         "project p allows 1 deployed instance and has 1; a waits until one is destroyed"}}},
      {"GpuQuota",
       [](AdmissionSnapshot& s) {
         s.inventory = Gpus({"h100", "h100", "h100"});
         s.quotas["p"].gpus["h100"] = 2;
         Deployed(s, "old", "h100", 1);
       },
       {{"a", RunAction::kApply, "h100", 2}},
       {{D::kWait, "QuotaExceeded",
         "project p has a quota of 2 h100 GPUs; 1 are in use and a needs 2"}}},
      // The pass counts a project's usage once and adds what it admits: the third deploy
      // of the pass sees the two admitted before it (and the held one only once).
      {"GpuQuotaCountsWhatThePassAdmitted",
       [](AdmissionSnapshot& s) {
         s.inventory = Gpus({"h100", "h100", "h100", "h100"});
         s.quotas["p"].gpus["h100"] = 3;
         Deployed(s, "old", "h100", 1);
       },
       {{"a", RunAction::kApply, "h100", 1},
        {"b", RunAction::kApply, "h100", 1},
        {"c", RunAction::kApply, "h100", 1}},
       {{D::kAdmit, "", "", {0}},
        {D::kAdmit, "", "", {1}},
        {D::kWait, "QuotaExceeded",
         "project p has a quota of 3 h100 GPUs; 3 are in use and c needs 1"}}},
      {"InstanceQuotaCountsWhatThePassAdmitted",
       [](AdmissionSnapshot& s) { s.quotas["p"].instances = 1; },
       {{"a"}, {"b"}},
       {{D::kAdmit, ""},
        {D::kWait, "QuotaExceeded",
         "project p allows 1 deployed instance and has 1; b waits until one is destroyed"}}},
      {"WaitingCountsOnlyWhileItsDeployRuns",
       [](AdmissionSnapshot& s) {
         s.quotas["p"].instances = 1;
         model::Instance w = MakeInstance(kComputeInstanceKind, "p", "pending", Phase::kWaiting);
         w.status.last_run = "pending-1";
         s.computes.insert_or_assign({"p", "pending"}, w);
         model::Instance q = MakeInstance(kComputeInstanceKind, "p", "queued", Phase::kWaiting);
         q.status.last_run = "queued-1";
         s.computes.insert_or_assign({"p", "queued"}, q);
         s.running_deploys.insert({"p", "pending-1"});
       },
       {{"a"}},
       {{D::kWait, "QuotaExceeded",
         "project p allows 1 deployed instance and has 1; a waits until one is destroyed"}}},
      {"FailedCountsOnlyWithGpusHeld",
       [](AdmissionSnapshot& s) {
         s.quotas["p"].instances = 1;
         s.computes.insert_or_assign({"p", "f"},
                                     MakeInstance(kComputeInstanceKind, "p", "f", Phase::kFailed));
       },
       {{"a"}},
       {{D::kAdmit, ""}}},
  };
}

std::vector<Case> ServiceAndHostCases() {
  return {
      {"ServiceWaitsForItsCompute",
       [](AdmissionSnapshot& s) {
         model::Instance c = MakeInstance(kComputeInstanceKind, "p", "gpu-1", Phase::kInProgress);
         s.computes.insert_or_assign({"p", "gpu-1"}, c);
       },
       {{"svc", RunAction::kApply, "", 0, true, true}},
       {{D::kWait, "ComputeNotReady",
         "waiting for compute instance gpu-1 to be Success (it is In Progress); the service "
         "deploys as soon as it is"}}},
      {"ServiceFailsWithoutCompute",
       [](AdmissionSnapshot&) {},
       {{"svc", RunAction::kApply, "", 0, true, true}},
       {{D::kFail, "ComputeNotFound", "compute instance gpu-1 of project p does not exist"}}},
      {"ServiceOnSuccessHasNoCapacityOfItsOwn",
       [](AdmissionSnapshot& s) {
         s.computes.insert_or_assign(
             {"p", "gpu-1"}, MakeInstance(kComputeInstanceKind, "p", "gpu-1", Phase::kSuccess));
         s.quotas["p"].instances = 0;
       },
       {{"svc", RunAction::kApply, "h100", 8, true, true}},
       {{D::kAdmit, ""}}},
      {"ComputeDestroyWaitsForItsServices",
       [](AdmissionSnapshot& s) {
         model::Instance svc = MakeInstance(kServiceInstanceKind, "p", "nb", Phase::kSuccess);
         svc.compute_ns = "p";
         svc.compute_name = "gpu-1";
         s.services.push_back(svc);
         model::Instance gone = MakeInstance(kServiceInstanceKind, "p", "old", Phase::kNotDeployed);
         gone.compute_ns = "p";
         gone.compute_name = "gpu-1";
         s.services.push_back(gone);
       },
       {{"gpu-1", RunAction::kDestroy}, {"gpu-1", RunAction::kDestroy, "", 0, true, false, true}},
       {{D::kWait, "ServicesRunning",
         "waiting for 1 service instance to be destroyed first: nb (Success)"},
        {D::kWait, "ServicesRunning",
         "waiting for 2 service instances to be deleted first: nb (Success), old (Not "
         "Deployed)"}}},
      {"HostBoundRunOfAnotherHostIsSkipped",
       [](AdmissionSnapshot& s) {
         s.sole_owner = false;
         s.host = "here";
         model::Instance i = MakeInstance(kComputeInstanceKind, "p", "a", Phase::kSuccess);
         i.status.host = "there";
         s.computes.insert_or_assign({"p", "a"}, i);
       },
       {{"a", RunAction::kDestroy}, {"a", RunAction::kDestroy, "", 0, false}},
       {{D::kSkip, ""}, {D::kAdmit, ""}}},
  };
}

std::vector<Case> Cases() {
  std::vector<Case> all;
  for (auto part : {CapacityCases, QuotaCases, BudgetCases, ServiceAndHostCases})
    for (auto& c : part()) all.push_back(std::move(c));
  return all;
}

class AdmissionTest : public ::testing::TestWithParam<Case> {};

TEST_P(AdmissionTest, Decides) {
  const Case& c = GetParam();
  AdmissionSnapshot s;
  c.setup(s);
  std::vector<Admission> got = Pass(s, c.queue);
  ASSERT_EQ(got.size(), c.expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("run " + std::to_string(i));
    EXPECT_EQ(got[i].decision, c.expected[i].decision) << got[i].message;
    EXPECT_EQ(got[i].reason, c.expected[i].reason);
    if (!c.expected[i].message.empty()) {
      EXPECT_EQ(got[i].message, c.expected[i].message);
    }
    std::vector<int> gpus;
    for (const auto& g : got[i].gpus) gpus.push_back(g.index);
    EXPECT_EQ(gpus, c.expected[i].gpus);
  }
}

INSTANTIATE_TEST_SUITE_P(Table, AdmissionTest, ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return info.param.name; });

TEST(AdmissionPassTest, ReleaseGivesTheGpusBackToTheNextRun) {
  AdmissionSnapshot s;
  s.inventory = Gpus({"h100"});
  AdmissionPass pass(s);
  QueuedRun a;
  a.run.metadata.ns = "p";
  a.run.instance_name = "a";
  model::Instance ia = MakeInstance(kComputeInstanceKind, "p", "a", Phase::kWaiting);
  a.instance = &ia;
  a.target = Target{{.host_bound = true}, {{}, "h100", 1}};
  Admission first = Admit(s, a, &pass);
  ASSERT_EQ(first.decision, D::kAdmit);
  EXPECT_EQ(first.resources, (json::object{{"gpu", json::object{{"type", "h100"}}}}));
  pass.Release(first.owner);
  model::Instance ib = MakeInstance(kComputeInstanceKind, "p", "b", Phase::kWaiting);
  QueuedRun b = a;
  b.instance = &ib;
  EXPECT_EQ(Admit(s, b, &pass).decision, D::kAdmit);
}

}  // namespace
}  // namespace gantry::engine
