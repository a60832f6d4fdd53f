#include "drivers/slurm/slurm_cli.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "drivers/common/process.h"
#include "drivers/common/sandbox.h"

namespace gantry::drivers::slurm {
namespace {

using SteadyClock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The last few non-empty lines of `text`, joined by "; " (Slurm's errors are one-liners).
std::string LastLines(const std::string& text, int n = 3) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) lines.push_back(line.size() > 300 ? line.substr(0, 300) + "..." : line);
  }
  std::string out;
  for (size_t i = lines.size() > static_cast<size_t>(n) ? lines.size() - n : 0; i < lines.size();
       ++i)
    out += (out.empty() ? "" : "; ") + lines[i];
  return out;
}

// Words Slurm uses when it cannot reach its controller (or the controller is overloaded).
bool Unreachable(const std::string& text) {
  for (const char* w :
       {"Unable to contact slurm controller", "Socket timed out", "Connection refused",
        "Zero Bytes were transmitted", "Communication connection failure",
        "Slurm backup controller in standby", "Unable to establish controller machine",
        "Failed while looking for jobs", "Could not establish a configuration source"})
    if (text.find(w) != std::string::npos) return true;
  return false;
}

}  // namespace

namespace {

// A started command: its pid and the parent's ends of its pipes (-1 once closed).
struct Started {
  pid_t pid = -1;
  int in_fd = -1, out_fd = -1, err_fd = -1;
};

absl::Status PipeError() {
  return absl::UnavailableError(std::string("cannot create pipes: ") + std::strerror(errno));
}

absl::StatusOr<Started> StartCommand(const drivers::ChildSpec& base, ProcessLauncher& launcher) {
  drivers::ChildSpec child = base;
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0) return absl::UnavailableError(std::strerror(errno));
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    absl::Status s = PipeError();
    for (int fd : in_pipe) ::close(fd);
    return s;
  }
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    absl::Status s = PipeError();
    for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1]}) ::close(fd);
    return s;
  }
  child.stdin_fd = in_pipe[0];
  child.stdout_fd = out_pipe[1];
  child.stderr_fd = err_pipe[1];
  auto spawned = launcher.Start(child);
  for (int fd : {in_pipe[0], out_pipe[1], err_pipe[1]}) ::close(fd);
  if (!spawned.ok() || spawned->pid <= 0) {
    for (int fd : {in_pipe[1], out_pipe[0], err_pipe[0]}) ::close(fd);
    if (!spawned.ok()) return spawned.status();
    return absl::UnavailableError("cannot run " + child.argv[0] +
                                  (child.working_dir.empty() ? "" : " in " + child.working_dir) +
                                  ": " + std::strerror(spawned->error));
  }
  return Started{spawned->pid, in_pipe[1], out_pipe[0], err_pipe[0]};
}

// Feeds `stdin_data` and reads stdout and stderr until both are closed; false when the
// deadline passed first. Closes every fd of `p`.
bool Exchange(Started& p, const std::string& stdin_data, SteadyClock::time_point deadline,
              CommandResult* result) {
  size_t written = 0;
  if (stdin_data.empty()) {
    ::close(p.in_fd);
    p.in_fd = -1;
  } else {
    ::fcntl(p.in_fd, F_SETFL, O_NONBLOCK);
  }
  bool timed_out = false;
  while (p.out_fd >= 0 || p.err_fd >= 0) {
    pollfd fds[3];
    int n = 0;
    int idx_in = -1, idx_out = -1, idx_err = -1;
    if (p.in_fd >= 0) {
      idx_in = n;
      fds[n++] = {p.in_fd, POLLOUT, 0};
    }
    if (p.out_fd >= 0) {
      idx_out = n;
      fds[n++] = {p.out_fd, POLLIN, 0};
    }
    if (p.err_fd >= 0) {
      idx_err = n;
      fds[n++] = {p.err_fd, POLLIN, 0};
    }
    auto left = std::chrono::duration_cast<milliseconds>(deadline - SteadyClock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    int r = ::poll(fds, n, static_cast<int>(std::min<long long>(left, 1000)));
    if (r < 0 && errno != EINTR) break;
    if (r <= 0) continue;
    if (idx_in >= 0 && fds[idx_in].revents) {
      ssize_t w = ::write(p.in_fd, stdin_data.data() + written, stdin_data.size() - written);
      if (w > 0) written += static_cast<size_t>(w);
      if (w < 0 && errno != EAGAIN && errno != EINTR) written = stdin_data.size();
      if (written >= stdin_data.size()) {
        ::close(p.in_fd);
        p.in_fd = -1;
      }
    }
    for (auto [idx, fd, sink] : {std::tuple{idx_out, &p.out_fd, &result->out},
                                 std::tuple{idx_err, &p.err_fd, &result->err}}) {
      if (idx < 0 || !fds[idx].revents) continue;
      char buf[16384];
      ssize_t rd = ::read(*fd, buf, sizeof buf);
      if (rd > 0) {
        if (sink->size() < 64 * 1024 * 1024) sink->append(buf, static_cast<size_t>(rd));
      } else if (rd == 0 || (errno != EINTR && errno != EAGAIN)) {
        ::close(*fd);
        *fd = -1;
      }
    }
  }
  for (int fd : {p.in_fd, p.out_fd, p.err_fd})
    if (fd >= 0) ::close(fd);
  return !timed_out;
}

}  // namespace

absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         const std::map<std::string, std::string>& env,
                                         const std::string& stdin_data,
                                         const std::string& working_dir, milliseconds timeout,
                                         ProcessLauncher& launcher) {
  if (argv.empty()) return absl::InvalidArgumentError("no program to run");
  drivers::ChildSpec child;
  child.argv = argv;
  // Slurm's tools find their cluster through SLURM_CONF; nothing else of gantryd's goes along
  // (with --export=ALL this is also the job's environment).
  child.env = EnvStrings(ChildEnvironment(env, nullptr, {"SLURM_CONF"}));
  child.working_dir = working_dir;
  child.die_with_parent = false;
  auto started = StartCommand(child, launcher);
  if (!started.ok()) return started.status();
  const pid_t pid = started->pid;
  CommandResult result;
  bool finished = Exchange(*started, stdin_data, SteadyClock::now() + timeout, &result);
  if (!finished) ::kill(-pid, SIGKILL);
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (!finished)
    return absl::DeadlineExceededError(argv[0] + " did not finish within " +
                                       std::to_string(timeout.count() / 1000) + "s");
  result.exit_code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
  return result;
}

SlurmCli::SlurmCli(std::string slurm_conf, milliseconds timeout, ProcessLauncher& launcher)
    : slurm_conf_(std::move(slurm_conf)), timeout_(timeout), launcher_(launcher) {}

std::string SlurmCli::Describe() const {
  return "the Slurm cluster (" +
         (slurm_conf_.empty() ? std::string("default slurm.conf") : "slurm.conf " + slurm_conf_) +
         ")";
}

absl::StatusOr<CommandResult> SlurmCli::Run(const std::vector<std::string>& argv,
                                            const std::map<std::string, std::string>& env,
                                            const std::string& stdin_data,
                                            const std::string& working_dir) const {
  std::map<std::string, std::string> e = env;
  if (!slurm_conf_.empty()) {
    // Slurm's tools retry a missing slurm.conf for a minute: say it at once.
    if (::access(slurm_conf_.c_str(), R_OK) != 0)
      return absl::FailedPreconditionError(Describe() + " cannot be used: " + slurm_conf_ + ": " +
                                           std::strerror(errno));
    e["SLURM_CONF"] = slurm_conf_;
  }
  auto r = RunCommand(argv, e, stdin_data, working_dir, timeout_, launcher_);
  if (!r.ok())
    return absl::UnavailableError(Describe() +
                                  " cannot be used: " + std::string(r.status().message()));
  return r;
}

absl::Status SlurmCli::ErrorFrom(const std::string& what, const CommandResult& r) const {
  std::string said = LastLines(r.err.empty() ? r.out : r.err);
  if (said.empty()) said = what + " exited with code " + std::to_string(r.exit_code);
  if (Unreachable(said)) return absl::UnavailableError(Describe() + " does not answer: " + said);
  return absl::FailedPreconditionError("Slurm refused " + what + ": " + said);
}

absl::StatusOr<int64_t> SlurmCli::Submit(const std::vector<std::string>& args,
                                         const std::string& script,
                                         const std::map<std::string, std::string>& env,
                                         const std::string& working_dir) const {
  std::vector<std::string> argv{"sbatch"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = Run(argv, env, script, working_dir);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) return ErrorFrom("the job", *r);
  auto id = ParseSubmittedJobId(r->out);
  if (!id.ok()) return absl::UnavailableError(std::string(id.status().message()));
  return *id;
}

absl::StatusOr<JobListing> SlurmCli::Jobs(const std::vector<int64_t>& job_ids) const {
  std::vector<std::string> argv{"squeue", "--json"};
  // More than one id: squeue loads all jobs and filters (no error for ids it does not know);
  // a single id would make it fail for a purged job, so a second copy of it is added.
  if (!job_ids.empty()) {
    std::string ids;
    for (int64_t id : job_ids) ids += (ids.empty() ? "" : ",") + std::to_string(id);
    if (job_ids.size() == 1) ids += "," + std::to_string(job_ids[0]);
    argv.push_back("--jobs=" + ids);
  }
  auto r = Run(argv, {}, "", "");
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) return ErrorFrom("the job query", *r);
  auto listing = ParseJobListing(r->out);
  if (!listing.ok())
    return absl::UnavailableError(Describe() + ": squeue --json printed what cannot be read: " +
                                  std::string(listing.status().message()));
  // squeue --json exits 0 when the controller is down and says so in "errors".
  if (!listing->errors.empty() && listing->jobs.empty()) {
    std::string said;
    for (const auto& e : listing->errors) said += (said.empty() ? "" : "; ") + e;
    return absl::UnavailableError(Describe() + " does not answer: squeue: " + said);
  }
  return listing;
}

absl::Status SlurmCli::Cancel(int64_t job_id) const {
  auto r = Run({"scancel", std::to_string(job_id)}, {}, "", "");
  if (!r.ok()) return r.status();
  if (r->exit_code == 0) {
    // scancel exits 0 for a job that already ended, with a message on stderr.
    return absl::OkStatus();
  }
  std::string said = r->err + r->out;
  if (said.find("Invalid job id") != std::string::npos ||
      said.find("already completing or completed") != std::string::npos ||
      said.find("Job/step already") != std::string::npos)
    return absl::OkStatus();
  return ErrorFrom("scancel of job " + std::to_string(job_id), *r);
}

}  // namespace gantry::drivers::slurm
