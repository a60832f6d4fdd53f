#include "drivers/slurm/slurm_driver.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "common/json_member.h"
#include "drivers/common/state_file.h"
#include "drivers/slurm/slurm_config.h"
#include "drivers/slurm/slurm_json.h"

namespace gantry::drivers::slurm {
namespace {

namespace json = boost::json;
using SteadyClock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr const char* kStateFile = "slurm-driver.json";

int64_t Int(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (!v) return 0;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64()) return static_cast<int64_t>(v->get_uint64());
  if (v->is_string()) {
    std::string s(v->get_string());
    if (!s.empty() && s.size() < 19 && std::all_of(s.begin(), s.end(), ::isdigit))
      return std::stoll(s);
  }
  return 0;
}

std::string EnvName(std::string_view prefix, std::string_view key) {
  std::string out(prefix);
  for (char c : key)
    out += std::isalnum(static_cast<unsigned char>(c))
               ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
               : '_';
  return out;
}

json::object StateJson(int64_t job_id, const std::string& slurm_conf, const std::string& run_uid) {
  return json::object{{"jobId", job_id}, {"slurmConf", slurm_conf}, {"runUid", run_uid}};
}

// Slurm's pending reason as a CamelCase instance reason: "Resources" stays, "ReqNodeNotAvail,
// UnavailableNodes:n1" becomes "ReqNodeNotAvail".
std::string ReasonWord(const std::string& reason) {
  std::string out;
  for (char c : reason) {
    if (!std::isalnum(static_cast<unsigned char>(c))) break;
    out += c;
  }
  return out.empty() || out == "None" ? "Pending" : out;
}

std::string PendingMessage(const SlurmJob& j) {
  std::string why = ExplainPendingReason(j.reason);
  std::string msg = "Slurm job " + std::to_string(j.job_id) + " is " + j.state;
  if (!j.partition.empty()) msg += " in partition " + j.partition;
  if (!j.reason.empty()) msg += " (reason " + j.reason + (why.empty() ? "" : ": " + why) + ")";
  if (!j.description.empty()) msg += ": " + j.description;
  return msg;
}

std::string EndMessage(const SlurmJob& j) {
  std::string msg = "Slurm job " + std::to_string(j.job_id) + " ended " + j.state;
  if (j.exit_signal != 0)
    msg += " (signal " + std::to_string(j.exit_signal) + ")";
  else
    msg += " (exit code " + std::to_string(j.exit_code) + ")";
  if (!j.reason.empty() && j.reason != "None") msg += ", reason " + j.reason;
  if (!j.nodes.empty()) msg += ", on " + j.nodes;
  return msg;
}

json::object Outputs(const SlurmJob& j) {
  std::string gpus;
  for (const auto& g : j.gres_detail) gpus += (gpus.empty() ? "" : "; ") + g;
  return json::object{{"jobId", std::to_string(j.job_id)},
                      {"jobName", j.name},
                      {"cluster", j.cluster},
                      {"partition", j.partition},
                      {"nodes", j.nodes},
                      {"nodeCount", std::to_string(j.node_count)},
                      {"gpus", gpus}};
}

// Sleeps `d` in small steps; false when `canceled` became true meanwhile.
bool Nap(milliseconds d, RunContext* context) {
  const auto until = SteadyClock::now() + d;
  while (SteadyClock::now() < until) {
    if (context && context->Canceled()) return false;
    std::this_thread::sleep_for(std::min<milliseconds>(milliseconds(100), d));
  }
  return true;
}

// The job's environment: spec.slurm.env, GANTRY_VAR_<NAME> per variable, and what gantry
// sets (it wins); HOME, USER and LOGNAME of the job's user when there is one.
std::map<std::string, std::string> JobEnvironment(const DeployRequest& request,
                                                  const SlurmConfig& config,
                                                  const std::string& workload_dir,
                                                  const WorkloadUser* user) {
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : config.env) env[k] = v;
  for (const auto& [k, v] : request.variables) env[EnvName("GANTRY_VAR_", k)] = v;
  env["GANTRY_INSTANCE"] = StringMember(request.instance, "name");
  env["GANTRY_PROJECT"] = StringMember(request.instance, "project");
  for (const auto& [k, v] : ComputeEnvironment(request)) env[k] = v;
  env["GANTRY_INSTANCE_UID"] = StringMember(request.instance, "uid");
  env["GANTRY_RUN"] = request.run_name;
  env["GANTRY_STATE_DIR"] = workload_dir;
  if (user) {  // what the job's user would see, not gantryd's
    env["HOME"] = user->home;
    env["USER"] = env["LOGNAME"] = user->name;
  }
  return env;
}

}  // namespace

