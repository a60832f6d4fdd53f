#include "common/test_process.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace gantry::testing {

pid_t SpawnLogged(const std::vector<std::string>& args, const std::string& log,
                  const SpawnOptions& options) {
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env = options.env;
  const passwd* user = options.user;
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
  if (options.parent_death_signal) {
    ::prctl(PR_SET_PDEATHSIG, options.parent_death_signal);
    if (::getppid() != parent) ::_exit(127);
  }
  if (options.own_process_group) ::setpgid(0, 0);
  for (std::string& e : env) ::putenv(e.data());
  if (options.search_path)
    ::execvp(argv[0], argv.data());
  else
    ::execv(argv[0], argv.data());
  ::_exit(127);
}

int WaitExit(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

absl::Status WaitUntilServing(pid_t* pid, const std::function<bool()>& ready,
                              const std::string& what, const std::string& log,
                              std::chrono::seconds deadline) {
  auto until = std::chrono::steady_clock::now() + deadline;
  while (!ready()) {
    int status = 0;
    if (::waitpid(*pid, &status, WNOHANG) == *pid) {
      *pid = -1;
      return absl::UnavailableError(what + " exited at start; its output:\n" +
                                    ReadFileOrEmpty(log));
    }
    if (std::chrono::steady_clock::now() > until)
      return absl::UnavailableError(what + " did not accept connections in time; its output:\n" +
                                    ReadFileOrEmpty(log));
    // Not synchronisation: the interval between two looks at the server.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::OkStatus();
}

int FreeLoopbackPort() {
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
  return port;
}

bool AcceptsOnLoopback(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  bool ok = fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  if (fd >= 0) ::close(fd);
  return ok;
}

std::string MakeTempDir(const std::string& prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/" + prefix + "-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  return ::mkdtemp(buf.data()) ? std::string(buf.data()) : "";
}

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace gantry::testing
