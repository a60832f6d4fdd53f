// Budgets (model/budget.h, docs/usage.md "Budgets"): what a project spent this calendar month
// (UTC) by the usage ledger (usage_ledger.h), priced as a usage report prices it
// (usage_report.h: the RateCard "default", else the first), against its spec.budget.
//
// The dispatcher holds deploys and starts of a project whose Block budget is spent
// (AdmissionSnapshot::over_budget, reason BudgetExceeded); the BudgetMonitor
// (budget_monitor.h) sends the 80 % and 100 % Events. Without a rate card every cost is 0:
// a budget above 0 is never reached (a budget of 0 is: nothing may be spent).
//
// Thread-safety: free functions over a thread-safe Store.
#pragma once

#include <boost/json.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/budget.h"
#include "store/store.h"

namespace gantry::engine::usage {

struct Spend {
  double cost = 0;        // this month so far, open intervals counted until `now`
  std::string currency;   // the rate card's ("" when there is none)
  std::string month;      // "2026-12"
  double per_second = 0;  // what the open intervals add each second from `now` on
};

// The month-to-date spend of project `ns` at `now`, priced by one of `rate_cards` (the stored
// RateCard objects).
absl::StatusOr<Spend> MonthToDate(store::Store& store, const std::string& ns,
                                  const std::vector<boost::json::object>& rate_cards,
                                  std::chrono::system_clock::time_point now);

// The percentage of `budget` that `spend` is (100 when the budget is 0).
double PercentOf(const Spend& spend, const model::Budget& budget);

// "project vision has spent 812.40 USD of its monthly budget of 1000 USD (2026-12)".
std::string SpendWords(const std::string& ns, const Spend& spend, const model::Budget& budget);

}  // namespace gantry::engine::usage
