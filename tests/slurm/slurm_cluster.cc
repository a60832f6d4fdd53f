#include "slurm_cluster.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/test_process.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\"'\"'") : std::string(1, c);
  return out + "'";
}

std::string Tail(const std::string& text, size_t n = 3000) {
  return text.size() > n ? "..." + text.substr(text.size() - n) : text;
}

bool Installed(const char* program) {
  for (const char* dir : {"/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"})
    if (::access((std::string(dir) + "/" + program).c_str(), X_OK) == 0) return true;
  return false;
}

// The job in squeue --json output, or null.
json::object FindJob(const std::string& text, const std::string& job_id) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return {};
  const json::value* jobs = v.get_object().if_contains("jobs");
  if (!jobs || !jobs->is_array()) return {};
  for (const auto& j : jobs->get_array()) {
    if (!j.is_object()) continue;
    const json::value* id = j.get_object().if_contains("job_id");
    if (id && id->is_number() && std::to_string(id->to_number<int64_t>()) == job_id)
      return j.get_object();
  }
  return {};
}

std::string StateOf(const json::object& job) {
  const json::value* s = job.if_contains("job_state");
  if (!s) return "";
  if (s->is_string()) return std::string(s->get_string());
  if (s->is_array() && !s->get_array().empty() && s->get_array()[0].is_string())
    return std::string(s->get_array()[0].get_string());
  return "";
}

}  // namespace

bool SlurmRequired() {
  const char* v = std::getenv("GANTRY_REQUIRE_SLURM");
  return v && std::string(v) == "1";
}

SlurmCluster::SlurmCluster() {
  char tmpl[] = "/tmp/gantry-slurm-XXXXXX";
  const char* d = ::mkdtemp(tmpl);
  dir_ = d ? d : "";
  // A root gantryd submits jobs as its workload user: slurmstepd, as that user, reads the
  // job's script from the spool directory below this one.
  if (d) ::chmod(d, 0755);
}

SlurmCluster::~SlurmCluster() {
  if (ctld_ > 0) CancelAll();
  Stop(slurmd_);
  Stop(ctld_);
  // What a job left behind (its batch script lives in the spool directory, below dir_).
  for (int round = 0; round < 2; ++round) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
      std::string name = entry.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::string cmd = ReadFileOrEmpty("/proc/" + name + "/cmdline");
      if (!dir_.empty() && cmd.find(dir_) != std::string::npos) ::kill(std::stoi(name), SIGKILL);
    }
  }
  if (!dir_.empty() && std::getenv("GANTRY_KEEP_SLURM_DIR") == nullptr) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

pid_t SlurmCluster::Spawn(const std::vector<std::string>& argv, const std::string& log) const {
  return SpawnLogged(argv, log,
                     {.parent_death_signal = SIGKILL,
                      .own_process_group = true,
                      .search_path = true,
                      .env = {"SLURM_CONF=" + conf()}});
}

void SlurmCluster::Stop(pid_t& pid) {
  if (pid <= 0) return;
  ::kill(pid, SIGTERM);
  auto deadline = Clock::now() + std::chrono::seconds(15);
  int status;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (Clock::now() > deadline) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  pid = -1;
}

