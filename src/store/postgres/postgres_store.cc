#include "store/postgres/postgres_store.h"

#include <libpq-fe.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <limits>
#include <set>
#include <tuple>
#include <unordered_map>

#include "common/errors.h"
#include "common/status_macros.h"
#include "model/codec.h"
#include "store/postgres/pg_query.h"
#include "store/store_common.h"

namespace gantry::store {
namespace {

namespace json = boost::json;

constexpr int kSchemaVersion = 3;
constexpr int64_t kCompactEvery = 100;
constexpr int64_t kDeliverWindow = 1000;
// pg_advisory_xact_lock key of schema migrations ("gantry" in ASCII).
constexpr char kMigrationLock[] = "SELECT pg_advisory_xact_lock(113702011118969)";
constexpr char kChannel[] = "gantry_events";

// Migrations, applied in order; migration i brings schema_version to i + 1. Never edit one
// that has shipped: add the next.
const char* const kMigrations[] = {
    R"sql(
CREATE TABLE gantry_state (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  rv BIGINT NOT NULL
);
INSERT INTO gantry_state (id, rv) VALUES (1, 0);
CREATE TABLE objects (
  id        BIGSERIAL PRIMARY KEY,
  kind      TEXT NOT NULL,
  namespace TEXT NOT NULL,
  name      TEXT NOT NULL,
  rv        BIGINT NOT NULL,
  labels    JSONB NOT NULL,
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
  rv        BIGINT PRIMARY KEY,
  commit_rv BIGINT NOT NULL,
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
  revision  BIGINT NOT NULL,
  created   TEXT NOT NULL,
  spec      TEXT NOT NULL,
  PRIMARY KEY (kind, namespace, name, revision)
);
CREATE TABLE meta (key TEXT PRIMARY KEY, value BIGINT NOT NULL);
)sql",
    // 2: one row per connection for Flush (see there).
    R"sql(
CREATE TABLE flushes (pid INTEGER PRIMARY KEY, n BIGINT NOT NULL);
)sql",
    // 3: the label index (one row per label of an object), filled from existing objects.
    R"sql(
CREATE TABLE object_labels (
  object_id BIGINT NOT NULL,
  kind      TEXT NOT NULL,
  key       TEXT NOT NULL,
  value     TEXT NOT NULL,
  PRIMARY KEY (object_id, key)
);
CREATE INDEX object_labels_by_value ON object_labels (kind, key, value, object_id);
INSERT INTO object_labels (object_id, kind, key, value)
  SELECT o.id, o.kind, l.key, l.value FROM objects o, jsonb_each_text(o.labels) l;
)sql",
};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == kSchemaVersion);

// A query result, cleared on scope exit.
class Result {
 public:
  explicit Result(PGresult* r = nullptr) : r_(r) {}
  ~Result() { PQclear(r_); }
  Result(Result&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  Result& operator=(Result&& o) noexcept {
    std::swap(r_, o.r_);
    return *this;
  }
  bool ok() const {
    ExecStatusType s = PQresultStatus(r_);
    return r_ && (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK);
  }
  std::string sqlstate() const {
    const char* s = r_ ? PQresultErrorField(r_, PG_DIAG_SQLSTATE) : nullptr;
    return s ? s : "";
  }
  std::string error() const {
    const char* s = r_ ? PQresultErrorField(r_, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
    return s ? s : "no answer from the server";
  }
  int rows() const { return PQntuples(r_); }
  bool null(int row, int col) const { return PQgetisnull(r_, row, col); }
  std::string text(int row, int col) const {
    return std::string(PQgetvalue(r_, row, col), static_cast<size_t>(PQgetlength(r_, row, col)));
  }
  int64_t integer(int row, int col) const { return std::atoll(PQgetvalue(r_, row, col)); }
  int64_t affected() const { return std::atoll(PQcmdTuples(r_)); }

 private:
  PGresult* r_;
};

bool IsDeadlockOrSerialization(const std::string& sqlstate) {
  return sqlstate == "40P01" || sqlstate == "40001";
}

json::object ParsedOrEmpty(const std::string& text) {
  auto obj = model::ParseStoredObject(text);
  return obj.ok() ? std::move(*obj) : json::object();
}

}  // namespace

class PostgresStore::Conn {
 public:
  explicit Conn(PGconn* pg) : pg_(pg) {}
  ~Conn() { PQfinish(pg_); }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  PGconn* pg() const { return pg_; }
  bool healthy() const {
    return PQstatus(pg_) == CONNECTION_OK && PQtransactionStatus(pg_) == PQTRANS_IDLE;
  }

