// sqlite_ref: the raw-SQLite reference programs of the Gantry benchmarks (bench/run_all.sh).
//
//   sqlite_ref insert --db FILE --sync FULL|NORMAL --body FILE [--seconds S] [--count N]
//                     [--objects-only] [--start I]
//       Creates the `objects` and `events` tables exactly as src/store/sqlite/sqlite_store.cc
//       does (WAL, the given synchronous setting) and inserts one ComputeInstance per
//       transaction: BEGIN IMMEDIATE; INSERT objects; INSERT events; COMMIT — the rows
//       gantryd writes for one create. With --objects-only, only the objects row. The body is
//       a real instance as gantryd stores it, with @NAME@ replaced by a unique name.
//       Statements are prepared once: this is what a thin, single-writer program gets.
//   sqlite_ref query --db FILE --key K --value V [--count N] [--page-only]
//       Runs the SQL of gantryd's labelSelector list (K=V, namespace default, newest first,
//       LIMIT 101, with the resourceVersion query in the same read transaction) N times and
//       reads every body: the store's share of one list request. With --page-only, without
//       the resourceVersion query.
//
// Prints one line of key=value figures.
#include <sqlite3.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// Copied from kMigrations[0] in src/store/sqlite/sqlite_store.cc (the tables a create touches).
constexpr char kSchema[] = R"sql(
CREATE TABLE IF NOT EXISTS objects (
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
CREATE INDEX IF NOT EXISTS objects_by_kind_ns ON objects (kind, namespace, id);
CREATE INDEX IF NOT EXISTS objects_by_kind ON objects (kind, id);
CREATE INDEX IF NOT EXISTS objects_by_kind_phase ON objects (kind, phase, id);
CREATE TABLE IF NOT EXISTS events (
  rv        INTEGER PRIMARY KEY,
  type      TEXT NOT NULL,
  kind      TEXT NOT NULL,
  namespace TEXT NOT NULL,
  name      TEXT NOT NULL,
  body      TEXT NOT NULL
);
)sql";

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

std::map<std::string, std::string> Parse(int argc, char** argv) {
  std::map<std::string, std::string> kv;
  for (int i = 2; i < argc; ++i) {
    std::string k = argv[i];
    if (k.rfind("--", 0) != 0) continue;
    k = k.substr(2);
    if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0)
      kv[k] = argv[++i];
    else
      kv[k] = "1";
  }
  return kv;
}

void Check(sqlite3* db, int rc, const char* what) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
    std::fprintf(stderr, "sqlite_ref: %s: %s\n", what, sqlite3_errmsg(db));
    std::exit(1);
  }
}

void Exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::fprintf(stderr, "sqlite_ref: %s: %s\n", sql.c_str(), err ? err : "?");
    std::exit(1);
  }
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = 0; (p = s.find(from, p)) != std::string::npos; p += to.size())
    s.replace(p, from.size(), to);
  return s;
}

// CPU time (user + system) this process used so far, in microseconds.
double CpuUs() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

double Pct(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * static_cast<double>(v.size())))];
}

