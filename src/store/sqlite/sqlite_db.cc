#include "store/sqlite/sqlite_db.h"

#include <mutex>

namespace gantry::store::sqlite {

void ConfigureOnce() {
  static std::once_flag once;
  // SQLITE_MISUSE when SQLite was initialized already (another user in the process): then
  // the default stays, which is correct, only slower.
  std::call_once(once, [] { sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); });
}

Connection::~Connection() {
  for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
  for (auto& [sql, built] : built_) sqlite3_finalize(built.stmt);
  sqlite3_close_v2(db_);
}

sqlite3_stmt* Connection::Cached(std::string_view sql) {
  auto it = cache_.find(sql);
  if (it != cache_.end()) return it->second;
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT,
                         &stmt, nullptr) != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return nullptr;
  }
  cache_.emplace(sql, stmt);
  return stmt;
}

Connection::Built* Connection::TakeBuilt(const std::string& sql) {
  auto it = built_.find(sql);
  if (it == built_.end()) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT,
                           &stmt, nullptr) != SQLITE_OK) {
      sqlite3_finalize(stmt);
      return nullptr;
    }
    if (built_.size() >= kMaxBuilt) EvictBuilt();
    it = built_.emplace(sql, Built{stmt, false, 0}).first;
  }
  if (it->second.in_use) return nullptr;
  it->second.in_use = true;
  it->second.last_use = ++uses_;
  return &it->second;
}

// Closes the least recently used statement that no Stmt holds (when every one is held, the
// cache grows past kMaxBuilt until they are returned).
void Connection::EvictBuilt() {
  auto oldest = built_.end();
  for (auto it = built_.begin(); it != built_.end(); ++it)
    if (!it->second.in_use &&
        (oldest == built_.end() || it->second.last_use < oldest->second.last_use))
      oldest = it;
  if (oldest == built_.end()) return;
  sqlite3_finalize(oldest->second.stmt);
  built_.erase(oldest);
}

Stmt::Stmt(Connection& conn, std::string_view sql)
    : db_(conn.db()), stmt_(conn.Cached(sql)), cached_(true) {}

Stmt::Stmt(Connection& conn, BuiltSql, const std::string& sql)
    : db_(conn.db()), built_(conn.TakeBuilt(sql)) {
  cached_ = built_ != nullptr;
  if (built_)
    stmt_ = built_->stmt;
  else
    Prepare(sql);
}

Stmt::Stmt(sqlite3* db, std::string_view sql) : db_(db), cached_(false) { Prepare(sql); }

void Stmt::Prepare(std::string_view sql) {
  if (sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr) !=
      SQLITE_OK) {
    sqlite3_finalize(stmt_);
    stmt_ = nullptr;
  }
}

Stmt::~Stmt() {
  if (!stmt_) return;
  if (cached_) {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    if (built_) built_->in_use = false;
  } else {
    sqlite3_finalize(stmt_);
  }
}

bool IsFatal(int rc) {
  int primary = rc & 0xff;
  return primary == SQLITE_IOERR || primary == SQLITE_CORRUPT || primary == SQLITE_FULL ||
         primary == SQLITE_NOTADB || primary == SQLITE_CANTOPEN;
}

absl::Status SqlError(sqlite3* db, std::string_view what) {
  return absl::UnavailableError(std::string("database error during ") + std::string(what) + ": " +
                                sqlite3_errmsg(db));
}

absl::Status Exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return absl::UnavailableError(std::string("database error: ") + msg);
  }
  return absl::OkStatus();
}

int ExecCached(Connection& conn, std::string_view sql) {
  Stmt s(conn, sql);
  if (!s.ok()) return sqlite3_errcode(conn.db());
  int rc = s.Step();
  return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

}  // namespace gantry::store::sqlite
