// WalCheckpointer: SQLite's WAL checkpoints on a thread of their own, off the commit path.
//
// In WAL mode SQLite copies the log back into the database file (a checkpoint) once the log
// holds wal_autocheckpoint pages (1,000 by default), and it does so inside the COMMIT that
// crossed the line: that commit, and with the group commit every call of its batch, waits
// for the copy and for the fsync of the database file. A create writes about 13 pages, so
// under load one batch in a few dozen stalls for a checkpoint (docs/performance.md).
//
// Instead, the writer's WAL hook (sqlite3_wal_hook, which takes the place of the
// autocheckpoint) wakes this thread once the log holds kPages, and the thread runs a
// PASSIVE checkpoint on a connection of its own while the writer goes on committing (WAL
// mode lets a checkpoint and a writer run at once). It copies what was committed when it
// began, most of the log, and syncs the database file. The log only starts over once all
// of it is in the database file, and the commits made during the copy are not: so the next
// commit that finds the log at kPages copies that remainder itself (a few dozen pages, where
// SQLite would have copied all of them there), and the commit after it starts the log over.
// Should the thread fall behind, the writer checkpoints itself once the log holds
// kBackstopPages.
//
// Durability is SQLite's: a checkpoint never changes what a committed transaction is, and
// its connection syncs as the writer's does (the caller opens it with the same PRAGMA
// synchronous).
//
// Thread-safety: the hook runs on the writer's thread (SQLite calls it after each commit);
// stats() from any thread. Construct and destroy while the writer is not committing.
#pragma once

#include <sqlite3.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "store/sqlite/sqlite_db.h"

namespace gantry::store::sqlite {

class WalCheckpointer {
 public:
  static constexpr int kPages = 1000;           // SQLite's default wal_autocheckpoint
  static constexpr int kBackstopPages = 16000;  // about 64 MiB of log with 4 KiB pages

  struct Stats {
    int64_t background = 0;          // checkpoints this thread ran
    int64_t on_writer = 0;           // checkpoints the writer ran itself (the backstop)
    int64_t finished_on_writer = 0;  // tails of the thread's checkpoints the writer copied
    int64_t restarts = 0;            // times the log started over from its first page
  };

  // Hooks `writer` and starts the thread, which checkpoints through `conn` (a read-write
  // connection to the same database, used by the thread only).
  WalCheckpointer(std::unique_ptr<Connection> conn, sqlite3* writer);
  // Unhooks the writer and stops the thread (a checkpoint under way finishes first).
  ~WalCheckpointer();
  WalCheckpointer(const WalCheckpointer&) = delete;
  WalCheckpointer& operator=(const WalCheckpointer&) = delete;

  Stats stats();

 private:
  // sqlite3_wal_hook's callback: `pages` is the log's size after the commit.
  static int Hook(void* self, sqlite3* db, const char* schema, int pages);
  void Request();
  void Loop();

  const std::unique_ptr<Connection> conn_;  // the thread's only
  sqlite3* const writer_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<bool> requested_{false};  // set by the hook, cleared by the thread under mu_
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  Stats stats_ ABSL_GUARDED_BY(mu_);
  std::atomic<int64_t> on_writer_{0};
  std::atomic<int64_t> finished_on_writer_{0};
  std::atomic<bool> copied_{false};  // the thread copied; the writer copies the rest
  int last_pages_ = 0;               // the hook's (the writer's thread) only
  std::atomic<int64_t> restarts_{0};
  std::thread thread_;
};

}  // namespace gantry::store::sqlite
