// BudgetMonitor: says when a project's monthly budget (model/budget.h) is nearly or wholly
// spent. Every `interval` it prices the month so far of each project with spec.budget
// (engine/budgets.h) and stores a Warning Event on the project (stored_events.h):
//
//   BudgetWarning   at 80 %: "project vision has spent 812 USD of its monthly budget of
//                   1000 USD (2026-12): 81 %"
//   BudgetExceeded  at 100 %, with what follows: deploys and starts wait (Block) or not (Warn)
//
// Each once per project, threshold and month: the Event's name is
// "<project>.budget.<YYYY-MM>.<80|100>", so a restart or a second replica sends nothing twice.
// Raising the budget mid-month does not send them again for that month. It also sets the gauge
// gantry_project_budget_spent_ratio{project} (spent / monthly), and keeps the project's
// status.spend (model/budget.h SpendStatus: the BUDGET column of `gantry get projects` and
// kubectl), written only when it changed (to the cent), removed when the budget is.
//
// The hold itself is the dispatcher's (AdmissionSnapshot::over_budget); this only tells.
//
// Thread-safety: Start/Stop from one thread; Pass from the loop or, in tests, from one
// thread while the loop is not started.
#pragma once

#include <chrono>

#include "common/clock.h"
#include "common/loop_thread.h"
#include "common/metrics.h"
#include "store/store.h"

namespace gantry::engine {

class BudgetMonitor {
 public:
  BudgetMonitor(store::Store& store, const Clock& clock, Metrics& metrics,
                std::chrono::seconds interval = std::chrono::seconds(60));
  BudgetMonitor(const BudgetMonitor&) = delete;
  BudgetMonitor& operator=(const BudgetMonitor&) = delete;

  // Starts the loop; its first look is at once. Stop ends it (idempotent).
  void Start();
  void Stop();
  // One look at every project with a budget.
  void Pass();

 private:
  store::Store& store_;
  const Clock& clock_;
  Metrics& metrics_;
  const std::chrono::seconds interval_;
  LoopThread thread_;  // last: stopped before the rest goes
};

}  // namespace gantry::engine