  // `sql` with text parameters; prepared once per connection unless `dynamic` (SQL built per
  // request, e.g. lists with selectors).
  Result Run(const std::string& sql, const std::vector<std::string>& params = {},
             bool dynamic = false) {
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const auto& p : params) values.push_back(p.c_str());
    int n = static_cast<int>(params.size());
    if (dynamic)
      return Result(PQexecParams(pg_, sql.c_str(), n, nullptr, values.data(), nullptr, nullptr, 0));
    auto it = prepared_.find(sql);
    if (it == prepared_.end()) {
      std::string name = "g" + std::to_string(prepared_.size());
      Result p(PQprepare(pg_, name.c_str(), sql.c_str(), n, nullptr));
      if (!p.ok()) return p;
      it = prepared_.emplace(sql, name).first;
    }
    return Result(PQexecPrepared(pg_, it->second.c_str(), n, values.data(), nullptr, nullptr, 0));
  }
  // One or more statements without parameters.
  Result Exec(const char* sql) { return Result(PQexec(pg_, sql)); }

 private:
  PGconn* pg_;
  std::unordered_map<std::string, std::string> prepared_;
};

class PostgresStore::Lease {
 public:
  Lease(PostgresStore* store, std::unique_ptr<Conn> conn) : store_(store), conn_(std::move(conn)) {}
  Lease(Lease&& o) noexcept = default;
  ~Lease() {
    if (conn_) store_->Release(std::move(conn_));
  }
  Conn& operator*() const { return *conn_; }
  Conn* operator->() const { return conn_.get(); }

 private:
  PostgresStore* store_;
  std::unique_ptr<Conn> conn_;
};

namespace {

// UNAVAILABLE for a failed query: what was being done and the server's words.
absl::Status DbError(const Result& r, std::string_view what) {
  return absl::UnavailableError("database error during " + std::string(what) + ": " + r.error());
}

}  // namespace

std::string PostgresStore::Redacted(const std::string& url) {
  std::string out = url;
  // postgres://user:password@host → postgres://user:***@host
  size_t scheme = out.find("://");
  size_t at = out.find('@', scheme == std::string::npos ? 0 : scheme + 3);
  if (scheme != std::string::npos && at != std::string::npos) {
    size_t colon = out.find(':', scheme + 3);
    if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
  }
  size_t pw = out.find("password=");
  if (pw != std::string::npos) {
    size_t end = out.find_first_of("& ", pw);
    out.replace(pw + 9, (end == std::string::npos ? out.size() : end) - pw - 9, "***");
  }
  return out;
}

PostgresStore::PostgresStore(PostgresOptions options) : options_(std::move(options)) {}

PostgresStore::~PostgresStore() {
  stopping_ = true;
  if (wake_fd_ >= 0) {
    uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
  }
  if (tailer_.joinable()) tailer_.join();
  if (wake_fd_ >= 0) ::close(wake_fd_);
  std::lock_guard<std::mutex> lock(pool_mu_);
  idle_.clear();
}

absl::StatusOr<std::unique_ptr<PostgresStore>> PostgresStore::Open(const PostgresOptions& options) {
  if (options.url.rfind("postgres://", 0) != 0 && options.url.rfind("postgresql://", 0) != 0)
    return absl::InvalidArgumentError("the PostgreSQL store needs a postgres://… URL, not \"" +
                                      Redacted(options.url) + "\"");
  std::unique_ptr<PostgresStore> store(new PostgresStore(options));
  RETURN_IF_ERROR(store->Init());
  return store;
}

absl::StatusOr<std::unique_ptr<PostgresStore::Conn>> PostgresStore::Connect() {
  PGconn* pg = PQconnectdb(options_.url.c_str());
  if (!pg) return absl::UnavailableError("cannot connect to PostgreSQL: out of memory");
  auto conn = std::make_unique<Conn>(pg);
  if (PQstatus(pg) != CONNECTION_OK) {
    std::string msg = PQerrorMessage(pg);
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    return absl::UnavailableError("cannot connect to PostgreSQL at " + Redacted(options_.url) +
                                  ": " + msg);
  }
  // Quiet: NOTICEs (e.g. "relation already exists, skipping") are not for gantryd's log.
  PQsetNoticeProcessor(
      pg, [](void*, const char*) {}, nullptr);
  return conn;
}