struct SlurmDriver::Tracked {
  std::string key, ns, name, uid, state_dir;
  std::string slurm_conf;
  int64_t job_id = 0;
  std::string run_uid;
  // What was last reported, so each change is reported once.
  WorkloadEvent::Kind reported = WorkloadEvent::Kind::kRunning;
  std::string reported_reason;
};

SlurmDriver::SlurmDriver(SlurmDriverOptions options, ProcessLauncher& launcher)
    : options_(options), launcher_(launcher) {
  supervisor_ = std::thread([this] { SupervisorLoop(); });
}

SlurmDriver::~SlurmDriver() { Shutdown(); }

void SlurmDriver::Shutdown() {
  std::call_once(shutdown_once_, [this] {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (supervisor_.joinable()) supervisor_.join();
  });
}

void SlurmDriver::SetObserver(WorkloadObserver* observer) { observer_.store(observer); }

SlurmCli SlurmDriver::Cli(const std::string& slurm_conf) const {
  return SlurmCli(slurm_conf, options_.command_timeout, launcher_);
}

void SlurmDriver::Untrack(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  jobs_.erase(key);
}

absl::Status SlurmDriver::CancelAndWait(const SlurmCli& cli, int64_t job_id, RunContext* context) {
  auto log = [&](const std::string& line) {
    if (context) context->Log(line);
  };
  log("scancel " + std::to_string(job_id));
  absl::Status s = cli.Cancel(job_id);
  if (!s.ok()) return s;
  const auto deadline = SteadyClock::now() + options_.cancel_wait;
  std::string last;
  while (true) {
    auto listing = cli.Jobs({job_id});
    if (!listing.ok()) return listing.status();
    const SlurmJob* j = FindJob(*listing, job_id);
    if (!j) {
      log("Slurm job " + std::to_string(job_id) + " is gone");
      return absl::OkStatus();
    }
    if (IsTerminalState(j->state)) {
      log("Slurm job " + std::to_string(job_id) + " ended " + j->state);
      return absl::OkStatus();
    }
    if (j->state != last) {
      log("Slurm job " + std::to_string(job_id) + " is " + j->state + "; waiting for it to end");
      last = j->state;
    }
    if (SteadyClock::now() >= deadline)
      return absl::DeadlineExceededError(
          "Slurm job " + std::to_string(job_id) + " was still " + j->state + " " +
          std::to_string(options_.cancel_wait.count()) + "s after scancel");
    // Never cut short by cancellation: a destroy must see its job gone.
    std::this_thread::sleep_for(options_.wait_poll);
  }
}

absl::StatusOr<json::object> SlurmDriver::Apply(const DeployRequest& request, RunContext& context) {
  auto config = ParseSlurmConfig(request.config);
  if (!config.ok()) return config.status();
  auto gres = GresForResources(request.resources);
  if (!gres.ok()) return gres.status();
  const SlurmCli cli = Cli(config->slurm_conf);
  Untrack(InstanceKey(request));
  auto job_id = ResumeOrReplace(request, *config, context);
  if (!job_id.ok()) return job_id.status();
  if (*job_id == 0) job_id = Submit(request, *config, *gres, cli, context);
  if (!job_id.ok()) return job_id.status();
  return AwaitRunning(request, *config, cli, *job_id, context);
}