absl::Status SlurmCluster::Start() {
  if (dir_.empty()) return absl::UnavailableError("cannot create a temporary directory");
  for (const char* p : {"slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo"})
    if (!Installed(p))
      return absl::UnavailableError(std::string(p) +
                                    " is not installed: the Slurm tests need Debian's slurm-wlm "
                                    "(apt-get install slurm-wlm, or scripts/install-deps.sh)");
  if (::geteuid() != 0)
    return absl::UnavailableError("slurmd must run as root to start jobs; these tests run as uid " +
                                  std::to_string(::geteuid()));
  for (const char* sub : {"state", "spool", "dev", "log"})
    std::filesystem::create_directories(dir_ + "/" + sub);
  // Placeholder GPU devices: slurmd wants character devices (it warns about plain files but
  // still counts them); /dev/null's numbers make them harmless.
  bool devices = true;
  for (int i = 0; i < kGpus; ++i) {
    std::string path = dir_ + "/dev/gpu" + std::to_string(i);
    if (::mknod(path.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) {
      devices = false;
      std::ofstream(path).put('\n');
    }
  }
  (void)devices;
  ctld_port_ = FreeLoopbackPort();
  slurmd_port_ = FreeLoopbackPort();
  while (slurmd_port_ == ctld_port_) slurmd_port_ = FreeLoopbackPort();
  std::ofstream c(conf());
  c << "ClusterName=" << kClusterName << "\n"
    << "SlurmctldHost=localhost(127.0.0.1)\n"
    << "SlurmctldPort=" << ctld_port_ << "\n"
    << "SlurmdPort=" << slurmd_port_ << "\n"
    << "AuthType=auth/none\nCredType=cred/none\n"
    << "SlurmUser=root\nSlurmdUser=root\n"
    << "StateSaveLocation=" << dir_ << "/state\n"
    << "SlurmdSpoolDir=" << dir_ << "/spool\n"
    << "SlurmctldPidFile=" << dir_ << "/slurmctld.pid\n"
    << "SlurmdPidFile=" << dir_ << "/slurmd.pid\n"
    << "SlurmctldLogFile=" << dir_ << "/log/slurmctld.log\n"
    << "SlurmdLogFile=" << dir_ << "/log/slurmd.log\n"
    << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
    << "JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n"
    << "SwitchType=switch/none\nMpiDefault=none\nMailProg=/bin/true\n"
    << "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n"
    << "SchedulerType=sched/backfill\nSchedulerParameters=sched_interval=1\n"
    << "GresTypes=gpu\nReturnToService=2\nSlurmdParameters=config_overrides\n"
    << "SlurmctldTimeout=30\nSlurmdTimeout=30\nMinJobAge=300\nKillWait=5\n"
    << "NodeName=" << kNode << " NodeAddr=127.0.0.1 NodeHostname=localhost CPUs=" << 8
    << " RealMemory=1000 Gres=gpu:h100:" << kGpus << " State=UNKNOWN\n"
    << "PartitionName=" << kPartition << " Nodes=" << kNode
    << " Default=YES MaxTime=INFINITE State=UP\n";
  c.close();
  std::ofstream g(dir_ + "/gres.conf");
  g << "NodeName=" << kNode << " Name=gpu Type=h100 File=" << dir_ << "/dev/gpu[0-" << kGpus - 1
    << "]\n";
  g.close();
  absl::Status s = StartController();
  if (!s.ok()) return s;
  slurmd_ = Spawn({"slurmd", "-D", "-f", conf(), "-N", kNode}, dir_ + "/log/slurmd.out");
  if (!WaitNodeIdle())
    return absl::UnavailableError("the Slurm node did not become idle; logs:\n" + Tail(Logs()));
  return absl::OkStatus();
}

absl::Status SlurmCluster::StartController() {
  ctld_ = Spawn({"slurmctld", "-D", "-f", conf()}, dir_ + "/log/slurmctld.out");
  auto deadline = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < deadline) {
    int status;
    if (::waitpid(ctld_, &status, WNOHANG) == ctld_) {
      ctld_ = -1;
      return absl::UnavailableError("slurmctld exited at start; logs:\n" + Tail(Logs()));
    }
    CommandOutput r = Run({"sinfo", "-h", "-o", "%P"});
    if (r.exit_code == 0) return absl::OkStatus();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return absl::UnavailableError("slurmctld did not answer within 60s; logs:\n" + Tail(Logs()));
}

void SlurmCluster::StopController() { Stop(ctld_); }

bool SlurmCluster::WaitNodeIdle() const {
  auto deadline = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < deadline) {
    CommandOutput r = Run({"sinfo", "-h", "-N", "-o", "%T", "-n", kNode});
    if (r.exit_code == 0 && r.out.rfind("idle", 0) == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

CommandOutput SlurmCluster::Run(const std::vector<std::string>& argv) const {
  std::string cmd = "SLURM_CONF=" + Quote(conf()) + " timeout 60";
  for (const auto& a : argv) cmd += " " + Quote(a);
  cmd += " 2>&1";
  CommandOutput out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.out.append(buf, n);
  int status = ::pclose(p);
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

std::string SlurmCluster::JobState(const std::string& job_id) const {
  return StateOf(FindJob(Run({"squeue", "--json"}).out, job_id));
}

std::string SlurmCluster::JobField(const std::string& job_id, const std::string& field) const {
  json::object job = FindJob(Run({"squeue", "--json"}).out, job_id);
  const json::value* v = job.if_contains(field);
  if (!v) return "";
  return v->is_string() ? std::string(v->get_string()) : json::serialize(*v);
}

bool SlurmCluster::CancelAll() const {
  Run({"scancel", "--partition", kPartition});
  auto deadline = Clock::now() + std::chrono::seconds(120);
  while (Clock::now() < deadline) {
    CommandOutput r =
        Run({"squeue", "-h", "-t", "PENDING,RUNNING,COMPLETING,SUSPENDED,CONFIGURING", "-o", "%i"});
    if (r.exit_code != 0) return false;  // the controller is down: nothing to wait for
    if (r.out.find_first_not_of(" \n") == std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

std::string SlurmCluster::Logs() const {
  std::string out;
  for (const char* f : {"slurmctld.log", "slurmctld.out", "slurmd.log", "slurmd.out"}) {
    std::string text = ReadFileOrEmpty(dir_ + "/log/" + f);
    if (!text.empty()) out += "== " + std::string(f) + "\n" + Tail(text, 4000) + "\n";
  }
  return out;
}

}  // namespace gantry::testing
