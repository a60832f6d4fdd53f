#include "webhooks/delivery_worker.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>

#include "absl/time/time.h"
#include "model/codec.h"
#include "webhooks/http_post.h"
#include "webhooks/webhook_spec.h"

namespace gantry::webhooks {
namespace {

namespace json = boost::json;
using model::GetString;
using std::chrono::system_clock;

system_clock::time_point ParseTime(const std::string& text) {
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, text, &t, &err)) return system_clock::time_point{};
  return std::chrono::time_point_cast<system_clock::duration>(absl::ToChronoTime(t));
}

int64_t IntAt(const json::object& o, std::string_view path) {
  const json::value* v = model::FindPath(o, path);
  if (v && v->is_int64()) return v->get_int64();
  if (v && v->is_string()) {  // metadata.resourceVersion is a string, as in Kubernetes
    int64_t n = 0;
    const auto& s = v->get_string();
    std::from_chars(s.data(), s.data() + s.size(), n);
    return n;
  }
  return 0;
}

json::object& StatusOf(json::object& d) {
  if (!d["status"].is_object()) d["status"] = json::object{};
  return d["status"].get_object();
}

// Why an attempt failed, for status.error: never the secret or the body.
std::string ErrorText(const absl::StatusOr<int>& outcome) {
  if (!outcome.ok()) return std::string(outcome.status().message());
  return "the receiver answered HTTP " + std::to_string(*outcome);
}

}  // namespace

DeliveryWorker::DeliveryWorker(store::Store& store, const SecretBox& secrets, const Clock& clock,
                               DeliveryOptions options)
    : store_(store), secrets_(secrets), clock_(clock), options_(std::move(options)) {
  if (!options_.metrics) return;
  options_.metrics->Describe("gantry_webhook_deliveries_total", "counter",
                             "Webhook delivery attempts, by result (delivered, retried, failed).");
  for (const char* result : {"delivered", "retried", "failed"})
    options_.metrics->Add("gantry_webhook_deliveries_total", {{"result", result}}, 0);
}

DeliveryWorker::~DeliveryWorker() { Stop(); }

void DeliveryWorker::Start() {
  for (int i = 0; i < std::max(1, options_.threads); ++i) threads_.emplace_back([this] { Loop(); });
}

void DeliveryWorker::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void DeliveryWorker::Notify() {
  {
    std::lock_guard lock(mu_);
    ++wakeups_;
  }
  cv_.notify_all();
}

void DeliveryWorker::Loop() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (stop_) return;
      seen = wakeups_;
    }
    int attempted = Pass();
    MaybePrune();
    std::unique_lock lock(mu_);
    if (attempted > 0) continue;  // more may be due
    cv_.wait_for(lock, options_.poll, [&] { return stop_ || wakeups_ != seen; });
  }
}

int DeliveryWorker::Pass() {
  store::ListOptions q;
  q.kind = kDeliveryKind;
  q.fields = {{"status.phase", true, "Pending"}};
  q.oldest_first = true;
  q.limit = 100;
  auto list = store_.List(q);
  if (!list.ok()) {
    spdlog::warn("webhooks: cannot list deliveries: {}", std::string(list.status().message()));
    return 0;
  }
  const auto now = clock_.Now();
  for (json::object& d : list->items) {
    if (ParseTime(GetString(d, "status.nextAttemptTime")) > now) continue;
    auto renewed = ParseTime(GetString(d, "status.lease.renewTime"));
    if (!GetString(d, "status.lease.holder").empty() &&
        renewed + std::chrono::seconds(IntAt(d, "status.lease.durationSeconds")) > now)
      continue;
    // Claim: only the writer whose update lands on this resourceVersion sends the attempt.
    const int64_t rv = IntAt(d, "metadata.resourceVersion");
    auto lease = std::chrono::duration_cast<std::chrono::seconds>(options_.attempt_timeout) +
                 std::chrono::seconds(20);
    StatusOf(d)["lease"] = json::object{{"holder", options_.holder},
                                        {"renewTime", FormatRfc3339(now)},
                                        {"durationSeconds", lease.count()}};
    auto claimed = store_.Commit({{store::Write::Op::kUpdate, kDeliveryKind, d, rv, 0}},
                                 store::Durability::kRelaxed);
    if (!claimed.ok()) continue;  // another sender has it (409) or the store failed
    Attempt(std::move((*claimed)[0]));
    return 1;
  }
  return 0;
}