// What this instance ran before: the job an interrupted attempt of this very run submitted
// is resumed (its id returned); any other job of the instance is replaced (0 returned).
absl::StatusOr<int64_t> SlurmDriver::ResumeOrReplace(const DeployRequest& request,
                                                     const SlurmConfig& config,
                                                     RunContext& context) {
  json::object previous = ReadStateFile(request.state_dir, kStateFile);
  const int64_t prev = Int(previous, "jobId");
  if (prev <= 0) return 0;
  const SlurmCli prev_cli = Cli(StringMember(previous, "slurmConf"));
  if (StringMember(previous, "runUid") == request.run_uid &&
      StringMember(previous, "slurmConf") == config.slurm_conf) {
    auto listing = prev_cli.Jobs({prev});
    if (!listing.ok()) return listing.status();
    const SlurmJob* j = FindJob(*listing, prev);
    if (j && !IsTerminalState(j->state)) {
      context.Log("resuming Slurm job " + std::to_string(prev) + " (" + j->state +
                  "), submitted by an earlier attempt of this run");
      return prev;
    }
  }
  context.Log("cancelling Slurm job " + std::to_string(prev) + " of the previous deploy");
  absl::Status s = CancelAndWait(prev_cli, prev, &context);
  if (!s.ok()) return s;
  RemoveStateFile(request.state_dir, kStateFile);
  return 0;
}

// sbatch of the instance's job, its id saved as the driver state.
absl::StatusOr<int64_t> SlurmDriver::Submit(const DeployRequest& request, const SlurmConfig& config,
                                            const std::string& gres, const SlurmCli& cli,
                                            RunContext& context) {
  const std::string project = StringMember(request.instance, "project");
  const std::string name = StringMember(request.instance, "name");
  const std::string uid = StringMember(request.instance, "uid");
  std::error_code ec;
  std::filesystem::create_directories(request.state_dir, ec);
  auto workload_dir = PrepareWorkloadDir(options_.sandbox, request.state_dir);
  if (!workload_dir.ok()) return workload_dir.status();
  std::string working_dir = config.working_dir.empty() ? *workload_dir
                            : config.working_dir[0] == '/'
                                ? config.working_dir
                                : *workload_dir + "/" + config.working_dir;
  json::object comment;
  if (const json::value* l = request.instance.if_contains("labels"); l && l->is_object())
    comment = l->get_object();
  comment["paas.gantry.dev/instance"] = project + "/" + name;
  comment["paas.gantry.dev/uid"] = uid;
  const std::string job_name = project + "." + name;
  const WorkloadUser* user = options_.sandbox.user ? &*options_.sandbox.user : nullptr;
  SbatchCall call =
      BuildSbatch(config, job_name, json::serialize(comment), working_dir, gres, user);
  std::map<std::string, std::string> env = JobEnvironment(request, config, *workload_dir, user);
  std::string line = "sbatch";
  for (const auto& a : call.args) line += " " + ShellQuote(a);
  if (!call.stdin_script.empty()) line += " < (spec.slurm.script)";
  context.Log(line + (config.slurm_conf.empty() ? "" : "  [SLURM_CONF=" + config.slurm_conf + "]"));
  auto submitted = cli.Submit(call.args, call.stdin_script, env, *workload_dir);
  if (!submitted.ok()) {
    context.Log(std::string(submitted.status().message()));
    return submitted.status();
  }
  json::object state = StateJson(*submitted, config.slurm_conf, request.run_uid);
  context.SaveDriverState(state);
  WriteStateFile(request.state_dir, kStateFile, state);
  context.Log("submitted Slurm job " + std::to_string(*submitted) + " as " + job_name);
  return *submitted;
}

