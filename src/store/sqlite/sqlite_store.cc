#include "store/sqlite/sqlite_store.h"

#include <algorithm>
#include <charconv>

#include "common/errors.h"
#include "common/status_macros.h"
#include "model/codec.h"
#include "model/schema.h"
#include "store/sqlite/sqlite_query.h"
#include "store/store_common.h"

namespace gantry::store {
namespace {

namespace json = boost::json;
using sqlite::Connection;
using sqlite::Exec;
using sqlite::ExecCached;
using sqlite::IsFatal;
using sqlite::SqlError;
using sqlite::Stmt;

constexpr int kSqliteSchemaVersion = 2;
constexpr int64_t kCompactEvery = 100;
constexpr size_t kMaxReaders = 16;

// Migrations, applied in order; migration i brings the schema to user_version i + 1.
const char* const kSqliteMigrations[] = {
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
    // 2: the label index (sqlite_query.h), filled from the objects already stored.
    R"sql(
CREATE TABLE label_index (
  kind  TEXT NOT NULL,
  key   TEXT NOT NULL,
  value TEXT NOT NULL,
  id    INTEGER NOT NULL,
  PRIMARY KEY (kind, key, value, id)
) WITHOUT ROWID;
CREATE INDEX label_index_by_object ON label_index (id);
INSERT INTO label_index (kind, key, value, id)
  SELECT o.kind, j.key, j.value, o.id FROM objects o, json_each(o.labels) j
  WHERE j.type = 'text';
)sql",
};
static_assert(sizeof(kSqliteMigrations) / sizeof(kSqliteMigrations[0]) == kSqliteSchemaVersion);

constexpr char kSelectCurrent[] =
    "SELECT rv, id, labels FROM objects WHERE kind=?1 AND namespace=?2 AND name=?3";

}  // namespace

class SqliteStore::Reader {
 public:
  Reader(SqliteStore* store, Connection* conn) : store_(store), conn_(conn) {}
  Reader(Reader&& o) noexcept : store_(o.store_), conn_(o.conn_) { o.conn_ = nullptr; }
  ~Reader() {
    if (conn_) store_->ReleaseReader(conn_);
  }
  Connection* conn() const { return conn_; }
  sqlite3* db() const { return conn_->db(); }

 private:
  SqliteStore* store_;
  Connection* conn_;
};

struct SqliteStore::Current {
  int64_t rv = 0;
  int64_t id = 0;
  std::string labels;
};

SqliteStore::SqliteStore(SqliteOptions options)
    : options_(std::move(options)),
      queue_(kMaxBatch, options_.metrics),
      cache_(options_.object_cache_bytes) {}

SqliteStore::~SqliteStore() {
  std::lock_guard<std::mutex> r(readers_mu_);
  idle_readers_.clear();
  all_readers_.clear();
  std::lock_guard<std::mutex> w(write_mu_);
  checkpointer_.reset();  // unhooks writer_
  writer_.reset();
}

absl::StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::Open(const SqliteOptions& options) {
  if (options.synchronous != "FULL" && options.synchronous != "NORMAL")
    return absl::InvalidArgumentError("synchronous must be FULL or NORMAL, not \"" +
                                      options.synchronous + "\"");
  sqlite::ConfigureOnce();
  std::unique_ptr<SqliteStore> store(new SqliteStore(options));
  RETURN_IF_ERROR(store->Init());
  return store;
}

