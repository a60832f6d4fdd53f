// Thin RAII over the SQLite C API for SqliteStore: a connection with its cache of prepared
// statements, a statement handle, and the error helpers.
//
// Thread-safety: a Connection (and every Stmt on it) is used by one thread at a time; the
// store hands connections out (the writer under its write mutex, readers by lease).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "absl/status/status.h"

namespace gantry::store::sqlite {

// Process-wide SQLite settings, applied once before the first connection opens:
// SQLITE_CONFIG_MEMSTATUS off (no global allocation counter behind a mutex on every malloc).
void ConfigureOnce();

// One connection and its statements prepared with SQLITE_PREPARE_PERSISTENT, keyed by their
// SQL text. Only fixed SQL (string literals) is cached: the statements a list builds from
// its selectors are prepared once per call.
class Connection {
 public:
  explicit Connection(sqlite3* db) : db_(db) {}
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  sqlite3* db() const { return db_; }
  // The cached statement for `sql` (prepared on first use), or nullptr when it does not
  // prepare (the connection's error message says why).
  sqlite3_stmt* Cached(std::string_view sql);

 private:
  sqlite3* db_;
  std::unordered_map<std::string_view, sqlite3_stmt*> cache_;
};

// A statement: either cached on its connection (reset and unbound on scope exit) or prepared
// for this call only (finalized on scope exit). At most one Stmt per cached SQL text is alive
// on a connection at a time.
class Stmt {
 public:
  // Cached: `sql` must outlive the connection (a string literal).
  Stmt(Connection& conn, std::string_view sql);
  // One-off.
  Stmt(sqlite3* db, std::string_view sql);
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  bool ok() const { return stmt_ != nullptr; }
  Stmt& Bind(int i, std::string_view s) {
    sqlite3_bind_text(stmt_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& Bind(int i, int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int Step() { return rc_ = stmt_ ? sqlite3_step(stmt_) : rc_; }
  std::string Text(int col) const {
    const unsigned char* p = sqlite3_column_text(stmt_, col);
    return p ? std::string(reinterpret_cast<const char*>(p),
                           static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string();
  }
  std::string_view View(int col) const {
    const unsigned char* p = sqlite3_column_text(stmt_, col);
    return p ? std::string_view(reinterpret_cast<const char*>(p),
                                static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string_view();
  }
  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  int rc() const { return rc_; }
  std::string Error() const { return sqlite3_errmsg(db_); }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  bool cached_;
  int rc_ = SQLITE_ERROR;
};

// Errors after which the database state is unknown: never write again (STYLE.md #5).
bool IsFatal(int rc);
// UNAVAILABLE "database error during WHAT: <sqlite's message>".
absl::Status SqlError(sqlite3* db, std::string_view what);
// Runs `sql` (several statements allowed); UNAVAILABLE with SQLite's message on failure.
absl::Status Exec(sqlite3* db, const char* sql);
// Runs one cached statement that returns no rows (BEGIN, COMMIT, SAVEPOINT...): its rc.
int ExecCached(Connection& conn, std::string_view sql);

}  // namespace gantry::store::sqlite
