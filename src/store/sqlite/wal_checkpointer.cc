#include "store/sqlite/wal_checkpointer.h"

#include <spdlog/spdlog.h>

namespace gantry::store::sqlite {

WalCheckpointer::WalCheckpointer(std::unique_ptr<Connection> conn, sqlite3* writer)
    : conn_(std::move(conn)), writer_(writer) {
  sqlite3_wal_hook(writer_, &WalCheckpointer::Hook, this);
  thread_ = std::thread([this] { Loop(); });
}

WalCheckpointer::~WalCheckpointer() {
  sqlite3_wal_hook(writer_, nullptr, nullptr);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

WalCheckpointer::Stats WalCheckpointer::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  Stats out = stats_;
  out.on_writer = on_writer_.load();
  out.finished_on_writer = finished_on_writer_.load();
  out.restarts = restarts_.load();
  return out;
}

int WalCheckpointer::Hook(void* self, sqlite3* db, const char* schema, int pages) {
  auto* me = static_cast<WalCheckpointer*>(self);
  if (pages < me->last_pages_) {
    // The log started over: nothing of the thread's last copy is left to finish.
    ++me->restarts_;
    me->copied_ = false;
  }
  me->last_pages_ = pages;
  if (pages >= kBackstopPages) {
    // The thread is behind: what SQLite's autocheckpoint would have done, here and now.
    // BUSY (the thread is checkpointing right now) is fine: the log is being copied.
    if (sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr) ==
        SQLITE_OK)
      ++me->on_writer_;
    return SQLITE_OK;
  }
  if (pages < kPages) return SQLITE_OK;
  if (me->copied_.exchange(false)) {
    // The thread copied the bulk of the log: copy the rest, which lets the next commit start
    // the log over (it only restarts once everything in it is in the database file).
    if (sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr) ==
        SQLITE_OK)
      ++me->finished_on_writer_;
    return SQLITE_OK;
  }
  me->Request();
  return SQLITE_OK;
}

void WalCheckpointer::Request() {
  // Once per checkpoint, not per commit: the writer takes the mutex only to ask.
  if (requested_.load(std::memory_order_relaxed)) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    requested_ = true;
  }
  cv_.notify_one();
}

void WalCheckpointer::Loop() {
  bool warned = false;
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return requested_.load() || stopping_; });
    if (stopping_) return;
    lock.unlock();
    const int64_t restarts = restarts_.load();
    int rc = sqlite3_wal_checkpoint_v2(conn_->db(), nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr,
                                       nullptr);
    if (rc != SQLITE_OK && rc != SQLITE_BUSY && !warned) {
      // The writer's backstop still checkpoints; say so once, not per commit.
      spdlog::warn("background WAL checkpoint failed: {}", sqlite3_errmsg(conn_->db()));
      warned = true;
    }
    lock.lock();
    // Cleared after the copy, not before: the commits made during it are the writer's to
    // copy (the hook), not a reason for another pass here.
    requested_ = false;
    if (rc == SQLITE_OK) {
      ++stats_.background;
      // Unless the log started over meanwhile (all copied, no commit during the copy). Should
      // it start over just after this check, the writer copies one whole log itself once:
      // what SQLite does every time.
      if (restarts_.load() == restarts) copied_ = true;
    }
  }
}

}  // namespace gantry::store::sqlite
