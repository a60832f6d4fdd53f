// CronSchedule (model/lifecycle_policy.h): standard 5-field cron expressions, evaluated in
// an IANA time zone through absl::TimeZone. Parse reads the fields as Vixie cron does
// (lists, ranges, steps, month and weekday names, 0 and 7 both Sunday; when both day fields
// are restricted a day matching either fires). Next walks civil days, skipping months and
// days that cannot match, and resolves each matching civil minute with TimeZone::At: a
// minute inside a skipped hour fires at the transition, a minute inside a repeated hour
// fires at its first occurrence only.
#include <array>
#include <cctype>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "model/lifecycle_policy.h"

namespace gantry::model {
namespace {

struct CronField {
  const char* name;
  int min, max;
  std::array<const char*, 12> names;  // value min + i, for months and weekdays
};

constexpr CronField kFields[5] = {
    {"minute", 0, 59, {}},
    {"hour", 0, 23, {}},
    {"day-of-month", 1, 31, {}},
    {"month",
     1,
     12,
     {"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}},
    {"day-of-week", 0, 7, {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}},
};

std::string Describe(int i) {
  const CronField& f = kFields[i];
  std::string range = std::to_string(f.min) + "-" + std::to_string(f.max);
  if (i == 3) range += " or JAN-DEC";
  if (i == 4) range += " (0 and 7 are Sunday) or SUN-SAT";
  return range;
}

absl::Status FieldError(int i, const std::string& what) {
  return absl::InvalidArgumentError("field " + std::to_string(i + 1) + " (" + kFields[i].name +
                                    "): " + what);
}

// One value of field i: a number or (months, weekdays) a three-letter name.
absl::StatusOr<int> ParseValue(int i, std::string_view text) {
  const CronField& f = kFields[i];
  std::string shown(text.substr(0, 20));
  if (!text.empty() && std::isalpha(static_cast<unsigned char>(text[0]))) {
    std::string upper;
    for (char c : text) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    for (int k = 0; k < 12 && f.names[k] != nullptr; ++k)
      if (upper == f.names[k]) return f.min + k;
    return FieldError(i, "\"" + shown + "\" is not a value; use " + Describe(i));
  }
  if (text.empty() || text.size() > 4) {
    return FieldError(i, "\"" + shown + "\" is not a value; use " + Describe(i));
  }
  int n = 0;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c)))
      return FieldError(i, "\"" + shown + "\" is not a value; use " + Describe(i));
    n = n * 10 + (c - '0');
  }
  if (n < f.min || n > f.max)
    return FieldError(i, std::to_string(n) + " is out of range " + Describe(i));
  return n;
}

// One list item of field i: `*`, `v`, `a-b`, each optionally `/step`; sets its values.
absl::Status ParseItem(int i, std::string_view item, std::vector<bool>& set) {
  const CronField& f = kFields[i];
  std::string_view range = item;
  int step = 1;
  if (size_t slash = item.find('/'); slash != std::string_view::npos) {
    range = item.substr(0, slash);
    std::string_view s = item.substr(slash + 1);
    bool digits = !s.empty() && s.size() <= 3;
    for (char c : s) digits = digits && std::isdigit(static_cast<unsigned char>(c));
    step = digits ? std::stoi(std::string(s)) : 0;
    if (step < 1 || step > f.max - f.min + 1)
      return FieldError(i, "step \"" + std::string(s.substr(0, 20)) +
                               "\" is not a number from 1 to " + std::to_string(f.max - f.min + 1));
  }
  int lo = f.min, hi = f.max;
  if (range != "*") {
    size_t dash = range.find('-');
    auto a = ParseValue(i, range.substr(0, dash));
    if (!a.ok()) return a.status();
    lo = hi = *a;
    if (dash != std::string_view::npos) {
      auto b = ParseValue(i, range.substr(dash + 1));
      if (!b.ok()) return b.status();
      hi = *b;
      if (hi < lo)
        return FieldError(i, "range \"" + std::string(range) + "\" ends before it starts");
    } else if (range.size() != item.size()) {
      hi = f.max;  // "5/15": from 5 to the end, every 15th
    }
  }
  for (int v = lo; v <= hi; v += step) set[i == 4 ? v % 7 : v] = true;
  return absl::OkStatus();
}

absl::Status ParseField(int i, std::string_view text, std::vector<bool>& set) {
  set.assign(kFields[i].max + 1, false);
  for (absl::string_view part : absl::StrSplit(absl::string_view(text.data(), text.size()), ',')) {
    std::string_view item(part.data(), part.size());
    if (item.empty()) return FieldError(i, "empty item in the list \"" + std::string(text) + "\"");
    if (absl::Status s = ParseItem(i, item, set); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// Where a civil minute falls: a skipped minute at the transition, a repeated one at its
// first occurrence.
absl::Time Resolve(const absl::CivilMinute& c, const absl::TimeZone& zone) {
  absl::TimeZone::TimeInfo info = zone.At(c);
  return info.kind == absl::TimeZone::TimeInfo::SKIPPED ? info.trans : info.pre;
}

int CronWeekday(const absl::CivilDay& d) {
  // absl: Monday = 0 ... Sunday = 6; cron: Sunday = 0.
  return (static_cast<int>(absl::GetWeekday(d)) + 1) % 7;
}

}  // namespace

absl::StatusOr<CronSchedule> CronSchedule::Parse(std::string_view expression) {
  std::vector<absl::string_view> fields =
      absl::StrSplit(absl::string_view(expression.data(), expression.size()),
                     absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (fields.size() != 5)
    return absl::InvalidArgumentError(
        "a cron expression has 5 fields (minute hour day-of-month month day-of-week, e.g. "
        "\"0 20 * * 1-5\"), not " +
        std::to_string(fields.size()));
  CronSchedule c;
  std::vector<bool>* sets[5] = {&c.minute_, &c.hour_, &c.dom_, &c.month_, &c.dow_};
  for (int i = 0; i < 5; ++i)
    if (absl::Status s = ParseField(i, {fields[i].data(), fields[i].size()}, *sets[i]); !s.ok())
      return s;
  // As in Vixie cron, a day field written with a leading * ("*", "*/2") is unrestricted
  // for the either-day rule.
  c.dom_any_ = fields[2][0] == '*';
  c.dow_any_ = fields[4][0] == '*';
  c.dow_.resize(7);
  return c;
}

std::optional<absl::Time> CronSchedule::Next(absl::Time after, const absl::TimeZone& zone) const {
  // Civil minutes map to instants in order (Resolve never goes back), so the first match
  // at or after the civil minute of `after` that lies after it is the answer.
  const absl::CivilMinute from = absl::ToCivilMinute(after, zone);
  const absl::CivilDay first(from);
  const absl::CivilDay last = first + 5 * 366;
  for (absl::CivilDay day = first; day <= last;) {
    if (!month_[day.month()]) {
      day = absl::CivilDay(absl::CivilMonth(day) + 1);
      continue;
    }
    bool dom = dom_[day.day()], dow = dow_[CronWeekday(day)];
    bool matches = (dom_any_ || dow_any_) ? (dom && dow) : (dom || dow);
    for (int h = day == first ? from.hour() : 0; matches && h < 24; ++h) {
      if (!hour_[h]) continue;
      for (int m = (day == first && h == from.hour()) ? from.minute() : 0; m < 60; ++m) {
        if (!minute_[m]) continue;
        absl::Time t = Resolve(absl::CivilMinute(day.year(), day.month(), day.day(), h, m), zone);
        if (t > after) return t;
      }
    }
    ++day;
  }
  return std::nullopt;
}

}  // namespace gantry::model
