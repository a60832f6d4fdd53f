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

namespace gantry::store::testing {
namespace {

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

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0) ::close(fd);
  return port ? port : 54329;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Forks and execs argv with stdout/stderr appended to `log`, as `user` when non-null.
// `pdeathsig`: the child dies with this thread. Returns the pid (or -1).
pid_t Spawn(const std::vector<std::string>& args, const std::string& log, const passwd* user,
            bool pdeathsig) {
  std::vector<char*> argv;
  std::vector<std::string> copy = args;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  uid_t uid = user ? user->pw_uid : 0;
  gid_t gid = user ? user->pw_gid : 0;
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  // Child: async-signal-safe calls only until exec.
  int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd >= 0) {
    ::dup2(fd, 1);
    ::dup2(fd, 2);
  }
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) ::dup2(devnull, 0);
  if (user && (::setgid(gid) != 0 || ::setuid(uid) != 0)) ::_exit(126);
  // After setuid: a change of credentials clears the parent-death signal.
  if (pdeathsig) {
    ::prctl(PR_SET_PDEATHSIG, SIGQUIT);
    if (::getppid() != parent) ::_exit(127);
  }
  ::execv(argv[0], argv.data());
  ::_exit(127);
}

int Wait(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
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
  pid_t init = Spawn({bin_dir_ + "/initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E",
                      "UTF8", "--no-sync", "--locale=C"},
                     log, user, false);
  if (init < 0 || Wait(init) != 0)
    return absl::UnavailableError("initdb failed; its output:\n" + ReadAll(log));
  port_ = FreePort();
  pid_ =
      Spawn({bin_dir_ + "/postgres", "-D", data, "-k", dir_, "-p", std::to_string(port_), "-c",
             "listen_addresses=", "-c", "fsync=off", "-c", "full_page_writes=off", "-c",
             "max_connections=500", "-c", "shared_buffers=64MB", "-c", "log_min_messages=warning"},
            log, user, true);
  if (pid_ < 0) return absl::UnavailableError("cannot start postgres");
  std::string conninfo = "host=" + dir_ + " port=" + std::to_string(port_) +
                         " dbname=postgres user=postgres connect_timeout=2";
  auto deadline = std::chrono::steady_clock::now() + kStartDeadline;
  while (PQping(conninfo.c_str()) != PQPING_OK) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::UnavailableError("postgres exited at start; its log:\n" + ReadAll(log));
    }
    if (std::chrono::steady_clock::now() > deadline)
      return absl::UnavailableError("postgres did not accept connections in time; its log:\n" +
                                    ReadAll(log));
    // Not synchronisation: the interval between two looks at the server.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return absl::OkStatus();
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
    Wait(pid_);
  }
  std::error_code ec;
  if (!dir_.empty()) fs::remove_all(dir_, ec);
}

}  // namespace gantry::store::testing
