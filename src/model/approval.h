// Approval gates (API.md "Notifications and approvals"; docs/approvals.md): a compute
// profile's spec.approval says which deploys and starts of its instances wait for a
// project-admin or PaaS Admin, and an instance's status.approval records the request and its
// answer. Typed here, JSON only in the store:
//
//   ComputeProfile.spec.approval   {required, whenGpusAtLeast, expiresAfter (default 72h)}
//   ComputeInstance.status.approval {state, action, gpus, requestedBy, requestedAt,
//                                    expiresAt, previousPhase, decidedBy, decidedAt, message}
//
// A request is Pending while the instance is Waiting with reason PendingApproval and no run;
// Approved (the run is queued), Rejected, Expired or Withdrawn record how it ended and stay
// on the instance (kubectl describe shows who decided) until the next request replaces them.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <boost/json.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/errors.h"
#include "model/lifecycle.h"

namespace gantry::model {

inline constexpr char kPendingApprovalReason[] = "PendingApproval";
inline constexpr std::chrono::seconds kDefaultApprovalExpiry{72 * 3600};
inline constexpr std::chrono::seconds kMaxApprovalExpiry{30 * 24 * 3600};

// spec.approval of a compute profile (revision).
struct ApprovalPolicy {
  bool required = false;
  int when_gpus_at_least = 0;  // 0: every deploy and start
  std::chrono::seconds expires_after = kDefaultApprovalExpiry;
};
// The policy of `profile_spec` (nullopt when it has no spec.approval or required is false).
// Values of the wrong type read as their defaults: the API validated them at save.
std::optional<ApprovalPolicy> DecodeApprovalPolicy(const boost::json::object& profile_spec);
// Whether a deploy or start asking for `gpus` GPUs needs approval under `policy`.
bool NeedsApproval(const ApprovalPolicy& policy, int gpus);
// 422 causes for spec.approval beyond the schema's types: whenGpusAtLeast below 1,
// expiresAfter that is not a duration or is longer than 30d, whenGpusAtLeast or expiresAfter
// on a policy that is not required.
void ValidateApprovalPolicy(const boost::json::object& profile_spec,
                            std::vector<FieldCause>* causes);

enum class ApprovalState { kPending, kApproved, kRejected, kExpired, kWithdrawn };
std::string_view ApprovalStateName(ApprovalState s);  // "Pending", "Approved", ...

// status.approval of an instance.
struct ApprovalRequest {
  ApprovalState state = ApprovalState::kPending;
  std::string action;  // "deploy" or "start"
  int gpus = 0;
  std::string requested_by, requested_at, expires_at;  // RFC 3339 times
  Phase previous_phase = Phase::kNotDeployed;          // where a rejection returns it
  std::string decided_by, decided_at, message;         // once answered
};
// status.approval of `instance` (nullopt when it has none or it does not decode).
std::optional<ApprovalRequest> DecodeApprovalRequest(const boost::json::object& instance);
// Writes `request` as status.approval of `instance`.
void SetApprovalRequest(const ApprovalRequest& request, boost::json::object* instance);
// True when `instance` waits for an answer (Waiting, reason PendingApproval, state Pending).
bool IsPendingApproval(const boost::json::object& instance);

}  // namespace gantry::model
