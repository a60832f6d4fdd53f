// AuditLog: the record of every mutation and of every refusal of one: who, when, which
// verb on which object, the result, and the source address. Stored as AuditEvent objects
// (cluster-scoped, read-only through the API, readable by admins).
//
// Nothing secret is recorded: the request body is never kept, only the answer's code and
// message, and Gantry's messages never carry secrets (sensitive variables are
// redacted before any message is made; passwords and tokens are never echoed).
//
// The log cannot be grown without bound by someone on the network (docs/security.md,
// "Unauthenticated memory and disk growth"):
// - every field is bounded (BoundedText: at most a fixed number of bytes, valid UTF-8, no
//   control characters); no request path or query string is kept, only the fields taken
//   from the path (resource, project, name), each bounded;
// - records of callers that did not authenticate are rate-limited per source address
//   (AuditRateLimiter); dropped records are counted in gantry_audit_records_dropped_total
//   and stand for one summary record ("N records ... dropped") written once that address
//   may record again;
// - events older than the retention are deleted (Prune; StartPruning runs it at once and
//   then periodically), counted in gantry_audit_events_pruned_total.
//
// The record of a successful create is committed in the create's own transaction (AsWrite,
// api::Router::Create): durable with the object, and one commit instead of two. Every other
// record is committed with relaxed durability, after the answer is decided: a crash of
// gantryd keeps them (WAL), a power loss may lose the last ones together with other
// unsynced bookkeeping.
//
// Thread-safety: safe from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "common/clock.h"
#include "common/metrics.h"
#include "store/store.h"

namespace gantry::auth {

inline constexpr char kAuditEvent[] = "AuditEvent";

struct AuditEntry {
  std::string user;            // "" when the caller was not authenticated
  bool authenticated = false;  // the caller proved who it is (token, session, or password)
  std::string verb;            // create, update, patch, delete, deploy, login, ...
  std::string resource;        // computeinstances, users, tokens, sessions, ...
  std::string ns;
  std::string name;
  std::string subresource;  // deploy, tokens, ...
  std::string result;       // Allowed, Denied, Failed (Dropped: a summary of dropped records)
  int code = 0;             // the HTTP status answered
  std::string message;      // the Status message of a refusal
  std::string source;       // peer address ("ADDRESS:PORT")
};

struct AuditOptions {
  // Audit events older than this are deleted by Prune.
  std::chrono::seconds retention = std::chrono::hours(24 * 90);
  // Records of unauthenticated callers, per source address: bursts of up to `burst`, then
  // `per_second` a second.
  double unauthenticated_per_second = 5;
  double unauthenticated_burst = 20;
  // Source addresses tracked at once; beyond them, new addresses share one bucket.
  size_t max_sources = 4096;
};

// `text` cut to at most `max_bytes` bytes (never inside a character), with every byte that is
// not part of valid UTF-8, and every control character, replaced by '?'.
std::string BoundedText(std::string_view text, size_t max_bytes);

// "ADDRESS" of "ADDRESS:PORT" (IPv4 or unbracketed IPv6, as the server writes peers).
std::string AddressOf(std::string_view source);

// Token buckets per source address for the records of unauthenticated callers. The summary
// of what was dropped takes a token like any record, so an address never gets more than
// `burst` records at once and `per_second` a second after that.
//
// Thread-safety: not thread-safe; AuditLog guards it.
class AuditRateLimiter {
 public:
  explicit AuditRateLimiter(const AuditOptions& options) : options_(options) {}

  struct Decision {
    bool record = false;  // write this record
    int64_t summary = 0;  // > 0: first write a summary of this many dropped records
  };
  // Takes the tokens for one record from `address` at `now`.
  Decision Admit(const std::string& address, std::chrono::system_clock::time_point now);
  // Addresses tracked (for tests).
  size_t SourcesForTest() const { return buckets_.size(); }

 private:
  struct Bucket {
    double tokens = 0;
    std::chrono::system_clock::time_point refilled;
    int64_t dropped = 0;
  };
  Bucket& BucketOf(const std::string& address, std::chrono::system_clock::time_point now);
  void Refill(Bucket& b, std::chrono::system_clock::time_point now) const;

  const AuditOptions options_;
  std::map<std::string, Bucket> buckets_;
};

class AuditLog {
 public:
  AuditLog(store::Store& store, const Clock& clock, Metrics& metrics, AuditOptions options = {});
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // Best effort: a failure to record is logged, never turned into the request's answer.
  // Records of unauthenticated callers may be dropped (see above).
  void Record(const AuditEntry& entry);
  // The record of `entry` as a store write, for a caller that commits it in the transaction
  // of the change it records (a create: one commit instead of two, docs/performance.md).
  // Only for authenticated callers, which are never rate-limited.
  store::Write AsWrite(const AuditEntry& entry) const;

  // Deletes the audit events older than the retention, oldest first, in batches. Returns how
  // many it deleted. Several replicas may prune at once: a batch that lost the race to
  // another (NOT_FOUND) is listed again. Errors: those of the store.
  absl::StatusOr<int64_t> Prune();
  // Prunes now and then every `interval` on a thread of its own, until StopPruning or the
  // destructor. Call once.
  void StartPruning(std::chrono::milliseconds interval);
  void StopPruning();
  // How often gantryd prunes for a retention: a tenth of it, from 1 s to 1 h.
  static std::chrono::milliseconds PruneInterval(std::chrono::seconds retention);

 private:
  void Write(const AuditEntry& entry);
  void WriteSummary(const std::string& address, int64_t dropped);

  // Constant after construction.
  store::Store& store_;
  const Clock& clock_;
  Metrics& metrics_;
  const AuditOptions options_;

  std::mutex mu_;
  AuditRateLimiter limiter_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::condition_variable stop_cv_;
  std::thread pruner_;  // started and joined by the owner's thread
};

}  // namespace gantry::auth