absl::StatusOr<PostgresStore::Lease> PostgresStore::Acquire() {
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    while (!idle_.empty()) {
      std::unique_ptr<Conn> c = std::move(idle_.back());
      idle_.pop_back();
      if (c->healthy()) return Lease(this, std::move(c));
    }
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Conn> c, Connect());
  return Lease(this, std::move(c));
}

void PostgresStore::Release(std::unique_ptr<Conn> conn) {
  // A broken connection, or one left inside a transaction, is not reused.
  if (!conn->healthy()) return;
  std::lock_guard<std::mutex> lock(pool_mu_);
  if (idle_.size() < options_.max_idle_connections) idle_.push_back(std::move(conn));
}

absl::Status PostgresStore::Init() {
  ASSIGN_OR_RETURN(Lease c, Acquire());
  auto fail = [&](const Result& r, std::string_view what) {
    c->Exec("ROLLBACK");
    return DbError(r, what);
  };
  Result r = c->Exec("BEGIN");
  if (!r.ok()) return DbError(r, "start-up");
  // Replicas starting together migrate one at a time.
  if (r = c->Exec(kMigrationLock); !r.ok()) return fail(r, "start-up");
  if (r = c->Exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"); !r.ok())
    return fail(r, "start-up");
  if (r = c->Exec("SELECT version FROM schema_version"); !r.ok()) return fail(r, "start-up");
  int version = 0;
  if (r.rows() == 0) {
    if (Result i = c->Exec("INSERT INTO schema_version (version) VALUES (0)"); !i.ok())
      return fail(i, "start-up");
  } else {
    version = static_cast<int>(r.integer(0, 0));
  }
  if (version > kSchemaVersion) {
    c->Exec("ROLLBACK");
    return absl::UnavailableError(Redacted(options_.url) + " has schema version " +
                                  std::to_string(version) +
                                  ", newer than this gantryd understands (" +
                                  std::to_string(kSchemaVersion) + "); run a newer gantryd");
  }
  for (int v = version; v < kSchemaVersion; ++v) {
    if (r = c->Exec(kMigrations[v]); !r.ok()) return fail(r, "schema migration");
    if (r = c->Run("UPDATE schema_version SET version = $1::integer", {std::to_string(v + 1)});
        !r.ok())
      return fail(r, "schema migration");
    spdlog::info("database schema migrated to version {}", v + 1);
  }
  if (r = c->Exec("COMMIT"); !r.ok()) return DbError(r, "schema migration");
  if (r = c->Exec("SELECT rv FROM gantry_state WHERE id = 1"); !r.ok() || r.rows() != 1)
    return DbError(r, "start-up");
  delivered_ = r.integer(0, 0);

  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) return absl::InternalError("eventfd failed");
  tailer_ = std::thread([this] { TailLoop(); });
  return absl::OkStatus();
}

absl::StatusOr<json::object> PostgresStore::Get(const std::string& kind, const std::string& ns,
                                                const std::string& name) {
  ASSIGN_OR_RETURN(std::string body, Body(kind, ns, name));
  return model::ParseStoredObject(body);
}

absl::StatusOr<std::string> PostgresStore::GetText(const std::string& kind, const std::string& ns,
                                                   const std::string& name) {
  ASSIGN_OR_RETURN(std::string body, Body(kind, ns, name));
  return StoredText(body);
}

absl::StatusOr<std::string> PostgresStore::Body(const std::string& kind, const std::string& ns,
                                                const std::string& name) {
  ASSIGN_OR_RETURN(Lease c, Acquire());
  Result r = c->Run(
      "SELECT body FROM objects WHERE kind = $1::text AND namespace = $2::text "
      "AND name = $3::text",
      {kind, ns, name});
  if (!r.ok()) return DbError(r, "get");
  if (r.rows() == 0) return ObjectNotFound(kind, name);
  return r.text(0, 0);
}