int Insert(std::map<std::string, std::string>& a) {
  sqlite3* db = nullptr;
  Check(db, sqlite3_open(a["db"].c_str(), &db), "open");
  Exec(db, "PRAGMA journal_mode=WAL");
  Exec(db, "PRAGMA synchronous=" + a["sync"]);
  Exec(db, kSchema);
  std::ifstream in(a["body"]);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string body_template = ss.str();
  const bool objects_only = a.count("objects-only") > 0;
  const double seconds = a.count("seconds") ? std::stod(a["seconds"]) : 0;
  const long count = a.count("count") ? std::stol(a["count"]) : 0;
  const long start = a.count("start") ? std::stol(a["start"]) : 0;  // first name: ref-START
  sqlite3_stmt *obj = nullptr, *ev = nullptr, *begin = nullptr, *commit = nullptr;
  Check(db,
        sqlite3_prepare_v2(db,
                           "INSERT INTO objects(kind, namespace, name, rv, labels, phase, "
                           "ref_name, search, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                           -1, &obj, nullptr),
        "prepare");
  Check(db,
        sqlite3_prepare_v2(db,
                           "INSERT INTO events(rv, type, kind, namespace, name, body) "
                           "VALUES (?1, 'ADDED', ?2, ?3, ?4, ?5)",
                           -1, &ev, nullptr),
        "prepare");
  Check(db, sqlite3_prepare_v2(db, "BEGIN IMMEDIATE", -1, &begin, nullptr), "prepare");
  Check(db, sqlite3_prepare_v2(db, "COMMIT", -1, &commit, nullptr), "prepare");
  const std::string labels = R"({"bench-set":"ref","env":"prod","shard":"s1","team":"t1"})";
  auto t0 = Clock::now();
  const double cpu0 = CpuUs();
  long n = 0;
  std::vector<double> lat;
  for (;; ++n) {
    if (count > 0 && n >= count) break;
    if (seconds > 0 && Ms(Clock::now() - t0) >= seconds * 1000) break;
    auto s = Clock::now();
    const long id = start + n;
    std::string name = "ref-" + std::to_string(id);
    std::string body = Replace(body_template, "@NAME@", name);
    std::string search = name + "\nbench instance " + std::to_string(id) +
                         "\ncreated by bench/loadgen for the benchmarks.";
    Check(db, sqlite3_step(begin), "begin");
    sqlite3_reset(begin);
    sqlite3_bind_text(obj, 1, "ComputeInstance", -1, SQLITE_STATIC);
    sqlite3_bind_text(obj, 2, "default", -1, SQLITE_STATIC);
    sqlite3_bind_text(obj, 3, name.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(obj, 4, id + 1);
    sqlite3_bind_text(obj, 5, labels.c_str(), -1, SQLITE_STATIC);
    sqlite3_bind_text(obj, 6, "NotDeployed", -1, SQLITE_STATIC);
    sqlite3_bind_text(obj, 7, "bench", -1, SQLITE_STATIC);
    sqlite3_bind_text(obj, 8, search.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(obj, 9, body.c_str(), static_cast<int>(body.size()), SQLITE_TRANSIENT);
    Check(db, sqlite3_step(obj), "insert object");
    sqlite3_reset(obj);
    if (!objects_only) {
      sqlite3_bind_int64(ev, 1, id + 1);
      sqlite3_bind_text(ev, 2, "ComputeInstance", -1, SQLITE_STATIC);
      sqlite3_bind_text(ev, 3, "default", -1, SQLITE_STATIC);
      sqlite3_bind_text(ev, 4, name.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_text(ev, 5, body.c_str(), static_cast<int>(body.size()), SQLITE_TRANSIENT);
      Check(db, sqlite3_step(ev), "insert event");
      sqlite3_reset(ev);
    }
    Check(db, sqlite3_step(commit), "commit");
    sqlite3_reset(commit);
    lat.push_back(Ms(Clock::now() - s));
  }
  double secs = Ms(Clock::now() - t0) / 1000;
  std::printf("inserts=%ld seconds=%.3f rate=%.1f p50_ms=%.3f p99_ms=%.3f cpu_us=%.0f\n", n, secs,
              static_cast<double>(n) / secs, Pct(lat, 50), Pct(lat, 99), CpuUs() - cpu0);
  sqlite3_finalize(obj);
  sqlite3_finalize(ev);
  sqlite3_finalize(begin);
  sqlite3_finalize(commit);
  sqlite3_close(db);
  return 0;
}

int Query(std::map<std::string, std::string>& a) {
  sqlite3* db = nullptr;
  Check(db, sqlite3_open_v2(a["db"].c_str(), &db, SQLITE_OPEN_READONLY, nullptr), "open");
  const long count = a.count("count") ? std::stol(a["count"]) : 200;
  const std::string path = "$.\"" + a["key"] + "\"";
  const bool page_only = a.count("page-only") > 0;
  std::vector<double> lat;
  size_t rows = 0;
  for (long i = 0; i <= count; ++i) {
    auto s = Clock::now();
    Exec(db, "BEGIN");
    sqlite3_stmt *rv = nullptr, *q = nullptr;
    // Prepared on every request, as gantryd does.
    if (!page_only) {
      Check(db,
            sqlite3_prepare_v2(db,
                               "SELECT MAX((SELECT IFNULL(MAX(rv),0) FROM objects),"
                               " (SELECT IFNULL(MAX(rv),0) FROM events))",
                               -1, &rv, nullptr),
            "prepare");
      Check(db, sqlite3_step(rv), "rv");
    }
    Check(db,
          sqlite3_prepare_v2(db,
                             "SELECT id, body FROM objects WHERE kind = ?1 AND namespace = ?2 "
                             "AND json_extract(labels, ?3) = ?4 ORDER BY id DESC LIMIT 101",
                             -1, &q, nullptr),
          "prepare");
    sqlite3_bind_text(q, 1, "ComputeInstance", -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, "default", -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 3, path.c_str(), -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 4, a["value"].c_str(), -1, SQLITE_STATIC);
    size_t n = 0, bytes = 0;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
      ++n;
      bytes += static_cast<size_t>(sqlite3_column_bytes(q, 1));
      (void)sqlite3_column_text(q, 1);
    }
    Check(db, rc, "query");
    sqlite3_finalize(rv);
    sqlite3_finalize(q);
    Exec(db, "COMMIT");
    if (i > 0) lat.push_back(Ms(Clock::now() - s));  // the first run warms the page cache
    rows = n;
    (void)bytes;
  }
  std::printf("queries=%zu rows=%zu p50_ms=%.3f p99_ms=%.3f\n", lat.size(), rows, Pct(lat, 50),
              Pct(lat, 99));
  sqlite3_close(db);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: sqlite_ref insert|query ...\n");
    return 2;
  }
  auto a = Parse(argc, argv);
  std::string mode = argv[1];
  if (mode == "insert") return Insert(a);
  if (mode == "query") return Query(a);
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
