#include "webhooks/outbox_store.h"

#include <algorithm>

#include "common/ids.h"
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

bool Subscribes(const json::object& webhook, const std::string& event) {
  const json::value* events = model::FindPath(webhook, "spec.events");
  if (!events || !events->is_array()) return false;
  const json::array& arr = events->get_array();
  return std::any_of(arr.begin(), arr.end(), [&](const json::value& v) {
    return v.is_string() && v.get_string() == event;
  });
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
      json::object body{{"type", reason},
                        {"time", now},
                        {"object", InvolvedObject(w.object)},
                        {"message", GetString(w.object, "message")}};
      std::string who = GetString(w.object, "involvedObject.name");
      out.push_back({reason, ns, std::move(body),
                     reason + ": " + ns + "/" + who + ": " + GetString(w.object, "message")});
      continue;
    }
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

absl::Status OutboxStore::AppendDeliveries(const Happening& h, std::vector<Write>* writes) {
  std::vector<json::object> hooks;
  for (const char* kind : {kWebhookKind, kClusterWebhookKind}) {
    store::ListOptions q;
    q.kind = kind;
    q.ns = std::string(kind == std::string(kWebhookKind) ? h.ns : "");
    auto list = inner_->List(q);
    if (!list.ok()) return list.status();
    for (auto& item : list->items)
      if (Subscribes(item, h.event)) hooks.push_back(std::move(item));
  }
  const std::string now = FormatRfc3339(clock_.Now());
  for (const json::object& hook : hooks) {
    const std::string id = NewUid();
    json::object body = h.body;
    body["id"] = id;
    const bool slack = GetString(hook, "spec.format") == "slack";
    std::string text =
        slack ? json::serialize(json::object{{"text", h.text}}) : json::serialize(body);
    json::object delivery{
        {"apiVersion", "paas.gantry.dev/v1"},
        {"kind", kDeliveryKind},
        {"metadata", json::object{{"name", id},
                                  {"namespace", h.ns},
                                  {"uid", id},
                                  {"creationTimestamp", now},
                                  {"labels", json::object{{"paas.gantry.dev/webhook",
                                                           GetString(hook, "metadata.name")}}}}},
        {"spec", json::object{{"webhookRef",
                               json::object{{"kind", GetString(hook, "kind")},
                                            {"name", GetString(hook, "metadata.name")},
                                            {"namespace", GetString(hook, "metadata.namespace")}}},
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
  if (std::none_of(writes.begin(), writes.end(), Tells))
    return inner_->Commit(std::move(writes), durability);
  std::lock_guard lock(mu_);
  auto happenings = HappeningsOf(writes);
  if (!happenings.ok()) return happenings.status();
  const size_t asked = writes.size();
  for (const Happening& h : *happenings)
    if (auto s = AppendDeliveries(h, &writes); !s.ok()) return s;
  // A commit with deliveries is always durable: they are promises to receivers.
  if (writes.size() > asked) durability = store::Durability::kDurable;
  auto result = inner_->Commit(std::move(writes), durability);
  if (result.ok() && result->size() > asked) result->resize(asked);
  return result;
}

}  // namespace gantry::webhooks