absl::StatusOr<ListResult> PostgresStore::List(const ListOptions& options) {
  std::vector<std::string> params = {options.kind};
  std::string inner = "SELECT id, body FROM objects WHERE kind = $1::text";
  if (options.ns) {
    params.push_back(*options.ns);
    inner += " AND namespace = $2::text";
  }
  if (!options.continue_token.empty()) {
    ASSIGN_OR_RETURN(int64_t after_id, ParseContinueToken(options.continue_token));
    params.push_back(std::to_string(after_id));
    inner += std::string(" AND id ") + (options.oldest_first ? ">" : "<") + " $" +
             std::to_string(params.size()) + "::bigint";
  }
  AppendSelector(options.labels, "$1::text", &inner, &params);
  RETURN_IF_ERROR(AppendFields(options.fields, &inner, &params));
  if (!options.search.empty()) {
    params.push_back(LowerAscii(options.search));
    inner += " AND strpos(search, $" + std::to_string(params.size()) + "::text) > 0";
  }
  const char* order = options.oldest_first ? " ORDER BY id ASC" : " ORDER BY id DESC";
  inner += order;
  if (options.limit > 0) inner += " LIMIT " + std::to_string(options.limit + 1);
  // One statement, so one snapshot: the list and its resourceVersion agree.
  std::string sql = "SELECT s.rv, o.id, o.body FROM gantry_state s LEFT JOIN LATERAL (" + inner +
                    ") o ON true WHERE s.id = 1 ORDER BY o.id" +
                    (options.oldest_first ? " ASC" : " DESC");

  ASSIGN_OR_RETURN(Lease c, Acquire());
  Result r = c->Run(sql, params, /*dynamic=*/true);
  if (!r.ok()) return DbError(r, "list");
  ListResult result;
  int64_t last_id = 0;
  for (int i = 0; i < r.rows(); ++i) {
    result.resource_version = r.integer(i, 0);
    if (r.null(i, 1)) continue;  // no objects: the one row carries the resourceVersion
    if (options.limit > 0 && static_cast<int64_t>(result.items.size()) == options.limit) {
      result.continue_token = ContinueToken(last_id);
      break;
    }
    last_id = r.integer(i, 1);
    auto obj = model::ParseStoredObject(r.text(i, 2), options.storage);
    if (obj.ok()) result.items.push_back(std::move(*obj));
  }
  return result;
}

absl::StatusOr<int64_t> PostgresStore::Count(const std::string& kind, std::optional<std::string> ns,
                                             const std::vector<FieldFilter>& fields) {
  std::vector<std::string> params = {kind};
  std::string sql = "SELECT COUNT(*) FROM objects WHERE kind = $1::text";
  if (ns) {
    params.push_back(*ns);
    sql += " AND namespace = $2::text";
  }
  RETURN_IF_ERROR(AppendFields(fields, &sql, &params));
  ASSIGN_OR_RETURN(Lease c, Acquire());
  Result r = c->Run(sql, params);
  if (!r.ok()) return DbError(r, "count");
  return r.integer(0, 0);
}

