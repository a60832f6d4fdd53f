#include "cli/usage.h"

#include <boost/json.hpp>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "cli/kinds.h"
#include "cli/table.h"

namespace gantry::cli {

namespace json = boost::json;

namespace {

std::string Number(const json::value* v, int decimals) {
  double d = 0;
  if (v && v->is_double()) d = v->as_double();
  if (v && v->is_int64()) d = static_cast<double>(v->as_int64());
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, d);
  return buf;
}

std::string CsvCell(const std::string& v) {
  if (v.find_first_of(",\"\r\n") == std::string::npos) return v;
  std::string out = "\"";
  for (char c : v) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::vector<std::string> Keys(const json::object& report) {
  std::vector<std::string> keys;
  if (Lookup(report, "spec.step")) keys.push_back("bucket");
  if (const json::value* g = Lookup(report, "spec.groupBy"); g && g->is_array())
    for (const auto& k : g->as_array())
      if (k.is_string()) keys.emplace_back(k.as_string());
  return keys;
}

}  // namespace

std::string UsageText(const json::object& report, bool csv) {
  const std::vector<std::string> keys = Keys(report);
  const std::string currency = FieldText(report, "status.currency");
  const json::value* rows = Lookup(report, "status.rows");
  const json::array empty;
  const json::array& list = rows && rows->is_array() ? rows->as_array() : empty;
  if (csv) {
    std::string out;
    for (const auto& k : keys) out += k + ",";
    out += "gpuSeconds,cpuCoreSeconds,memoryGiBSeconds,cost,currency\r\n";
    for (const auto& r : list) {
      const json::object& row = r.as_object();
      for (const auto& k : keys) out += CsvCell(FieldText(row, k)) + ",";
      for (const char* n : {"gpuSeconds", "cpuCoreSeconds", "memoryGiBSeconds"})
        out += Number(Lookup(row, n), 3) + ",";
      out += Number(Lookup(row, "cost"), 6) + "," + CsvCell(currency) + "\r\n";
    }
    return out;
  }
  std::vector<std::string> headers;
  for (const auto& k : keys) headers.push_back(k);  // Table upper-cases headers
  headers.push_back("GPU-HOURS");
  headers.push_back(currency.empty() ? "COST" : "COST (" + currency + ")");
  Table table(headers);
  auto hours = [](const json::value* v) {
    double d = v && v->is_double()  ? v->as_double()
               : v && v->is_int64() ? static_cast<double>(v->as_int64())
                                    : 0;
    json::value h = d / 3600;
    return Number(&h, 2);
  };
  for (const auto& r : list) {
    const json::object& row = r.as_object();
    std::vector<std::string> cells;
    for (const auto& k : keys) cells.push_back(FieldText(row, k));
    cells.push_back(hours(Lookup(row, "gpuSeconds")));
    cells.push_back(Number(Lookup(row, "cost"), 2));
    table.AddRow(std::move(cells));
  }
  std::vector<std::string> total(keys.size());
  if (!total.empty()) total[0] = "TOTAL";
  total.push_back(hours(Lookup(report, "status.totals.gpuSeconds")));
  total.push_back(Number(Lookup(report, "status.totals.cost"), 2));
  table.AddRow(std::move(total));
  return table.Render();
}

int RunUsage(CommandContext& ctx, const UsageOptions& options) {
  if (!options.output.empty() && options.output != "csv" && options.output != "json") {
    PrintError(ctx,
               "-o must be csv or json (or absent for a table), not \"" + options.output + "\"");
    return kExitUsage;
  }
  std::string query;
  auto add = [&](const char* key, const std::string& v) {
    if (!v.empty()) absl::StrAppend(&query, query.empty() ? "?" : "&", key, "=", PercentEncode(v));
  };
  add("from", options.from);
  add("to", options.to);
  add("groupBy", options.group_by);
  add("step", options.step);
  std::string path = "/apis/paas.gantry.dev/v1/";
  if (ctx.settings.project_explicit)
    path += "namespaces/" + PercentEncode(ctx.settings.project) + "/";
  auto report = GetObject(*ctx.api, path + "usagereports" + query);
  if (!report.ok()) {
    PrintError(ctx, report.status());
    return kExitError;
  }
  if (options.output == "json")
    *ctx.out << json::serialize(*report) << "\n";
  else
    *ctx.out << UsageText(*report, options.output == "csv");
  return kExitOk;
}

}  // namespace gantry::cli
