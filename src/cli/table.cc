#include "cli/table.h"

#include <algorithm>
#include <boost/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "client/absl_compat.h"

namespace gantry::cli {
namespace {

namespace json = boost::json;

size_t DisplayWidth(std::string_view s) {
  size_t n = 0;
  for (char c : s) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;  // count code points
  }
  return n;
}

}  // namespace

Table::Table(std::vector<std::string> headers) : headers_(std::move(headers)) {
  for (std::string& h : headers_) absl::AsciiStrToUpper(&h);
}

void Table::AddRow(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }

std::string Table::Render() const {
  std::vector<size_t> width(headers_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) {
      width[i] = std::max(width[i], DisplayWidth(row[i]));
    }
  };
  measure(headers_);
  for (const auto& r : rows_) measure(r);
  std::string out;
  auto emit = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t i = 0; i < width.size(); ++i) {
      std::string_view cell = i < row.size() ? std::string_view(row[i]) : std::string_view();
      line += cell;
      if (i + 1 < width.size()) line.append(width[i] - DisplayWidth(cell) + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line;
    out += '\n';
  };
  emit(headers_);
  for (const auto& r : rows_) emit(r);
  return out;
}

std::string ShortDuration(absl::Duration d) {
  if (d < absl::ZeroDuration()) return "0s";
  int64_t s = absl::ToInt64Seconds(d);
  if (s < 60) return absl::StrCat(s, "s");
  int64_t m = s / 60;
  if (m < 60) return absl::StrCat(m, "m");
  int64_t h = m / 60;
  if (h < 24) return absl::StrCat(h, "h");
  int64_t days = h / 24;
  if (days < 365) return absl::StrCat(days, "d");
  return absl::StrCat(days / 365, "y");
}

std::string HumanDuration(absl::Duration d) {
  // k8s.io/apimachinery/pkg/util/duration.HumanDuration, as the server's Table prints it.
  int64_t s = absl::ToInt64Seconds(d);
  if (s < 0) return "0s";
  if (s < 120) return absl::StrCat(s, "s");
  int64_t m = s / 60;
  if (m < 10) return s % 60 == 0 ? absl::StrCat(m, "m") : absl::StrCat(m, "m", s % 60, "s");
  if (m < 180) return absl::StrCat(m, "m");
  int64_t h = m / 60;
  if (h < 8) return m % 60 == 0 ? absl::StrCat(h, "h") : absl::StrCat(h, "h", m % 60, "m");
  if (h < 48) return absl::StrCat(h, "h");
  int64_t days = h / 24;
  if (h < 24 * 8)
    return h % 24 == 0 ? absl::StrCat(days, "d") : absl::StrCat(days, "d", h % 24, "h");
  if (days < 365 * 2) return absl::StrCat(days, "d");
  int64_t years = days / 365;
  if (days < 365 * 8 && days % 365 != 0) return absl::StrCat(years, "y", days % 365, "d");
  return absl::StrCat(years, "y");
}

std::optional<absl::Time> ParseTimestamp(std::string_view rfc3339) {
  absl::Time t;
  std::string err;
  if (rfc3339.empty() || !absl::ParseTime(absl::RFC3339_full, Sv(rfc3339), &t, &err)) {
    return std::nullopt;
  }
  return t;
}

std::string FormatAge(std::string_view rfc3339, absl::Time now) {
  auto t = ParseTimestamp(rfc3339);
  if (!t) return "<unknown>";
  return ShortDuration(now - *t);
}

std::string PhaseWords(std::string_view phase) {
  if (phase.empty()) return "<none>";
  if (phase == "NotDeployed") return "Not Deployed";
  if (phase == "InProgress") return "In Progress";
  return std::string(phase);
}

std::string SharingSummary(const json::object& object) {
  std::string mode = FieldText(object, "spec.sharing.mode");
  if (mode.empty() || mode == "None") return "None";
  if (mode == "Selected") {
    const json::value* p = Lookup(object, "spec.sharing.projects");
    size_t n = p && p->is_array() ? p->get_array().size() : 0;
    return absl::StrCat("Selected(", n, ")");
  }
  return mode;
}

const json::value* Lookup(const json::object& object, std::string_view path) {
  const json::object* cur = &object;
  while (true) {
    size_t dot = path.find('.');
    std::string_view key = path.substr(0, dot);
    const json::value* v = cur->if_contains(json::string_view(key.data(), key.size()));
    if (v == nullptr || dot == std::string_view::npos) return v;
    if (!v->is_object()) return nullptr;
    cur = &v->get_object();
    path.remove_prefix(dot + 1);
  }
}

std::string ScalarText(const json::value& v) {
  switch (v.kind()) {
    case json::kind::string:
      return std::string(v.get_string());
    case json::kind::null:
      return "";
    case json::kind::bool_:
      return v.get_bool() ? "true" : "false";
    default:
      return json::serialize(v);
  }
}

std::string FieldText(const json::object& object, std::string_view path) {
  const json::value* v = Lookup(object, path);
  if (v == nullptr || v->is_object() || v->is_array()) return "";
  return ScalarText(*v);
}

}  // namespace gantry::cli
