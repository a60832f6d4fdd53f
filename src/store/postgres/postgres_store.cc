#include "store/postgres/postgres_store.h"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <limits>
#include <random>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "model/codec.h"
#include "store/postgres/pg_conn.h"
#include "store/postgres/pg_query.h"
#include "store/store_common.h"

namespace gantry::store {
namespace {

namespace json = boost::json;
using pg::DbError;
using pg::Result;

constexpr int kPostgresSchemaVersion = 3;
constexpr int64_t kDeliverWindow = 1000;
// pg_advisory_xact_lock key of schema migrations ("gantry" in ASCII).
constexpr char kMigrationLock[] = "SELECT pg_advisory_xact_lock(113702011118969)";

// Migrations, applied in order; migration i brings schema_version to i + 1. Never edit one
// that has shipped: add the next.
const char* const kPostgresMigrations[] = {
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
static_assert(sizeof(kPostgresMigrations) / sizeof(kPostgresMigrations[0]) ==
              kPostgresSchemaVersion);

json::object ParsedOrEmpty(const std::string& text) {
  auto obj = model::ParseStoredObject(text);
  return obj.ok() ? std::move(*obj) : json::object();
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

namespace {
std::string RandomTag() {
  std::random_device random;
  uint64_t tag = (uint64_t{random()} << 32) | random();
  return absl::StrCat(absl::Hex(tag, absl::kZeroPad16));
}
}  // namespace

PostgresStore::PostgresStore(PostgresOptions options)
    : options_(std::move(options)),
      replica_tag_(RandomTag()),
      queue_(kMaxBatch, options_.metrics) {}

PostgresStore::~PostgresStore() {
  stopping_ = true;
  WakeTail();
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
  if (version > kPostgresSchemaVersion) {
    c->Exec("ROLLBACK");
    return absl::UnavailableError(
        Redacted(options_.url) + " has schema version " + std::to_string(version) +
        ", newer than this gantryd understands (" + std::to_string(kPostgresSchemaVersion) +
        "); run a newer gantryd");
  }
  for (int v = version; v < kPostgresSchemaVersion; ++v) {
    if (r = c->Exec(kPostgresMigrations[v]); !r.ok()) return fail(r, "schema migration");
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

absl::StatusOr<std::vector<json::object>> PostgresStore::GetMany(
    const std::vector<ObjectKey>& keys) {
  std::vector<json::object> out;
  if (keys.empty()) return out;
  // The keys travel as one jsonb parameter: no value is spliced into the SQL.
  json::array param;
  param.reserve(keys.size());
  for (const auto& k : keys)
    param.push_back(json::object{{"k", k.kind}, {"s", k.ns}, {"n", k.name}});
  ASSIGN_OR_RETURN(Lease c, Acquire());
  Result r = c->Run(
      "SELECT o.body FROM jsonb_to_recordset($1::jsonb) AS key(k text, s text, n text) "
      "JOIN objects o ON o.kind = key.k AND o.namespace = key.s AND o.name = key.n",
      {json::serialize(param)});
  if (!r.ok()) return DbError(r, "get");
  out.reserve(r.rows());
  for (int i = 0; i < r.rows(); ++i) {
    ASSIGN_OR_RETURN(json::object obj, model::ParseStoredObject(r.text(i, 0)));
    out.push_back(std::move(obj));
  }
  return out;
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

// The objects table can grow from nothing to thousands of rows in seconds (an import, a
// burst of deploys), faster than autovacuum analyzes it (a minute apart at best). Until it
// has statistics, PostgreSQL reads a lookup by name through the (kind, namespace, id) index
// and filters on the name: every Get and update then reads every object of the project
// (measured: 18 ms for one update with 1,443 instances in the project, 0.1 ms after
// ANALYZE; docs/performance.md). So each replica analyzes the table and its label index
// itself once its own writes since the last analysis reach kAnalyzeAfterWrites and a tenth
// of the rows then, on the tail thread's connection (the watch delivery of other replicas'
// commits waits for it: tens of milliseconds). A role that may not analyze (not the tables'
// owner) is told once and left to autovacuum.
bool PostgresStore::MaybeAnalyze(Conn& c) {
  const int64_t written = writes_since_analyze_.load();
  if (analyze_refused_ || written < std::max(pg::kAnalyzeAfterWrites, analyzed_rows_ / 10))
    return false;
  writes_since_analyze_ -= written;
  Result r = c.Exec("ANALYZE objects, object_labels");
  if (!r.ok()) {
    analyze_refused_ = true;
    spdlog::warn("cannot ANALYZE the objects table (left to autovacuum): {}", r.error());
    return true;
  }
  Result rows = c.Exec("SELECT reltuples::bigint FROM pg_class WHERE oid = 'objects'::regclass");
  if (rows.ok() && rows.rows() == 1) analyzed_rows_ = rows.integer(0, 0);
  return true;
}

void PostgresStore::DeliverThrough(Conn& c, int64_t through,
                                   const std::vector<const std::vector<Event>*>& own,
                                   int64_t own_first) {
  std::lock_guard<std::mutex> lock(deliver_mu_);
  if (delivered_ >= through) return;  // the tail thread was quicker
  if (delivered_ + 1 == own_first) {
    // Nothing of another replica in between: this batch's events, call by call, without a
    // read.
    if (observer_)
      for (const std::vector<Event>* events : own)
        if (!events->empty()) observer_(*events);
    delivered_ = through;
    ++deliveries_.direct;
    return;
  }
  if (!DeliverFromDatabase(c, through)) {
    spdlog::warn("cannot read events to deliver; the tail thread retries");
    WakeTail();
  }
}

void PostgresStore::WakeTail() {
  if (wake_fd_ < 0) return;
  uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
}

void PostgresStore::DrainWake() {
  uint64_t count;
  (void)!::read(wake_fd_, &count, sizeof count);
}

PostgresStore::DeliveryStats PostgresStore::Deliveries() {
  std::lock_guard<std::mutex> lock(deliver_mu_);
  return deliveries_;
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
    if (r.rows() == 0) {
      ++deliveries_.empty_reads;
      return true;
    }
    ++deliveries_.reads;
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
  int64_t through = std::numeric_limits<int64_t>::max();  // catch up on start
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
        // The database is away: try again in a second. A committer's wake-up is read, or
        // the eventfd would stay readable and this wait would spin.
        if (::poll(&p, 1, 1000) > 0) DrainWake();
        continue;
      }
      through = std::numeric_limits<int64_t>::max();  // what came while it was away
    }
    {
      std::lock_guard<std::mutex> lock(deliver_mu_);
      DeliverFromDatabase(*conn, through);
    }
    through = WaitForForeignCommit(*conn);
    if (through == 0) conn.reset();
  }
}

int64_t PostgresStore::WaitForForeignCommit(Conn& c) {
  constexpr int64_t kEverything = std::numeric_limits<int64_t>::max();
  // The periodic catch-up is a safety net: for a commit whose NOTIFY was missed (a
  // reconnect) or whose committer could not deliver it and failed to wake this thread.
  const auto catch_up = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (!stopping_) {
    // Notifications that came during an ANALYZE wait in libpq, not on the socket: catch up.
    if (MaybeAnalyze(c)) return kEverything;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        catch_up - std::chrono::steady_clock::now());
    if (left.count() <= 0) return kEverything;
    pollfd fds[2] = {{PQsocket(c.pg()), POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    int n = ::poll(fds, 2, static_cast<int>(left.count()));
    if (n <= 0) continue;
    if (fds[1].revents) {
      DrainWake();
      return kEverything;
    }
    if (!PQconsumeInput(c.pg())) return 0;  // reconnect
    int64_t newest = 0;
    while (PGnotify* note = PQnotifies(c.pg())) {
      // "<rv> <replica tag>"; a gantryd before the tag sent "<rv>" alone.
      std::string_view payload(note->extra);
      size_t space = payload.find(' ');
      bool own = space != std::string_view::npos && payload.substr(space + 1) == replica_tag_;
      if (!own) newest = std::max<int64_t>(newest, std::atoll(note->extra));
      PQfreemem(note);
    }
    if (newest > delivered_) return newest;
  }
  return kEverything;
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
