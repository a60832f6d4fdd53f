#include "engine/share_monitor.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

#include "common/clock.h"
#include "engine/engine_internal.h"
#include "engine/fleet_gpus.h"
#include "model/codec.h"
#include "model/objects.h"
#include "model/scheduling.h"

namespace gantry::engine {

namespace json = boost::json;

std::vector<GpuShare> GpuShares(const std::vector<json::object>& projects,
                                const std::vector<HeldGpus>& held) {
  std::map<std::pair<std::string, std::string>, GpuShare> shares;
  auto at = [&](const std::string& ns, const std::string& type) -> GpuShare& {
    GpuShare& g = shares[{ns, type}];
    g.project = ns;
    g.type = type;
    return g;
  };
  for (const json::object& p : projects) {
    const std::string ns = model::GetString(p, "metadata.name");
    for (const auto& [type, n] : model::DecodeQuota(p).gpus) at(ns, type);
    for (const auto& [type, n] : model::DecodeGuaranteedGpus(p)) at(ns, type).guaranteed = n;
  }
  for (const HeldGpus& h : held) {
    GpuShare& g = at(h.project, h.type);
    g.used += h.count;
    if (h.borrowed) g.borrowed += h.count;
  }
  std::vector<GpuShare> out;
  for (auto& [key, g] : shares) out.push_back(std::move(g));
  return out;
}

std::optional<json::array> OvercommitConditions(const json::object& project,
                                                const std::string& words, const std::string& now) {
  std::vector<model::Condition> conditions;
  if (const json::value* c = model::FindPath(project, "status.conditions"); c && c->is_array())
    conditions = model::DecodeConditions(c->get_array());
  const std::vector<model::Condition> before = conditions;
  const bool had = std::any_of(conditions.begin(), conditions.end(), [](const auto& c) {
    return c.type == model::kGuaranteesOvercommitted;
  });
  if (words.empty() && !had) return std::nullopt;
  if (words.empty())
    model::SetCondition(conditions, model::kGuaranteesOvercommitted, false, "WithinCapacity",
                        "the guarantees of this project's GPU types fit the fleet's GPUs", now);
  else
    model::SetCondition(conditions, model::kGuaranteesOvercommitted, true, "Overcommitted", words,
                        now);
  if (conditions == before) return std::nullopt;
  return model::EncodeConditions(conditions);
}

ShareMonitor::ShareMonitor(store::Store& store, const Clock& clock, Metrics& metrics,
                           GpuAllocator& gpus, std::string host, std::chrono::seconds interval)
    : store_(store),
      clock_(clock),
      metrics_(metrics),
      gpus_(gpus),
      host_(std::move(host)),
      interval_(interval) {
  metrics_.Describe("gantry_project_gpus", "gauge",
                    "A project's GPUs per type: kind guaranteed (spec.quota.guaranteedGpus), "
                    "used (held on this host) and borrowed (held beyond its guarantee).");
}

void ShareMonitor::Start() {
  thread_.Start(
      [this](std::stop_token stop) { RepeatEvery(clock_, interval_, stop, [this] { Pass(); }); });
}

void ShareMonitor::Stop() { thread_.Stop(); }

void ShareMonitor::Pass() {
  store::ListOptions q;
  q.kind = "Project";
  auto projects = internal::ListAll(store_, q);
  if (!projects.ok()) {
    spdlog::warn("shares: cannot read the projects: {}", std::string(projects.status().message()));
    return;
  }
  std::vector<std::pair<MetricLabels, double>> samples;
  for (const GpuShare& g : GpuShares(*projects, HeldOnThisHost()))
    for (auto [kind, n] : {std::pair{"guaranteed", g.guaranteed}, std::pair{"used", g.used},
                           std::pair{"borrowed", g.borrowed}})
      samples.push_back(
          {{{"project", g.project}, {"gpu_type", g.type}, {"kind", kind}}, static_cast<double>(n)});
  metrics_.Replace("gantry_project_gpus", samples);
  PublishWhenDue();
  KeepConditions(*projects);
}

void ShareMonitor::PublishWhenDue() {
  const auto now = clock_.Now();
  if (published_ != std::chrono::system_clock::time_point{} && now < published_ + kFleetRenew)
    return;
  GpusByType mine;
  for (const Gpu& g : gpus_.inventory().gpus) ++mine[g.type];
  if (auto s = PublishHostGpus(store_, host_, mine, now); !s.ok()) {
    spdlog::warn("shares: cannot publish this host's GPUs: {}", std::string(s.message()));
    return;
  }
  published_ = now;
}

std::vector<HeldGpus> ShareMonitor::HeldOnThisHost() {
  std::map<int, std::string> type_of;
  for (const Gpu& g : gpus_.inventory().gpus) type_of[g.index] = g.type;
  // owner (ns/name/uid) -> GPUs held by type
  std::map<std::string, std::map<std::string, int64_t>> by_owner;
  for (const auto& [index, owner] : gpus_.Assignments()) ++by_owner[owner][type_of[index]];
  std::vector<HeldGpus> out;
  for (const auto& [owner, by_type] : by_owner) {
    const size_t a = owner.find('/'), b = owner.find('/', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string ns = owner.substr(0, a), name = owner.substr(a + 1, b - a - 1);
    auto stored = store_.Get("ComputeInstance", ns, name);
    const bool borrowed =
        stored.ok() && model::GetString(*stored, "status.admission") == model::kBorrowed;
    for (const auto& [type, n] : by_type) out.push_back({ns, type, n, borrowed});
  }
  return out;
}

void ShareMonitor::KeepConditions(const std::vector<json::object>& projects) {
  model::GuaranteesByProject guarantees = model::GuaranteesOf(projects);
  auto fleet = FleetGpus(store_, clock_.Now());
  if (!fleet.ok()) {
    spdlog::warn("shares: cannot read the fleet's GPUs: {}", std::string(fleet.status().message()));
    return;
  }
  const auto over = model::OvercommittedGuarantees(guarantees, *fleet);
  const std::string now = FormatRfc3339(clock_.Now());
  for (const json::object& p : projects) {
    const std::string ns = model::GetString(p, "metadata.name");
    auto conditions = OvercommitConditions(p, model::OvercommitWords(guarantees[ns], over), now);
    if (!conditions) continue;
    json::object next = p;
    model::EnsureObject(next, "status")["conditions"] = std::move(*conditions);
    if (auto s = internal::UpdateAsRead(store_, "Project", std::move(next)); !s.ok())
      spdlog::warn("shares: cannot record the condition of project {}: {}", ns,
                   std::string(s.message()));
  }
}

}  // namespace gantry::engine
