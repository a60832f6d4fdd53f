// StreamGuard: ends open streams (watches, followed run logs) once their caller lost access.
//
// A request is authenticated and authorized when it arrives, but a watch or a `logs -f` stays
// open for up to half an hour after that. Each such stream is registered here with the
// credentials it was opened with and the authorization check that let it open. A thread runs
// both again every `period` (1 s in gantryd): the credentials through
// Authenticator::Recheck, once per distinct credential however many streams share it, then
// each stream's check on the subject they resolve to now. When either fails the stream's
// `end` is called once, with the 401 or 403 the same request would get now, and the stream is
// forgotten; streams that ended by themselves (client gone, run finished) are forgotten too.
//
// Other replicas: the credentials and role bindings are read from the shared store. The
// authenticator's caches are dropped by every commit of users, role bindings, tokens and
// passwords on any replica (Authenticator::OnCommit; on PostgreSQL the store's tail delivers
// other replicas' commits), and sessions are never cached, so a disabled user, a revoked
// token, a logout or a removed role binding ends the stream on every replica within the
// period plus the tail's delay.
//
// Cost: per period, one Recheck per distinct credential (no store read for a cached token, one
// Get for a session) and one pure authorize() per stream.
//
// Thread-safety: Guard and GuardedCount may be called from any thread. `check` and `end` run
// on the guard's thread, never under its lock; the destructor stops and joins the thread and
// leaves still-open streams as they are (the transport closes them at shutdown).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "auth/authenticator.h"
#include "common/line_stream.h"

namespace gantry::api {

class StreamGuard {
 public:
  // What the stream's request presented: its Authorization and Cookie headers.
  struct Credentials {
    std::string authorization;
    std::string cookie;
  };
  // OK while `subject` (the credentials' subject now) may still read what the stream sends;
  // else the 403 to end it with.
  using Check = std::function<absl::Status(const auth::Subject& subject)>;
  // Ends the stream with `why` (a watch pushes a final ERROR event, then closes).
  using End = std::function<void(const absl::Status& why)>;

  // `authn` must outlive the guard.
  StreamGuard(auth::Authenticator& authn, std::chrono::milliseconds period);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

  // Watches `stream` (held weakly: the transport owns it) until it ends or access is lost.
  void Guard(std::weak_ptr<LineStream> stream, Credentials credentials, Check check, End end);
  // Streams being watched (for tests and metrics).
  size_t GuardedCount();

 private:
  struct Entry {
    std::weak_ptr<LineStream> stream;
    Credentials credentials;
    Check check;
    End end;
  };

  void Loop();
  // One pass over every guarded stream; returns the entries to keep.
  std::vector<Entry> RecheckAll(std::vector<Entry> entries);

  // Constant after construction.
  auth::Authenticator& authn_;
  const std::chrono::milliseconds period_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<Entry> entries_ ABSL_GUARDED_BY(mu_);
  // Entries being rechecked by the thread right now (not in entries_), for GuardedCount.
  size_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;

  std::thread thread_;  // started last, in the constructor
};

}  // namespace gantry::api
