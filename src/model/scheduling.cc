#include "model/scheduling.h"

#include <cstdlib>
#include <optional>

#include "model/codec.h"
#include "model/lifecycle_policy.h"

namespace gantry::model {
namespace {

namespace json = boost::json;

const json::object& ObjectOf(const json::object& obj, std::string_view dotted) {
  static const json::object kEmpty;
  const json::value* v = FindPath(obj, dotted);
  return v && v->is_object() ? v->get_object() : kEmpty;
}

// A GPU count as quota maps hold it: an integer or a string of digits; nullopt otherwise.
std::optional<int64_t> CountOf(const json::value& v) {
  if (v.is_int64()) return v.get_int64();
  if (v.is_uint64()) return static_cast<int64_t>(v.get_uint64());
  if (v.is_string()) {
    std::string s(v.get_string());
    if (s.empty() || s.size() > 12) return std::nullopt;
    size_t start = s[0] == '-' ? 1 : 0;
    if (start == s.size()) return std::nullopt;
    for (size_t i = start; i < s.size(); ++i)
      if (s[i] < '0' || s[i] > '9') return std::nullopt;
    return std::atoll(s.c_str());
  }
  return std::nullopt;
}

}  // namespace

Scheduling DecodeScheduling(const json::object& profile_spec) {
  Scheduling s;
  const json::object& in = ObjectOf(profile_spec, "scheduling");
  if (const json::value* p = in.if_contains("priority"); p && p->is_int64())
    s.priority = p->get_int64();
  s.preemptible = GetBool(in, "preemptible");
  if (const json::value* g = in.if_contains("preemptionGracePeriod"); g && g->is_string())
    if (auto d = ParseDuration(g->get_string()); d.ok() && *d <= kMaxGracePeriod)
      s.grace_period = *d;
  return s;
}

void ValidateScheduling(const json::object& profile_spec, std::vector<FieldCause>* causes) {
  const json::object& in = ObjectOf(profile_spec, "scheduling");
  const std::string base = "spec.scheduling.";
  if (const json::value* p = in.if_contains("priority");
      p && p->is_int64() && (p->get_int64() < -1000000000 || p->get_int64() > 1000000000))
    causes->push_back({base + "priority", "must be between -1000000000 and 1000000000"});
  const json::value* g = in.if_contains("preemptionGracePeriod");
  if (!g || !g->is_string()) return;
  auto d = ParseDuration(g->get_string());
  if (!d.ok())
    causes->push_back({base + "preemptionGracePeriod", std::string(d.status().message())});
  else if (*d > kMaxGracePeriod)
    causes->push_back({base + "preemptionGracePeriod",
                       "must be at most 1h (a preempted instance gets this long to stop before it "
                       "is killed); it is " +
                           std::string(g->get_string())});
}

std::map<std::string, int64_t> DecodeGuaranteedGpus(const json::object& project) {
  std::map<std::string, int64_t> out;
  for (const auto& [type, v] : ObjectOf(project, "spec.quota.guaranteedGpus"))
    if (auto n = CountOf(v); n && *n > 0) out[std::string(type)] = *n;
  return out;
}

void ValidateGuarantees(const json::object& project_spec, std::vector<FieldCause>* causes) {
  const json::object& quota = ObjectOf(project_spec, "quota");
  const json::object& gpus = ObjectOf(quota, "gpus");
  for (const auto& [key, v] : ObjectOf(quota, "guaranteedGpus")) {
    const std::string type(key);
    const std::string field = "spec.quota.guaranteedGpus." + type;
    auto n = CountOf(v);
    if (!n) {
      causes->push_back({field, "must be a whole number of GPUs"});
      continue;
    }
    if (*n < 0) {
      causes->push_back({field, "must not be negative; it is " + std::to_string(*n)});
      continue;
    }
    const json::value* cap = gpus.if_contains(type);
    std::optional<int64_t> limit = cap ? CountOf(*cap) : std::nullopt;
    if (limit && *n > *limit)
      causes->push_back({field, "must not be above spec.quota.gpus." + type + " (" +
                                    std::to_string(*limit) +
                                    "): a project cannot be guaranteed "
                                    "more than it may hold; it is " +
                                    std::to_string(*n)});
  }
}

std::map<std::string, std::string> OvercommittedGuarantees(
    const GuaranteesByProject& guarantees, const std::map<std::string, int64_t>& capacity) {
  struct Sum {
    int64_t gpus = 0;
    int projects = 0;
    std::string who;  // "a 3, b 3"
  };
  std::map<std::string, Sum> sums;
  for (const auto& [project, by_type] : guarantees)
    for (const auto& [type, n] : by_type) {
      if (n <= 0) continue;
      Sum& sum = sums[type];
      sum.gpus += n;
      ++sum.projects;
      sum.who += (sum.who.empty() ? "" : ", ") + project + " " + std::to_string(n);
    }
  std::map<std::string, std::string> out;
  for (const auto& [type, sum] : sums) {
    auto c = capacity.find(type);
    const int64_t have = c == capacity.end() ? 0 : c->second;
    if (sum.gpus <= have) continue;
    out[type] = "guaranteedGpus of " + type + " sum to " + std::to_string(sum.gpus) + " over " +
                std::to_string(sum.projects) + (sum.projects == 1 ? " project (" : " projects (") +
                sum.who + ") but the fleet has " + std::to_string(have) + " " + type +
                (have == 1 ? " GPU" : " GPUs") + ": not every guarantee can be kept at once";
  }
  return out;
}

GuaranteesByProject GuaranteesOf(const std::vector<json::object>& projects) {
  GuaranteesByProject out;
  for (const json::object& p : projects)
    out[GetString(p, "metadata.name")] = DecodeGuaranteedGpus(p);
  return out;
}

std::string OvercommitWords(const std::map<std::string, int64_t>& own,
                            const std::map<std::string, std::string>& overcommitted) {
  std::string words;
  for (const auto& [type, n] : own)
    if (auto o = overcommitted.find(type); n > 0 && o != overcommitted.end())
      words += (words.empty() ? "" : "; ") + o->second;
  return words;
}

}  // namespace gantry::model
