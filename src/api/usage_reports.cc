// GET /apis/paas.gantry.dev/v1[/namespaces/P]/usagereports (API.md "Usage and cost",
// docs/usage.md): a UsageReport computed from the usage ledger (engine/usage_ledger.h,
// engine/usage_report.h) and priced by the RateCard; `Accept: text/csv` returns its rows as
// CSV. Who sees which rows: org-admin and paas-admin every row, a project-admin every row of
// their projects, everyone else only their own usage (rows of other users are left out, not
// refused). Also sets gantry_gpu_seconds_total for /metrics.
#include <spdlog/spdlog.h>

#include "api/router.h"
#include "api/router_responses.h"
#include "api/status_http.h"
#include "common/errors.h"
#include "engine/usage_report.h"
#include "engine/usage_rollup.h"

namespace gantry::api {

namespace json = boost::json;
namespace usage = engine::usage;

namespace {

// Who sees the usage of (project, user).
usage::UsageFilter SeenBy(const auth::Subject& subject) {
  return [&subject](const std::string& project, const std::string& user) {
    if (subject.IsAdmin()) return true;
    if (subject.RoleIn(project) == auth::Role::kProjectAdmin) return true;
    return !user.empty() && user == subject.user;
  };
}

}  // namespace

Response Router::UsageReports(ApiCall& c) {
  if (c.watch) return ErrorResponse(BadRequestError("usage reports are computed: no watch"));
  store::Store& store = resources_.store();
  const auto now = resources_.clock().Now();
  auto q = usage::ParseReportQuery(c.query, now);
  if (!q.ok()) return ErrorResponse(q.status());
  std::optional<std::string> project;
  if (!c.t.all_namespaces) project = c.t.ns;
  if (project) {
    auto p = store.Get("Project", "", *project);
    if (!p.ok()) return ErrorResponse(p.status());
  }
  auto tally = usage::TallyOrScan(store, *q, project, now, SeenBy(c.subject));
  if (!tally.ok()) return ErrorResponse(tally.status());
  store::ListOptions cards;
  cards.kind = usage::kRateCardKind;
  auto listed = store.List(cards);
  if (!listed.ok()) return ErrorResponse(listed.status());
  json::object report = tally->Build(now, usage::ChooseRateCard(listed->items));
  if (MediaType(c.request.accept) == "text/csv" ||
      c.request.accept.find("text/csv") != std::string::npos) {
    Response r = Text(200, usage::ReportCsv(report));
    r.content_type = "text/csv; charset=utf-8";
    return r;
  }
  return JsonResponse(200, report);
}

Response Router::UsageReportsReadOnly(ApiCall& c) {
  if (!c.t.name.empty() && c.request.method == "GET")
    return ErrorResponse(NotFoundError(
        "usage reports have no names: GET usagereports?from=&to=&groupBy=&step= computes one"));
  return ErrorResponse(MethodNotAllowedError("usage reports are computed and read-only"));
}

void Router::NoteUsageMetrics() {
  metrics_.Describe("gantry_gpu_seconds_total", "counter",
                    "GPU-seconds recorded by the usage ledger, per project and GPU type (open "
                    "intervals counted until now); the same figure as a usage report.");
  // The report from the beginning of time to now, by project and GPU type.
  const auto now = resources_.clock().Now();
  usage::ReportQuery q;
  q.to = std::chrono::floor<std::chrono::milliseconds>(now);
  q.group_by = {"project", "gpuType"};
  auto tally = usage::TallyOrScan(resources_.store(), q, std::nullopt, now,
                                  [](const std::string&, const std::string&) { return true; });
  if (!tally.ok()) {
    spdlog::warn("metrics: cannot read the usage ledger: {}",
                 std::string(tally.status().message()));
    return;
  }
  for (const auto& row : tally->Rows(std::nullopt))
    if (!row.keys[1].empty() || row.gpu_seconds > 0)  // the intervals that held GPUs
      metrics_.Set("gantry_gpu_seconds_total",
                   {{"project", row.keys[0]}, {"gpu_type", row.keys[1]}}, row.gpu_seconds);
}

}  // namespace gantry::api
