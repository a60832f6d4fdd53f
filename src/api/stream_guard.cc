#include "api/stream_guard.h"

#include <map>
#include <utility>

namespace gantry::api {

StreamGuard::StreamGuard(auth::Authenticator& authn, std::chrono::milliseconds period)
    : authn_(authn), period_(period), thread_([this] { Loop(); }) {}

StreamGuard::~StreamGuard() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void StreamGuard::Guard(std::weak_ptr<LineStream> stream, Credentials credentials, Check check,
                        End end) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.push_back(
      Entry{std::move(stream), std::move(credentials), std::move(check), std::move(end)});
}

size_t StreamGuard::GuardedCount() {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size() + in_flight_;
}

void StreamGuard::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    // A periodic re-check, not synchronisation: nothing waits for this thread.
    cv_.wait_for(lock, period_, [this] { return stopping_; });
    if (stopping_) return;
    std::vector<Entry> batch;
    batch.swap(entries_);
    in_flight_ = batch.size();
    lock.unlock();
    std::vector<Entry> kept = RecheckAll(std::move(batch));
    lock.lock();
    in_flight_ = 0;
    // Streams registered during the pass are in entries_ already; keep both.
    for (auto& e : kept) entries_.push_back(std::move(e));
  }
}

std::vector<StreamGuard::Entry> StreamGuard::RecheckAll(std::vector<Entry> entries) {
  // Many streams share one credential (a web page opens several watches): resolve each once.
  std::map<std::pair<std::string, std::string>, absl::StatusOr<auth::Identity>> resolved;
  std::vector<Entry> kept;
  for (auto& e : entries) {
    std::shared_ptr<LineStream> stream = e.stream.lock();
    if (!stream || stream->Closed()) continue;  // ended by itself
    auto key = std::make_pair(e.credentials.authorization, e.credentials.cookie);
    auto it = resolved.find(key);
    if (it == resolved.end())
      it = resolved.emplace(key, authn_.Recheck(key.first, key.second)).first;
    absl::Status why = it->second.ok() ? e.check(it->second->subject) : it->second.status();
    // Only a lost access ends a stream: a store that cannot answer right now (or any other
    // failure of the check itself) keeps it streaming, and the next pass asks again.
    if (!absl::IsUnauthenticated(why) && !absl::IsPermissionDenied(why)) {
      kept.push_back(std::move(e));
      continue;
    }
    e.end(why);
  }
  return kept;
}

}  // namespace gantry::api