absl::StatusOr<std::unique_ptr<Connection>> SqliteStore::OpenConnection(bool writer) {
  sqlite3* db = nullptr;
  int flags = SQLITE_OPEN_NOMUTEX |
              (writer ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY);
  if (sqlite3_open_v2(options_.path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close_v2(db);
    return absl::UnavailableError("cannot open database " + options_.path + ": " + msg);
  }
  auto conn = std::make_unique<Connection>(db);
  sqlite3_busy_timeout(db, 5000);
  if (writer) {
    // temp_store=MEMORY keeps a batch's savepoint journal (the pages each call's SAVEPOINT
    // may roll back) in memory: by default it spills to a temporary file past 64 KiB, which
    // a batch of a dozen creates does: ~22 more pwrite calls per create, and a temporary
    // file opened and unlinked per batch.
    for (std::string pragma :
         {std::string("PRAGMA journal_mode=WAL"), "PRAGMA synchronous=" + options_.synchronous,
          std::string("PRAGMA foreign_keys=ON"), std::string("PRAGMA temp_store=MEMORY")}) {
      char* err = nullptr;
      if (sqlite3_exec(db, pragma.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
        std::string msg = err ? err : sqlite3_errmsg(db);
        sqlite3_free(err);
        return absl::UnavailableError(options_.path + " is not a Gantry database: " + msg);
      }
    }
  }
  return conn;
}

absl::Status SqliteStore::Migrate() {
  int version = 0;
  {
    Stmt s(writer_->db(), "PRAGMA user_version");
    if (!s.ok() || s.Step() != SQLITE_ROW)
      return absl::UnavailableError(options_.path + " is not a Gantry database: " + s.Error());
    version = static_cast<int>(s.Int(0));
  }
  if (version > kSqliteSchemaVersion)
    return absl::UnavailableError(options_.path + " has schema version " + std::to_string(version) +
                                  ", newer than this gantryd understands (" +
                                  std::to_string(kSqliteSchemaVersion) + "); run a newer gantryd");
  for (int v = version; v < kSqliteSchemaVersion; ++v) {
    RETURN_IF_ERROR(Exec(writer_->db(), "BEGIN IMMEDIATE"));
    absl::Status s = Exec(writer_->db(), kSqliteMigrations[v]);
    if (s.ok()) s = Exec(writer_->db(), ("PRAGMA user_version=" + std::to_string(v + 1)).c_str());
    if (!s.ok()) {
      Exec(writer_->db(), "ROLLBACK").IgnoreError();
      return s;
    }
    RETURN_IF_ERROR(Exec(writer_->db(), "COMMIT"));
  }
  return absl::OkStatus();
}

absl::Status SqliteStore::Init() {
  std::lock_guard<std::mutex> lock(write_mu_);
  ASSIGN_OR_RETURN(writer_, OpenConnection(true));
  RETURN_IF_ERROR(Migrate());
  Stmt rv(writer_->db(),
          "SELECT MAX((SELECT IFNULL(MAX(rv),0) FROM objects),"
          " (SELECT IFNULL(MAX(rv),0) FROM events))");
  if (rv.Step() != SQLITE_ROW) return SqlError(writer_->db(), "start-up");
  last_rv_ = rv.Int(0);
  current_rv_ = last_rv_;
  Stmt meta(writer_->db(), "SELECT value FROM meta WHERE key='compacted_through'");
  if (meta.Step() == SQLITE_ROW) compacted_through_ = std::stoll(meta.Text(0));
  ASSIGN_OR_RETURN(std::unique_ptr<Connection> checkpoints, OpenConnection(true));
  checkpointer_ = std::make_unique<sqlite::WalCheckpointer>(std::move(checkpoints), writer_->db());
  return absl::OkStatus();
}

sqlite::WalCheckpointer::Stats SqliteStore::CheckpointStats() { return checkpointer_->stats(); }

SqliteStore::Reader SqliteStore::AcquireReader() {
  {
    std::lock_guard<std::mutex> lock(readers_mu_);
    if (!idle_readers_.empty()) {
      Connection* conn = idle_readers_.back();
      idle_readers_.pop_back();
      return Reader(this, conn);
    }
  }
  auto conn = OpenConnection(false);
  if (!conn.ok()) return Reader(this, nullptr);
  std::lock_guard<std::mutex> lock(readers_mu_);
  all_readers_.push_back(std::move(*conn));
  return Reader(this, all_readers_.back().get());
}

void SqliteStore::ReleaseReader(Connection* conn) {
  std::lock_guard<std::mutex> lock(readers_mu_);
  if (idle_readers_.size() < kMaxReaders) {
    idle_readers_.push_back(conn);
    return;
  }
  all_readers_.erase(std::find_if(all_readers_.begin(), all_readers_.end(),
                                  [&](const auto& c) { return c.get() == conn; }));
}

absl::StatusOr<json::object> SqliteStore::Get(const std::string& kind, const std::string& ns,
                                              const std::string& name) {
  absl::StatusOr<json::object> obj;
  RETURN_IF_ERROR(
      ReadBody(kind, ns, name, [&](std::string_view b) { obj = model::ParseStoredObject(b); }));
  return obj;
}

absl::StatusOr<std::string> SqliteStore::GetText(const std::string& kind, const std::string& ns,
                                                 const std::string& name) {
  absl::StatusOr<std::string> text;
  RETURN_IF_ERROR(ReadBody(kind, ns, name, [&](std::string_view b) { text = StoredText(b); }));
  return text;
}

absl::Status SqliteStore::ReadBody(const std::string& kind, const std::string& ns,
                                   const std::string& name,
                                   absl::FunctionRef<void(std::string_view body)> use) {
  const std::string key = ObjectCache::Key(kind, ns, name);
  uint64_t generation = 0;
  if (ObjectCache::Text text = cache_.Find(key, &generation)) {
    use(*text);
    return absl::OkStatus();
  }
  Reader r = AcquireReader();
  if (!r.conn()) return absl::UnavailableError("cannot open a database connection");
  Stmt s(*r.conn(), "SELECT body FROM objects WHERE kind=?1 AND namespace=?2 AND name=?3");
  s.Bind(1, kind).Bind(2, ns).Bind(3, name);
  int rc = s.Step();
  if (rc == SQLITE_DONE) return ObjectNotFound(kind, name);
  if (rc != SQLITE_ROW) return SqlError(r.db(), "get");
  use(s.View(0));
  cache_.Fill(key, generation, s.View(0));
  return absl::OkStatus();
}

absl::StatusOr<ListResult> SqliteStore::List(const ListOptions& options) {
  ASSIGN_OR_RETURN(sqlite::Query q, sqlite::ListQuery(options));
  Reader r = AcquireReader();
  if (!r.conn()) return absl::UnavailableError("cannot open a database connection");
  ListResult result;
  // Read the resourceVersion inside the read transaction, so the list and the version agree.
  ExecCached(*r.conn(), "BEGIN");
  int rc;
  {
    // Every commit writes an event row with its resourceVersion and compaction keeps the
    // newest, so the newest event is the store's resourceVersion (an index lookup, where
    // MAX(rv) over objects would scan them all).
    Stmt rv(*r.conn(), "SELECT IFNULL(MAX(rv),0) FROM events");
    if (rv.Step() == SQLITE_ROW) result.resource_version = rv.Int(0);
    Stmt s(*r.conn(), sqlite::BuiltSql{}, q.sql);
    for (size_t i = 0; i < q.binds.size(); ++i) s.Bind(static_cast<int>(i + 1), q.binds[i]);
    int64_t last_id = 0;
    while ((rc = s.Step()) == SQLITE_ROW) {
      if (options.limit > 0 && static_cast<int64_t>(result.items.size()) == options.limit) {
        result.continue_token = ContinueToken(last_id);
        break;
      }
      last_id = s.Int(0);
      auto obj = model::ParseStoredObject(s.View(1), options.storage);
      if (obj.ok()) result.items.push_back(std::move(*obj));
    }
  }
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    absl::Status error = SqlError(r.db(), "list");
    ExecCached(*r.conn(), "ROLLBACK");
    return error;
  }
  ExecCached(*r.conn(), "COMMIT");
  return result;
}

absl::StatusOr<int64_t> SqliteStore::Count(const std::string& kind, std::optional<std::string> ns,
                                           const std::vector<FieldFilter>& fields) {
  ASSIGN_OR_RETURN(sqlite::Query q, sqlite::CountQuery(kind, ns, fields));
  Reader r = AcquireReader();
  if (!r.conn()) return absl::UnavailableError("cannot open a database connection");
  Stmt s(*r.conn(), sqlite::BuiltSql{}, q.sql);
  for (size_t i = 0; i < q.binds.size(); ++i) s.Bind(static_cast<int>(i + 1), q.binds[i]);
  if (s.Step() != SQLITE_ROW) return SqlError(r.db(), "count");
  return s.Int(0);
}

absl::StatusOr<SqliteStore::Current> SqliteStore::ReadCurrent(const Write& w, const std::string& ns,
                                                              const std::string& name) {
  Stmt s(*writer_, kSelectCurrent);
  s.Bind(1, w.kind).Bind(2, ns).Bind(3, name);
  int rc = s.Step();
  if (rc == SQLITE_DONE) return ObjectNotFound(w.kind, name);
  if (rc != SQLITE_ROW) return absl::Status(SqlError(writer_->db(), "read"));
  Current c{s.Int(0), s.Int(1), s.Text(2)};
  if (w.expected_resource_version != 0 && w.expected_resource_version != c.rv)
    return ObjectModified(w.kind, name);
  return c;
}

absl::Status SqliteStore::ApplyRevision(const Write& w) {
  const json::value* spec = model::FindPath(w.object, "spec");
  Stmt s(*writer_,
         "INSERT INTO revisions(kind, namespace, name, revision, created, spec) "
         "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  std::string name = model::GetString(w.object, "metadata.name");
  s.Bind(1, w.kind)
      .Bind(2, model::GetString(w.object, "metadata.namespace"))
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

absl::Status SqliteStore::ApplyPut(Write& w, int64_t rv, std::vector<Event>* events) {
  std::string ns = model::GetString(w.object, "metadata.namespace");
  std::string name = model::GetString(w.object, "metadata.name");
  const bool create = w.op == Write::Op::kCreate;
  Current have;
  if (!create) {
    ASSIGN_OR_RETURN(have, ReadCurrent(w, ns, name));
  }
  model::EnsureObject(w.object, "metadata")["resourceVersion"] = std::to_string(rv);
  std::string body = json::serialize(w.object);
  Columns c = ColumnsOf(w.object);
  Stmt s(*writer_, create
                       ? "INSERT INTO objects(kind, namespace, name, rv, labels, phase, ref_name, "
                         "search, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
                       : "UPDATE objects SET rv=?4, labels=?5, phase=?6, ref_name=?7, search=?8, "
                         "body=?9 WHERE id=?10");
  s.Bind(4, rv).Bind(5, c.labels).Bind(6, c.phase).Bind(7, c.ref_name).Bind(8, c.search);
  s.Bind(9, body);
  if (create) {
    s.Bind(1, w.kind).Bind(2, ns).Bind(3, name);
  } else {
    s.Bind(10, have.id);
  }
  if (s.Step() != SQLITE_DONE) {
    if (create && (s.rc() & 0xff) == SQLITE_CONSTRAINT) return ObjectExists(w.kind, name);
    return absl::Status(absl::StatusCode::kUnavailable, s.Error());
  }
  if (create) {
    RETURN_IF_ERROR(sqlite::IndexLabels(*writer_, w.kind, sqlite3_last_insert_rowid(writer_->db()),
                                        w.object, false));
  } else if (c.labels != have.labels) {
    RETURN_IF_ERROR(sqlite::IndexLabels(*writer_, w.kind, have.id, w.object, true));
  }
  Stmt e(*writer_,
         "INSERT INTO events(rv, type, kind, namespace, name, body) "
         "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  std::string type = create ? "ADDED" : "MODIFIED";
  e.Bind(1, rv).Bind(2, type).Bind(3, w.kind).Bind(4, ns).Bind(5, name).Bind(6, body);
  if (e.Step() != SQLITE_DONE) return absl::Status(absl::StatusCode::kUnavailable, e.Error());
  written_.push_back({ObjectCache::Key(w.kind, ns, name), std::move(body)});
  // The write is not read again (a call that fails is failed, not re-applied): its object
  // goes to the event, and from there to the answer (AnswerFromEvents).
  events->push_back(
      Event{rv, std::move(type), w.kind, std::move(ns), std::move(name), std::move(w.object)});
  return absl::OkStatus();
}

absl::Status SqliteStore::ApplyDelete(Write& w, int64_t rv, std::vector<Event>* events) {
  std::string ns = model::GetString(w.object, "metadata.namespace");
  std::string name = model::GetString(w.object, "metadata.name");
  ASSIGN_OR_RETURN(Current have, ReadCurrent(w, ns, name));
  Stmt g(*writer_, "SELECT body FROM objects WHERE id=?1");
  g.Bind(1, have.id);
  if (g.Step() != SQLITE_ROW) return absl::Status(absl::StatusCode::kUnavailable, g.Error());
  auto last = model::ParseStoredObject(g.View(0));
  json::object obj = last.ok() ? std::move(*last) : json::object();
  model::EnsureObject(obj, "metadata")["resourceVersion"] = std::to_string(rv);
  Stmt d(*writer_, "DELETE FROM objects WHERE id=?1");
  d.Bind(1, have.id);
  if (d.Step() != SQLITE_DONE) return absl::Status(absl::StatusCode::kUnavailable, d.Error());
  RETURN_IF_ERROR(sqlite::UnindexLabels(*writer_, have.id));
  Stmt dr(*writer_,
          "DELETE FROM revisions WHERE kind=?1 AND namespace=?2 AND name=?3 RETURNING revision");
  dr.Bind(1, w.kind).Bind(2, ns).Bind(3, name);
  int rc;
  while ((rc = dr.Step()) == SQLITE_ROW)  // the cache forgets them with the object
    written_.push_back({ObjectCache::RevisionKey(w.kind, ns, name, dr.Int(0)), std::nullopt});
  if (rc != SQLITE_DONE) return absl::Status(absl::StatusCode::kUnavailable, dr.Error());
  std::string body = json::serialize(obj);
  Stmt e(*writer_,
         "INSERT INTO events(rv, type, kind, namespace, name, body) "
         "VALUES (?1, 'DELETED', ?2, ?3, ?4, ?5)");
  e.Bind(1, rv).Bind(2, w.kind).Bind(3, ns).Bind(4, name).Bind(5, body);
  if (e.Step() != SQLITE_DONE) return absl::Status(absl::StatusCode::kUnavailable, e.Error());
  written_.push_back({ObjectCache::Key(w.kind, ns, name), std::nullopt});
  events->push_back(Event{rv, "DELETED", w.kind, std::move(ns), std::move(name), std::move(obj)});
  return absl::OkStatus();
}

absl::Status SqliteStore::ApplyWrite(Write& w, int64_t rv, std::vector<Event>* events) {
  switch (w.op) {
    case Write::Op::kPutRevision:
      return ApplyRevision(w);
    case Write::Op::kCreate:
    case Write::Op::kUpdate:
      return ApplyPut(w, rv, events);
    case Write::Op::kDelete:
      return ApplyDelete(w, rv, events);
  }
  return absl::InternalError("unknown write");
}

absl::StatusOr<std::vector<json::object>> SqliteStore::Commit(std::vector<Write> writes,
                                                              Durability durability) {
  for (const Write& w : writes) RETURN_IF_ERROR(CheckStorable(w.kind, w.object));
  return queue_.Commit(std::move(writes), durability,
                       [this](const std::vector<PendingCommit*>& batch) {
                         std::lock_guard<std::mutex> write_lock(write_mu_);
                         return CommitBatch(batch);
                       });
}

absl::Status SqliteStore::ApplyCall(PendingCommit& call, int64_t* rv, bool* broken) {
  if (ExecCached(*writer_, "SAVEPOINT gantry_call") != SQLITE_OK) {
    *broken = true;
    return SqlError(writer_->db(), "savepoint");
  }
  const int64_t start = *rv;
  const size_t written_before = written_.size();
  absl::Status status;
  for (size_t i = 0; i < call.writes.size() && status.ok(); ++i) {
    if (call.writes[i].op != Write::Op::kPutRevision) ++*rv;
    status = ApplyWrite(call.writes[i], *rv, &call.events);
  }
  if (status.ok()) {
    if (ExecCached(*writer_, "RELEASE gantry_call") != SQLITE_OK) {
      *broken = true;
      return SqlError(writer_->db(), "release");
    }
    call.result = std::vector<json::object>();  // the objects: AnswerFromEvents, after the commit
    return absl::OkStatus();
  }
  // This call fails alone: its writes are undone and its resourceVersions go to the next.
  int ext = sqlite3_extended_errcode(writer_->db());
  if (status.code() == absl::StatusCode::kUnavailable && IsFatal(ext)) *broken = true;
  *rv = start;
  call.events.clear();
  written_.resize(written_before);
  if (!*broken && (ExecCached(*writer_, "ROLLBACK TO gantry_call") != SQLITE_OK ||
                   ExecCached(*writer_, "RELEASE gantry_call") != SQLITE_OK))
    *broken = true;
  return status;
}

size_t SqliteStore::CommitBatch(const std::vector<PendingCommit*>& batch) {
  if (!sticky_error_.ok()) {
    FailCalls(batch, sticky_error_);
    return 0;
  }
  // A batch of relaxed calls only skips the fsync (synchronous=NORMAL) for this transaction;
  // the next durable commit's fsync covers it too.
  bool relax = options_.synchronous == "FULL" &&
               std::all_of(batch.begin(), batch.end(),
                           [](PendingCommit* c) { return c->durability == Durability::kRelaxed; });
  if (relax) ExecCached(*writer_, "PRAGMA synchronous=NORMAL");
  struct Restore {
    Connection& conn;
    bool on;
    ~Restore() {
      if (on) ExecCached(conn, "PRAGMA synchronous=FULL");
    }
  } restore{*writer_, relax};
  if (ExecCached(*writer_, "BEGIN IMMEDIATE") != SQLITE_OK) {
    FailCalls(batch, SqlError(writer_->db(), "begin"));
    return 0;
  }
  int64_t rv = last_rv_;
  bool broken = false;
  std::vector<PendingCommit*> applied;
  absl::Status status;
  for (PendingCommit* call : batch) {
    absl::Status s = ApplyCall(*call, &rv, &broken);
    if (broken) {
      status = s;
      break;
    }
    if (s.ok()) {
      applied.push_back(call);
    } else {
      call->result = s;
    }
  }
  if (status.ok() && !applied.empty() && ExecCached(*writer_, "COMMIT") != SQLITE_OK)
    status = SqlError(writer_->db(), "commit");
  // After the COMMIT (a read begun before it must not fill the cache once this has run) and
  // before any call is acknowledged; also when the COMMIT failed, in case it half happened.
  UpdateCache(status.ok() && !applied.empty());
  if (!status.ok() || applied.empty()) {
    int ext = sqlite3_extended_errcode(writer_->db());
    ExecCached(*writer_, "ROLLBACK");
    if (status.ok()) return 0;  // every call failed its own checks
    if (status.code() == absl::StatusCode::kUnavailable && IsFatal(ext)) {
      sticky_error_ = absl::UnavailableError(
          "the database failed and gantryd refuses further writes until restarted: " +
          std::string(status.message()));
    }
    FailCalls(batch, status);
    return 0;
  }
  last_rv_ = rv;
  current_rv_ = rv;
  commits_since_compaction_ += static_cast<int64_t>(applied.size());
  if (commits_since_compaction_ >= kCompactEvery) MaybeCompact();
  if (observer_)
    for (PendingCommit* call : applied)
      if (!call->events.empty()) observer_(call->events);
  for (PendingCommit* call : applied) AnswerFromEvents(call);
  return applied.size();
}

void SqliteStore::UpdateCache(bool committed) {
  for (Written& w : written_) {
    if (committed && w.text)
      cache_.Refresh(w.key, *std::move(w.text));
    else
      cache_.Invalidate(w.key);
  }
  written_.clear();
}

void SqliteStore::MaybeCompact() {
  commits_since_compaction_ = 0;
  int64_t through = last_rv_ - options_.event_retention;
  if (through <= compacted_through_) return;
  Stmt d(*writer_, "DELETE FROM events WHERE rv <= ?1");
  d.Bind(1, through);
  if (d.Step() != SQLITE_DONE) return;  // retried on the next compaction
  Stmt m(*writer_,
         "INSERT INTO meta(key, value) VALUES ('compacted_through', ?1) "
         "ON CONFLICT(key) DO UPDATE SET value=excluded.value");
  m.Bind(1, std::to_string(through));
  if (m.Step() == SQLITE_DONE) compacted_through_ = through;
}

absl::StatusOr<std::vector<Event>> SqliteStore::EventsSince(int64_t after, size_t max) {
  if (after < compacted_through_) return TooOldResourceVersion(after, compacted_through_.load());
  Reader r = AcquireReader();
  if (!r.conn()) return absl::UnavailableError("cannot open a database connection");
  Stmt s(*r.conn(),
         "SELECT rv, type, kind, namespace, name, body FROM events WHERE rv > ?1 "
         "ORDER BY rv LIMIT ?2");
  s.Bind(1, after).Bind(2, static_cast<int64_t>(max));
  std::vector<Event> out;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    auto obj = model::ParseStoredObject(s.View(5));
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

GroupCommitStats SqliteStore::CommitStats() { return queue_.Stats(); }

ObjectCacheStats SqliteStore::CacheStats() { return cache_.Stats(); }

absl::StatusOr<std::vector<Revision>> SqliteStore::ListRevisions(const std::string& kind,
                                                                 const std::string& ns,
                                                                 const std::string& name) {
  Reader r = AcquireReader();
  if (!r.conn()) return absl::UnavailableError("cannot open a database connection");
  Stmt s(*r.conn(),
         "SELECT revision, created, spec FROM revisions WHERE kind=?1 AND namespace=?2 "
         "AND name=?3 ORDER BY revision DESC");
  s.Bind(1, kind).Bind(2, ns).Bind(3, name);
  std::vector<Revision> out;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    auto spec = model::ParseStoredObject(s.View(2));
    out.push_back(Revision{s.Int(0), s.Text(1), spec.ok() ? std::move(*spec) : json::object()});
  }
  if (rc != SQLITE_DONE) return SqlError(r.db(), "listing revisions");
  return out;
}

namespace {

// A revision as the object cache holds it: the length of its creation time in decimal, a
// colon, the creation time, its spec's text.
std::string RevisionText(std::string_view created, std::string_view spec) {
  std::string text = std::to_string(created.size());
  text.push_back(':');
  text.append(created).append(spec);
  return text;
}

Revision RevisionFromText(int64_t revision, std::string_view text) {
  const size_t colon = text.find(':');
  size_t length = 0;
  std::from_chars(text.data(), text.data() + colon, length);
  std::string_view rest = text.substr(colon + 1);
  auto spec = model::ParseStoredObject(rest.substr(length));
  return Revision{revision, std::string(rest.substr(0, length)),
                  spec.ok() ? std::move(*spec) : json::object()};
}

}  // namespace

// Read through the object cache: a deploy resolves the revisions its instance pins several
// times (the approval gate, the dispatcher, the worker), each a read transaction otherwise.
absl::StatusOr<Revision> SqliteStore::GetRevision(const std::string& kind, const std::string& ns,
                                                  const std::string& name, int64_t revision) {
  const std::string key = ObjectCache::RevisionKey(kind, ns, name, revision);
  uint64_t generation = 0;
  if (ObjectCache::Text text = cache_.Find(key, &generation))
    return RevisionFromText(revision, *text);
  Reader r = AcquireReader();
  if (!r.conn()) return absl::UnavailableError("cannot open a database connection");
  Stmt s(*r.conn(),
         "SELECT created, spec FROM revisions WHERE kind=?1 AND namespace=?2 AND name=?3 "
         "AND revision=?4");
  s.Bind(1, kind).Bind(2, ns).Bind(3, name).Bind(4, revision);
  int rc = s.Step();
  if (rc == SQLITE_DONE) return RevisionNotFound(kind, name, revision);
  if (rc != SQLITE_ROW) return SqlError(r.db(), "reading a revision");
  const std::string text = RevisionText(s.View(0), s.View(1));
  cache_.Fill(key, generation, text);
  return RevisionFromText(revision, text);
}

void SqliteStore::SetCommitObserver(std::function<void(const std::vector<Event>&)> observer) {
  std::lock_guard<std::mutex> lock(write_mu_);
  observer_ = std::move(observer);
}

absl::Status SqliteStore::Ping() {
  Reader r = AcquireReader();
  if (!r.conn()) return absl::UnavailableError("cannot open a database connection");
  Stmt s(*r.conn(), "SELECT 1");
  if (s.Step() != SQLITE_ROW) return SqlError(r.db(), "ping");
  return absl::OkStatus();
}

}  // namespace gantry::store
