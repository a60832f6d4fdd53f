#include "gantryd_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "store/postgres/pg_test_server.h"

#ifndef GANTRYD_PATH
#error "GANTRYD_PATH must name the gantryd binary (set by tests/CMakeLists.txt)"
#endif

namespace gantry::testing {
namespace {

// How long gantryd may take to print its `listening on` line. Generous on purpose: the
// sanitizer build on a loaded CI machine is slow, and this only bounds a failure.
constexpr auto kStartDeadline = std::chrono::seconds(120);
constexpr char kListening[] = "listening on http://";

std::string MakeTempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/gantry-it-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr)
    throw std::runtime_error("mkdtemp failed: " + std::string(std::strerror(errno)));
  return std::string(buf.data());
}

int WaitExit(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

bool TestStoreIsPostgres() {
  const char* env = std::getenv("GANTRY_TEST_STORE");
  return env && std::string(env) == "postgres";
}

std::string TestStoreUnavailable() {
  if (!TestStoreIsPostgres()) return "";
  auto server = store::testing::PgTestServer::Get();
  return server.ok() ? "" : std::string(server.status().message());
}

std::string GantrydBinary() {
  const char* env = std::getenv("GANTRY_TEST_GANTRYD");
  return env && *env ? std::string(env) : std::string(GANTRYD_PATH);
}

GantrydProcess::GantrydProcess(std::vector<std::string> extra_args)
    : extra_args_(std::move(extra_args)),
      env_{{"GANTRY_BOOTSTRAP_TOKEN", kBootstrapToken}, {"GANTRY_ADMIN_PASSWORD", kAdminPassword}},
      data_dir_(MakeTempDir()) {}

void GantrydProcess::SetEnv(const std::string& key, const std::string& value) { env_[key] = value; }

GantrydProcess::~GantrydProcess() {
  Kill9();
  std::error_code ec;
  std::filesystem::remove_all(data_dir_, ec);
  // As root, gantryd keeps workloads' files beside the data directory (--workload-dir).
  std::filesystem::remove_all(data_dir_ + ".workloads", ec);
}

std::string GantrydProcess::base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

std::string GantrydProcess::Log() const {
  std::lock_guard<std::mutex> lock(mu_);
  return log_;
}

bool GantrydProcess::WaitForLog(std::string_view text) {
  std::unique_lock<std::mutex> lock(mu_);
  auto found = [&] { return log_.find(text) != std::string::npos; };
  cv_.wait_for(lock, kStartDeadline, [&] { return found() || eof_; });
  return found();
}

absl::Status GantrydProcess::Start() {
  if (running()) return absl::FailedPreconditionError("gantryd is already running");
  StopReader();  // the previous run's reader, if any, has seen EOF or will now
  bool own_store = false, own_listen = false;
  for (const auto& a : extra_args_) {
    own_store = own_store || a == "--store";
    own_listen = own_listen || a == "--listen";
  }
  std::vector<std::string> args = {GantrydBinary(), "--data-dir", data_dir_};
  if (!own_listen) args.insert(args.begin() + 1, {"--listen", "127.0.0.1:0"});
  if (TestStoreIsPostgres() && !own_store) {
    if (store_url_.empty()) {
      auto server = store::testing::PgTestServer::Get();
      if (!server.ok()) return server.status();
      auto url = (*server)->CreateDatabase();
      if (!url.ok()) return url.status();
      store_url_ = *url;
    }
    args.push_back("--store");
    args.push_back(store_url_);
  }
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  // The environment: ours, with the harness's variables set or removed.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string_view kv(*e);
    std::string key(kv.substr(0, kv.find('=')));
    if (!env_.count(key)) env_strings.emplace_back(kv);
  }
  for (const auto& [k, v] : env_)
    if (!v.empty()) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return absl::UnavailableError("pipe2: " + std::string(std::strerror(errno)));
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return absl::UnavailableError("fork: " + std::string(std::strerror(errno)));
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    int devnull = ::open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      ::dup2(devnull, 0);
      ::dup2(devnull, 1);
    }
    ::dup2(fds[1], 2);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  pid_ = pid;
  {
    std::lock_guard<std::mutex> lock(mu_);
    eof_ = false;
    found_port_ = 0;
    run_start_ = log_.size();
  }
  reader_ = std::thread([this, fd = fds[0]] { ReaderLoop(fd); });

  std::unique_lock<std::mutex> lock(mu_);
  bool ready = cv_.wait_for(lock, kStartDeadline, [this] { return found_port_ != 0 || eof_; });
  if (found_port_ != 0) {
    port_ = found_port_;
    return absl::OkStatus();
  }
  std::string log = log_.substr(run_start_);
  lock.unlock();
  Kill9();
  return absl::UnavailableError(std::string(ready ? "gantryd exited before listening"
                                                  : "gantryd did not report its port in time") +
                                "; its log:\n" + log);
}

void GantrydProcess::ReaderLoop(int fd) {
  char buf[4096];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    std::lock_guard<std::mutex> lock(mu_);
    log_.append(buf, static_cast<size_t>(n));
    cv_.notify_all();  // WaitForLog
    if (found_port_ == 0) {
      size_t at = log_.find(kListening, run_start_);
      if (at != std::string::npos) {
        size_t eol = log_.find('\n', at);
        if (eol != std::string::npos) {
          std::string hostport =
              log_.substr(at + sizeof kListening - 1, eol - at - (sizeof kListening - 1));
          size_t colon = hostport.rfind(':');
          if (colon != std::string::npos) found_port_ = std::atoi(hostport.c_str() + colon + 1);
          cv_.notify_all();
        }
      }
    }
  }
  ::close(fd);
  std::lock_guard<std::mutex> lock(mu_);
  eof_ = true;
  cv_.notify_all();
}

int GantrydProcess::tls_port() const {
  static constexpr char kHttps[] = "listening on https://";
  std::lock_guard<std::mutex> lock(mu_);
  size_t at = log_.find(kHttps, run_start_);
  if (at == std::string::npos) return 0;
  size_t begin = at + sizeof kHttps - 1;
  size_t end = log_.find_first_of(" \n", begin);
  std::string hostport =
      log_.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  size_t colon = hostport.rfind(':');
  return colon == std::string::npos ? 0 : std::atoi(hostport.c_str() + colon + 1);
}

void GantrydProcess::StopReader() {
  // Called only when the process is gone, so its stderr is closed and the reader ends.
  if (reader_.joinable()) reader_.join();
}

void GantrydProcess::Kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  WaitExit(pid_);
  pid_ = -1;
  StopReader();
}

int GantrydProcess::Terminate() {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGTERM);
  int code = WaitExit(pid_);
  pid_ = -1;
  StopReader();
  return code;
}

absl::Status GantrydProcess::Restart() {
  Kill9();
  return Start();
}

}  // namespace gantry::testing
