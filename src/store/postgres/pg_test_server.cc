#include "store/postgres/pg_test_server.h"

#include <fcntl.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "common/test_process.h"

namespace gantry::store::testing {
namespace {

using gantry::testing::FreeLoopbackPort;
using gantry::testing::ReadFileOrEmpty;
using gantry::testing::SpawnLogged;
using gantry::testing::WaitExit;
using gantry::testing::WaitUntilServing;

namespace fs = std::filesystem;

// Bounds a failure to start; a working server answers within a second or two.
constexpr auto kStartDeadline = std::chrono::seconds(60);

std::string FindBinDir() {
  if (const char* env = std::getenv("GANTRY_PG_BIN"); env && *env) return env;
  std::string best;
  int best_version = -1;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    int v = std::atoi(e.path().filename().string().c_str());
    if (v > best_version && fs::exists(e.path() / "bin" / "postgres")) {
      best_version = v;
      best = (e.path() / "bin").string();
    }
  }
  if (!best.empty()) return best;
  for (const char* d : {"/usr/local/pgsql/bin", "/usr/bin", "/usr/local/bin"})
    if (fs::exists(fs::path(d) / "postgres") && fs::exists(fs::path(d) / "initdb")) return d;
  return "";
}

std::mutex g_mu;
std::unique_ptr<PgTestServer> g_server;  // the process's server (see the header)
std::string g_error;                     // why it could not start, once tried
std::atomic<int> g_databases{0};

}  // namespace

bool PostgresRequired() {
  const char* req = std::getenv("GANTRY_REQUIRE_POSTGRES");
  const char* gantry_ci = std::getenv("GANTRY_CI");
  const char* ci = std::getenv("CI");
  return (req && std::string(req) == "1") || (gantry_ci && std::string(gantry_ci) == "1") ||
         (ci && std::string(ci) == "true");
}

absl::StatusOr<PgTestServer*> PgTestServer::Get() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_server) return g_server.get();
  if (!g_error.empty()) return absl::UnavailableError(g_error);
  std::unique_ptr<PgTestServer> s(new PgTestServer());
  absl::Status st = s->Start();
  if (!st.ok()) {
    g_error = std::string(st.message());
    return st;
  }
  g_server = std::move(s);
  return g_server.get();
}

std::string PgTestServer::Url(const std::string& database) const {
  return "postgresql:///" + database + "?host=" + dir_ + "&port=" + std::to_string(port_) +
         "&user=postgres";
}

absl::Status PgTestServer::Start() {
  bin_dir_ = FindBinDir();
  if (bin_dir_.empty())
    return absl::UnavailableError(
        "PostgreSQL server binaries not found (install the `postgresql` package, or set "
        "GANTRY_PG_BIN to the directory of initdb and postgres)");
  const char* base = std::getenv("TMPDIR");
  // Short: the socket path (DIR/.s.PGSQL.PORT) must fit in 107 bytes.
  std::string tmpl =
      std::string(base && *base && std::strlen(base) < 60 ? base : "/tmp") + "/gantry-pg-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr)
    return absl::UnavailableError("mkdtemp: " + std::string(std::strerror(errno)));
  dir_ = buf.data();
  const passwd* user = nullptr;
  if (::geteuid() == 0) {
    // initdb and postgres refuse to run as root.
    user = ::getpwnam("postgres");
    if (!user)
      return absl::UnavailableError(
          "running as root and there is no `postgres` user to run PostgreSQL as");
    if (::chown(dir_.c_str(), user->pw_uid, user->pw_gid) != 0)
      return absl::UnavailableError("chown " + dir_ + ": " + std::strerror(errno));
  }
  ::chmod(dir_.c_str(), 0700);
  std::string data = dir_ + "/data";
  std::string log = dir_ + "/server.log";
  pid_t init = SpawnLogged({bin_dir_ + "/initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E",
                            "UTF8", "--no-sync", "--locale=C"},
                           log, {.user = user});
  if (init < 0 || WaitExit(init) != 0)
    return absl::UnavailableError("initdb failed; its output:\n" + ReadFileOrEmpty(log));
  port_ = FreeLoopbackPort();
  if (port_ == 0) port_ = 54329;
  pid_ = SpawnLogged(
      {bin_dir_ + "/postgres", "-D", data, "-k", dir_, "-p", std::to_string(port_), "-c",
       "listen_addresses=", "-c", "fsync=off", "-c", "full_page_writes=off", "-c",
       "max_connections=500", "-c", "shared_buffers=64MB", "-c", "log_min_messages=warning"},
      log, {.user = user, .parent_death_signal = SIGQUIT});
  if (pid_ < 0) return absl::UnavailableError("cannot start postgres");
  std::string conninfo = "host=" + dir_ + " port=" + std::to_string(port_) +
                         " dbname=postgres user=postgres connect_timeout=2";
  return WaitUntilServing(
      &pid_, [&] { return PQping(conninfo.c_str()) == PQPING_OK; }, "postgres", log,
      kStartDeadline);
}

absl::StatusOr<std::string> PgTestServer::CreateDatabase() {
  std::string name =
      "gantry_t" + std::to_string(::getpid()) + "_" + std::to_string(g_databases.fetch_add(1));
  std::string conninfo =
      "host=" + dir_ + " port=" + std::to_string(port_) + " dbname=postgres user=postgres";
  PGconn* c = PQconnectdb(conninfo.c_str());
  if (PQstatus(c) != CONNECTION_OK) {
    std::string msg = PQerrorMessage(c);
    PQfinish(c);
    return absl::UnavailableError("cannot connect to the test PostgreSQL: " + msg);
  }
  PGresult* r = PQexec(c, ("CREATE DATABASE " + name).c_str());
  bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
  std::string msg = PQresultErrorMessage(r);
  PQclear(r);
  PQfinish(c);
  if (!ok) return absl::UnavailableError("CREATE DATABASE failed: " + msg);
  return Url(name);
}

PgTestServer::~PgTestServer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGQUIT);
    WaitExit(pid_);
  }
  std::error_code ec;
  if (!dir_.empty()) fs::remove_all(dir_, ec);
}

}  // namespace gantry::store::testing
