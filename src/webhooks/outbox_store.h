// OutboxStore: the durable webhook outbox, as a Store decorator (the shape of
// store/store_wrapper.h). Every component of gantryd writes through it; it watches each
// Commit for changes worth telling and adds, to that SAME commit, one WebhookDelivery per
// (event, subscribed Webhook or ClusterWebhook). The change and its deliveries are therefore
// durable together or not at all: a kill -9 right after a commit loses no delivery, and a
// failed commit sends none. docs/webhooks.md has the design; DeliveryWorker sends them.
//
// What is an event:
//   - a ComputeInstance/ServiceInstance update whose status.phase differs from the stored
//     one: PhaseChanged (and Preempted when the new status.reason is Preempted);
//   - a created stored Event (kind Event) whose reason is an event name (ExpiresSoon,
//     IdleSoon, StopScheduled, ApprovalRequested; BudgetWarning and BudgetExceeded on a
//     Project, engine/budget_monitor.h). A preemption's Event is not sent again: the phase
//     change already told it.
// A Webhook of the object's project and every ClusterWebhook that lists the event get one.
//
// To know the stored phase, a commit with instance writes reads those instances first; such
// commits are serialised in this process (one mutex) so that two of them cannot both see the
// same "before". Across replicas (PostgreSQL) the engine's writes are guarded by
// resourceVersion, so a stale "before" makes that commit fail with 409 and be retried.
//
// Commit returns what the inner store returned for the caller's writes only (the added
// deliveries are dropped from the answer), so callers see the Store contract unchanged.
//
// Thread-safety: as the Store contract; the inner store is owned and outlives nothing.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "store/store.h"

namespace gantry::webhooks {

class OutboxStore final : public store::Store {
 public:
  OutboxStore(std::unique_ptr<store::Store> inner, const Clock& clock);

  store::Store& inner() { return *inner_; }

  absl::StatusOr<boost::json::object> Get(const std::string& kind, const std::string& ns,
                                          const std::string& name) override {
    return inner_->Get(kind, ns, name);
  }
  absl::StatusOr<store::ListResult> List(const store::ListOptions& options) override {
    return inner_->List(options);
  }
  absl::StatusOr<std::vector<boost::json::object>> Commit(
      std::vector<store::Write> writes,
      store::Durability durability = store::Durability::kDurable) override;
  absl::StatusOr<std::vector<store::Event>> EventsSince(int64_t after, size_t max) override {
    return inner_->EventsSince(after, max);
  }
  int64_t CurrentResourceVersion() override { return inner_->CurrentResourceVersion(); }
  absl::StatusOr<std::vector<store::Revision>> ListRevisions(const std::string& kind,
                                                             const std::string& ns,
                                                             const std::string& name) override {
    return inner_->ListRevisions(kind, ns, name);
  }
  absl::StatusOr<store::Revision> GetRevision(const std::string& kind, const std::string& ns,
                                              const std::string& name, int64_t revision) override {
    return inner_->GetRevision(kind, ns, name, revision);
  }
  absl::StatusOr<int64_t> Count(const std::string& kind, std::optional<std::string> ns,
                                const std::vector<store::FieldFilter>& fields) override {
    return inner_->Count(kind, ns, fields);
  }
  void SetCommitObserver(std::function<void(const std::vector<store::Event>&)> observer) override {
    inner_->SetCommitObserver(std::move(observer));
  }
  absl::Status Ping() override { return inner_->Ping(); }

 private:
  // One thing to tell: the event name, the object's project, and the JSON event body.
  struct Happening {
    std::string event;
    std::string ns;
    boost::json::object body;
    std::string text;  // one line for format: slack
  };
  // What the writes tell (reads the stored instances they update).
  absl::StatusOr<std::vector<Happening>> HappeningsOf(const std::vector<store::Write>& writes);
  // The deliveries of `h` to the webhooks that subscribe to it.
  absl::Status AppendDeliveries(const Happening& h, std::vector<store::Write>* writes);

  std::unique_ptr<store::Store> inner_;
  const Clock& clock_;
  std::mutex mu_;  // serialises commits that carry events (see above)
};

}  // namespace gantry::webhooks
