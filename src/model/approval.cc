#include "model/approval.h"

#include <algorithm>

#include "model/codec.h"
#include "model/lifecycle_policy.h"

namespace gantry::model {

namespace json = boost::json;

namespace {

constexpr ApprovalState kStates[] = {ApprovalState::kPending, ApprovalState::kApproved,
                                     ApprovalState::kRejected, ApprovalState::kExpired,
                                     ApprovalState::kWithdrawn};

const json::object* ApprovalOf(const json::object& spec) {
  const json::value* v = spec.if_contains("approval");
  return v && v->is_object() ? &v->get_object() : nullptr;
}

}  // namespace

std::optional<ApprovalPolicy> DecodeApprovalPolicy(const json::object& profile_spec) {
  const json::object* a = ApprovalOf(profile_spec);
  if (!a || !GetBool(*a, "required")) return std::nullopt;
  ApprovalPolicy p;
  p.required = true;
  p.when_gpus_at_least = static_cast<int>(std::max<int64_t>(0, GetInt(*a, "whenGpusAtLeast", 0)));
  if (auto d = ParseDuration(GetString(*a, "expiresAfter")); d.ok())
    p.expires_after = std::min(*d, kMaxApprovalExpiry);
  return p;
}

bool NeedsApproval(const ApprovalPolicy& policy, int gpus) {
  return policy.required && gpus >= policy.when_gpus_at_least;
}

void ValidateApprovalPolicy(const json::object& profile_spec, std::vector<FieldCause>* causes) {
  const json::object* a = ApprovalOf(profile_spec);
  if (!a) return;
  const bool required = GetBool(*a, "required");
  if (const json::value* n = a->if_contains("whenGpusAtLeast"); n && n->is_int64()) {
    if (n->get_int64() < 1)
      causes->push_back({"spec.approval.whenGpusAtLeast",
                         "Invalid value: " + std::to_string(n->get_int64()) +
                             ": must be at least 1 (leave it out to ask for every deploy)"});
    else if (!required)
      causes->push_back(
          {"spec.approval.whenGpusAtLeast", "applies only when spec.approval.required is true"});
  }
  if (const json::value* e = a->if_contains("expiresAfter"); e && e->is_string()) {
    std::string text(e->get_string());
    auto d = ParseDuration(text);
    if (!d.ok())
      causes->push_back(
          {"spec.approval.expiresAfter",
           "Invalid value: \"" + text.substr(0, 64) + "\": " + std::string(d.status().message())});
    else if (*d > kMaxApprovalExpiry)
      causes->push_back(
          {"spec.approval.expiresAfter", "Invalid value: \"" + text + "\": at most 30d"});
    else if (!required)
      causes->push_back(
          {"spec.approval.expiresAfter", "applies only when spec.approval.required is true"});
  }
}

std::string_view ApprovalStateName(ApprovalState s) {
  switch (s) {
    case ApprovalState::kPending:
      return "Pending";
    case ApprovalState::kApproved:
      return "Approved";
    case ApprovalState::kRejected:
      return "Rejected";
    case ApprovalState::kExpired:
      return "Expired";
    case ApprovalState::kWithdrawn:
      return "Withdrawn";
  }
  return "Pending";
}

std::optional<ApprovalRequest> DecodeApprovalRequest(const json::object& instance) {
  const json::value* v = FindPath(instance, "status.approval");
  if (!v || !v->is_object()) return std::nullopt;
  const json::object& a = v->get_object();
  ApprovalRequest r;
  const std::string state = GetString(a, "state");
  bool known = false;
  for (ApprovalState s : kStates)
    if (ApprovalStateName(s) == state) r.state = s, known = true;
  if (!known) return std::nullopt;
  r.action = GetString(a, "action");
  r.gpus = static_cast<int>(GetInt(a, "gpus", 0));
  r.requested_by = GetString(a, "requestedBy");
  r.requested_at = GetString(a, "requestedAt");
  r.expires_at = GetString(a, "expiresAt");
  r.previous_phase = ParsePhase(GetString(a, "previousPhase"));
  r.decided_by = GetString(a, "decidedBy");
  r.decided_at = GetString(a, "decidedAt");
  r.message = GetString(a, "message");
  return r;
}

void SetApprovalRequest(const ApprovalRequest& r, json::object* instance) {
  json::object a{{"state", ApprovalStateName(r.state)},
                 {"action", r.action},
                 {"gpus", r.gpus},
                 {"requestedBy", r.requested_by},
                 {"requestedAt", r.requested_at},
                 {"expiresAt", r.expires_at},
                 {"previousPhase", PhaseName(r.previous_phase)}};
  if (!r.decided_by.empty()) a["decidedBy"] = r.decided_by;
  if (!r.decided_at.empty()) a["decidedAt"] = r.decided_at;
  if (!r.message.empty()) a["message"] = r.message;
  EnsureObject(*instance, "status")["approval"] = std::move(a);
}

bool IsPendingApproval(const json::object& instance) {
  if (GetString(instance, "status.phase") != "Waiting" ||
      GetString(instance, "status.reason") != kPendingApprovalReason)
    return false;
  auto r = DecodeApprovalRequest(instance);
  return r && r->state == ApprovalState::kPending;
}

}  // namespace gantry::model