absl::Status PostgresStore::ApplyWrite(Conn& c, Write& w, int64_t rv, int64_t commit_rv,
                                       bool skipped_lock, std::vector<Event>* events,
                                       json::object* stored) {
  std::string ns = model::GetString(w.object, "metadata.namespace");
  std::string name = model::GetString(w.object, "metadata.name");
  auto failed = [&](const Result& r, std::string_view what) -> absl::Status {
    if (IsDeadlockOrSerialization(r.sqlstate())) return ObjectModified(w.kind, name);
    return DbError(r, what);
  };
  // Why a guarded update/delete changed nothing: the object is gone, or it changed (or
  // another transaction holds it right now).
  auto why_not = [&]() -> absl::Status {
    Result r = c.Run(
        "SELECT rv FROM objects WHERE kind = $1::text AND namespace = $2::text "
        "AND name = $3::text",
        {w.kind, ns, name});
    if (!r.ok()) return failed(r, "read");
    if (r.rows() == 0) return ObjectNotFound(w.kind, name);
    return ObjectModified(w.kind, name);
  };
  std::string rv_text = std::to_string(rv);
  std::string commit_text = std::to_string(commit_rv);
  std::string expected = std::to_string(w.expected_resource_version);

  switch (w.op) {
    case Write::Op::kPutRevision: {
      const json::value* spec = model::FindPath(w.object, "spec");
      Result r = c.Run(
          "INSERT INTO revisions (kind, namespace, name, revision, created, spec) "
          "VALUES ($1::text, $2::text, $3::text, $4::bigint, $5::text, $6::text)",
          {w.kind, ns, name, std::to_string(w.revision),
           model::GetString(w.object, "metadata.creationTimestamp"),
           spec ? json::serialize(*spec) : "{}"});
      if (!r.ok()) {
        if (r.sqlstate() == "23505") return RevisionExists(w.kind, name, w.revision);
        return failed(r, "write");
      }
      return absl::OkStatus();
    }
    case Write::Op::kCreate:
    case Write::Op::kUpdate: {
      if (skipped_lock) return why_not();
      model::EnsureObject(w.object, "metadata")["resourceVersion"] = rv_text;
      std::string body = json::serialize(w.object);
      Columns col = ColumnsOf(w.object);
      std::string type = w.op == Write::Op::kCreate ? "ADDED" : "MODIFIED";
      if (w.op == Write::Op::kCreate) {
        Result r = c.Run(
            "WITH i AS (INSERT INTO objects (kind, namespace, name, rv, labels, phase, ref_name, "
            "search, body) VALUES ($1::text, $2::text, $3::text, $4::bigint, $5::jsonb, $6::text, "
            "$7::text, $8::text, $9::text) RETURNING id), "
            "l AS (INSERT INTO object_labels (object_id, kind, key, value) SELECT i.id, $1::text, "
            "e.key, e.value FROM i, jsonb_each_text($5::jsonb) e) "
            "INSERT INTO events (rv, commit_rv, type, kind, namespace, name, body) "
            "SELECT $4::bigint, $10::bigint, 'ADDED', $1::text, $2::text, $3::text, $9::text FROM "
            "i",
            {w.kind, ns, name, rv_text, col.labels, col.phase, col.ref_name, col.search, body,
             commit_text});
        if (!r.ok()) {
          if (r.sqlstate() == "23505") return ObjectExists(w.kind, name);
          return failed(r, "write");
        }
      } else {
        Result r = c.Run(
            "WITH u AS (UPDATE objects SET rv = $4::bigint, labels = $5::jsonb, phase = $6::text, "
            "ref_name = $7::text, search = $8::text, body = $9::text WHERE kind = $1::text AND "
            "namespace = $2::text AND name = $3::text AND ($11::bigint = 0 OR rv = $11::bigint) "
            "RETURNING id), "
            // The label index: drop the keys the object no longer has, add or change the
            // others (nothing is written for labels that stay as they were).
            "ld AS (DELETE FROM object_labels x USING u WHERE x.object_id = u.id AND "
            "NOT ($5::jsonb ? x.key)), "
            "la AS (INSERT INTO object_labels (object_id, kind, key, value) SELECT u.id, $1::text, "
            "e.key, e.value FROM u, jsonb_each_text($5::jsonb) e WHERE NOT EXISTS (SELECT 1 FROM "
            "object_labels x WHERE x.object_id = u.id AND x.key = e.key AND x.value = e.value) "
            "ON CONFLICT (object_id, key) DO UPDATE SET value = excluded.value) "
            "INSERT INTO events (rv, commit_rv, type, kind, namespace, name, body) "
            "SELECT $4::bigint, $10::bigint, 'MODIFIED', $1::text, $2::text, $3::text, $9::text "
            "FROM u",
            {w.kind, ns, name, rv_text, col.labels, col.phase, col.ref_name, col.search, body,
             commit_text, expected});
        if (!r.ok()) return failed(r, "write");
        if (r.affected() == 0) return why_not();
      }
      events->push_back(Event{rv, type, w.kind, ns, name, w.object});
      *stored = w.object;
      return absl::OkStatus();
    }
    case Write::Op::kDelete: {
      if (skipped_lock) return why_not();
      Result d = c.Run(
          "WITH d AS (DELETE FROM objects WHERE kind = $1::text AND namespace = $2::text AND "
          "name = $3::text AND ($4::bigint = 0 OR rv = $4::bigint) RETURNING id, body), "
          "l AS (DELETE FROM object_labels WHERE object_id IN (SELECT id FROM d)), "
          "r AS (DELETE FROM revisions WHERE kind = $1::text AND namespace = $2::text AND "
          "name = $3::text AND EXISTS (SELECT 1 FROM d)) "
          "SELECT body FROM d",
          {w.kind, ns, name, expected});
      if (!d.ok()) return failed(d, "write");
      if (d.rows() == 0) return why_not();
      json::object obj = ParsedOrEmpty(d.text(0, 0));
      model::EnsureObject(obj, "metadata")["resourceVersion"] = rv_text;
      std::string body = json::serialize(obj);
      Result e = c.Run(
          "INSERT INTO events (rv, commit_rv, type, kind, namespace, name, body) "
          "VALUES ($1::bigint, $2::bigint, 'DELETED', $3::text, $4::text, $5::text, $6::text)",
          {rv_text, commit_text, w.kind, ns, name, body});
      if (!e.ok()) return failed(e, "write");
      events->push_back(Event{rv, "DELETED", w.kind, ns, name, obj});
      *stored = std::move(obj);
      return absl::OkStatus();
    }
  }
  return absl::InternalError("unknown write");
}