// Waits until the job runs (its outputs, and it is supervised from then on), ends, or the
// deploy's timeout or a cancellation gives up on it (the job is cancelled then).
absl::StatusOr<json::object> SlurmDriver::AwaitRunning(const DeployRequest& request,
                                                       const SlurmConfig& config,
                                                       const SlurmCli& cli, int64_t job_id,
                                                       RunContext& context) {
  const std::string id = std::to_string(job_id);
  int64_t timeout_s = Int(request.config, "timeoutSeconds");
  const auto timeout = timeout_s > 0 ? std::chrono::seconds(timeout_s) : request.timeout;
  const auto deadline = SteadyClock::now() + timeout;
  std::string last_logged;
  int missing = 0;
  auto give_up = [&](absl::Status why) -> absl::Status {
    absl::Status s = CancelAndWait(cli, job_id, &context);
    if (!s.ok()) {
      context.Log("the job could not be cancelled: " + std::string(s.message()));
      return absl::Status(why.code(),
                          std::string(why.message()) +
                              "; cancelling the job failed too: " + std::string(s.message()));
    }
    RemoveStateFile(request.state_dir, kStateFile);
    return absl::Status(why.code(), std::string(why.message()) + "; the job was cancelled");
  };
  while (true) {
    if (context.Canceled())
      return give_up(absl::CancelledError("canceled while Slurm job " + id + " waited to run"));
    auto listing = cli.Jobs({job_id});
    if (!listing.ok()) {
      std::string msg(listing.status().message());
      if (msg != last_logged) context.Log(msg + " (retrying)");
      last_logged = msg;
      context.SetWaiting("SlurmUnavailable", msg);
    } else if (const SlurmJob* j = FindJob(*listing, job_id); !j) {
      // Just submitted, it must be listed; give a slow controller a few looks first.
      if (++missing >= 5) {
        RemoveStateFile(request.state_dir, kStateFile);
        return absl::AbortedError("Slurm no longer knows job " + id + " (it was removed)");
      }
    } else if (IsRunningState(j->state)) {
      context.SetWaiting("", "");
      context.Log("Slurm job " + id + " is " + j->state + " on " + j->nodes +
                  (j->gres_detail.empty()
                       ? std::string()
                       : " with " + std::string(Outputs(*j).at("gpus").as_string())));
      Track(request, config, job_id);
      return Outputs(*j);
    } else if (IsTerminalState(j->state)) {
      RemoveStateFile(request.state_dir, kStateFile);
      return absl::AbortedError(EndMessage(*j) + " before gantry saw it running");
    } else {
      std::string msg = PendingMessage(*j);
      if (msg != last_logged) context.Log(msg);
      last_logged = msg;
      context.SetWaiting(j->state == "SUSPENDED" ? "JobSuspended" : ReasonWord(j->reason), msg);
    }
    if (SteadyClock::now() >= deadline)
      return give_up(absl::DeadlineExceededError(
          "Slurm job " + id + " did not start within " + std::to_string(timeout.count()) +
          "s (spec.slurm.timeoutSeconds)" + (last_logged.empty() ? "" : ": " + last_logged)));
    Nap(options_.wait_poll, &context);
  }
}

void SlurmDriver::Track(const DeployRequest& request, const SlurmConfig& config, int64_t job_id) {
  auto t = std::make_shared<Tracked>();
  t->key = InstanceKey(request);
  t->ns = StringMember(request.instance, "project");
  t->name = StringMember(request.instance, "name");
  t->uid = StringMember(request.instance, "uid");
  t->state_dir = request.state_dir;
  t->slurm_conf = config.slurm_conf;
  t->job_id = job_id;
  t->run_uid = request.run_uid;
  std::lock_guard<std::mutex> lock(mu_);
  jobs_[t->key] = t;
}

absl::Status SlurmDriver::Destroy(const DeployRequest& request, RunContext& context) {
  Untrack(InstanceKey(request));
  json::object state = ReadStateFile(request.state_dir, kStateFile);
  int64_t job_id = Int(state, "jobId");
  std::string slurm_conf = StringMember(state, "slurmConf");
  if (job_id <= 0) {
    // No state file (an older data directory): what the last deploy reported.
    job_id = Int(request.previous_outputs, "jobId");
    auto config = ParseSlurmConfig(request.config);
    if (config.ok()) slurm_conf = config->slurm_conf;
  }
  if (job_id <= 0) {
    context.Log("no Slurm job of this instance is known; nothing to cancel");
    return absl::OkStatus();
  }
  absl::Status s = CancelAndWait(Cli(slurm_conf), job_id, &context);
  if (s.ok()) RemoveStateFile(request.state_dir, kStateFile);
  return s;
}

absl::Status SlurmDriver::Stop(const DeployRequest& request, RunContext& context) {
  return Destroy(request, context);
}

absl::StatusOr<json::object> SlurmDriver::Start(const DeployRequest& request, RunContext& context) {
  return Apply(request, context);
}

