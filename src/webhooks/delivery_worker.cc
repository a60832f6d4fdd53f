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
  threads_.emplace_back([this] { ClaimLoop(); });
  for (int i = 0; i < std::max(1, options_.threads); ++i)
    threads_.emplace_back([this] { SendLoop(); });
}

void DeliveryWorker::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  claimer_cv_.notify_all();
  sender_cv_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
  // Claimed and not attempted: their leases expire and they are sent again (same id).
  claimed_.clear();
}

void DeliveryWorker::Notify() {
  {
    std::lock_guard lock(mu_);
    ++wakeups_;
  }
  claimer_cv_.notify_all();
}

void DeliveryWorker::ClaimLoop() {
  uint64_t seen = 0;
  bool more = false;  // the last pass claimed all it had room for: more may be due
  for (;;) {
    size_t room = 0;
    {
      std::unique_lock lock(mu_);
      auto free = [&] { return idle_ > claimed_.size() ? idle_ - claimed_.size() : 0; };
      claimer_cv_.wait_for(lock, options_.poll,
                           [&] { return stop_ || (free() > 0 && (more || wakeups_ != seen)); });
      if (stop_) return;
      room = free();
      if (room == 0) continue;  // every sender is busy: wait for one
      seen = wakeups_;
    }
    size_t claimed = Pass(room);
    more = claimed == room;
    MaybePrune();
  }
}

void DeliveryWorker::SendLoop() {
  for (;;) {
    json::object d;
    {
      std::unique_lock lock(mu_);
      ++idle_;
      claimer_cv_.notify_all();
      sender_cv_.wait(lock, [&] { return stop_ || !claimed_.empty(); });
      --idle_;
      if (stop_) return;
      d = std::move(claimed_.front());
      claimed_.pop_front();
    }
    Attempt(std::move(d));
  }
}

size_t DeliveryWorker::Pass(size_t room) {
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
  std::vector<json::object> due;
  for (json::object& d : list->items) {
    if (due.size() == room) break;
    if (ParseTime(GetString(d, "status.nextAttemptTime")) > now) continue;
    auto renewed = ParseTime(GetString(d, "status.lease.renewTime"));
    if (!GetString(d, "status.lease.holder").empty() &&
        renewed + std::chrono::seconds(IntAt(d, "status.lease.durationSeconds")) > now)
      continue;
    due.push_back(std::move(d));
  }
  if (due.empty()) return 0;
  std::vector<json::object> claimed = Claim(std::move(due));
  const size_t n = claimed.size();
  {
    std::lock_guard lock(mu_);
    for (json::object& d : claimed) claimed_.push_back(std::move(d));
  }
  sender_cv_.notify_all();
  return n;
}

std::vector<json::object> DeliveryWorker::Claim(std::vector<json::object> due) {
  const auto now = clock_.Now();
  auto lease = std::chrono::duration_cast<std::chrono::seconds>(options_.attempt_timeout) +
               std::chrono::seconds(20);
  // Claim: only the writer whose update lands on this resourceVersion sends the attempt.
  std::vector<store::Write> writes;
  for (json::object& d : due) {
    const int64_t rv = IntAt(d, "metadata.resourceVersion");
    StatusOf(d)["lease"] = json::object{{"holder", options_.holder},
                                        {"renewTime", FormatRfc3339(now)},
                                        {"durationSeconds", lease.count()}};
    writes.push_back({store::Write::Op::kUpdate, kDeliveryKind, d, rv, 0});
  }
  auto claimed = store_.Commit(writes, store::Durability::kRelaxed);
  if (claimed.ok()) return std::move(*claimed);
  std::vector<json::object> out;
  if (writes.size() == 1) return out;  // another sender has it (409) or the store failed
  // Another replica took one of them (409), or the store failed: each on its own.
  for (store::Write& w : writes) {
    auto one = store_.Commit({std::move(w)}, store::Durability::kRelaxed);
    if (one.ok()) out.push_back(std::move((*one)[0]));
  }
  return out;
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
  RecordQueued(std::move(d), outcome);
}

void DeliveryWorker::RecordQueued(json::object d, const absl::StatusOr<int>& outcome) {
  std::unique_lock lock(mu_);
  outcomes_.push_back({std::move(d), outcome});
  if (recording_) return;  // the sender recording now takes this one in its next batch
  recording_ = true;
  while (!outcomes_.empty()) {
    std::vector<Outcome> batch = std::move(outcomes_);
    outcomes_.clear();
    lock.unlock();
    RecordBatch(std::move(batch));
    lock.lock();
  }
  recording_ = false;
}

// The outcomes of `batch` in one commit, each applied as Record would apply it first; when
// that commit fails (a concurrent write to one of them), each goes through Record alone.
void DeliveryWorker::RecordBatch(std::vector<Outcome> batch) {
  if (batch.size() > 1) {
    std::vector<store::Write> writes;
    std::vector<std::string> results;
    for (const Outcome& o : batch) {
      json::object d = o.delivery;
      results.push_back(Apply(d, o.outcome, GetString(d, "status.lease.renewTime")));
      const int64_t rv = IntAt(d, "metadata.resourceVersion");
      writes.push_back({store::Write::Op::kUpdate, kDeliveryKind, std::move(d), rv, 0});
    }
    // Relaxed, as Record's: a lost record leaves the lease, and the delivery is sent again.
    auto done = store_.Commit(std::move(writes), store::Durability::kRelaxed);
    if (done.ok()) {
      for (size_t i = 0; i < batch.size(); ++i) Recorded((*done)[i], batch[i].outcome, results[i]);
      return;
    }
  }
  for (Outcome& o : batch) Record(std::move(o.delivery), o.outcome);
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
  if (now < next_prune_) return;
  next_prune_ = now + std::clamp<std::chrono::seconds>(
                          options_.retention / 2, std::chrono::seconds(1), std::chrono::hours(1));
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
  for (size_t i = 0; i < old.size(); i += 100)
    DeleteEnded(
        std::vector<json::object>(old.begin() + i, old.begin() + std::min(old.size(), i + 100)));
}

void DeliveryWorker::DeleteEnded(const std::vector<json::object>& old) {
  std::vector<store::Write> writes;
  for (const json::object& d : old) {
    json::object key{{"metadata", json::object{{"namespace", GetString(d, "metadata.namespace")},
                                               {"name", GetString(d, "metadata.name")}}}};
    writes.push_back({store::Write::Op::kDelete, kDeliveryKind, std::move(key),
                      IntAt(d, "metadata.resourceVersion"), 0});
  }
  if (writes.size() > 1 && store_.Commit(writes, store::Durability::kRelaxed).ok()) return;
  // One of them changed or went meanwhile: each on its own.
  for (store::Write& w : writes) {
    const std::string name = GetString(w.object, "metadata.name");
    auto s = store_.Commit({std::move(w)}, store::Durability::kRelaxed);
    if (!s.ok() && !absl::IsNotFound(s.status()) && !absl::IsAborted(s.status()))
      spdlog::warn("webhooks: cannot prune delivery {}: {}", name,
                   std::string(s.status().message()));
  }
}

}  // namespace gantry::webhooks
