// One libpq connection of the PostgresStore with its prepared statements, and the results of
// its queries. Internal to src/store/postgres/ (postgres_store.cc: reads, migrations, the
// event tail; postgres_commit.cc: the group commit). Not thread-safe: a connection is used
// by one thread at a time (PostgresStore leases it from its pool).
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "store/postgres/postgres_store.h"

namespace gantry::store::pg {

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
  // A query of a pipeline that the server skipped because an earlier one failed.
  bool aborted() const { return r_ && PQresultStatus(r_) == PGRES_PIPELINE_ABORTED; }
  bool pipeline_sync() const { return r_ && PQresultStatus(r_) == PGRES_PIPELINE_SYNC; }
  bool empty() const { return r_ == nullptr; }
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
  bool boolean(int row, int col) const { return PQgetvalue(r_, row, col)[0] == 't'; }
  int64_t affected() const { return std::atoll(PQcmdTuples(r_)); }

 private:
  PGresult* r_;
};

// The channel every commit NOTIFYs with its last resourceVersion (the event tail LISTENs).
inline constexpr char kEventsChannel[] = "gantry_events";
// Events are compacted after every this many commits.
inline constexpr int64_t kCompactEvery = 100;
// The tail thread analyzes the objects table once this replica wrote this many objects, and
// a tenth of the rows it counted at the last analysis, since then (PostgresStore::MaybeAnalyze).
inline constexpr int64_t kAnalyzeAfterWrites = 500;

// UNAVAILABLE for a failed query: what was being done and the server's words.
inline absl::Status DbError(const Result& r, std::string_view what) {
  return absl::UnavailableError("database error during " + std::string(what) + ": " + r.error());
}

inline bool IsDeadlockOrSerialization(const std::string& sqlstate) {
  return sqlstate == "40P01" || sqlstate == "40001";
}

// One statement of a pipeline: `sql` with text parameters. Prepared once per connection
// unless `prepare` is false (statements PostgreSQL cannot prepare: SAVEPOINT, COMMIT, ...).
struct Query {
  std::string_view sql;
  std::vector<std::string> params;
  bool prepare = true;
};

}  // namespace gantry::store::pg

namespace gantry::store {

class PostgresStore::Conn {
 public:
  explicit Conn(PGconn* pg) : pg_(pg) {}
  ~Conn() { PQfinish(pg_); }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  PGconn* pg() const { return pg_; }
  // Reusable: connected, outside any transaction, and no pipeline failed half-way on it.
  bool healthy() const {
    return !broken_ && PQstatus(pg_) == CONNECTION_OK && PQtransactionStatus(pg_) == PQTRANS_IDLE;
  }

  // `sql` with text parameters; prepared once per connection unless `dynamic` (SQL built per
  // request, e.g. lists with selectors).
  pg::Result Run(const std::string& sql, const std::vector<std::string>& params = {},
                 bool dynamic = false);
  // One or more statements without parameters.
  pg::Result Exec(const char* sql) { return pg::Result(PQexec(pg_, sql)); }

  // Sends every query in one pipeline (one round trip, libpq's pipeline mode) and returns
  // their results in order: a query after a failed one comes back aborted(). Empty, with
  // *error set, when the connection failed (it is then not reused).
  std::vector<pg::Result> Pipeline(const std::vector<pg::Query>& queries, std::string* error);

 private:
  // The name of `sql` prepared on this connection (preparing it on first use); null with
  // *failed set when the server refused it.
  const std::string* Prepared(std::string_view sql, int params, pg::Result* failed);
  // Writes what libpq has buffered, reading the server's answers meanwhile so that neither
  // side blocks on a full socket; false when the connection failed.
  bool FlushPipeline();

  PGconn* pg_;
  bool broken_ = false;
  std::unordered_map<std::string, std::string> prepared_;
};

// A connection leased from the store's pool, given back (if healthy) on scope exit.
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

}  // namespace gantry::store
