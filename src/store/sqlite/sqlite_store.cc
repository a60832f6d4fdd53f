#include "store/sqlite/sqlite_store.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "common/errors.h"
#include "common/status_macros.h"
#include "model/codec.h"
#include "model/schema.h"
#include "store/store_common.h"

namespace gantry::store {
namespace {

namespace json = boost::json;

constexpr int kSchemaVersion = 1;
constexpr int64_t kCompactEvery = 100;
constexpr size_t kMaxReaders = 16;

// Migrations, applied in order; migration i brings the schema to user_version i + 1.
const char* const kMigrations[] = {
    R"sql(
CREATE TABLE objects (
  id        INTEGER PRIMARY KEY,
  kind      TEXT NOT NULL,
  namespace TEXT NOT NULL,
  name      TEXT NOT NULL,
  rv        INTEGER NOT NULL,
  labels    TEXT NOT NULL,
  phase     TEXT NOT NULL,
  ref_name  TEXT NOT NULL,
  search    TEXT NOT NULL,
  body      TEXT NOT NULL,
  UNIQUE (kind, namespace, name)
);
CREATE INDEX objects_by_kind_ns ON objects (kind, namespace, id);
CREATE INDEX objects_by_kind ON objects (kind, id);
CREATE INDEX objects_by_kind_phase ON objects (kind, phase, id);
CREATE TABLE events (
  rv        INTEGER PRIMARY KEY,
  type      TEXT NOT NULL,
  kind      TEXT NOT NULL,
  namespace TEXT NOT NULL,
  name      TEXT NOT NULL,
  body      TEXT NOT NULL
);
CREATE TABLE revisions (
  kind      TEXT NOT NULL,
  namespace TEXT NOT NULL,
  name      TEXT NOT NULL,
  revision  INTEGER NOT NULL,
  created   TEXT NOT NULL,
  spec      TEXT NOT NULL,
  PRIMARY KEY (kind, namespace, name, revision)
);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
)sql",
};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == kSchemaVersion);

