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
// SQL text: fixed SQL (string literals) for the connection's life, and the SQL a list builds
// from its selectors (values are bound, so each shape of query prepares once) up to
// kMaxBuilt statements, the least recently used closed first.
class Connection {
 public:
  // Built statements kept per connection: the engine's and the API's list shapes fit many
  // times over; a client sending ever new selectors only evicts its own.
  static constexpr size_t kMaxBuilt = 128;

  // A built statement in the cache; `in_use` while a Stmt holds it.
  struct Built {
    sqlite3_stmt* stmt = nullptr;
    bool in_use = false;
    uint64_t last_use = 0;
  };

  explicit Connection(sqlite3* db) : db_(db) {}
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  sqlite3* db() const { return db_; }
  // The cached statement for `sql` (prepared on first use), or nullptr when it does not
  // prepare (the connection's error message says why).
  sqlite3_stmt* Cached(std::string_view sql);
  // The cached statement for built `sql`, marked in use; nullptr when it does not prepare or
  // is in use already (the caller prepares its own).
  Built* TakeBuilt(const std::string& sql);
  size_t built_count() const { return built_.size(); }
  bool HasBuilt(const std::string& sql) const { return built_.count(sql) > 0; }

 private:
  void EvictBuilt();

  sqlite3* db_;
  std::unordered_map<std::string_view, sqlite3_stmt*> cache_;
  // Node-based: a Built's address stays valid while other entries come and go.
  std::unordered_map<std::string, Built> built_;
  uint64_t uses_ = 0;
};

// Tags the Stmt constructor for SQL built at run time.
struct BuiltSql {};

// A statement: either cached on its connection (reset and unbound on scope exit) or prepared
// for this call only (finalized on scope exit). At most one Stmt per literal SQL text is
// alive on a connection at a time.
class Stmt {
 public:
  // Cached: `sql` must outlive the connection (a string literal).
  Stmt(Connection& conn, std::string_view sql);
  // Built at run time (a list's query): cached by its text when it is not in use already.
  Stmt(Connection& conn, BuiltSql, const std::string& sql);
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
  void Prepare(std::string_view sql);

  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  bool cached_;
  Connection::Built* built_ = nullptr;  // the cache entry this Stmt holds
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
