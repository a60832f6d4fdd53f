// A project's monthly budget (API.md "Usage and cost", docs/usage.md "Budgets"): the typed
// Project.spec.budget {monthly, action} and its validation (422 causes naming the field).
//
//   monthly   the most the project may spend in a calendar month (UTC), in the currency of
//             the RateCard that prices usage reports; a number, not negative
//   action    Warn (default): Events at 80 % and 100 % of it, nothing held;
//             Block: the same Events, and deploys and starts of the project wait with reason
//             BudgetExceeded once the month's cost reached it. Running instances are never
//             stopped by a budget.
//
// The engine reads it (engine/budgets.h); the project strategy validates it.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <boost/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/errors.h"

namespace gantry::model {

struct Budget {
  enum class Action { kWarn, kBlock };
  double monthly = 0;
  Action action = Action::kWarn;
};

// A Project's spec.budget; nullopt when it has none (or it is not a valid one).
std::optional<Budget> DecodeBudget(const boost::json::object& project);
// Appends a cause per invalid field of spec.budget.
void ValidateBudget(const boost::json::object& project_spec, std::vector<FieldCause>* causes);

// "812.40", "1000": an amount with two decimals, without ".00".
std::string MoneyText(double amount);

// A project's status.spend, which the budget monitor (engine/budget_monitor.h) keeps: this
// month's spend against spec.budget, {month: "2026-12", cost: 412.5, currency: "EUR",
// monthly: 1000, percent: 41} (cost to the cent, percent floored).
struct SpendStatus {
  std::string month, currency;
  double cost = 0, monthly = 0;
  int64_t percent = 0;
};
boost::json::object EncodeSpend(const SpendStatus& s);
// The BUDGET column of `gantry get projects` and kubectl: "412.50/1000 EUR (41%)"; "" when
// the project has no status.spend.
std::string BudgetText(const boost::json::object& project);

}  // namespace gantry::model
