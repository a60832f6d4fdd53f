#include "webhooks/outbox_store.h"

#include <algorithm>

#include "common/ids.h"
#include "common/status_macros.h"
#include "model/codec.h"
#include "webhooks/webhook_spec.h"

namespace gantry::webhooks {
namespace {

namespace json = boost::json;
using model::GetString;
using store::Write;

bool IsInstanceKind(const std::string& kind) {
  return kind == "ComputeInstance" || kind == "ServiceInstance";
}

bool Tells(const Write& w) {
  if (w.op == Write::Op::kUpdate) return IsInstanceKind(w.kind);
  return w.op == Write::Op::kCreate && w.kind == "Event";
}

// A write whose "before" read (HappeningsOf) the commit re-checks, or that needs none.
bool ReadIsGuarded(const Write& w) {
  return !Tells(w) || w.op != Write::Op::kUpdate || w.expected_resource_version != 0;
}

json::object ObjectRef(const json::object& obj, const std::string& kind) {
  return {{"kind", kind},
          {"namespace", GetString(obj, "metadata.namespace")},
          {"name", GetString(obj, "metadata.name")},
          {"uid", GetString(obj, "metadata.uid")}};
}

json::object InvolvedObject(const json::object& event) {
  const json::value* v = event.if_contains("involvedObject");
  return v && v->is_object() ? v->get_object() : json::object{};
}

bool IsHookKind(const std::string& kind) {
  return kind == kWebhookKind || kind == kClusterWebhookKind;
}

// What a hook's deliveries depend on: its events and format (not its status, url or secret,
// which the delivery worker reads when it sends).
json::object SubscriptionOf(const json::object& hook) {
  json::object out;
  if (const json::value* e = model::FindPath(hook, "spec.events")) out["events"] = *e;
  out["format"] = GetString(hook, "spec.format");
  return out;
}

json::object MarkerObject() {
  return {{"apiVersion", "paas.gantry.dev/v1"},
          {"kind", kGenerationKind},
          {"metadata", json::object{{"name", kGenerationName}, {"namespace", ""}}}};
}

}  // namespace

OutboxStore::OutboxStore(std::unique_ptr<store::Store> inner, const Clock& clock)
    : inner_(std::move(inner)), clock_(clock) {}

absl::StatusOr<std::vector<OutboxStore::Happening>> OutboxStore::HappeningsOf(
    const std::vector<Write>& writes) {
  std::vector<Happening> out;
  const std::string now = FormatRfc3339(clock_.Now());
  for (const Write& w : writes) {
    if (!Tells(w)) continue;
    const std::string ns = GetString(w.object, "metadata.namespace");
    const std::string name = GetString(w.object, "metadata.name");
    if (w.kind == "Event") {
      std::string reason = GetString(w.object, "reason");
      const auto& names = EventNames();
      if (std::find(names.begin(), names.end(), reason) == names.end()) continue;
      // A preemption is told by the victim's phase change (below), not again by its Event.
      if (reason == "Preempted") continue;
      ASSIGN_OR_RETURN(bool wanted, Subscribed(ns, {reason}));
      if (!wanted) continue;
      json::object body{{"type", reason},
                        {"time", now},
                        {"object", InvolvedObject(w.object)},
                        {"message", GetString(w.object, "message")}};
      std::string who = GetString(w.object, "involvedObject.name");
      out.push_back({reason, ns, std::move(body),
                     reason + ": " + ns + "/" + who + ": " + GetString(w.object, "message")});
      continue;
    }
    // Nobody listens: the stored "before" is not read.
    ASSIGN_OR_RETURN(bool wanted, Subscribed(ns, {"PhaseChanged", "Preempted"}));
    if (!wanted) continue;
    auto stored = inner_->Get(w.kind, ns, name);
    if (!stored.ok() && !absl::IsNotFound(stored.status())) return stored.status();
    std::string was = stored.ok() ? GetString(*stored, "status.phase") : "";
    std::string phase = GetString(w.object, "status.phase");
    if (!stored.ok() || was == phase) continue;
    std::string reason = GetString(w.object, "status.reason");
    json::object body{{"type", "PhaseChanged"},
                      {"time", now},
                      {"object", ObjectRef(w.object, w.kind)},
                      {"phase", phase},
                      {"previousPhase", was},
                      {"reason", reason},
                      {"message", GetString(w.object, "status.message")}};
    std::string line = w.kind + " " + ns + "/" + name + ": " + was + " -> " + phase +
                       (reason.empty() ? "" : " (" + reason + ")");
    if (reason == "Preempted" && GetString(*stored, "status.reason") != "Preempted") {
      json::object pre = body;
      pre["type"] = "Preempted";
      out.push_back({"Preempted", ns, std::move(pre), "Preempted: " + line});
    }
    out.push_back({"PhaseChanged", ns, std::move(body), line});
  }
  return out;
}

absl::Status OutboxStore::Revalidate() {
  auto marker = inner_->Get(kGenerationKind, "", kGenerationName);
  if (!marker.ok() && !absl::IsNotFound(marker.status())) return marker.status();
  std::string generation = marker.ok() ? GetString(*marker, "metadata.resourceVersion") : "";
  if (generation_ == generation) return absl::OkStatus();
  by_ns_.clear();
  cluster_.reset();
  generation_ = std::move(generation);
  return absl::OkStatus();
}

absl::StatusOr<const std::vector<OutboxStore::Hook>*> OutboxStore::HooksOf(const std::string& ns,
                                                                           bool cluster) {
  if (cluster && cluster_) return &*cluster_;
  if (auto it = by_ns_.find(ns); !cluster && it != by_ns_.end()) return &it->second;
  store::ListOptions q;
  q.kind = cluster ? kClusterWebhookKind : kWebhookKind;
  q.ns = cluster ? "" : ns;
  std::vector<Hook> hooks;
  do {
    ASSIGN_OR_RETURN(store::ListResult page, inner_->List(q));
    for (const json::object& item : page.items) {
      Hook hook{q.kind,
                GetString(item, "metadata.namespace"),
                GetString(item, "metadata.name"),
                GetString(item, "spec.format") == "slack",
                {}};
      if (const json::value* e = model::FindPath(item, "spec.events"); e && e->is_array())
        for (const json::value& v : e->get_array())
          if (v.is_string()) hook.events.emplace_back(v.get_string());
      hooks.push_back(std::move(hook));
    }
    q.continue_token = page.continue_token;
  } while (!q.continue_token.empty());
  if (cluster) return &cluster_.emplace(std::move(hooks));
  return &(by_ns_[ns] = std::move(hooks));
}

absl::StatusOr<std::vector<const OutboxStore::Hook*>> OutboxStore::Subscribers(
    const std::string& ns, std::string_view event) {
  std::vector<const Hook*> out;
  for (bool cluster : {false, true}) {
    ASSIGN_OR_RETURN(const std::vector<Hook>* hooks, HooksOf(ns, cluster));
    for (const Hook& hook : *hooks)
      if (std::find(hook.events.begin(), hook.events.end(), event) != hook.events.end())
        out.push_back(&hook);
  }
  return out;
}

absl::StatusOr<bool> OutboxStore::Subscribed(const std::string& ns,
                                             std::initializer_list<std::string_view> events) {
  for (std::string_view e : events) {
    ASSIGN_OR_RETURN(std::vector<const Hook*> hooks, Subscribers(ns, e));
    if (!hooks.empty()) return true;
  }
  return false;
}

bool OutboxStore::ChangesSubscribers(const Write& w) {
  if (!IsHookKind(w.kind) || w.op == Write::Op::kPutRevision) return false;
  if (w.op != Write::Op::kUpdate) return true;
  // An update changes them unless the stored hook subscribes to the same (status.lastDelivery).
  auto stored = inner_->Get(w.kind, GetString(w.object, "metadata.namespace"),
                            GetString(w.object, "metadata.name"));
  return !stored.ok() || SubscriptionOf(*stored) != SubscriptionOf(w.object);
}

absl::Status OutboxStore::EnsureMarker() {
  if (marker_exists_) return absl::OkStatus();
  auto marker = inner_->Get(kGenerationKind, "", kGenerationName);
  if (!marker.ok() && !absl::IsNotFound(marker.status())) return marker.status();
  if (!marker.ok()) {
    auto created = inner_->Commit({{Write::Op::kCreate, kGenerationKind, MarkerObject(), 0, 0}});
    if (!created.ok() && !absl::IsAlreadyExists(created.status())) return created.status();
  }
  marker_exists_ = true;
  return absl::OkStatus();
}

absl::Status OutboxStore::MarkSubscriberChanges(std::vector<Write>* writes) {
  if (std::none_of(writes->begin(), writes->end(),
                   [&](const Write& w) { return ChangesSubscribers(w); }))
    return absl::OkStatus();
  RETURN_IF_ERROR(EnsureMarker());
  // Unguarded: any write moves the marker's resourceVersion, which is all readers compare.
  writes->push_back({Write::Op::kUpdate, kGenerationKind, MarkerObject(), 0, 0});
  return absl::OkStatus();
}

absl::Status OutboxStore::AppendDeliveries(const Happening& h, std::vector<Write>* writes) {
  ASSIGN_OR_RETURN(std::vector<const Hook*> hooks, Subscribers(h.ns, h.event));
  const std::string now = FormatRfc3339(clock_.Now());
  for (const Hook* hook : hooks) {
    const std::string id = NewUid();
    json::object body = h.body;
    body["id"] = id;
    std::string text =
        hook->slack ? json::serialize(json::object{{"text", h.text}}) : json::serialize(body);
    json::object delivery{
        {"apiVersion", "paas.gantry.dev/v1"},
        {"kind", kDeliveryKind},
        {"metadata",
         json::object{{"name", id},
                      {"namespace", h.ns},
                      {"uid", id},
                      {"creationTimestamp", now},
                      {"labels", json::object{{"paas.gantry.dev/webhook", hook->name}}}}},
        {"spec", json::object{{"webhookRef", json::object{{"kind", hook->kind},
                                                          {"name", hook->name},
                                                          {"namespace", hook->ns}}},
                              {"event", h.event},
                              {"body", text},
                              {"contentType", "application/json"}}},
        {"status", json::object{{"phase", "Pending"}, {"attempts", 0}, {"nextAttemptTime", now}}}};
    writes->push_back({Write::Op::kCreate, kDeliveryKind, std::move(delivery), 0, 0});
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<json::object>> OutboxStore::Commit(std::vector<Write> writes,
                                                              store::Durability durability) {
  const size_t asked = writes.size();
  RETURN_IF_ERROR(MarkSubscriberChanges(&writes));
  std::unique_lock lock(mu_, std::defer_lock);
  if (std::any_of(writes.begin(), writes.end(), Tells)) {
    lock.lock();
    RETURN_IF_ERROR(Revalidate());
    ASSIGN_OR_RETURN(std::vector<Happening> happenings, HappeningsOf(writes));
    for (const Happening& h : happenings) RETURN_IF_ERROR(AppendDeliveries(h, &writes));
    // When every update told is guarded by the resourceVersion its "before" was read at, the
    // commit itself checks that the read is still true (a change in between fails it with
    // 409), so concurrent changes need not wait for each other's commit: the store can group
    // them into one transaction.
    if (std::all_of(writes.begin(), writes.end(), ReadIsGuarded)) lock.unlock();
  }
  // The deliveries share the change's durability: a relaxed change (the engine's bookkeeping)
  // survives a kill -9 with them (WAL) and a power loss loses both, and the engine's recovery
  // makes the change, and so its deliveries, again.
  auto result = inner_->Commit(std::move(writes), durability);
  if (result.ok() && result->size() > asked) result->resize(asked);
  return result;
}

}  // namespace gantry::webhooks
