#include "engine/usage_report.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "common/errors.h"
#include "model/codec.h"

namespace gantry::engine::usage {

namespace json = boost::json;
using Time = std::chrono::system_clock::time_point;

namespace {

const std::vector<std::string>& Keys() {
  static const std::vector<std::string> keys = {"project", "user", "profile", "gpuType"};
  return keys;
}

int64_t CountBuckets(const ReportQuery& q) {
  if (q.step == Step::kNone) return 1;
  int64_t n = 0;
  for (Time b = BucketStart(q.step, q.from); b < q.to && n <= kMaxBuckets;
       b = NextBucket(q.step, b))
    ++n;
  return n;
}

double Round(double v, double scale) { return std::round(v * scale) / scale; }

json::object SumsJson(const ReportRow& s) {
  return json::object{{"gpuSeconds", Round(s.gpu_seconds, 1000)},
                      {"cpuCoreSeconds", Round(s.cpu_core_seconds, 1000)},
                      {"memoryGiBSeconds", Round(s.memory_gib_seconds, 1000)},
                      {"cost", Round(s.cost, 1e6)}};
}

double NumberOf(const json::value* v) { return v ? model::AsNumber(*v).value_or(0) : 0; }

std::string StepName(Step s) {
  switch (s) {
    case Step::kHour:
      return "hour";
    case Step::kDay:
      return "day";
    case Step::kMonth:
      return "month";
    case Step::kNone:
      break;
  }
  return "";
}

std::string CsvField(const std::string& v) {
  if (v.find_first_of(",\"\r\n") == std::string::npos) return v;
  std::string out = "\"";
  for (char c : v) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string CsvValue(const json::value& v) {
  if (v.is_string()) return CsvField(std::string(v.as_string()));
  if (!v.is_double()) return json::serialize(v);
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v.as_double(), std::chars_format::fixed);
  return ec == std::errc() ? std::string(buf, end) : json::serialize(v);
}

}  // namespace

Time BucketStart(Step step, Time t) {
  const absl::Time at = absl::FromChrono(t);
  const absl::TimeZone utc = absl::UTCTimeZone();
  switch (step) {
    case Step::kHour:
      return absl::ToChronoTime(absl::FromCivil(absl::ToCivilHour(at, utc), utc));
    case Step::kDay:
      return absl::ToChronoTime(absl::FromCivil(absl::ToCivilDay(at, utc), utc));
    case Step::kMonth:
      return absl::ToChronoTime(absl::FromCivil(absl::ToCivilMonth(at, utc), utc));
    case Step::kNone:
      break;
  }
  return t;
}

Time NextBucket(Step step, Time start) {
  const absl::TimeZone utc = absl::UTCTimeZone();
  const absl::Time at = absl::FromChrono(start);
  switch (step) {
    case Step::kHour:
      return absl::ToChronoTime(absl::FromCivil(absl::ToCivilHour(at, utc) + 1, utc));
    case Step::kDay:
      return absl::ToChronoTime(absl::FromCivil(absl::ToCivilDay(at, utc) + 1, utc));
    case Step::kMonth:
      return absl::ToChronoTime(absl::FromCivil(absl::ToCivilMonth(at, utc) + 1, utc));
    case Step::kNone:
      break;
  }
  return Time::max();
}

absl::StatusOr<ReportQuery> ParseReportQuery(const std::map<std::string, std::string>& params,
                                             Time now) {
  ReportQuery q;
  std::vector<FieldCause> causes;
  auto param = [&](const char* key) -> std::optional<std::string> {
    auto it = params.find(key);
    if (it == params.end() || it->second.empty()) return std::nullopt;
    return it->second;
  };
  auto time_of = [&](const char* key, Time fallback) {
    auto text = param(key);
    if (!text) return fallback;
    auto t = ParseTime(*text);
    if (!t)
      causes.push_back({key, "must be an RFC 3339 time such as 2026-12-01T00:00:00Z, not \"" +
                                 text->substr(0, 64) + "\""});
    return t.value_or(fallback);
  };
  const auto floor_ms = [](Time t) { return std::chrono::floor<std::chrono::milliseconds>(t); };
  q.from = floor_ms(time_of("from", BucketStart(Step::kMonth, now)));
  q.to = floor_ms(time_of("to", now));
  if (causes.empty() && q.from >= q.to)
    causes.push_back({"from", "must be before to (" + FormatMillis(q.from) + " is not before " +
                                  FormatMillis(q.to) + ")"});
  if (auto g = param("groupBy")) {
    for (size_t b = 0; b <= g->size();) {
      size_t e = std::min(g->find(',', b), g->size());
      std::string key = g->substr(b, e - b);
      b = e + 1;
      if (std::find(Keys().begin(), Keys().end(), key) == Keys().end()) {
        causes.push_back({"groupBy",
                          "unknown key \"" + key.substr(0, 32) +
                              "\"; group by project, user, profile or gpuType",
                          "FieldValueNotSupported"});
      } else if (std::find(q.group_by.begin(), q.group_by.end(), key) == q.group_by.end()) {
        q.group_by.push_back(key);
      }
    }
  } else {
    q.group_by = Keys();
  }
  if (auto s = param("step")) {
    if (*s == "hour")
      q.step = Step::kHour;
    else if (*s == "day")
      q.step = Step::kDay;
    else if (*s == "month")
      q.step = Step::kMonth;
    else
      causes.push_back({"step", "must be hour, day or month, not \"" + s->substr(0, 32) + "\"",
                        "FieldValueNotSupported"});
  }
  if (causes.empty() && CountBuckets(q) > kMaxBuckets)
    causes.push_back({"step", "makes more than " + std::to_string(kMaxBuckets) + " " +
                                  StepName(q.step) +
                                  " buckets; use a larger step or a shorter range"});
  if (!causes.empty()) return InvalidError("UsageReport", "", std::move(causes));
  return q;
}

RateCard DecodeRateCard(const json::object& stored) {
  RateCard c;
  c.name = model::GetString(stored, "metadata.name");
  c.currency = model::GetString(stored, "spec.currency");
  c.cpu_hourly = NumberOf(model::FindPath(stored, "spec.cpuHourly"));
  c.memory_gib_hourly = NumberOf(model::FindPath(stored, "spec.memoryGiBHourly"));
  if (const json::value* g = model::FindPath(stored, "spec.gpuHourly"); g && g->is_object())
    for (const auto& kv : g->as_object()) c.gpu_hourly[kv.key()] = NumberOf(&kv.value());
  return c;
}

std::optional<RateCard> ChooseRateCard(const std::vector<json::object>& cards) {
  std::optional<RateCard> chosen;
  for (const auto& o : cards) {
    RateCard c = DecodeRateCard(o);
    if (c.name == "default") return c;
    if (!chosen || c.name < chosen->name) chosen = std::move(c);
  }
  return chosen;
}

Meter MeterOf(const Interval& i) { return Meter{i.project, i.user, i.profile_name, i.gpu_type}; }

Rates RatesOf(const Interval& i) {
  return Rates{std::max<int64_t>(i.gpus, 0), std::max<int64_t>(std::llround(i.cpu * 1000), 0),
               std::max<int64_t>(std::llround(i.memory_gib * 1024), 0)};
}

Units UnitsOf(const Rates& r, int64_t ms) {
  return Units{r.gpus * ms, r.millicores * ms, r.mib * ms};
}

int64_t EpochMs(Time t) {
  return std::chrono::floor<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

ReportBuilder::ReportBuilder(ReportQuery query) : query_(std::move(query)) {}

void ReportBuilder::AddTo(ByType* sums, std::string_view gpu_type, const Units& u) {
  auto it = sums->find(gpu_type);
  if (it == sums->end()) it = sums->emplace(std::string(gpu_type), Sum{}).first;
  it->second.gpu += u.gpu_ms;
  it->second.cpu += u.cpu_mcore_ms;
  it->second.memory += u.memory_mib_ms;
}

void ReportBuilder::AddUnits(const Meter& m, Time at, const Units& units) {
  Key key{query_.step == Step::kNone ? 0 : EpochMs(BucketStart(query_.step, at)), {}};
  key.keys.reserve(query_.group_by.size());
  for (const auto& k : query_.group_by)
    key.keys.emplace_back(k == "project"   ? m.project
                          : k == "user"    ? m.user
                          : k == "profile" ? m.profile
                                           : m.gpu_type);
  AddTo(&rows_[std::move(key)], m.gpu_type, units);
  AddTo(&totals_, m.gpu_type, units);
}

void ReportBuilder::AddSpan(const Meter& m, const Rates& rates, Time s, Time e) {
  for (Time b = s; b < e;) {
    const Time next = std::min(e, NextBucket(query_.step, BucketStart(query_.step, b)));
    AddUnits(m, b, UnitsOf(rates, EpochMs(next) - EpochMs(b)));
    b = next;
  }
}

void ReportBuilder::AddInterval(const Interval& i, Time now) {
  const Time s = std::max(i.start, query_.from);
  const Time e = std::min(i.end.value_or(std::max(now, i.start)), query_.to);
  if (e > s) AddSpan(MeterOf(i), RatesOf(i), s, e);
}

ReportRow ReportBuilder::Priced(const ByType& sums, const std::optional<RateCard>& card) {
  ReportRow row;
  for (const auto& [type, sum] : sums) {
    const double gpu = static_cast<double>(sum.gpu) / 1e3;
    const double cpu = static_cast<double>(sum.cpu) / 1e6;
    const double memory = static_cast<double>(sum.memory) / (1e3 * 1024);
    row.gpu_seconds += gpu;
    row.cpu_core_seconds += cpu;
    row.memory_gib_seconds += memory;
    if (!card) continue;
    double gpu_price = 0;
    if (auto it = card->gpu_hourly.find(type); it != card->gpu_hourly.end()) gpu_price = it->second;
    row.cost +=
        (gpu * gpu_price + cpu * card->cpu_hourly + memory * card->memory_gib_hourly) / 3600.0;
  }
  return row;
}

std::vector<ReportRow> ReportBuilder::Rows(const std::optional<RateCard>& card) const {
  std::vector<ReportRow> out;
  out.reserve(rows_.size());
  for (const auto& [key, sums] : rows_) {
    ReportRow row = Priced(sums, card);
    row.bucket = Time{} + std::chrono::milliseconds(key.bucket_ms);
    row.keys = key.keys;
    out.push_back(std::move(row));
  }
  return out;
}

ReportRow ReportBuilder::Totals(const std::optional<RateCard>& card) const {
  return Priced(totals_, card);
}

json::object ReportBuilder::Build(Time now, const std::optional<RateCard>& card) const {
  const ReportQuery& q = query_;
  json::array out;
  for (const ReportRow& r : Rows(card)) {
    json::object row;
    if (q.step != Step::kNone) row["bucket"] = FormatMillis(r.bucket);
    for (size_t k = 0; k < q.group_by.size(); ++k) row[q.group_by[k]] = r.keys[k];
    for (auto& kv : SumsJson(r)) row[kv.key()] = kv.value();
    out.push_back(std::move(row));
  }
  json::array group_by;
  for (const auto& k : q.group_by) group_by.push_back(json::string(k));
  json::object spec{
      {"from", FormatMillis(q.from)}, {"to", FormatMillis(q.to)}, {"groupBy", group_by}};
  if (q.step != Step::kNone) spec["step"] = StepName(q.step);
  json::object status{{"rows", std::move(out)},
                      {"totals", SumsJson(Totals(card))},
                      {"currency", card ? card->currency : ""}};
  if (card) status["rateCard"] = card->name;
  return json::object{{"apiVersion", "paas.gantry.dev/v1"},
                      {"kind", "UsageReport"},
                      {"metadata", json::object{{"creationTimestamp", FormatMillis(now)}}},
                      {"spec", std::move(spec)},
                      {"status", std::move(status)}};
}

json::object BuildReport(const ReportQuery& q, const std::vector<Interval>& intervals, Time now,
                         const std::optional<RateCard>& card) {
  ReportBuilder builder(q);
  for (const Interval& i : intervals) builder.AddInterval(i, now);
  return builder.Build(now, card);
}

std::string ReportCsv(const json::object& report) {
  std::vector<std::string> columns;
  if (model::FindPath(report, "spec.step")) columns.push_back("bucket");
  if (const json::value* g = model::FindPath(report, "spec.groupBy"); g && g->is_array())
    for (const auto& k : g->as_array())
      if (k.is_string()) columns.emplace_back(k.as_string());
  for (const char* c : {"gpuSeconds", "cpuCoreSeconds", "memoryGiBSeconds", "cost"})
    columns.emplace_back(c);
  columns.emplace_back("currency");
  const std::string currency = model::GetString(report, "status.currency");
  std::string out;
  for (size_t c = 0; c < columns.size(); ++c) out += (c ? "," : "") + columns[c];
  out += "\r\n";
  const json::value* rows = model::FindPath(report, "status.rows");
  if (!rows || !rows->is_array()) return out;
  for (const auto& r : rows->as_array()) {
    const json::object& row = r.as_object();
    for (size_t c = 0; c < columns.size(); ++c) {
      if (c) out += ",";
      if (columns[c] == "currency")
        out += CsvField(currency);
      else if (auto it = row.find(columns[c]); it != row.end())
        out += CsvValue(it->value());
    }
    out += "\r\n";
  }
  return out;
}

}  // namespace gantry::engine::usage