absl::StatusOr<std::vector<json::object>> PostgresStore::Commit(std::vector<Write> writes,
                                                                Durability durability) {
  for (const Write& w : writes) RETURN_IF_ERROR(CheckStorable(w.kind, w.object));
  ASSIGN_OR_RETURN(Lease lease, Acquire());
  Conn& c = *lease;
  // Which rows updates and deletes change (not those created earlier in this commit).
  std::set<std::tuple<std::string, std::string, std::string>> created;
  std::vector<size_t> to_lock;
  int64_t versioned = 0;
  for (size_t i = 0; i < writes.size(); ++i) {
    const Write& w = writes[i];
    if (w.op == Write::Op::kPutRevision) continue;
    ++versioned;
    auto key = std::make_tuple(w.kind, model::GetString(w.object, "metadata.namespace"),
                               model::GetString(w.object, "metadata.name"));
    if (w.op == Write::Op::kCreate)
      created.insert(key);
    else if (!created.count(key))
      to_lock.push_back(i);
  }
  // Always committed asynchronously, so that the counter row is held only while the
  // transaction runs, never while the WAL is flushed; durable commits then wait for the flush
  // (Flush), where concurrent commits share one fsync. Statements without parameters share
  // round trips: the counter row is held for as few of them as possible.
  const char* kBegin = "BEGIN; SET LOCAL synchronous_commit TO OFF";
  const std::string take_rv = "UPDATE gantry_state SET rv = rv + " + std::to_string(versioned) +
                              " WHERE id = 1 RETURNING rv";
  Result r = c.Exec(to_lock.empty() ? (std::string(kBegin) + "; " + take_rv).c_str() : kBegin);
  if (!r.ok()) {
    c.Exec("ROLLBACK");
    return DbError(r, "begin");
  }
  auto rollback = [&](absl::Status s) {
    c.Exec("ROLLBACK");
    return s;
  };

  // 1. Lock the rows that updates and deletes change, before the resourceVersion counter
  //    (see the header). A guarded write skips a row another transaction holds; step 3
  //    reports it as a conflict in its turn, so errors come in the order of the writes.
  std::vector<bool> skipped(writes.size(), false);
  for (size_t i : to_lock) {
    const Write& w = writes[i];
    bool guarded = w.expected_resource_version != 0;
    std::string name = model::GetString(w.object, "metadata.name");
    Result l = c.Run(std::string("SELECT rv FROM objects WHERE kind = $1::text AND namespace = "
                                 "$2::text AND name = $3::text FOR UPDATE") +
                         (guarded ? " SKIP LOCKED" : ""),
                     {w.kind, model::GetString(w.object, "metadata.namespace"), name});
    if (!l.ok()) {
      if (IsDeadlockOrSerialization(l.sqlstate())) return rollback(ObjectModified(w.kind, name));
      return rollback(DbError(l, "write"));
    }
    if (guarded && l.rows() == 0) skipped[i] = true;
  }

  // 2. The next resourceVersions; this row lock serialises the commits of every replica.
  if (!to_lock.empty()) r = c.Exec(take_rv.c_str());
  if (!r.ok() || r.rows() != 1) return rollback(DbError(r, "write"));
  const int64_t last = r.integer(0, 0);
  const int64_t first = last - versioned + 1;

  // 3. The writes, in order.
  std::vector<Event> events;
  std::vector<json::object> stored(writes.size());
  int64_t rv = first - 1;
  for (size_t i = 0; i < writes.size(); ++i) {
    if (writes[i].op != Write::Op::kPutRevision) ++rv;
    absl::Status s = ApplyWrite(c, writes[i], rv, last, skipped[i], &events, &stored[i]);
    if (!s.ok()) return rollback(s);
  }
  std::string commit = events.empty() ? "COMMIT"
                                      : "SELECT pg_notify('" + std::string(kChannel) + "', '" +
                                            std::to_string(last) + "'); COMMIT";
  r = c.Exec(commit.c_str());
  if (!r.ok()) {
    c.Exec("ROLLBACK");
    // The answer is lost or the commit failed: either way the caller re-reads.
    return absl::UnavailableError(
        "database error during commit (the change may or may not "
        "have been applied): " +
        r.error());
  }
  if (durability == Durability::kDurable) {
    if (absl::Status f = Flush(c); !f.ok())
      return absl::UnavailableError(
          "database error while making a commit durable (it may be "
          "lost if the database server crashes): " +
          std::string(f.message()));
  }
  if (++commits_since_compaction_ % kCompactEvery == 0) MaybeCompact(c);
  DeliverThrough(c, last, events, first);
  return stored;
}

