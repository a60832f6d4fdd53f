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
// To know the stored phase, a commit with instance writes reads those instances first (only
// when a hook of the project or the cluster subscribes to PhaseChanged or Preempted); such
// commits are serialised in this process (one mutex) so that two of them cannot both see the
// same "before". Across replicas (PostgreSQL) the engine's writes are guarded by
// resourceVersion, so a stale "before" makes that commit fail with 409 and be retried.
//
// Who subscribes is cached (the outbox used to list the project's Webhooks and every
// ClusterWebhook inside each such commit). The cache is checked against one stored marker
// object, kind WebhookGeneration (cluster-scoped, never served by the API): every commit
// through an OutboxStore that creates or deletes a Webhook or ClusterWebhook, or changes
// what it subscribes to or its format, updates the marker in the same transaction, and every
// commit that carries events reads the marker first (one primary-key read) and drops the
// cache when the marker's resourceVersion moved. Since every replica writes through its own
// OutboxStore, a hook created through another replica moves the marker too: the next commit
// here lists again, exactly as the uncached outbox would (its list, like this read, is made
// just before the commit, so a change racing with the hook's creation may or may not be
// told, with or without the cache). A status-only write (the delivery worker's
// status.lastDelivery) leaves the marker alone.
//
// Commit returns what the inner store returned for the caller's writes only (the added
// deliveries and the marker are dropped from the answer), so callers see the Store contract
// unchanged.
//
// Thread-safety: as the Store contract; the inner store is owned and outlives nothing.
#pragma once

#include <atomic>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "store/store.h"

namespace gantry::webhooks {

// The marker of the subscribers cache (see above): kind, namespace "", name.
inline constexpr char kGenerationKind[] = "WebhookGeneration";
inline constexpr char kGenerationName[] = "subscribers";

class OutboxStore final : public store::Store {
 public:
  OutboxStore(std::unique_ptr<store::Store> inner, const Clock& clock);

  store::Store& inner() { return *inner_; }

  absl::StatusOr<boost::json::object> Get(const std::string& kind, const std::string& ns,
                                          const std::string& name) override {
    return inner_->Get(kind, ns, name);
  }
  absl::StatusOr<std::string> GetText(const std::string& kind, const std::string& ns,
                                      const std::string& name) override {
    return inner_->GetText(kind, ns, name);
  }
  absl::StatusOr<std::vector<boost::json::object>> GetMany(
      const std::vector<store::ObjectKey>& keys) override {
    return inner_->GetMany(keys);
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
  // What the cache keeps of one Webhook or ClusterWebhook.
  struct Hook {
    std::string kind, ns, name;
    bool slack = false;
    std::vector<std::string> events;
  };
  // What the writes tell (reads the stored instances they update, when a hook listens).
  // Needs mu_, and Revalidate first.
  absl::StatusOr<std::vector<Happening>> HappeningsOf(const std::vector<store::Write>& writes);
  // The deliveries of `h` to the webhooks that subscribe to it.
  absl::Status AppendDeliveries(const Happening& h, std::vector<store::Write>* writes);
  // Drops the cache when the marker moved since it was filled. Needs mu_.
  absl::Status Revalidate();
  // The Webhooks of `ns` and the ClusterWebhooks that subscribe to `event`. Needs mu_.
  absl::StatusOr<std::vector<const Hook*>> Subscribers(const std::string& ns,
                                                       std::string_view event);
  // Whether a Webhook of `ns` or a ClusterWebhook subscribes to one of `events`. Needs mu_.
  absl::StatusOr<bool> Subscribed(const std::string& ns,
                                  std::initializer_list<std::string_view> events);
  // The webhooks of project `ns` ("" : the ClusterWebhooks), from the cache. Needs mu_.
  absl::StatusOr<const std::vector<Hook>*> HooksOf(const std::string& ns, bool cluster);
  // Adds the marker's update to `writes` when they change who subscribes to what.
  absl::Status MarkSubscriberChanges(std::vector<store::Write>* writes);
  // Whether `w` changes what a hook subscribes to (a create, a delete, a new spec).
  bool ChangesSubscribers(const store::Write& w);
  // The marker exists from the first subscriber change on (created here, once).
  absl::Status EnsureMarker();

  std::unique_ptr<store::Store> inner_;
  const Clock& clock_;
  std::mutex mu_;  // serialises commits that carry events (see above)
  // The cache, guarded by mu_.
  std::optional<std::string> generation_;  // the marker's resourceVersion ("": none) when filled
  std::map<std::string, std::vector<Hook>> by_ns_;  // project -> its Webhooks
  std::optional<std::vector<Hook>> cluster_;        // the ClusterWebhooks
  std::atomic<bool> marker_exists_{false};          // set once EnsureMarker saw it
};

}  // namespace gantry::webhooks