// A prepared statement, finalized on scope exit.
class Stmt {
 public:
  Stmt(sqlite3* db, std::string_view sql) : db_(db) {
    rc_ = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr);
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  bool ok() const { return rc_ == SQLITE_OK; }
  Stmt& Bind(int i, std::string_view s) {
    sqlite3_bind_text(stmt_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& Bind(int i, int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int Step() { return rc_ = sqlite3_step(stmt_); }
  std::string Text(int col) const {
    const unsigned char* p = sqlite3_column_text(stmt_, col);
    return p ? std::string(reinterpret_cast<const char*>(p),
                           static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string();
  }
  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  int rc() const { return rc_; }
  std::string Error() const { return sqlite3_errmsg(db_); }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
};

// Errors after which the database state is unknown: never write again (STYLE.md #5).
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

std::string JsonPathForLabel(const std::string& key) { return "$.\"" + key + "\""; }

// Appends SQL for the label selector to `sql`, binding values into `binds`.
void AppendSelector(const model::LabelSelector& sel, std::string* sql,
                    std::vector<std::string>* binds) {
  for (const auto& r : sel.requirements) {
    binds->push_back(JsonPathForLabel(r.key));
    std::string extract = "json_extract(labels, ?" + std::to_string(binds->size()) + ")";
    auto in_list = [&] {
      std::string list;
      for (const auto& v : r.values) {
        binds->push_back(v);
        list += (list.empty() ? "?" : ",?") + std::to_string(binds->size());
      }
      return list;
    };
    switch (r.op) {
      case model::SelectorOp::kEquals:
        *sql += " AND " + extract + " = " + "?" + std::to_string(binds->size() + 1);
        binds->push_back(r.values.empty() ? "" : r.values[0]);
        break;
      case model::SelectorOp::kNotEquals:
        *sql += " AND (" + extract + " IS NULL OR " + extract + " != ?" +
                std::to_string(binds->size() + 1) + ")";
        binds->push_back(r.values.empty() ? "" : r.values[0]);
        break;
      case model::SelectorOp::kIn:
        *sql += " AND " + extract + " IN (" + in_list() + ")";
        break;
      case model::SelectorOp::kNotIn: {
        std::string list = in_list();
        *sql += " AND (" + extract + " IS NULL OR " + extract + " NOT IN (" + list + "))";
        break;
      }
      case model::SelectorOp::kExists:
        *sql += " AND json_type(labels, ?" + std::to_string(binds->size()) + ") IS NOT NULL";
        break;
      case model::SelectorOp::kDoesNotExist:
        *sql += " AND json_type(labels, ?" + std::to_string(binds->size()) + ") IS NULL";
        break;
    }
  }
}

absl::Status AppendFields(const std::vector<FieldFilter>& fields, std::string* sql,
                          std::vector<std::string>* binds) {
  for (const auto& f : fields) {
    std::string column = FieldColumn(f.field);
    if (column.empty() && IsPlainFieldPath(f.field)) {
      // Any other field of the object (spec.user of RoleBindings, status.createdBy, ...):
      // read from the JSON body, unindexed; callers use it on small kinds or small pages.
      binds->push_back("$." + f.field);
      column = "COALESCE(json_extract(body, ?" + std::to_string(binds->size()) + "), '')";
    }
    if (column.empty()) return UnsupportedField(f.field);
    binds->push_back(f.value);
    *sql += " AND " + column + (f.equals ? " = ?" : " != ?") + std::to_string(binds->size());
  }
  return absl::OkStatus();
}

}  // namespace

class SqliteStore::Reader {
 public:
  Reader(SqliteStore* store, sqlite3* db) : store_(store), db_(db) {}
  Reader(Reader&& o) noexcept : store_(o.store_), db_(o.db_) { o.db_ = nullptr; }
  ~Reader() {
    if (db_) store_->ReleaseReader(db_);
  }
  sqlite3* db() const { return db_; }

 private:
  SqliteStore* store_;
  sqlite3* db_;
};

SqliteStore::SqliteStore(SqliteOptions options) : options_(std::move(options)) {}

SqliteStore::~SqliteStore() {
  std::lock_guard<std::mutex> r(readers_mu_);
  for (sqlite3* db : all_readers_) sqlite3_close_v2(db);
  std::lock_guard<std::mutex> w(write_mu_);
  if (writer_) sqlite3_close_v2(writer_);
}

absl::StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::Open(const SqliteOptions& options) {
  if (options.synchronous != "FULL" && options.synchronous != "NORMAL")
    return absl::InvalidArgumentError("synchronous must be FULL or NORMAL, not \"" +
                                      options.synchronous + "\"");
  std::unique_ptr<SqliteStore> store(new SqliteStore(options));
  RETURN_IF_ERROR(store->Init());
  return store;
}

absl::StatusOr<sqlite3*> SqliteStore::OpenConnection(bool writer) {
  sqlite3* db = nullptr;
  int flags = SQLITE_OPEN_NOMUTEX |
              (writer ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY);
  if (sqlite3_open_v2(options_.path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close_v2(db);
    return absl::UnavailableError("cannot open database " + options_.path + ": " + msg);
  }
  sqlite3_busy_timeout(db, 5000);
  if (writer) {
    for (std::string pragma :
         {std::string("PRAGMA journal_mode=WAL"), "PRAGMA synchronous=" + options_.synchronous,
          std::string("PRAGMA foreign_keys=ON")}) {
      char* err = nullptr;
      if (sqlite3_exec(db, pragma.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
        std::string msg = err ? err : sqlite3_errmsg(db);
        sqlite3_free(err);
        sqlite3_close_v2(db);
        return absl::UnavailableError(options_.path + " is not a Gantry database: " + msg);
      }
    }
  }
  return db;
}

absl::Status SqliteStore::Init() {
  std::lock_guard<std::mutex> lock(write_mu_);
  ASSIGN_OR_RETURN(writer_, OpenConnection(true));
  int version = 0;
  {
    Stmt s(writer_, "PRAGMA user_version");
    if (!s.ok() || s.Step() != SQLITE_ROW)
      return absl::UnavailableError(options_.path + " is not a Gantry database: " + s.Error());
    version = static_cast<int>(s.Int(0));
  }
  if (version > kSchemaVersion)
    return absl::UnavailableError(options_.path + " has schema version " + std::to_string(version) +
                                  ", newer than this gantryd understands (" +
                                  std::to_string(kSchemaVersion) + "); run a newer gantryd");
  for (int v = version; v < kSchemaVersion; ++v) {
    RETURN_IF_ERROR(Exec(writer_, "BEGIN IMMEDIATE"));
    absl::Status s = Exec(writer_, kMigrations[v]);
    if (s.ok()) s = Exec(writer_, ("PRAGMA user_version=" + std::to_string(v + 1)).c_str());
    if (!s.ok()) {
      Exec(writer_, "ROLLBACK").IgnoreError();
      return s;
    }
    RETURN_IF_ERROR(Exec(writer_, "COMMIT"));
  }
  Stmt rv(writer_,
          "SELECT MAX((SELECT IFNULL(MAX(rv),0) FROM objects),"
          " (SELECT IFNULL(MAX(rv),0) FROM events))");
  if (rv.Step() != SQLITE_ROW) return SqlError(writer_, "start-up");
  last_rv_ = rv.Int(0);
  current_rv_ = last_rv_;
  Stmt meta(writer_, "SELECT value FROM meta WHERE key='compacted_through'");
  if (meta.Step() == SQLITE_ROW) compacted_through_ = std::stoll(meta.Text(0));
  return absl::OkStatus();
}

SqliteStore::Reader SqliteStore::AcquireReader() {
  {
    std::lock_guard<std::mutex> lock(readers_mu_);
    if (!idle_readers_.empty()) {
      sqlite3* db = idle_readers_.back();
      idle_readers_.pop_back();
      return Reader(this, db);
    }
  }
  auto db = OpenConnection(false);
  if (!db.ok()) return Reader(this, nullptr);
  std::lock_guard<std::mutex> lock(readers_mu_);
  all_readers_.push_back(*db);
  return Reader(this, *db);
}

void SqliteStore::ReleaseReader(sqlite3* db) {
  std::lock_guard<std::mutex> lock(readers_mu_);
  if (idle_readers_.size() < kMaxReaders) {
    idle_readers_.push_back(db);
  } else {
    all_readers_.erase(std::find(all_readers_.begin(), all_readers_.end(), db));
    sqlite3_close_v2(db);
  }
}

absl::StatusOr<json::object> SqliteStore::Get(const std::string& kind, const std::string& ns,
                                              const std::string& name) {
  Reader r = AcquireReader();
  if (!r.db()) return absl::UnavailableError("cannot open a database connection");
  Stmt s(r.db(), "SELECT body FROM objects WHERE kind=?1 AND namespace=?2 AND name=?3");
  s.Bind(1, kind).Bind(2, ns).Bind(3, name);
  int rc = s.Step();
  if (rc == SQLITE_DONE) return ObjectNotFound(kind, name);
  if (rc != SQLITE_ROW) return SqlError(r.db(), "get");
  return model::ParseStoredObject(s.Text(0));
}

absl::StatusOr<ListResult> SqliteStore::List(const ListOptions& options) {
  std::string sql = "SELECT id, body FROM objects WHERE kind = ?1";
  std::vector<std::string> binds = {options.kind};
  if (options.ns) {
    binds.push_back(*options.ns);
    sql += " AND namespace = ?2";
  }
  if (!options.continue_token.empty()) {
    ASSIGN_OR_RETURN(int64_t after_id, ParseContinueToken(options.continue_token));
    binds.push_back(std::to_string(after_id));
    sql += std::string(" AND id ") + (options.oldest_first ? ">" : "<") + " CAST(?" +
           std::to_string(binds.size()) + " AS INTEGER)";
  }
  AppendSelector(options.labels, &sql, &binds);
  RETURN_IF_ERROR(AppendFields(options.fields, &sql, &binds));
  if (!options.search.empty()) {
    binds.push_back(LowerAscii(options.search));
    sql += " AND instr(search, ?" + std::to_string(binds.size()) + ") > 0";
  }
  sql += options.oldest_first ? " ORDER BY id ASC" : " ORDER BY id DESC";
  if (options.limit > 0) sql += " LIMIT " + std::to_string(options.limit + 1);

  Reader r = AcquireReader();
  if (!r.db()) return absl::UnavailableError("cannot open a database connection");
  ListResult result;
  // Read the resourceVersion inside the read transaction, so the list and the version agree.
  Exec(r.db(), "BEGIN").IgnoreError();
  {
    // Every commit writes an event row with its resourceVersion and compaction keeps the
    // newest, so the newest event is the store's resourceVersion (an index lookup, where
    // MAX(rv) over objects would scan them all).
    Stmt rv(r.db(), "SELECT IFNULL(MAX(rv),0) FROM events");
    if (rv.Step() == SQLITE_ROW) result.resource_version = rv.Int(0);
    Stmt s(r.db(), sql);
    if (!s.ok()) {
      Exec(r.db(), "ROLLBACK").IgnoreError();
      return SqlError(r.db(), "list");
    }
    for (size_t i = 0; i < binds.size(); ++i) s.Bind(static_cast<int>(i + 1), binds[i]);
    int64_t last_id = 0;
    int rc;
    while ((rc = s.Step()) == SQLITE_ROW) {
      if (options.limit > 0 && static_cast<int64_t>(result.items.size()) == options.limit) {
        result.continue_token = ContinueToken(last_id);
        break;
      }
      last_id = s.Int(0);
      auto obj = model::ParseStoredObject(s.Text(1), options.storage);
      if (obj.ok()) result.items.push_back(std::move(*obj));
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
      Exec(r.db(), "ROLLBACK").IgnoreError();
      return SqlError(r.db(), "list");
    }
  }
  Exec(r.db(), "COMMIT").IgnoreError();
  return result;
}

absl::StatusOr<int64_t> SqliteStore::Count(const std::string& kind, std::optional<std::string> ns,
                                           const std::vector<FieldFilter>& fields) {
  std::string sql = "SELECT COUNT(*) FROM objects WHERE kind = ?1";
  std::vector<std::string> binds = {kind};
  if (ns) {
    binds.push_back(*ns);
    sql += " AND namespace = ?2";
  }
  RETURN_IF_ERROR(AppendFields(fields, &sql, &binds));
  Reader r = AcquireReader();
  if (!r.db()) return absl::UnavailableError("cannot open a database connection");
  Stmt s(r.db(), sql);
  for (size_t i = 0; i < binds.size(); ++i) s.Bind(static_cast<int>(i + 1), binds[i]);
  if (s.Step() != SQLITE_ROW) return SqlError(r.db(), "count");
  return s.Int(0);
}

absl::Status SqliteStore::ApplyWrite(Write& w, int64_t rv, std::vector<Event>* events,
                                     json::object* stored) {
  std::string ns = model::GetString(w.object, "metadata.namespace");
  std::string name = model::GetString(w.object, "metadata.name");
  auto current_rv = [&]() -> absl::StatusOr<int64_t> {
    Stmt s(writer_, "SELECT rv FROM objects WHERE kind=?1 AND namespace=?2 AND name=?3");
    s.Bind(1, w.kind).Bind(2, ns).Bind(3, name);
    int rc = s.Step();
    if (rc == SQLITE_DONE) return ObjectNotFound(w.kind, name);
    if (rc != SQLITE_ROW) return absl::Status(SqlError(writer_, "read"));
    int64_t have = s.Int(0);
    if (w.expected_resource_version != 0 && w.expected_resource_version != have)
      return ObjectModified(w.kind, name);
    return have;
  };

  switch (w.op) {
    case Write::Op::kPutRevision: {
      const json::value* spec = model::FindPath(w.object, "spec");
      Stmt s(writer_,
             "INSERT INTO revisions(kind, namespace, name, revision, created, spec) "
             "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
      s.Bind(1, w.kind)
          .Bind(2, ns)
          .Bind(3, name)
          .Bind(4, w.revision)
          .Bind(5, model::GetString(w.object, "metadata.creationTimestamp"))
          .Bind(6, spec ? json::serialize(*spec) : "{}");
      if (s.Step() != SQLITE_DONE) {
        if ((s.rc() & 0xff) == SQLITE_CONSTRAINT) return RevisionExists(w.kind, name, w.revision);
        return absl::Status(absl::StatusCode::kUnavailable, s.Error());
      }
      return absl::OkStatus();
    }
    case Write::Op::kCreate:
    case Write::Op::kUpdate: {
      if (w.op == Write::Op::kUpdate) {
        auto have = current_rv();
        if (!have.ok()) return have.status();
      }
      model::EnsureObject(w.object, "metadata")["resourceVersion"] = std::to_string(rv);
      std::string body = json::serialize(w.object);
      Columns c = ColumnsOf(w.object);
      const bool create = w.op == Write::Op::kCreate;
      Stmt s(writer_,
             create ? "INSERT INTO objects(kind, namespace, name, rv, labels, phase, ref_name, "
                      "search, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
                    : "UPDATE objects SET rv=?4, labels=?5, phase=?6, ref_name=?7, search=?8, "
                      "body=?9 WHERE kind=?1 AND namespace=?2 AND name=?3");
      s.Bind(1, w.kind)
          .Bind(2, ns)
          .Bind(3, name)
          .Bind(4, rv)
          .Bind(5, c.labels)
          .Bind(6, c.phase)
          .Bind(7, c.ref_name)
          .Bind(8, c.search)
          .Bind(9, body);
      if (s.Step() != SQLITE_DONE) {
        if (create && (s.rc() & 0xff) == SQLITE_CONSTRAINT) return ObjectExists(w.kind, name);
        return absl::Status(absl::StatusCode::kUnavailable, s.Error());
      }
      Stmt e(writer_,
             "INSERT INTO events(rv, type, kind, namespace, name, body) "
             "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
      std::string type = w.op == Write::Op::kCreate ? "ADDED" : "MODIFIED";
      e.Bind(1, rv).Bind(2, type).Bind(3, w.kind).Bind(4, ns).Bind(5, name).Bind(6, body);
      if (e.Step() != SQLITE_DONE) return absl::Status(absl::StatusCode::kUnavailable, e.Error());
      events->push_back(Event{rv, type, w.kind, ns, name, w.object});
      *stored = w.object;
      return absl::OkStatus();
    }
    case Write::Op::kDelete: {
      auto have = current_rv();
      if (!have.ok()) return have.status();
      Stmt g(writer_, "SELECT body FROM objects WHERE kind=?1 AND namespace=?2 AND name=?3");
      g.Bind(1, w.kind).Bind(2, ns).Bind(3, name);
      if (g.Step() != SQLITE_ROW) return absl::Status(absl::StatusCode::kUnavailable, g.Error());
      auto last = model::ParseStoredObject(g.Text(0));
      json::object obj = last.ok() ? std::move(*last) : json::object();
      model::EnsureObject(obj, "metadata")["resourceVersion"] = std::to_string(rv);
      Stmt d(writer_, "DELETE FROM objects WHERE kind=?1 AND namespace=?2 AND name=?3");
      d.Bind(1, w.kind).Bind(2, ns).Bind(3, name);
      if (d.Step() != SQLITE_DONE) return absl::Status(absl::StatusCode::kUnavailable, d.Error());
      Stmt dr(writer_, "DELETE FROM revisions WHERE kind=?1 AND namespace=?2 AND name=?3");
      dr.Bind(1, w.kind).Bind(2, ns).Bind(3, name);
      if (dr.Step() != SQLITE_DONE) return absl::Status(absl::StatusCode::kUnavailable, dr.Error());
      std::string body = json::serialize(obj);
      Stmt e(writer_,
             "INSERT INTO events(rv, type, kind, namespace, name, body) "
             "VALUES (?1, 'DELETED', ?2, ?3, ?4, ?5)");
      e.Bind(1, rv).Bind(2, w.kind).Bind(3, ns).Bind(4, name).Bind(5, body);
      if (e.Step() != SQLITE_DONE) return absl::Status(absl::StatusCode::kUnavailable, e.Error());
      events->push_back(Event{rv, "DELETED", w.kind, ns, name, obj});
      *stored = std::move(obj);
      return absl::OkStatus();
    }
  }
  return absl::InternalError("unknown write");
}

absl::StatusOr<std::vector<json::object>> SqliteStore::Commit(std::vector<Write> writes,
                                                              Durability durability) {
  for (const Write& w : writes) RETURN_IF_ERROR(CheckStorable(w.kind, w.object));
  std::lock_guard<std::mutex> lock(write_mu_);
  if (!sticky_error_.ok()) return sticky_error_;
  // A relaxed commit skips the fsync (synchronous=NORMAL) for this transaction only; the
  // next durable commit's fsync covers it too.
  bool relax = durability == Durability::kRelaxed && options_.synchronous == "FULL";
  if (relax) sqlite3_exec(writer_, "PRAGMA synchronous=NORMAL", nullptr, nullptr, nullptr);
  struct Restore {
    sqlite3* db;
    bool on;
    ~Restore() {
      if (on) sqlite3_exec(db, "PRAGMA synchronous=FULL", nullptr, nullptr, nullptr);
    }
  } restore{writer_, relax};
  if (sqlite3_exec(writer_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK)
    return SqlError(writer_, "begin");
  std::vector<Event> events;
  std::vector<json::object> stored(writes.size());
  int64_t rv = last_rv_;
  absl::Status status;
  for (size_t i = 0; i < writes.size() && status.ok(); ++i) {
    if (writes[i].op != Write::Op::kPutRevision) ++rv;
    status = ApplyWrite(writes[i], rv, &events, &stored[i]);
  }
  if (status.ok()) {
    int rc = sqlite3_exec(writer_, "COMMIT", nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) {
      status = SqlError(writer_, "commit");
      if (IsFatal(sqlite3_extended_errcode(writer_))) sticky_error_ = status;
    }
  }
  if (!status.ok()) {
    int ext = sqlite3_extended_errcode(writer_);
    sqlite3_exec(writer_, "ROLLBACK", nullptr, nullptr, nullptr);
    if (status.code() == absl::StatusCode::kUnavailable && IsFatal(ext)) {
      sticky_error_ = absl::UnavailableError(
          "the database failed and gantryd refuses further writes until restarted: " +
          std::string(status.message()));
    }
    return status;
  }
  last_rv_ = rv;
  current_rv_ = rv;
  if (++commits_since_compaction_ >= kCompactEvery) MaybeCompact();
  if (observer_ && !events.empty()) observer_(events);
  return stored;
}

void SqliteStore::MaybeCompact() {
  commits_since_compaction_ = 0;
  int64_t through = last_rv_ - options_.event_retention;
  if (through <= compacted_through_) return;
  Stmt d(writer_, "DELETE FROM events WHERE rv <= ?1");
  d.Bind(1, through);
  if (d.Step() != SQLITE_DONE) return;  // retried on the next compaction
  Stmt m(writer_,
         "INSERT INTO meta(key, value) VALUES ('compacted_through', ?1) "
         "ON CONFLICT(key) DO UPDATE SET value=excluded.value");
  m.Bind(1, std::to_string(through));
  if (m.Step() == SQLITE_DONE) compacted_through_ = through;
}

absl::StatusOr<std::vector<Event>> SqliteStore::EventsSince(int64_t after, size_t max) {
  if (after < compacted_through_) return TooOldResourceVersion(after, compacted_through_.load());
  Reader r = AcquireReader();
  if (!r.db()) return absl::UnavailableError("cannot open a database connection");
  Stmt s(r.db(),
         "SELECT rv, type, kind, namespace, name, body FROM events WHERE rv > ?1 "
         "ORDER BY rv LIMIT ?2");
  s.Bind(1, after).Bind(2, static_cast<int64_t>(max));
  std::vector<Event> out;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    auto obj = model::ParseStoredObject(s.Text(5));
    out.push_back(Event{s.Int(0), s.Text(1), s.Text(2), s.Text(3), s.Text(4),
                        obj.ok() ? std::move(*obj) : json::object()});
  }
  if (rc != SQLITE_DONE) return SqlError(r.db(), "reading events");
  // Compaction may have run between the check above and the read: if events after `after`
  // were removed meanwhile, the answer would skip them silently. Check again.
  if (after < compacted_through_ && (out.empty() || out.front().resource_version != after + 1))
    return TooOldResourceVersion(after, compacted_through_.load());
  return out;
}

int64_t SqliteStore::CurrentResourceVersion() { return current_rv_; }

absl::StatusOr<std::vector<Revision>> SqliteStore::ListRevisions(const std::string& kind,
                                                                 const std::string& ns,
                                                                 const std::string& name) {
  Reader r = AcquireReader();
  if (!r.db()) return absl::UnavailableError("cannot open a database connection");
  Stmt s(r.db(),
         "SELECT revision, created, spec FROM revisions WHERE kind=?1 AND namespace=?2 "
         "AND name=?3 ORDER BY revision DESC");
  s.Bind(1, kind).Bind(2, ns).Bind(3, name);
  std::vector<Revision> out;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    auto spec = model::ParseStoredObject(s.Text(2));
    out.push_back(Revision{s.Int(0), s.Text(1), spec.ok() ? std::move(*spec) : json::object()});
  }
  if (rc != SQLITE_DONE) return SqlError(r.db(), "listing revisions");
  return out;
}

absl::StatusOr<Revision> SqliteStore::GetRevision(const std::string& kind, const std::string& ns,
                                                  const std::string& name, int64_t revision) {
  Reader r = AcquireReader();
  if (!r.db()) return absl::UnavailableError("cannot open a database connection");
  Stmt s(r.db(),
         "SELECT revision, created, spec FROM revisions WHERE kind=?1 AND namespace=?2 "
         "AND name=?3 AND revision=?4");
  s.Bind(1, kind).Bind(2, ns).Bind(3, name).Bind(4, revision);
  int rc = s.Step();
  if (rc == SQLITE_DONE) return RevisionNotFound(kind, name, revision);
  if (rc != SQLITE_ROW) return SqlError(r.db(), "reading a revision");
  auto spec = model::ParseStoredObject(s.Text(2));
  return Revision{s.Int(0), s.Text(1), spec.ok() ? std::move(*spec) : json::object()};
}

void SqliteStore::SetCommitObserver(std::function<void(const std::vector<Event>&)> observer) {
  std::lock_guard<std::mutex> lock(write_mu_);
  observer_ = std::move(observer);
}

absl::Status SqliteStore::Ping() {
  Reader r = AcquireReader();
  if (!r.db()) return absl::UnavailableError("cannot open a database connection");
  Stmt s(r.db(), "SELECT 1");
  if (s.Step() != SQLITE_ROW) return SqlError(r.db(), "ping");
  return absl::OkStatus();
}

}  // namespace gantry::store