absl::Status PostgresStore::Flush(Conn& c) {
  // A synchronous commit that wrote WAL flushes the WAL up to its commit record, and so
  // every commit before it. It needs a transaction id and a WAL record: a write to this
  // connection's own row (no two connections contend for it).
  Result r = c.Run(
      "INSERT INTO flushes (pid, n) VALUES (pg_backend_pid(), 1) "
      "ON CONFLICT (pid) DO UPDATE SET n = flushes.n + 1");
  if (!r.ok()) return DbError(r, "flush");
  return absl::OkStatus();
}

void PostgresStore::MaybeCompact(Conn& c) {
  // Keeps the newest event_retention events. Several replicas may compact; the watermark
  // only moves forward.
  int64_t through = CurrentResourceVersion() - options_.event_retention;
  Result last = c.Run("SELECT rv FROM gantry_state WHERE id = 1");
  if (last.ok() && last.rows() == 1) through = last.integer(0, 0) - options_.event_retention;
  if (through <= 0) return;
  Result r = c.Run(
      "WITH d AS (DELETE FROM events WHERE rv <= $1::bigint) "
      "INSERT INTO meta (key, value) VALUES ('compacted_through', $1::bigint) "
      "ON CONFLICT (key) DO UPDATE SET value = GREATEST(meta.value, excluded.value)",
      {std::to_string(through)});
  if (!r.ok()) spdlog::warn("event compaction failed (retried later): {}", r.error());
}

void PostgresStore::DeliverThrough(Conn& c, int64_t through, const std::vector<Event>& own,
                                   int64_t own_first) {
  std::lock_guard<std::mutex> lock(deliver_mu_);
  if (delivered_ >= through) return;  // the tail thread was quicker
  if (!own.empty() && delivered_ + 1 == own_first) {
    // Nothing of another replica in between: this commit's events, without a read.
    if (observer_) observer_(own);
    delivered_ = through;
    return;
  }
  if (!DeliverFromDatabase(c, through))
    spdlog::warn("cannot read events to deliver; the tail thread retries");
}

bool PostgresStore::DeliverFromDatabase(Conn& c, int64_t through) {
  while (delivered_ < through) {
    int64_t after = delivered_;
    // Whole commits only: those ending within the window (or the first one, however large).
    Result r = c.Run(
        "SELECT rv, commit_rv, type, kind, namespace, name, body FROM events "
        "WHERE rv > $1::bigint AND commit_rv <= GREATEST($1::bigint + $2::bigint, "
        "(SELECT commit_rv FROM events WHERE rv > $1::bigint ORDER BY rv LIMIT 1)) ORDER BY rv",
        {std::to_string(after), std::to_string(kDeliverWindow)});
    if (!r.ok()) return false;
    if (r.rows() == 0) return true;
    // Other replicas' commits are visible before they are durable (asynchronous commit):
    // only durable ones reach watchers.
    if (!Flush(c).ok()) return false;
    if (r.integer(0, 0) != after + 1)
      spdlog::warn(
          "events {}..{} were compacted before this replica delivered them; its "
          "watchers miss them",
          after + 1, r.integer(0, 0) - 1);
    std::vector<Event> batch;
    for (int i = 0; i < r.rows(); ++i) {
      int64_t rv = r.integer(i, 0);
      int64_t commit_rv = r.integer(i, 1);
      batch.push_back(Event{rv, r.text(i, 2), r.text(i, 3), r.text(i, 4), r.text(i, 5),
                            ParsedOrEmpty(r.text(i, 6))});
      if (rv == commit_rv) {
        if (observer_) observer_(batch);
        batch.clear();
        delivered_ = commit_rv;
      }
    }
    if (delivered_ == after) return true;  // no whole commit (cannot happen): try later
  }
  return true;
}