absl::StatusOr<int> DeliveryWorker::Send(const json::object& d) {
  const std::string kind = GetString(d, "spec.webhookRef.kind");
  const std::string ns = GetString(d, "spec.webhookRef.namespace");
  const std::string name = GetString(d, "spec.webhookRef.name");
  auto hook = store_.Get(kind, ns, name);
  if (!hook.ok()) return absl::FailedPreconditionError("the webhook is gone");
  auto to = ParseReceiver(GetString(*hook, "spec.url"));
  if (!to.ok()) return to.status();
  auto secret = secrets_.Unseal(GetString(*hook, "spec.secret"), SecretContext(kind, ns, name));
  if (!secret.ok()) return absl::FailedPreconditionError("the webhook's secret cannot be unsealed");
  const std::string body = GetString(d, "spec.body");
  return HttpPost(*to, body,
                  {{"X-Gantry-Signature", Signature(*secret, body)},
                   {"X-Gantry-Delivery", GetString(d, "metadata.name")},
                   {"X-Gantry-Event", GetString(d, "spec.event")}},
                  options_.attempt_timeout);
}

void DeliveryWorker::Attempt(json::object d) {
  absl::StatusOr<int> outcome = Send(d);
  Record(std::move(d), outcome);
}

// Writes one attempt's outcome into `d` (the delivery as stored now) and returns the metric
// result. Every attempt is counted. An attempt that settles the delivery ends it; a failed one
// schedules the retry only while the delivery is still this attempt's claim: when a later
// claim took over (this attempt outlived its lease), that claim's own record decides.
std::string DeliveryWorker::Apply(json::object& d, const absl::StatusOr<int>& outcome,
                                  const std::string& claim) const {
  const auto now = clock_.Now();
  const bool ok = outcome.ok() && *outcome >= 200 && *outcome < 300;
  const bool gone = absl::IsFailedPrecondition(outcome.status());
  json::object& s = StatusOf(d);
  const int64_t attempts = IntAt(d, "status.attempts") + 1;
  s["attempts"] = attempts;
  const std::string result = ok ? "delivered" : "retried";
  if (GetString(s, "phase") != "Pending") return result;  // another attempt settled it
  const bool mine =
      GetString(s, "lease.holder").empty() ||
      (GetString(s, "lease.holder") == options_.holder && GetString(s, "lease.renewTime") == claim);
  s["code"] = outcome.ok() ? *outcome : 0;
  s["error"] = ok ? "" : ErrorText(outcome);
  if (ok) {
    s.erase("lease");
    s["phase"] = "Delivered";
    s["deliveredTime"] = FormatRfc3339(now);
    return result;
  }
  if (!mine) return result;
  s.erase("lease");
  auto delay = options_.backoff_base * (int64_t{1} << std::min<int64_t>(attempts - 1, 30));
  delay = std::min(delay, options_.backoff_max);
  auto next = now + delay;
  auto created = ParseTime(GetString(d, "metadata.creationTimestamp"));
  bool expired = next > created + options_.max_age;
  s["phase"] = gone || expired ? "Failed" : "Pending";
  s["nextAttemptTime"] = FormatRfc3339(next);
  return GetString(s, "phase") == "Failed" ? "failed" : result;
}

void DeliveryWorker::Record(json::object d, const absl::StatusOr<int>& outcome) {
  const std::string ns = GetString(d, "metadata.namespace");
  const std::string name = GetString(d, "metadata.name");
  const std::string claim = GetString(d, "status.lease.renewTime");
  // A concurrent write to the delivery (PostgreSQL reports a serialization conflict as one)
  // must not lose the attempt: read it again and apply the outcome to what is stored.
  for (int tries = 0; tries < 5; ++tries) {
    if (tries > 0) {
      auto current = store_.Get(kDeliveryKind, ns, name);
      if (!current.ok()) return;  // pruned, or the store is down: the lease brings it back
      d = std::move(*current);
    }
    const std::string result = Apply(d, outcome, claim);
    const int64_t rv = IntAt(d, "metadata.resourceVersion");
    // Relaxed, like the claim: a record lost to a power loss leaves the delivery Pending with
    // its lease, so it is sent again with the same id (at least once, as promised).
    auto done = store_.Commit({{store::Write::Op::kUpdate, kDeliveryKind, d, rv, 0}},
                              store::Durability::kRelaxed);
    if (done.ok()) {
      Recorded((*done)[0], outcome, result);
      return;
    }
    if (!absl::IsAborted(done.status())) {
      spdlog::warn("webhooks: cannot record delivery {}: {}", name,
                   std::string(done.status().message()));
      return;
    }
  }
  spdlog::warn("webhooks: cannot record delivery {}: it kept changing under the writer", name);
}

