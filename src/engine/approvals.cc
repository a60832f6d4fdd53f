#include "engine/approvals.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/errors.h"
#include "common/ids.h"
#include "common/status_macros.h"
#include "engine/dependencies.h"
#include "engine/deployment.h"
#include "engine/engine_internal.h"
#include "engine/lifecycle_controller.h"
#include "model/codec.h"
#include "model/lifecycle_policy.h"
#include "model/schema.h"

namespace gantry::engine {

namespace json = boost::json;
using model::ApprovalRequest;
using model::ApprovalState;
using model::Phase;

namespace {

std::string ActionName(model::RunAction action) {
  return action == model::RunAction::kStart ? "start" : "deploy";
}

std::string Gpus(int n) { return std::to_string(n) + (n == 1 ? " GPU" : " GPUs"); }

std::string Said(const std::string& note) { return note.empty() ? "" : ": " + note; }

}  // namespace

Approvals::Approvals(store::Store& store, Engine& engine, auth::AuditLog& audit, const Clock& clock,
                     Metrics& metrics)
    : store_(store), engine_(engine), audit_(audit), clock_(clock), metrics_(metrics) {
  metrics_.Describe("gantry_approvals_total", "counter",
                    "Approval requests, by result (requested, approved, rejected, expired, "
                    "withdrawn).");
}

std::string Approvals::Describe(const ApprovalRequest& r) {
  return r.action + " of " + Gpus(r.gpus) + " requested by " + r.requested_by;
}

absl::Status Approvals::MayDecide(const auth::Subject& who, const std::string& ns,
                                  const std::string& requester) {
  if (who.org_role == auth::Role::kOrgAdmin) return absl::OkStatus();
  const auth::Role role = who.RoleIn(ns);
  if (role != auth::Role::kProjectAdmin && role != auth::Role::kPaasAdmin) {
    std::string held(auth::RoleName(role));
    return ForbiddenError("answering an approval request in project " + ns +
                          " needs the project-admin or paas-admin role; " + who.user +
                          (held.empty() ? " holds no role there" : " is " + held + " there"));
  }
  if (who.user == requester)
    return ForbiddenError(who.user +
                          " asked for this; a project-admin or PaaS Admin other than the "
                          "requester must answer it (or an org-admin)");
  return absl::OkStatus();
}

std::optional<ApprovalRequest> Approvals::NeededFor(const model::Instance& instance,
                                                    model::RunAction action,
                                                    const std::string& requester) {
  // A revision that cannot be resolved is the engine's to report, with its own words.
  auto d = ResolvePinned(store_, instance);
  if (!d.ok()) return std::nullopt;
  auto policy = model::DecodeApprovalPolicy(d->profile.raw);
  const int gpus = d->profile.resources.gpu_count;
  if (!policy || !model::NeedsApproval(*policy, gpus)) return std::nullopt;
  const WallTime now = clock_.Now();
  ApprovalRequest r;
  r.action = ActionName(action);
  r.gpus = gpus;
  r.requested_by = requester;
  r.requested_at = FormatRfc3339(now);
  r.expires_at = FormatRfc3339(now + policy->expires_after);
  r.previous_phase = instance.status.PhaseOr();
  return r;
}

store::Write Approvals::EventOf(const model::Instance& instance, const std::string& type,
                                const std::string& reason, const std::string& message) const {
  const std::string stamp = FormatRfc3339(clock_.Now());
  const std::string uid = NewUid();
  json::object event{
      {"apiVersion", "v1"},
      {"kind", kStoredEventKind},
      {"metadata", json::object{{"name", instance.metadata.name + "." + reason + "." + uid},
                                {"namespace", instance.metadata.ns},
                                {"uid", uid},
                                {"creationTimestamp", stamp}}},
      {"involvedObject", json::object{{"apiVersion", model::kApiVersion},
                                      {"kind", instance.kind},
                                      {"namespace", instance.metadata.ns},
                                      {"name", instance.metadata.name},
                                      {"uid", instance.metadata.uid}}},
      {"reason", reason},
      {"message", message},
      {"type", type},
      {"count", 1},
      {"firstTimestamp", stamp},
      {"lastTimestamp", stamp},
      {"source", json::object{{"component", "gantry-approvals"}}},
      {"reportingComponent", "gantry-approvals"}};
  return {store::Write::Op::kCreate, kStoredEventKind, std::move(event), 0, 0};
}

absl::StatusOr<std::optional<json::object>> Approvals::Gate(
    const std::string& ns, const std::string& name, model::RunAction action,
    const std::string& requester, std::optional<model::Instance>* checked) {
  const model::Action decided =
      action == model::RunAction::kStart ? model::Action::kStart : model::Action::kDeploy;
  for (int attempt = 0;; ++attempt) {
    ASSIGN_OR_RETURN(model::Instance instance,
                     internal::LoadInstance(store_, kComputeInstanceKind, ns, name));
    if (model::IsPendingApproval(instance.raw)) {
      auto r = model::DecodeApprovalRequest(instance.raw);
      return ConflictError("compute instance " + name + " waits for approval of its " +
                               Describe(*r) + "; approve or reject it, or cancel the request",
                           model::kPendingApprovalReason);
    }
    RETURN_IF_ERROR(model::Decide(decided, instance.raw).status());
    std::optional<ApprovalRequest> request = NeededFor(instance, action, requester);
    if (!request) {
      if (checked) *checked = std::move(instance);
      return std::optional<json::object>();
    }
    model::InstanceStatus& st = instance.status;
    st.phase = Phase::kWaiting;
    st.reason = model::kPendingApprovalReason;
    st.message = Describe(*request) + " waits for approval by a project-admin or PaaS Admin " +
                 "(until " + request->expires_at + ")";
    model::SetApprovalRequest(*request, &instance.raw);
    std::vector<store::Write> writes;
    writes.push_back(internal::UpdateOf(instance));
    writes.push_back(
        EventOf(instance, "Normal", "ApprovalRequested",
                Describe(*request) + " waits for approval (until " + request->expires_at + ")"));
    auto stored = store_.Commit(std::move(writes));
    if (stored.ok()) {
      metrics_.Add("gantry_approvals_total", {{"result", "requested"}});
      return std::optional<json::object>(std::move((*stored)[0]));
    }
    if (!internal::IsConflict(stored.status()) || attempt >= internal::kMaxRetries)
      return stored.status();
  }
}

absl::StatusOr<std::pair<model::Instance, ApprovalRequest>> Approvals::LoadPending(
    const std::string& ns, const std::string& name) {
  ASSIGN_OR_RETURN(model::Instance instance,
                   internal::LoadInstance(store_, kComputeInstanceKind, ns, name));
  if (!model::IsPendingApproval(instance.raw))
    return ConflictError("compute instance " + name + " has no pending approval request (it is " +
                             std::string(model::PhaseWords(instance.status.PhaseOr())) + ")",
                         "NoPendingApproval");
  return std::make_pair(instance, *model::DecodeApprovalRequest(instance.raw));
}

absl::StatusOr<json::object> Approvals::Approve(const auth::Subject& who, const std::string& ns,
                                                const std::string& name,
                                                const std::string& message) {
  ASSIGN_OR_RETURN(auto pending, LoadPending(ns, name));
  RETURN_IF_ERROR(MayDecide(who, ns, pending.second.requested_by));
  const std::string now = FormatRfc3339(clock_.Now());
  // Checked again on the instance the engine's transaction reads.
  Engine::BeforeDecide prepare = [&](model::Instance& instance) -> absl::Status {
    if (!model::IsPendingApproval(instance.raw))
      return ConflictError("compute instance " + name + " has no pending approval request",
                           "NoPendingApproval");
    ApprovalRequest r = *model::DecodeApprovalRequest(instance.raw);
    if (r.requested_by != pending.second.requested_by)
      RETURN_IF_ERROR(MayDecide(who, ns, r.requested_by));
    if (!r.expires_at.empty() && r.expires_at <= now)
      return ConflictError(
          "the " + Describe(r) + " expired at " + r.expires_at + "; it can no longer be approved",
          "ApprovalExpired");
    r.state = ApprovalState::kApproved;
    r.decided_by = who.user;
    r.decided_at = now;
    r.message = message;
    instance.status.phase = r.previous_phase;
    model::SetApprovalRequest(r, &instance.raw);
    return absl::OkStatus();
  };
  const model::RunAction action =
      pending.second.action == "start" ? model::RunAction::kStart : model::RunAction::kApply;
  ASSIGN_OR_RETURN(json::object out,
                   engine_.QueueApproved(kComputeInstanceKind, ns, name, action, prepare));
  metrics_.Add("gantry_approvals_total", {{"result", "approved"}});
  // Told after the run is queued: the Event is for people, the approval is in status.
  auto event = store_.Commit(
      {EventOf(pending.first, "Normal", "Approved",
               Describe(pending.second) + " approved by " + who.user + Said(message))});
  if (!event.ok())
    spdlog::warn("approvals: {}/{}: cannot store the Approved event: {}", ns, name,
                 std::string(event.status().message()));
  return out;
}

absl::StatusOr<json::object> Approvals::Reject(const auth::Subject& who, const std::string& ns,
                                               const std::string& name,
                                               const std::string& message) {
  ASSIGN_OR_RETURN(auto pending, LoadPending(ns, name));
  RETURN_IF_ERROR(MayDecide(who, ns, pending.second.requested_by));
  Closing how{ApprovalState::kRejected,
              "Rejected",
              Describe(pending.second) + " was rejected by " + who.user + Said(message),
              who.user,
              message,
              "Warning",
              ""};
  ASSIGN_OR_RETURN(json::object out, Close(ns, name, how));
  metrics_.Add("gantry_approvals_total", {{"result", "rejected"}});
  return out;
}

absl::StatusOr<json::object> Approvals::Withdraw(const std::string& user, const std::string& ns,
                                                 const std::string& name) {
  ASSIGN_OR_RETURN(model::Instance instance,
                   internal::LoadInstance(store_, kComputeInstanceKind, ns, name));
  if (!model::IsPendingApproval(instance.raw)) return absl::NotFoundError("no pending request");
  auto r = model::DecodeApprovalRequest(instance.raw);
  Closing how{ApprovalState::kWithdrawn,
              "Canceled",
              Describe(*r) + " was canceled by " + user + " before it was answered",
              user,
              "",
              "Normal",
              ""};
  ASSIGN_OR_RETURN(json::object out, Close(ns, name, how));
  metrics_.Add("gantry_approvals_total", {{"result", "withdrawn"}});
  return out;
}

absl::StatusOr<json::object> Approvals::Close(const std::string& ns, const std::string& name,
                                              const Closing& how) {
  for (int attempt = 0;; ++attempt) {
    ASSIGN_OR_RETURN(auto pending, LoadPending(ns, name));
    auto& [instance, r] = pending;
    if (!how.due_by.empty() && r.expires_at > how.due_by)
      return ConflictError("the request was renewed", "NoPendingApproval");
    r.state = how.state;
    r.decided_by = how.decided_by;
    r.decided_at = FormatRfc3339(clock_.Now());
    r.message = how.note;
    instance.status.phase = r.previous_phase;
    instance.status.reason = how.reason;
    instance.status.message = how.message;
    model::SetApprovalRequest(r, &instance.raw);
    std::vector<store::Write> writes;
    writes.push_back(internal::UpdateOf(instance));
    writes.push_back(EventOf(instance, how.event_type, how.reason, how.message));
    auto stored = store_.Commit(std::move(writes));
    if (stored.ok()) return std::move((*stored)[0]);
    if (!internal::IsConflict(stored.status()) || attempt >= internal::kMaxRetries)
      return stored.status();
  }
}

void Approvals::Expire(const model::Instance& instance, const ApprovalRequest& request) {
  const std::string after =
      request.requested_at.empty() ? "" : " (asked " + request.requested_at + ")";
  Closing how{ApprovalState::kExpired,
              "ApprovalExpired",
              Describe(request) + " expired unanswered at " + request.expires_at + after,
              "",
              "",
              "Warning",
              FormatRfc3339(clock_.Now())};
  auto out = Close(instance.metadata.ns, instance.metadata.name, how);
  // Answered, expired by another replica, or changed meanwhile: nothing to do.
  if (!out.ok()) return;
  metrics_.Add("gantry_approvals_total", {{"result", "expired"}});
  spdlog::info("approvals: {}/{}: {}", instance.metadata.ns, instance.metadata.name, how.message);
  auth::AuditEntry e;
  e.user = kApprovalsUser;
  e.authenticated = true;
  e.verb = "expire";
  e.resource = "computeinstances";
  e.ns = instance.metadata.ns;
  e.name = instance.metadata.name;
  e.subresource = "approval";
  e.result = "Allowed";
  e.code = 200;
  e.message = "ApprovalExpired: " + how.message;
  audit_.Record(e);
}

WallTime Approvals::ExpireDue(WallTime now) {
  WallTime next = now + LifecycleController::kRescan;
  store::ListOptions q;
  q.kind = kComputeInstanceKind;
  q.fields.push_back({"status.phase", true, "Waiting"});
  // Not every waiting instance: those queued to deploy wait too, a burst of them on every
  // lifecycle pass.
  q.fields.push_back({"status.reason", true, model::kPendingApprovalReason});
  auto listed = internal::ListAll(store_, std::move(q));
  if (!listed.ok()) {
    spdlog::warn("approvals: cannot list waiting instances: {}",
                 std::string(listed.status().message()));
    return next;
  }
  for (const model::Instance& instance : internal::DecodeInstances(*std::move(listed))) {
    if (!model::IsPendingApproval(instance.raw)) continue;
    ApprovalRequest r = *model::DecodeApprovalRequest(instance.raw);
    auto at = internal::ParseRfc3339(r.expires_at);
    if (!at) continue;
    if (*at > now)
      next = std::min(next, *at);
    else
      Expire(instance, r);
  }
  return next;
}

}  // namespace gantry::engine
