// Approvals: the approval gates of API.md "Notifications and approvals" (docs/approvals.md).
// A compute profile's spec.approval (model/approval.h) makes a deploy or start of its
// instances wait for a project-admin or PaaS Admin other than the requester:
//
//   Gate      POST …/deploy or …/start: when the pinned profile revision asks for approval
//             (required, and the profile's GPUs >= whenGpusAtLeast), the instance goes to
//             Waiting with reason PendingApproval and no run, status.approval records the
//             request, and an ApprovalRequested Event is stored, all in one commit (so the
//             webhook outbox, webhooks/outbox_store.h, sends it with the change)
//   Approve   the run is queued (Engine::QueueApproved) in the same transaction that records
//             who approved; an Approved Event follows
//   Reject    back to the phase before the request, reason Rejected, the approver's message
//   Withdraw  POST …/cancel (or …/destroy) of a pending request: back, reason Canceled
//   Expire    an unanswered request ends at status.approval.expiresAt: back, reason
//             ApprovalExpired. The lifecycle controller's loop calls ExpireDue when a request
//             was made or changed, when the earliest expiry comes, and on a pass over all
//             (its clock, its wake-ups on commits, its restart behaviour): the deadline is
//             stored, so a gantryd restarted after it fires it at its first pass, and the
//             resourceVersion guard makes two replicas fire it once.
//
// Who may answer (MayDecide): org-admin (their own requests too); paas-admin and the
// project's project-admins, but not for their own requests; nobody else (403).
//
// Every answer is one commit guarded by the instance's resourceVersion, with the Event in
// the same commit; approve and reject are audited by the API (verb approve/reject with a
// message naming the request), expiry here as user system:approvals.
//
// Thread-safety: all methods are safe from any thread (state lives in the store).
#pragma once

#include <boost/json.hpp>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "auth/audit.h"
#include "auth/authorize.h"
#include "common/clock.h"
#include "common/metrics.h"
#include "engine/engine.h"
#include "engine/lifecycle_deadlines.h"
#include "model/approval.h"
#include "store/store.h"

namespace gantry::engine {

inline constexpr char kApprovalsUser[] = "system:approvals";

class Approvals {
 public:
  Approvals(store::Store& store, Engine& engine, auth::AuditLog& audit, const Clock& clock,
            Metrics& metrics);

  // A deploy (`action` kApply) or start (kStart) of compute instance ns/name by `requester`.
  // nullopt: no approval is needed, the caller queues it (Engine::Deploy, Engine::Start) and
  // *checked (when given) is the instance as the gate read it, for the queue's first try.
  // Else the instance, now Waiting with reason PendingApproval. 409 PendingApproval when a
  // request is pending already; Decide's 409s when the action is not allowed now; 404.
  absl::StatusOr<std::optional<boost::json::object>> Gate(
      const std::string& ns, const std::string& name, model::RunAction action,
      const std::string& requester, std::optional<model::Instance>* checked = nullptr);
  // The answers. 409 NoPendingApproval when nothing waits; 403 (MayDecide); 404. Approve
  // also 409 ApprovalExpired once expiresAt passed. Each returns the instance after it.
  absl::StatusOr<boost::json::object> Approve(const auth::Subject& who, const std::string& ns,
                                              const std::string& name, const std::string& message);
  absl::StatusOr<boost::json::object> Reject(const auth::Subject& who, const std::string& ns,
                                             const std::string& name, const std::string& message);
  // A cancel of a pending request (whoever may operate the instance). NOT_FOUND when no
  // request is pending (the caller cancels a queued run instead).
  absl::StatusOr<boost::json::object> Withdraw(const std::string& user, const std::string& ns,
                                               const std::string& name);
  // Ends every pending request whose expiresAt is at or before `now`; returns the earliest
  // expiry still ahead (now + LifecycleController::kRescan when none).
  WallTime ExpireDue(WallTime now);

  // OK when `who` may answer a request of `requester` in project `ns`, else 403 saying why.
  static absl::Status MayDecide(const auth::Subject& who, const std::string& ns,
                                const std::string& requester);
  // The message of a pending instance's refusals: "deploy of 8 GPUs requested by alice".
  static std::string Describe(const model::ApprovalRequest& request);

 private:
  // How an answer other than approval ends a request.
  struct Closing {
    model::ApprovalState state;
    std::string reason;      // the instance's status.reason: Rejected, Canceled, ...
    std::string message;     // its status.message
    std::string decided_by;  // "" for an expiry
    std::string note;        // the approver's words
    std::string event_type;  // Normal or Warning
    std::string due_by;      // an expiry: only a request whose expiresAt is at or before it
  };
  // Returns a pending instance to its previous phase as `how` says, with an Event.
  absl::StatusOr<boost::json::object> Close(const std::string& ns, const std::string& name,
                                            const Closing& how);
  // Loads compute instance ns/name and its pending request; 409 NoPendingApproval if none.
  absl::StatusOr<std::pair<model::Instance, model::ApprovalRequest>> LoadPending(
      const std::string& ns, const std::string& name);
  // The stored Event (kind Event) `reason` on `instance`, as a create.
  store::Write EventOf(const model::Instance& instance, const std::string& type,
                       const std::string& reason, const std::string& message) const;
  // The approval policy and GPUs of the profile revision `instance` pinned (nullopt: none).
  std::optional<model::ApprovalRequest> NeededFor(const model::Instance& instance,
                                                  model::RunAction action,
                                                  const std::string& requester);
  void Expire(const model::Instance& instance, const model::ApprovalRequest& request);

  // Constant after construction.
  store::Store& store_;
  Engine& engine_;
  auth::AuditLog& audit_;
  const Clock& clock_;
  Metrics& metrics_;
};

}  // namespace gantry::engine
