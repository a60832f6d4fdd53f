#include "model/budget.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "model/codec.h"

namespace gantry::model {
namespace {

namespace json = boost::json;

std::optional<Budget::Action> ActionOf(const json::value* v) {
  if (!v) return Budget::Action::kWarn;
  if (!v->is_string()) return std::nullopt;
  if (v->get_string() == "Warn") return Budget::Action::kWarn;
  if (v->get_string() == "Block") return Budget::Action::kBlock;
  return std::nullopt;
}

}  // namespace

std::optional<Budget> DecodeBudget(const json::object& project) {
  const json::value* b = FindPath(project, "spec.budget");
  if (!b || !b->is_object()) return std::nullopt;
  const json::value* monthly = b->get_object().if_contains("monthly");
  std::optional<double> amount = monthly ? AsNumber(*monthly) : std::nullopt;
  std::optional<Budget::Action> action = ActionOf(b->get_object().if_contains("action"));
  if (!amount || *amount < 0 || !action) return std::nullopt;
  return Budget{*amount, *action};
}

void ValidateBudget(const json::object& project_spec, std::vector<FieldCause>* causes) {
  const json::value* b = project_spec.if_contains("budget");
  if (!b || b->is_null()) return;
  if (!b->is_object()) {
    causes->push_back({"spec.budget", "must be an object such as {monthly: 1000, action: Block}"});
    return;
  }
  const json::value* monthly = b->get_object().if_contains("monthly");
  if (!monthly) {
    causes->push_back({"spec.budget.monthly",
                       "is required: the most the project may spend in a month, in the rate "
                       "card's currency",
                       "FieldValueRequired"});
  } else if (std::optional<double> amount = AsNumber(*monthly); !amount || *amount < 0) {
    causes->push_back({"spec.budget.monthly", "must be a number, 0 or more"});
  }
  if (!ActionOf(b->get_object().if_contains("action")))
    causes->push_back({"spec.budget.action", "must be Block or Warn", "FieldValueNotSupported"});
}

std::string MoneyText(double amount) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", amount);
  std::string s = buf;
  if (s.size() > 3 && s.compare(s.size() - 3, 3, ".00") == 0) s.resize(s.size() - 3);
  return s;
}

json::object EncodeSpend(const SpendStatus& s) {
  return json::object{{"month", s.month},
                      {"cost", std::round(s.cost * 100) / 100},
                      {"currency", s.currency},
                      {"monthly", s.monthly},
                      {"percent", s.percent}};
}

std::string BudgetText(const json::object& project) {
  const json::value* spend = FindPath(project, "status.spend");
  if (!spend || !spend->is_object()) return "";
  const json::object& s = spend->get_object();
  auto number = [&s](const char* key) {
    const json::value* v = s.if_contains(key);
    return v ? AsNumber(*v).value_or(0) : 0.0;
  };
  const std::string currency = GetString(s, "currency");
  return MoneyText(number("cost")) + "/" + MoneyText(number("monthly")) +
         (currency.empty() ? "" : " " + currency) + " (" +
         std::to_string(static_cast<int64_t>(number("percent"))) + "%)";
}

}  // namespace gantry::model