void PostgresStore::TailLoop() {
  std::unique_ptr<Conn> conn;
  while (!stopping_) {
    if (!conn || PQstatus(conn->pg()) != CONNECTION_OK) {
      conn.reset();
      auto c = Connect();
      if (c.ok()) {
        Result l = (*c)->Exec("LISTEN gantry_events");
        if (l.ok()) conn = std::move(*c);
      }
      if (!conn) {
        pollfd p{wake_fd_, POLLIN, 0};
        ::poll(&p, 1, 1000);  // the database is away: try again in a second
        continue;
      }
    }
    {
      // Catch up (on start, after a wake-up, and once a second as a safety net).
      std::lock_guard<std::mutex> lock(deliver_mu_);
      DeliverFromDatabase(*conn, std::numeric_limits<int64_t>::max());
    }
    while (!stopping_) {
      pollfd fds[2] = {{PQsocket(conn->pg()), POLLIN, 0}, {wake_fd_, POLLIN, 0}};
      int n = ::poll(fds, 2, 1000);
      if (n == 0) break;  // periodic catch-up
      if (n < 0) continue;
      if (fds[1].revents) break;
      if (!PQconsumeInput(conn->pg())) break;  // reconnect
      int64_t newest = 0;
      while (PGnotify* note = PQnotifies(conn->pg())) {
        newest = std::max<int64_t>(newest, std::atoll(note->extra));
        PQfreemem(note);
      }
      // Notifications of this replica's own commits were delivered by Commit already.
      if (newest > delivered_) break;
    }
  }
}

absl::StatusOr<std::vector<Event>> PostgresStore::EventsSince(int64_t after, size_t max) {
  ASSIGN_OR_RETURN(Lease c, Acquire());
  // One statement, one snapshot: the watermark and the events agree.
  Result r = c->Run(
      "SELECT w.c, e.rv, e.type, e.kind, e.namespace, e.name, e.body FROM "
      "(SELECT COALESCE((SELECT value FROM meta WHERE key = 'compacted_through'), 0) AS c) w "
      "LEFT JOIN LATERAL (SELECT * FROM events WHERE rv > $1::bigint ORDER BY rv "
      "LIMIT $2::bigint) e ON true ORDER BY e.rv",
      {std::to_string(after), std::to_string(max)});
  if (!r.ok()) return DbError(r, "reading events");
  int64_t compacted = r.rows() > 0 ? r.integer(0, 0) : 0;
  if (after < compacted) return TooOldResourceVersion(after, compacted);
  std::vector<Event> out;
  for (int i = 0; i < r.rows(); ++i) {
    if (r.null(i, 1)) continue;
    out.push_back(Event{r.integer(i, 1), r.text(i, 2), r.text(i, 3), r.text(i, 4), r.text(i, 5),
                        ParsedOrEmpty(r.text(i, 6))});
  }
  return out;
}

int64_t PostgresStore::CurrentResourceVersion() { return delivered_; }

absl::StatusOr<std::vector<Revision>> PostgresStore::ListRevisions(const std::string& kind,
                                                                   const std::string& ns,
                                                                   const std::string& name) {
  ASSIGN_OR_RETURN(Lease c, Acquire());
  Result r = c->Run(
      "SELECT revision, created, spec FROM revisions WHERE kind = $1::text AND "
      "namespace = $2::text AND name = $3::text ORDER BY revision DESC",
      {kind, ns, name});
  if (!r.ok()) return DbError(r, "listing revisions");
  std::vector<Revision> out;
  for (int i = 0; i < r.rows(); ++i)
    out.push_back(Revision{r.integer(i, 0), r.text(i, 1), ParsedOrEmpty(r.text(i, 2))});
  return out;
}

absl::StatusOr<Revision> PostgresStore::GetRevision(const std::string& kind, const std::string& ns,
                                                    const std::string& name, int64_t revision) {
  ASSIGN_OR_RETURN(Lease c, Acquire());
  Result r = c->Run(
      "SELECT revision, created, spec FROM revisions WHERE kind = $1::text AND "
      "namespace = $2::text AND name = $3::text AND revision = $4::bigint",
      {kind, ns, name, std::to_string(revision)});
  if (!r.ok()) return DbError(r, "reading a revision");
  if (r.rows() == 0) return RevisionNotFound(kind, name, revision);
  return Revision{r.integer(0, 0), r.text(0, 1), ParsedOrEmpty(r.text(0, 2))};
}

void PostgresStore::SetCommitObserver(std::function<void(const std::vector<Event>&)> observer) {
  std::lock_guard<std::mutex> lock(deliver_mu_);
  observer_ = std::move(observer);
}

absl::Status PostgresStore::Ping() {
  ASSIGN_OR_RETURN(Lease c, Acquire());
  Result r = c->Exec("SELECT 1");
  if (!r.ok()) return DbError(r, "ping");
  return absl::OkStatus();
}

}  // namespace gantry::store
