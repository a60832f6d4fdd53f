#include "engine/budget_monitor.h"

#include <spdlog/spdlog.h>

#include <cmath>

#include "engine/budgets.h"
#include "engine/engine_internal.h"
#include "engine/stored_events.h"
#include "engine/usage_report.h"
#include "model/budget.h"
#include "model/codec.h"
#include "model/schema.h"

namespace gantry::engine {

namespace json = boost::json;

namespace {

StoredEvent BudgetEvent(const json::object& project, const std::string& ns, int threshold,
                        const std::string& words, const model::Budget& budget,
                        const usage::Spend& spend) {
  StoredEvent e;
  e.ns = ns;
  e.name = ns + ".budget." + spend.month + "." + std::to_string(threshold);
  e.involved = {model::kApiVersion, "Project", "", ns, model::GetString(project, "metadata.uid")};
  e.reason = threshold >= 100 ? "BudgetExceeded" : "BudgetWarning";
  e.message = words;
  if (threshold >= 100)
    e.message += budget.action == model::Budget::Action::kBlock
                     ? ": its deploys and starts wait until the budget is raised or the month "
                       "ends; running instances keep running"
                     : ": nothing is held (action Warn)";
  e.component = "gantry-budgets";
  return e;
}

// Keeps the project's status.spend (the BUDGET column) as `spend` (none: removes it); writes
// only what changed (internal::UpdateAsRead).
void RecordSpend(store::Store& store, json::object project,
                 const std::optional<json::object>& spend) {
  json::object& status = model::EnsureObject(project, "status");
  const json::value* now = status.if_contains("spend");
  if (spend ? now && *now == *spend : !now) return;
  if (spend)
    status["spend"] = *spend;
  else
    status.erase("spend");
  if (auto s = internal::UpdateAsRead(store, "Project", std::move(project)); !s.ok())
    spdlog::warn("budgets: cannot record the spend of a project: {}", std::string(s.message()));
}

}  // namespace

BudgetMonitor::BudgetMonitor(store::Store& store, const Clock& clock, Metrics& metrics,
                             std::chrono::seconds interval)
    : store_(store), clock_(clock), metrics_(metrics), interval_(interval) {
  metrics_.Describe("gantry_project_budget_spent_ratio", "gauge",
                    "What a project with spec.budget spent this month over its monthly budget.");
}

void BudgetMonitor::Start() {
  thread_.Start(
      [this](std::stop_token stop) { RepeatEvery(clock_, interval_, stop, [this] { Pass(); }); });
}

void BudgetMonitor::Stop() { thread_.Stop(); }

void BudgetMonitor::Pass() {
  store::ListOptions q;
  q.kind = "Project";
  auto projects = internal::ListAll(store_, q);
  q.kind = usage::kRateCardKind;
  auto cards = internal::ListAll(store_, q);
  if (!projects.ok() || !cards.ok()) {
    spdlog::warn("budgets: cannot read projects or rate cards: {}",
                 std::string((projects.ok() ? cards.status() : projects.status()).message()));
    return;
  }
  const auto now = clock_.Now();
  for (const json::object& p : *projects) {
    std::optional<model::Budget> budget = model::DecodeBudget(p);
    if (!budget) {
      RecordSpend(store_, p, std::nullopt);
      continue;
    }
    const std::string ns = model::GetString(p, "metadata.name");
    auto spend = usage::MonthToDate(store_, ns, *cards, now);
    if (!spend.ok()) continue;
    const double percent = usage::PercentOf(*spend, *budget);
    RecordSpend(store_, p,
                model::EncodeSpend({spend->month, spend->currency, spend->cost, budget->monthly,
                                    static_cast<int64_t>(std::floor(percent))}));
    metrics_.Set("gantry_project_budget_spent_ratio", {{"project", ns}}, percent / 100.0);
    const std::string words = usage::SpendWords(ns, *spend, *budget) + ": " +
                              std::to_string(static_cast<int64_t>(std::floor(percent))) + " %";
    for (int threshold : {80, 100}) {
      if (percent < threshold) continue;
      if (auto s =
              CreateStoredEvent(store_, BudgetEvent(p, ns, threshold, words, *budget, *spend), now);
          !s.ok())
        spdlog::warn("budgets: cannot store the event of project {}: {}", ns,
                     std::string(s.message()));
    }
  }
}

}  // namespace gantry::engine
