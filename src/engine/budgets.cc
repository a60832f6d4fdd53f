#include "engine/budgets.h"

#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "engine/usage_ledger.h"
#include "engine/usage_report.h"
#include "engine/usage_rollup.h"
#include "model/codec.h"

namespace gantry::engine::usage {

namespace json = boost::json;

absl::StatusOr<Spend> MonthToDate(store::Store& store, const std::string& ns,
                                  const std::vector<json::object>& rate_cards,
                                  std::chrono::system_clock::time_point now) {
  const absl::TimeZone utc = absl::UTCTimeZone();
  const absl::CivilMonth month = absl::ToCivilMonth(absl::FromChrono(now), utc);
  ReportQuery q;
  q.from = absl::ToChronoTime(absl::FromCivil(month, utc));
  q.to = std::chrono::floor<std::chrono::milliseconds>(now);
  Spend spend;
  spend.month = absl::FormatCivilTime(month);
  if (q.to <= q.from) return spend;
  q.group_by = {"project"};
  ASSIGN_OR_RETURN(
      ReportBuilder tally,
      TallyOrScan(store, q, ns, now, [](const std::string&, const std::string&) { return true; }));
  ASSIGN_OR_RETURN(std::vector<Interval> open, ListOpen(store, ns));
  const std::optional<RateCard> card = ChooseRateCard(rate_cards);
  for (const Interval& i : open) {
    if (!card) continue;
    auto price = card->gpu_hourly.find(i.gpu_type);
    spend.per_second +=
        (static_cast<double>(i.gpus) * (price == card->gpu_hourly.end() ? 0 : price->second) +
         i.cpu * card->cpu_hourly + i.memory_gib * card->memory_gib_hourly) /
        3600.0;
  }
  json::object report = tally.Build(now, card);
  if (const json::value* cost = model::FindPath(report, "status.totals.cost")) {
    if (cost->is_double()) spend.cost = cost->get_double();
    if (cost->is_int64()) spend.cost = static_cast<double>(cost->get_int64());
  }
  spend.currency = model::GetString(report, "status.currency");
  return spend;
}

double PercentOf(const Spend& spend, const model::Budget& budget) {
  if (budget.monthly <= 0) return 100;
  return spend.cost * 100.0 / budget.monthly;
}

std::string SpendWords(const std::string& ns, const Spend& spend, const model::Budget& budget) {
  std::string currency = spend.currency.empty() ? "" : " " + spend.currency;
  return "project " + ns + " has spent " + model::MoneyText(spend.cost) + currency +
         " of its monthly budget of " + model::MoneyText(budget.monthly) + currency + " (" +
         spend.month + ")";
}

}  // namespace gantry::engine::usage