bool SlurmDriver::Recover(const json::object& state) { return true; }

void SlurmDriver::ValidateConfig(const json::object& config,
                                 std::vector<FieldCause>* causes) const {
  ConfigProblems problems("spec.slurm");
  CheckSlurmConfig(config, &problems);
  problems.AppendCauses(causes);
}

bool SlurmDriver::Adopt(const DeployRequest& request, const json::object& state) {
  int64_t job_id = Int(state, "jobId");
  if (job_id <= 0) return false;
  auto t = std::make_shared<Tracked>();
  t->key = InstanceKey(request);
  t->ns = StringMember(request.instance, "project");
  t->name = StringMember(request.instance, "name");
  t->uid = StringMember(request.instance, "uid");
  t->state_dir = request.state_dir;
  t->slurm_conf = StringMember(state, "slurmConf");
  t->job_id = job_id;
  t->run_uid = StringMember(state, "runUid");
  if (ReadStateFile(t->state_dir, kStateFile).empty())
    WriteStateFile(t->state_dir, kStateFile, state);
  std::lock_guard<std::mutex> lock(mu_);
  jobs_[t->key] = t;
  wake_.notify_all();
  return true;
}

void SlurmDriver::SupervisorLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, options_.poll_interval, [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    Tick();
    lock.lock();
  }
}

void SlurmDriver::Tick() {
  std::map<std::string, std::vector<std::shared_ptr<Tracked>>> by_cluster;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, t] : jobs_) by_cluster[t->slurm_conf].push_back(t);
  }
  std::vector<WorkloadEvent> events;
  for (const auto& [conf, tracked] : by_cluster) {
    std::vector<int64_t> ids;
    for (const auto& t : tracked) ids.push_back(t->job_id);
    // Unlocked: squeue may take seconds (ten when the controller is down).
    auto listing = Cli(conf).Jobs(ids);
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& t : tracked) {
      auto it = jobs_.find(t->key);
      if (it == jobs_.end() || it->second != t) continue;  // destroyed or redeployed meanwhile
      auto report = [&](WorkloadEvent::Kind kind, const std::string& reason,
                        const std::string& msg) {
        if (kind == t->reported && reason == t->reported_reason) return;
        t->reported = kind;
        t->reported_reason = reason;
        WorkloadEvent e;
        e.kind = kind;
        e.ns = t->ns;
        e.name = t->name;
        e.instance_uid = t->uid;
        e.reason = reason;
        e.message = msg;
        e.driver_state = StateJson(t->job_id, t->slurm_conf, t->run_uid);
        events.push_back(std::move(e));
      };
      const std::string id = std::to_string(t->job_id);
      if (!listing.ok()) {
        report(WorkloadEvent::Kind::kRestarting, "SlurmUnavailable",
               "cannot see Slurm job " + id + ": " + std::string(listing.status().message()));
        continue;
      }
      const SlurmJob* j = FindJob(*listing, t->job_id);
      if (!j) {
        report(WorkloadEvent::Kind::kFailed, "JobLost",
               "Slurm no longer knows job " + id +
                   " (it ended long enough ago to be purged, or its record was lost)");
        jobs_.erase(it);
      } else if (IsTerminalState(j->state)) {
        report(WorkloadEvent::Kind::kFailed, EndReason(j->state),
               EndMessage(*j) + " outside Gantry");
        jobs_.erase(it);
      } else if (IsRunningState(j->state)) {
        report(WorkloadEvent::Kind::kRunning, "Running",
               "Slurm job " + id + " is " + j->state + " on " + j->nodes);
      } else if (j->state == "SUSPENDED") {
        report(WorkloadEvent::Kind::kRestarting, "JobSuspended",
               "Slurm job " + id + " is SUSPENDED");
      } else {
        report(WorkloadEvent::Kind::kRestarting, "JobRequeued",
               PendingMessage(*j) + " again (requeued)");
      }
    }
  }
  if (WorkloadObserver* o = observer_.load())
    for (const auto& e : events) o->OnWorkloadEvent(e);
}

}  // namespace gantry::drivers::slurm