void DeliveryWorker::Recorded(const json::object& d, const absl::StatusOr<int>& outcome,
                              const std::string& result) {
  if (options_.metrics)
    options_.metrics->Add("gantry_webhook_deliveries_total", {{"result", result}});
  if (absl::IsFailedPrecondition(outcome.status())) return;  // the webhook is gone
  const bool ok = outcome.ok() && *outcome >= 200 && *outcome < 300;
  RecordOnWebhook(d, json::object{{"time", FormatRfc3339(clock_.Now())},
                                  {"code", outcome.ok() ? *outcome : 0},
                                  {"error", ok ? "" : ErrorText(outcome)},
                                  {"delivery", GetString(d, "metadata.name")}});
}

void DeliveryWorker::RecordOnWebhook(const json::object& d, const json::object& last) {
  const std::string kind = GetString(d, "spec.webhookRef.kind");
  const std::string ns = GetString(d, "spec.webhookRef.namespace");
  const std::string name = GetString(d, "spec.webhookRef.name");
  for (int tries = 0; tries < 5; ++tries) {
    auto hook = store_.Get(kind, ns, name);
    if (!hook.ok()) return;
    json::object& s = StatusOf(*hook);
    // An older attempt finishing late does not overwrite a newer one.
    if (GetString(s, "lastDelivery.time") > GetString(last, "time")) return;
    // Within the same second and with the same outcome, the stored one already says how the
    // last delivery went: one write per second and outcome, not one per delivery (under a
    // burst these writes would compete with the API's commits for the store).
    const json::value* code = model::FindPath(s, "lastDelivery.code");
    if (GetString(s, "lastDelivery.time") == GetString(last, "time") && code &&
        *code == last.at("code") && GetString(s, "lastDelivery.error") == GetString(last, "error"))
      return;
    s["lastDelivery"] = last;
    const int64_t rv = IntAt(*hook, "metadata.resourceVersion");
    auto r = store_.Commit({{store::Write::Op::kUpdate, kind, std::move(*hook), rv, 0}},
                           store::Durability::kRelaxed);
    if (r.ok() || !absl::IsAborted(r.status())) return;
  }
}

void DeliveryWorker::MaybePrune() {
  const auto now = clock_.Now();
  {
    std::lock_guard lock(mu_);
    if (now < next_prune_) return;
    next_prune_ = now + std::clamp<std::chrono::seconds>(
                            options_.retention / 2, std::chrono::seconds(1), std::chrono::hours(1));
  }
  Prune(now);
}

void DeliveryWorker::Prune(system_clock::time_point now) {
  const auto cutoff = now - options_.retention;
  std::vector<json::object> old;
  for (const char* phase : {"Delivered", "Failed"}) {
    store::ListOptions q;
    q.kind = kDeliveryKind;
    q.fields = {{"status.phase", true, phase}};
    q.limit = 500;
    do {
      auto page = store_.List(q);
      if (!page.ok()) return;  // the next prune tries again
      for (json::object& d : page->items)
        if (ParseTime(GetString(d, "metadata.creationTimestamp")) < cutoff)
          old.push_back(std::move(d));
      q.continue_token = page->continue_token;
    } while (!q.continue_token.empty());
  }
  for (const json::object& d : old) {
    json::object key{{"metadata", json::object{{"namespace", GetString(d, "metadata.namespace")},
                                               {"name", GetString(d, "metadata.name")}}}};
    auto s = store_.Commit({{store::Write::Op::kDelete, kDeliveryKind, std::move(key),
                             IntAt(d, "metadata.resourceVersion"), 0}},
                           store::Durability::kRelaxed);
    if (!s.ok() && !absl::IsNotFound(s.status()) && !absl::IsAborted(s.status()))
      spdlog::warn("webhooks: cannot prune delivery {}: {}", GetString(d, "metadata.name"),
                   std::string(s.status().message()));
  }
}

}  // namespace gantry::webhooks
