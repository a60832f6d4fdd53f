#include "auth/audit.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/json.hpp>
#include <vector>

#include "common/ids.h"
#include "common/utf8.h"
#include "model/codec.h"

namespace gantry::auth {

namespace json = boost::json;

namespace {

constexpr char kDropped[] = "gantry_audit_records_dropped_total";
constexpr char kPruned[] = "gantry_audit_events_pruned_total";
// Deletes per transaction while pruning: small enough to keep the writer's lock short.
constexpr int64_t kPruneBatch = 200;
// Passes over a batch that another replica deleted first, before the next tick.
constexpr int kPruneRaces = 5;
// The bucket of every address beyond AuditOptions::max_sources.
constexpr char kOverflowSource[] = "(other addresses)";

// Field limits: names as Kubernetes bounds them, messages as the API's.
struct Limits {
  static constexpr size_t kUser = 253, kVerb = 32, kResource = 63, kNamespace = 63, kName = 320,
                          kSubresource = 32, kResult = 16, kMessage = 1024, kSource = 64;
};

std::string AuditName(const std::string& uid) {
  std::string name = "ae-";
  for (char c : uid)
    if (c != '-' && name.size() < 23) name += c;
  return name;
}

}  // namespace

std::string BoundedText(std::string_view text, size_t max_bytes) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes));
  for (size_t i = 0; i < text.size();) {
    size_t n = Utf8SequenceLength(text, i);
    unsigned char c = static_cast<unsigned char>(text[i]);
    bool control = n == 1 && (c < 0x20 || c == 0x7F);
    if (n == 0 || control) {
      if (out.size() + 1 > max_bytes) break;
      out += '?';
      ++i;
      continue;
    }
    if (out.size() + n > max_bytes) break;
    out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

std::string AddressOf(std::string_view source) {
  size_t colon = source.rfind(':');
  return std::string(colon == std::string_view::npos ? source : source.substr(0, colon));
}

void AuditRateLimiter::Refill(Bucket& b, std::chrono::system_clock::time_point now) const {
  // A clock that went back refills nothing (and never takes tokens away).
  if (now > b.refilled) {
    double secs = std::chrono::duration<double>(now - b.refilled).count();
    b.tokens = std::min(options_.unauthenticated_burst,
                        b.tokens + secs * options_.unauthenticated_per_second);
  }
  b.refilled = now;
}

AuditRateLimiter::Bucket& AuditRateLimiter::BucketOf(const std::string& address,
                                                     std::chrono::system_clock::time_point now) {
  if (auto it = buckets_.find(address); it != buckets_.end()) return it->second;
  if (buckets_.size() >= options_.max_sources) {
    // A full bucket with nothing to report is the same as no bucket: forget those.
    for (auto it = buckets_.begin(); it != buckets_.end();) {
      Refill(it->second, now);
      bool idle = it->second.dropped == 0 && it->second.tokens >= options_.unauthenticated_burst &&
                  it->first != kOverflowSource;
      it = idle ? buckets_.erase(it) : std::next(it);
    }
  }
  const std::string& key = buckets_.size() >= options_.max_sources ? kOverflowSource : address;
  auto [it, inserted] = buckets_.try_emplace(key);
  if (inserted) it->second = Bucket{options_.unauthenticated_burst, now, 0};
  return it->second;
}

AuditRateLimiter::Decision AuditRateLimiter::Admit(const std::string& address,
                                                   std::chrono::system_clock::time_point now) {
  Bucket& b = BucketOf(address, now);
  Refill(b, now);
  Decision d;
  if (b.dropped > 0 && b.tokens >= 1) {
    b.tokens -= 1;
    d.summary = b.dropped;
    b.dropped = 0;
  }
  if (b.tokens >= 1) {
    b.tokens -= 1;
    d.record = true;
  } else {
    ++b.dropped;
  }
  return d;
}

AuditLog::AuditLog(store::Store& store, const Clock& clock, Metrics& metrics, AuditOptions options)
    : store_(store), clock_(clock), metrics_(metrics), options_(options), limiter_(options_) {
  metrics_.Describe(kDropped, "counter",
                    "Audit records of unauthenticated requests dropped by the per-address limit.");
  metrics_.Describe(kPruned, "counter", "Audit events deleted after the audit retention.");
  // Present from the start, so that a dashboard (and a test) sees them before the first drop.
  metrics_.Add(kDropped, {}, 0);
  metrics_.Add(kPruned, {}, 0);
}

AuditLog::~AuditLog() { StopPruning(); }

void AuditLog::Record(const AuditEntry& e) {
  if (!e.authenticated) {
    std::string address = BoundedText(AddressOf(e.source), Limits::kSource);
    AuditRateLimiter::Decision d;
    {
      std::lock_guard<std::mutex> lock(mu_);
      d = limiter_.Admit(address, clock_.Now());
    }
    if (d.summary > 0) WriteSummary(address, d.summary);
    if (!d.record) {
      metrics_.Add(kDropped, {});
      return;
    }
  }
  Write(e);
}

void AuditLog::WriteSummary(const std::string& address, int64_t dropped) {
  AuditEntry s;
  s.verb = "drop";
  s.resource = "auditevents";
  s.result = "Dropped";
  s.code = 429;
  s.message = std::to_string(dropped) + " audit record" + (dropped == 1 ? "" : "s") +
              " of unauthenticated requests from " + address + " dropped: over the limit of " +
              std::to_string(static_cast<int64_t>(options_.unauthenticated_per_second)) +
              " a second (bursts of " +
              std::to_string(static_cast<int64_t>(options_.unauthenticated_burst)) + ")";
  s.source = address;
  Write(s);
}

store::Write AuditLog::AsWrite(const AuditEntry& e) const {
  std::string now = FormatRfc3339(clock_.Now());
  std::string uid = NewUid();
  json::object ref{{"resource", BoundedText(e.resource, Limits::kResource)},
                   {"namespace", BoundedText(e.ns, Limits::kNamespace)},
                   {"name", BoundedText(e.name, Limits::kName)}};
  if (!e.subresource.empty()) ref["subresource"] = BoundedText(e.subresource, Limits::kSubresource);
  json::object obj{
      {"apiVersion", "paas.gantry.dev/v1"},
      {"kind", kAuditEvent},
      {"metadata",
       json::object{
           {"name", AuditName(uid)}, {"namespace", ""}, {"uid", uid}, {"creationTimestamp", now}}},
      {"time", now},
      {"user", BoundedText(e.user, Limits::kUser)},
      {"verb", BoundedText(e.verb, Limits::kVerb)},
      {"objectRef", std::move(ref)},
      {"result", BoundedText(e.result, Limits::kResult)},
      {"code", e.code},
      {"message", BoundedText(e.message, Limits::kMessage)},
      {"sourceAddress", BoundedText(e.source, Limits::kSource)}};
  return store::Write{store::Write::Op::kCreate, kAuditEvent, std::move(obj), 0, 0};
}

void AuditLog::Write(const AuditEntry& e) {
  auto out = store_.Commit({AsWrite(e)}, store::Durability::kRelaxed);
  if (!out.ok())
    spdlog::error("could not record an audit event ({} {} {}): {}", BoundedText(e.user, 64),
                  BoundedText(e.verb, 32), BoundedText(e.resource, 64), out.status().ToString());
}

absl::StatusOr<int64_t> AuditLog::Prune() {
  // Times are RFC 3339 UTC with second precision, so they compare as text.
  const std::string cutoff = FormatRfc3339(clock_.Now() - options_.retention);
  int64_t total = 0;
  for (int races = 0; races < kPruneRaces;) {
    store::ListOptions list;
    list.kind = kAuditEvent;
    list.oldest_first = true;  // creation order, which is time order
    list.limit = kPruneBatch;
    auto page = store_.List(list);
    if (!page.ok()) return page.status();
    std::vector<store::Write> deletes;
    for (auto& item : page->items) {
      if (model::GetString(item, "time") >= cutoff) break;
      deletes.push_back(
          store::Write{store::Write::Op::kDelete, kAuditEvent, std::move(item), 0, 0});
    }
    if (deletes.empty()) break;
    size_t n = deletes.size();
    auto out = store_.Commit(std::move(deletes), store::Durability::kRelaxed);
    if (absl::IsNotFound(out.status())) {
      ++races;  // another replica pruned some of them first: list again
      continue;
    }
    if (!out.ok()) return out.status();
    total += static_cast<int64_t>(n);
    metrics_.Add(kPruned, {}, static_cast<double>(n));
    if (n < static_cast<size_t>(kPruneBatch)) break;
  }
  return total;
}

std::chrono::milliseconds AuditLog::PruneInterval(std::chrono::seconds retention) {
  auto tenth = std::chrono::duration_cast<std::chrono::milliseconds>(retention) / 10;
  return std::clamp<std::chrono::milliseconds>(tenth, std::chrono::seconds(1),
                                               std::chrono::hours(1));
}

void AuditLog::StartPruning(std::chrono::milliseconds interval) {
  pruner_ = std::thread([this, interval] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      lock.unlock();
      auto pruned = Prune();
      if (!pruned.ok())
        spdlog::warn("pruning audit events failed (retried in {} ms): {}", interval.count(),
                     pruned.status().ToString());
      else if (*pruned > 0)
        spdlog::info("pruned {} audit events older than {} s", *pruned, options_.retention.count());
      lock.lock();
      stop_cv_.wait_for(lock, interval, [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return stop_; });
    }
  });
}

void AuditLog::StopPruning() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (pruner_.joinable()) pruner_.join();
}

}  // namespace gantry::auth
