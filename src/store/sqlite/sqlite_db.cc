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

Stmt::Stmt(Connection& conn, std::string_view sql)
    : db_(conn.db()), stmt_(conn.Cached(sql)), cached_(true) {}

Stmt::Stmt(sqlite3* db, std::string_view sql) : db_(db), cached_(false) {
  if (sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr) !=
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
