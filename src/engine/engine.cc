#include "engine/engine.h"

#include <cstdio>
#include <ctime>
#include <optional>

#include <spdlog/spdlog.h>

#include <unistd.h>

#include <algorithm>

#include "common/errors.h"
#include "common/ids.h"
#include "common/status_macros.h"
#include "common/utf8.h"
#include "engine/deployment.h"
#include "engine/dependencies.h"
#include "model/codec.h"
#include "model/lifecycle.h"
#include "model/sealed_fields.h"
#include "model/validation.h"

namespace gantry::engine {
namespace {

namespace json = boost::json;
using model::GetInt;
using model::GetString;

constexpr char kInstance[] = "ComputeInstance";
constexpr char kService[] = "ServiceInstance";
constexpr char kRun[] = "Run";
constexpr char kProfile[] = "ComputeProfile";
constexpr char kTemplate[] = "EnvironmentTemplate";
constexpr int kMaxRetries = 20;

int64_t Rv(const json::object& o) {
  std::string rv = GetString(o, "metadata.resourceVersion", "0");
  return rv.empty() ? 0 : std::stoll(rv);
}

const json::object& At(const json::object& o, std::string_view path) {
  static const json::object kEmpty;
  const json::value* v = model::FindPath(o, path);
  return v && v->is_object() ? v->get_object() : kEmpty;
}

// A lost test-and-set (errors.h VersionConflictError): read again and retry.
bool IsConflict(const absl::Status& s) { return absl::IsAborted(s); }

// The GPU indices in status.gpus of a run or an instance (held on this host).
std::vector<std::string> StatusGpus(const json::object& obj) {
  std::vector<std::string> out;
  if (const json::value* g = model::FindPath(obj, "status.gpus"); g && g->is_array())
    for (const auto& e : g->get_array())
      if (e.is_string()) out.emplace_back(e.get_string());
  return out;
}

// The kind of instance a run acts on (runs made before services existed name none).
std::string KindOf(const json::object& run) {
  return GetString(run, "spec.instanceRef.kind", kInstance);
}

// "2026-11-30T14:00:00Z" (FormatRfc3339's form); nullopt for anything else.
std::optional<std::chrono::system_clock::time_point> ParseRfc3339(const std::string& s) {
  std::tm tm{};
  char z = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &z) != 7 || z != 'Z')
    return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return std::chrono::system_clock::from_time_t(::timegm(&tm));
}

// `text` with every sensitive value (3 characters or more) replaced by ******.
std::string Scrub(std::string text, const std::vector<std::string>& secrets) {
  for (const auto& s : secrets) {
    if (s.size() < 3) continue;
    for (size_t pos; (pos = text.find(s)) != std::string::npos;) text.replace(pos, s.size(), "******");
  }
  return text;
}

// The run's reason for a driver's Status (driver.h's error contract).
std::string ReasonFor(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kOk: return "";
    case absl::StatusCode::kDeadlineExceeded: return "Timeout";
    case absl::StatusCode::kCancelled: return "Canceled";
    case absl::StatusCode::kUnavailable: return "DriverUnavailable";
    default: return "DriverError";
  }
}

void SetCondition(json::object& status, const std::string& type, bool ok, const std::string& reason,
                  const std::string& message, const std::string& now) {
  json::array conditions;
  if (const json::value* c = status.if_contains("conditions"); c && c->is_array())
    conditions = c->get_array();
  json::object cond{{"type", type}, {"status", ok ? "True" : "False"}, {"reason", reason},
                    {"message", message}, {"lastTransitionTime", now}};
  bool replaced = false;
  for (auto& c : conditions) {
    if (c.is_object() && GetString(c.get_object(), "type") == type) {
      if (GetString(c.get_object(), "status") == (ok ? "True" : "False"))
        cond["lastTransitionTime"] = GetString(c.get_object(), "lastTransitionTime", now);
      c = cond;
      replaced = true;
    }
  }
  if (!replaced) conditions.push_back(cond);
  status["conditions"] = std::move(conditions);
}

}  // namespace

// The RunContext a driver sees: log lines scrubbed of sensitive values, cancellation, and
// durable driver state.
class Engine::Context final : public drivers::RunContext {
 public:
  Context(Engine& engine, const json::object& run, std::shared_ptr<Active> active,
          std::vector<std::string> secrets)
      : engine_(engine), run_(run), active_(std::move(active)), secrets_(std::move(secrets)) {}

  void Log(std::string_view line) override {
    engine_.logs_.Append(GetString(run_, "metadata.uid"), Scrub(std::string(line), secrets_));
  }
  bool Canceled() const override { return active_->cancel.load(); }
  void SaveDriverState(const json::object& state) override {
    absl::Status s = engine_.UpdateRun(active_->ns, active_->name, [&](json::object& run) {
      model::EnsureObject(run, "status")["driverState"] = state;
    });
    if (!s.ok()) spdlog::warn("run {}: cannot save driver state: {}", active_->name, std::string(s.message()));
  }
  void SetWaiting(std::string_view reason, std::string_view message) override {
    const std::string run_name = GetString(run_, "metadata.name");
    const std::string instance_name = GetString(run_, "spec.instanceRef.name");
    for (int attempt = 0; attempt < kMaxRetries; ++attempt) {
      auto instance = engine_.store_.Get(KindOf(run_), active_->ns, instance_name);
      if (!instance.ok() ||
          GetString(*instance, "metadata.uid") != GetString(run_, "spec.instanceRef.uid"))
        return;
      json::object& is = model::EnsureObject(*instance, "status");
      std::string phase = GetString(is, "phase");
      if (GetString(is, "lastRunRef.name") != run_name || (phase != "InProgress" && phase != "Waiting"))
        return;
      std::string new_phase = reason.empty() ? "InProgress" : "Waiting";
      std::string new_message = reason.empty() ? GetString(run_, "spec.action") + " run " + run_name + " is running"
                                               : Scrub(std::string(message), secrets_);
      if (phase == new_phase && GetString(is, "reason") == reason &&
          (reason.empty() || GetString(is, "message") == new_message))
        return;
      is["phase"] = new_phase;
      is["reason"] = std::string(reason);
      is["message"] = new_message;
      std::vector<store::Write> w;
      w.push_back({store::Write::Op::kUpdate, KindOf(run_), *instance, Rv(*instance), 0});
      auto stored = engine_.store_.Commit(std::move(w), store::Durability::kRelaxed);
      if (stored.ok() || !IsConflict(stored.status())) return;
    }
  }

 private:
  Engine& engine_;
  const json::object run_;
  std::shared_ptr<Active> active_;
  const std::vector<std::string> secrets_;
};

Engine::Engine(store::Store& store, drivers::DriverRegistry& drivers, const SecretBox& secrets,
               RunLogs& logs, const Clock& clock, Metrics& metrics, GpuAllocator& gpus,
               EngineOptions options)
    : store_(store), drivers_(drivers), secrets_(secrets), logs_(logs), clock_(clock),
      metrics_(metrics), gpus_(gpus), options_(std::move(options)) {
  metrics_.Describe("gantry_runs_total", "counter", "Runs finished, by action and phase.");
  metrics_.Describe("gantry_run_duration_seconds", "histogram", "Time from claim to end of a run.",
                    {0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600});
  metrics_.Describe("gantry_run_queue_depth", "gauge", "Runs queued and not yet claimed.");
  metrics_.Describe("gantry_runs_active", "gauge", "Runs executing on this replica.");
}

Engine::~Engine() { Stop(); }

std::string Engine::Now() const { return FormatRfc3339(clock_.Now()); }

void Engine::Notify() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    notified_ = true;
  }
  wake_.notify_all();
}

int64_t Engine::QueueDepth() {
  auto n = store_.Count(kRun, std::nullopt, {{"status.phase", true, "Queued"}});
  return n.ok() ? *n : 0;
}

absl::Status Engine::Start() {
  drivers_.SetObserver(this);
  RETURN_IF_ERROR(RebuildGpuAssignments());
  RETURN_IF_ERROR(Recover());
  AdoptWorkloads();
  running_ = true;
  threads_.emplace_back([this] { DispatchLoop(); });
  for (int i = 0; i < options_.workers; ++i) threads_.emplace_back([this] { WorkerLoop(); });
  threads_.emplace_back([this] { HeartbeatLoop(); });
  return absl::OkStatus();
}

bool Engine::Stop() {
  if (!running_.exchange(false)) return true;
  bool drained = true;
  stopping_ = true;
  {
    std::unique_lock<std::mutex> lock(mu_);
    // Claimed but not started runs go back to the queue.
    std::vector<json::object> unstarted;
    unstarted.swap(claimed_);
    lock.unlock();
    for (auto& run : unstarted) {
      UpdateRun(GetString(run, "metadata.namespace"), GetString(run, "metadata.name"),
                [](json::object& r) {
                  auto& st = model::EnsureObject(r, "status");
                  st["phase"] = "Queued";
                  st.erase("lease");
                }).IgnoreError();
    }
    lock.lock();
    drained = idle_.wait_for(lock, options_.drain, [this] { return busy_ == 0; });
    if (!drained)
      spdlog::warn("engine: {} runs still running at shutdown; the next start recovers them", busy_);
  }
  wake_.notify_all();
  work_ready_.notify_all();
  for (auto& t : threads_) {
    if (!t.joinable()) continue;
    // Workers still inside a driver call are detached: the process exits under them and the
    // next start recovers their runs from the store.
    if (drained) t.join();
    else t.detach();
  }
  threads_.clear();
  return drained;
}

absl::StatusOr<json::object> Engine::Queue(const std::string& kind, const std::string& ns,
                                           const std::string& name, const std::string& action,
                                           bool delete_instance, bool cascade) {
  if (stopping_) return absl::UnavailableError("gantryd is shutting down; try again shortly");
  for (int attempt = 0;; ++attempt) {
    ASSIGN_OR_RETURN(json::object instance, store_.Get(kind, ns, name));
    model::Action a = action == "deploy" ? model::Action::kDeploy
                      : delete_instance  ? model::Action::kDelete
                                         : model::Action::kDestroy;
    ASSIGN_OR_RETURN(model::Effect effect, model::Decide(a, instance));
    if (effect == model::Effect::kCancelQueuedRun) return Cancel(kind, ns, name);
    if (kind == kInstance && action == "destroy") {
      // Services run on this compute instance: they go first (cascade), or it stays.
      ASSIGN_OR_RETURN(auto services, ServicesOn(store_, ns, name));
      std::vector<json::object> blocking = delete_instance ? services : ActiveServices(services);
      if (!blocking.empty() && !cascade)
        return HasServicesError(delete_instance ? "delete" : "destroy", ns, name, blocking);
      if (!blocking.empty()) RETURN_IF_ERROR(CascadeToServices(blocking, delete_instance));
    }
    if (kind == kService && action == "deploy" &&
        model::GetBool(instance, "status.computeCreated")) {
      // The service's own compute instance (auto-create compute) deploys with it; the
      // service waits for it (ComputeNotReady) like any other.
      std::string cns = GetString(instance, "spec.computeRef.namespace", ns);
      std::string cname = GetString(instance, "spec.computeRef.name");
      auto compute = store_.Get(kInstance, cns, cname);
      std::string cphase = compute.ok() ? GetString(*compute, "status.phase", "NotDeployed") : "";
      if (cphase == "NotDeployed" || cphase == "Failed") {
        auto queued = Queue(kInstance, cns, cname, "deploy", false, false);
        if (!queued.ok())
          spdlog::warn("service {}/{}: cannot deploy its compute instance {}: {}", ns, name, cname,
                       std::string(queued.status().message()));
      }
    }
    int64_t count = GetInt(instance, "status.runCount", 0) + 1;
    // Service runs are NAME-sN, compute runs NAME-N: a service and a compute instance of
    // the same name never share a run name.
    std::string run_name = name + (kind == kService ? "-s" : "-") + std::to_string(count);
    std::string now = Now();
    json::object& status = model::EnsureObject(instance, "status");
    std::string previous = GetString(status, "phase", "NotDeployed");
    json::object run{
        {"apiVersion", model::kApiVersion},
        {"kind", kRun},
        {"metadata", json::object{{"name", run_name}, {"namespace", ns}, {"uid", NewUid()},
                                  {"generation", 1}, {"creationTimestamp", now},
                                  {"labels", json::object{{"paas.gantry.dev/instance", name}}}}},
        {"spec", json::object{{"instanceRef", json::object{{"kind", kind},
                                                           {"name", name},
                                                           {"uid", GetString(instance, "metadata.uid")}}},
                              {"action", action},
                              {"generation", GetInt(instance, "metadata.generation", 1)},
                              {"profileRevision", GetInt(status, "profileRevision", 1)},
                              {"templateRevision", GetInt(status, "templateRevision", 1)},
                              {"previousPhase", previous},
                              {"deleteInstance", delete_instance}}},
        {"status", json::object{{"phase", "Queued"}, {"attempt", 0}}}};
    status["phase"] = "Waiting";
    status["action"] = action;
    status["reason"] = "Queued";
    status["message"] = action + " run " + run_name + " is queued";
    status["runCount"] = count;
    status["lastRunRef"] = json::object{{"name", run_name}};
    std::vector<store::Write> writes;
    writes.push_back({store::Write::Op::kUpdate, kind, instance, Rv(instance), 0});
    writes.push_back({store::Write::Op::kCreate, kRun, std::move(run), 0, 0});
    auto stored = store_.Commit(std::move(writes));
    if (stored.ok()) {
      Notify();
      return std::move((*stored)[0]);
    }
    if (IsConflict(stored.status()) && attempt < kMaxRetries) continue;
    return stored.status();
  }
}

absl::Status Engine::CascadeToServices(const std::vector<json::object>& services, bool remove) {
  for (const auto& s : services) {
    std::string sns = GetString(s, "metadata.namespace");
    std::string sname = GetString(s, "metadata.name");
    std::string phase = GetString(s, "status.phase", "NotDeployed");
    absl::StatusOr<json::object> done;
    if (phase == "NotDeployed") {
      if (!remove) continue;
      done = RemoveRecord(kService, sns, sname);
    } else {
      done = Queue(kService, sns, sname, "destroy", remove, false);
      // A deploy still queued (waiting for this compute instance) is simply canceled.
      if (done.ok() && remove && GetString(*done, "status.phase") == "NotDeployed")
        done = RemoveRecord(kService, sns, sname);
    }
    if (!done.ok() && !absl::IsNotFound(done.status()))
      return ConflictError("cannot destroy service instance " + sns + "/" + sname +
                               " first: " + std::string(done.status().message()),
                           ReasonOf(done.status()));
  }
  return absl::OkStatus();
}

absl::StatusOr<json::object> Engine::RemoveRecord(const std::string& kind, const std::string& ns,
                                                  const std::string& name) {
  for (int attempt = 0;; ++attempt) {
    ASSIGN_OR_RETURN(json::object instance, store_.Get(kind, ns, name));
    ASSIGN_OR_RETURN(model::Effect effect, model::Decide(model::Action::kDelete, instance));
    if (effect != model::Effect::kRemoveNow)
      return ConflictError(std::string(kind == kService ? "service" : "compute") + " instance " +
                               name + " is deployed; destroy it first",
                           "Conflict");
    auto runs = RunsOf(kind, ns, name);
    if (!runs.ok()) return runs.status();
    std::vector<store::Write> writes;
    for (const auto& r : *runs) writes.push_back({store::Write::Op::kDelete, kRun, r, 0, 0});
    writes.push_back({store::Write::Op::kDelete, kind, instance, Rv(instance), 0});
    auto stored = store_.Commit(std::move(writes));
    if (stored.ok()) {
      for (const auto& r : *runs) logs_.Remove(GetString(r, "metadata.uid"));
      if (kind == kService) ReleaseCreatedCompute(instance);
      return std::move(stored->back());
    }
    if (IsConflict(stored.status()) && attempt < kMaxRetries) continue;
    return stored.status();
  }
}

absl::StatusOr<std::vector<json::object>> Engine::RunsOf(const std::string& kind,
                                                         const std::string& ns,
                                                         const std::string& name) {
  store::ListOptions q;
  q.kind = kRun;
  q.ns = ns;
  q.fields = {{"spec.instanceRef.name", true, name}};
  ASSIGN_OR_RETURN(auto page, store_.List(q));
  std::vector<json::object> out;
  for (auto& r : page.items)
    if (KindOf(r) == kind) out.push_back(std::move(r));
  return out;
}

void Engine::ReleaseCreatedCompute(const json::object& service) {
  if (!model::GetBool(service, "status.computeCreated")) return;
  std::string ns = GetString(service, "metadata.namespace");
  std::string cns = GetString(service, "spec.computeRef.namespace", ns);
  std::string cname = GetString(service, "spec.computeRef.name");
  // Other services may have been put on it since: then it stays.
  auto others = ServicesOn(store_, cns, cname);
  if (!others.ok() || !others->empty()) return;
  auto compute = store_.Get(kInstance, cns, cname);
  if (!compute.ok()) return;
  auto removed = GetString(*compute, "status.phase", "NotDeployed") == "NotDeployed"
                     ? RemoveRecord(kInstance, cns, cname)
                     : Queue(kInstance, cns, cname, "destroy", true, false);
  if (!removed.ok())
    spdlog::warn("service {}/{} is gone but its compute instance {} stays: {}", ns,
                 GetString(service, "metadata.name"), cname,
                 std::string(removed.status().message()));
}

void Engine::NoteComputeState(const json::object& compute) {
  std::string ns = GetString(compute, "metadata.namespace");
  std::string name = GetString(compute, "metadata.name");
  auto services = ServicesOn(store_, ns, name);
  if (!services.ok() || services->empty()) return;
  std::string phase = GetString(compute, "status.phase", "NotDeployed");
  bool ready = phase == "Success";
  std::string reason = "Compute" + phase;
  if (phase == "Success") reason = "ComputeSucceeded";
  std::string why = GetString(compute, "status.reason");
  std::string message = "compute instance " + name + " is " +
                        std::string(model::PhaseWords(model::ParsePhase(phase))) +
                        (why.empty() || ready ? "" : " (" + why + ")") +
                        (ready ? "" : ": " + GetString(compute, "status.message"));
  std::string now = Now();
  for (const auto& listed : *services) {
    std::string sns = GetString(listed, "metadata.namespace");
    std::string sname = GetString(listed, "metadata.name");
    for (int attempt = 0; attempt < kMaxRetries; ++attempt) {
      auto service = store_.Get(kService, sns, sname);
      if (!service.ok()) break;
      std::string sphase = GetString(*service, "status.phase");
      // Only deployed services run on it; a deploy in flight reports ComputeNotReady itself.
      if (sphase != "Success" && sphase != "Failed") break;
      json::object& st = model::EnsureObject(*service, "status");
      json::object before = st;
      SetCondition(st, "ComputeReady", ready, reason, message, now);
      if (st == before) break;
      std::vector<store::Write> w;
      w.push_back({store::Write::Op::kUpdate, kService, *service, Rv(*service), 0});
      auto stored = store_.Commit(std::move(w), store::Durability::kRelaxed);
      if (stored.ok() || !IsConflict(stored.status())) break;
    }
  }
}

absl::StatusOr<json::object> Engine::Deploy(const std::string& kind, const std::string& ns,
                                            const std::string& name) {
  return Queue(kind, ns, name, "deploy", false, false);
}

absl::StatusOr<json::object> Engine::Destroy(const std::string& kind, const std::string& ns,
                                             const std::string& name, bool cascade) {
  return Queue(kind, ns, name, "destroy", false, cascade);
}

absl::StatusOr<json::object> Engine::DeleteDeployed(const std::string& kind, const std::string& ns,
                                                    const std::string& name, bool cascade) {
  return Queue(kind, ns, name, "destroy", true, cascade);
}

absl::StatusOr<json::object> Engine::Delete(const std::string& kind, const std::string& ns,
                                            const std::string& name, bool cascade,
                                            bool* accepted) {
  *accepted = false;
  ASSIGN_OR_RETURN(json::object instance, store_.Get(kind, ns, name));
  ASSIGN_OR_RETURN(model::Effect effect, model::Decide(model::Action::kDelete, instance));
  if (effect == model::Effect::kTeardownThenRemove) {
    *accepted = true;
    return DeleteDeployed(kind, ns, name, cascade);
  }
  if (kind == kInstance) {
    ASSIGN_OR_RETURN(auto services, ServicesOn(store_, ns, name));
    if (!services.empty() && !cascade) return HasServicesError("delete", ns, name, services);
    if (!services.empty()) {
      RETURN_IF_ERROR(CascadeToServices(services, true));
      ASSIGN_OR_RETURN(auto left, ServicesOn(store_, ns, name));
      if (!left.empty())
        return ConflictError("compute instance " + name + " is not deployed but " +
                                 DescribeServices(left, ns) +
                                 " still run on it; they are being destroyed: delete it again "
                                 "when they are gone",
                             "HasServices");
    }
  }
  return RemoveRecord(kind, ns, name);
}

absl::StatusOr<json::object> Engine::Cancel(const std::string& kind, const std::string& ns,
                                            const std::string& name) {
  for (int attempt = 0;; ++attempt) {
    ASSIGN_OR_RETURN(json::object instance, store_.Get(kind, ns, name));
    ASSIGN_OR_RETURN(model::Effect effect, model::Decide(model::Action::kCancel, instance));
    (void)effect;
    std::string run_name = GetString(instance, "status.lastRunRef.name");
    ASSIGN_OR_RETURN(json::object run, store_.Get(kRun, ns, run_name));
    if (GetString(run, "status.phase") == "Running") {
      // Claimed, and Waiting because the driver waits on the infrastructure (a PENDING Slurm
      // job): the driver sees the cancellation, undoes what it started, and the run ends
      // Canceled.
      std::shared_ptr<Active> active;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (auto it = active_.find(GetString(run, "metadata.uid")); it != active_.end())
          active = it->second;
      }
      if (!active) {
        if (attempt < kMaxRetries) continue;
        return ConflictError("run " + run_name + " is running on another gantryd replica",
                             "RunStarted");
      }
      active->cancel = true;
      logs_.Append(GetString(run, "metadata.uid"), "gantry: cancel requested");
      return instance;
    }
    if (GetString(run, "status.phase") != "Queued") {
      if (attempt < kMaxRetries) continue;  // claimed meanwhile: the instance moves on
      return ConflictError("run " + run_name + " has already started", "RunStarted");
    }
    std::string now = Now();
    json::object& rs = model::EnsureObject(run, "status");
    rs["phase"] = "Canceled";
    rs["reason"] = "Canceled";
    rs["message"] = "canceled before it started; nothing ran";
    rs["completionTime"] = now;
    json::object& is = model::EnsureObject(instance, "status");
    is["phase"] = GetString(run, "spec.previousPhase", "NotDeployed");
    is["reason"] = "Canceled";
    is["message"] = GetString(run, "spec.action") + " run " + run_name + " was canceled before it started";
    std::vector<store::Write> writes;
    writes.push_back({store::Write::Op::kUpdate, kind, instance, Rv(instance), 0});
    writes.push_back({store::Write::Op::kUpdate, kRun, run, Rv(run), 0});
    auto stored = store_.Commit(std::move(writes));
    if (stored.ok()) {
      metrics_.Add("gantry_runs_total", {{"action", GetString(run, "spec.action")}, {"phase", "Canceled"}});
      logs_.Finish(GetString(run, "metadata.uid"));  // followers of the queued run see its end
      return std::move((*stored)[0]);
    }
    if (IsConflict(stored.status()) && attempt < kMaxRetries) continue;
    return stored.status();
  }
}

absl::Status Engine::UpdateRun(const std::string& ns, const std::string& name,
                               const std::function<void(json::object&)>& mutate) {
  for (int attempt = 0;; ++attempt) {
    ASSIGN_OR_RETURN(json::object run, store_.Get(kRun, ns, name));
    int64_t rv = Rv(run);
    mutate(run);
    std::vector<store::Write> writes;
    writes.push_back({store::Write::Op::kUpdate, kRun, std::move(run), rv, 0});
    auto stored = store_.Commit(std::move(writes), store::Durability::kRelaxed);
    if (stored.ok()) return absl::OkStatus();
    if (IsConflict(stored.status()) && attempt < kMaxRetries) continue;
    return stored.status();
  }
}

void Engine::DispatchLoop() {
  while (running_) {
    size_t free_slots;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait_for(lock, std::chrono::seconds(1), [this] {
        return !running_ || (notified_ && busy_ + static_cast<int>(claimed_.size()) < options_.workers);
      });
      if (!running_) return;
      notified_ = false;
      int used = busy_ + static_cast<int>(claimed_.size());
      free_slots = used < options_.workers ? static_cast<size_t>(options_.workers - used) : 0;
    }
    if (free_slots == 0) continue;
    store::ListOptions q;
    q.kind = kRun;
    q.fields = {{"status.phase", true, "Queued"}};
    q.oldest_first = true;
    // Enough to look past runs waiting for capacity (and tell each why it waits).
    q.limit = 500;
    auto page = store_.List(q);
    metrics_.Set("gantry_run_queue_depth", {}, static_cast<double>(QueueDepth()));
    if (!page.ok()) {
      spdlog::warn("engine: cannot read the run queue: {}", std::string(page.status().message()));
      continue;
    }
    size_t claimed = 0;
    std::set<std::string> blocked_types;
    for (auto& run : page->items) {
      if (!running_) return;
      if (claimed >= free_slots) break;
      Admission a = Admit(run, &blocked_types);
      switch (a.decision) {
        case Admission::Decision::kAdmit:
          if (Claim(run, a)) {
            ++claimed;
          } else if (!a.gpus.empty() && !a.gpus_were_held) {
            gpus_.Release(a.owner);
          }
          break;
        case Admission::Decision::kWait:
          NoteWaiting(run, a);
          break;
        case Admission::Decision::kFail:
          Finish(run, absl::FailedPreconditionError(a.message), {}, a.reason);
          break;
        case Admission::Decision::kSkip:
          break;
      }
    }
    if (claimed == 0) continue;  // nothing moved: wait for a change (or the periodic look)
    // More may be waiting: look again at once when something was claimed or lost.
    if (!page->items.empty()) {
      std::lock_guard<std::mutex> lock(mu_);
      notified_ = true;
    }
  }
}

bool Engine::Claim(const json::object& queued, const Admission& admission) {
  std::string ns = GetString(queued, "metadata.namespace");
  std::string instance_name = GetString(queued, "spec.instanceRef.name");
  auto instance = store_.Get(KindOf(queued), ns, instance_name);
  json::object run = queued;
  std::string now = Now();
  json::object& rs = model::EnsureObject(run, "status");
  rs["phase"] = "Running";
  rs["attempt"] = GetInt(queued, "status.attempt", 0) + 1;
  rs["startTime"] = now;
  rs["lease"] = json::object{{"holder", options_.holder}, {"host", options_.host},
                             {"renewTime", now}, {"durationSeconds", options_.lease.count()}};
  json::array indices, uuids;
  for (const auto& g : admission.gpus) {
    indices.push_back(json::string(std::to_string(g.index)));
    uuids.push_back(json::string(g.uuid));
  }
  if (!admission.gpus.empty()) {
    rs["gpus"] = indices;
    rs["gpuUuids"] = uuids;
  }
  std::vector<store::Write> writes;
  writes.push_back({store::Write::Op::kUpdate, kRun, run, Rv(queued), 0});
  if (instance.ok()) {
    json::object& is = model::EnsureObject(*instance, "status");
    if (GetString(queued, "spec.action") == "deploy") {
      if (!admission.resources.empty()) is["resources"] = admission.resources;
      if (!admission.gpus.empty()) is["gpus"] = indices;
      else is.erase("gpus");
    }
    // Several replicas: the instance's later runs go to this host.
    if (!options_.sole_owner && admission.host_bound) is["host"] = options_.host;
    is["phase"] = "InProgress";
    is["reason"] = "";
    is["message"] = GetString(queued, "spec.action") + " run " +
                    GetString(queued, "metadata.name") + " is running";
    writes.push_back({store::Write::Op::kUpdate, KindOf(queued), *instance, Rv(*instance), 0});
  }
  // Relaxed: a claim lost to a power failure leaves the run Queued, and it runs then.
  auto stored = store_.Commit(std::move(writes), store::Durability::kRelaxed);
  if (!stored.ok()) return false;  // another claimer (or a cancel) won
  if (KindOf(queued) == kInstance && stored->size() > 1) NoteComputeState((*stored)[1]);
  {
    std::lock_guard<std::mutex> lock(mu_);
    claimed_.push_back((*stored)[0]);
  }
  work_ready_.notify_one();
  return true;
}

void Engine::WorkerLoop() {
  while (true) {
    json::object run;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_ready_.wait(lock, [this] { return !running_ || !claimed_.empty(); });
      if (!running_) return;
      run = std::move(claimed_.front());
      claimed_.erase(claimed_.begin());
      ++busy_;
    }
    metrics_.Set("gantry_runs_active", {}, busy_);
    Execute(std::move(run));
    {
      std::lock_guard<std::mutex> lock(mu_);
      --busy_;
      notified_ = true;
    }
    idle_.notify_all();
    wake_.notify_all();
  }
}

void Engine::Execute(json::object run) {
  auto started = std::chrono::steady_clock::now();
  std::string ns = GetString(run, "metadata.namespace");
  std::string run_name = GetString(run, "metadata.name");
  std::string uid = GetString(run, "metadata.uid");
  auto active = std::make_shared<Active>();
  active->ns = ns;
  active->name = run_name;
  active->uid = uid;
  {
    std::lock_guard<std::mutex> lock(mu_);
    active_[uid] = active;
  }
  std::string driver_name;
  auto done = [&](const absl::Status& result, const json::object& outputs) {
    Finish(run, result, outputs, "", driver_name);
    logs_.Finish(uid);
    std::lock_guard<std::mutex> lock(mu_);
    active_.erase(uid);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    metrics_.Observe("gantry_run_duration_seconds", {{"action", GetString(run, "spec.action")}}, secs);
  };

  // Everything the driver needs, from the revisions the instance pinned.
  auto instance = store_.Get(KindOf(run), ns, GetString(run, "spec.instanceRef.name"));
  if (!instance.ok()) return done(absl::FailedPreconditionError("the instance is gone"), {});
  const json::object& ispec = At(*instance, "spec");
  auto deployment = ResolveRun(store_, *instance, run);
  if (!deployment.ok()) return done(deployment.status(), {});
  const store::Revision* profile = &deployment->profile;
  const store::Revision* tmpl = &deployment->tmpl;
  json::object given = At(ispec, "variables");
  for (auto& kv : given) {
    if (kv.value().is_string() && SecretBox::IsSealed(kv.value().get_string())) {
      auto plain = secrets_.Unseal(kv.value().get_string(),
                                   model::VariableContext(*instance, kv.key()));
      if (!plain.ok())
        return done(absl::FailedPreconditionError("variable " + std::string(kv.key()) +
                                                  " cannot be decrypted: " +
                                                  std::string(plain.status().message())), {});
      kv.value() = *plain;
    }
  }
  auto plain_profile = model::UnsealDefaults(secrets_, deployment->profile_kind,
                                             deployment->profile_ns, deployment->profile_name,
                                             profile->spec);
  auto plain_template = model::UnsealDefaults(secrets_, kTemplate, deployment->template_ns,
                                              deployment->template_name, tmpl->spec);
  if (!plain_profile.ok()) return done(plain_profile.status(), {});
  if (!plain_template.ok()) return done(plain_template.status(), {});
  std::vector<FieldCause> causes;
  auto resolved = model::ResolveVariables(*plain_template, *plain_profile, given, &causes);
  if (!causes.empty())
    return done(absl::FailedPreconditionError("variables no longer valid: " + causes[0].field +
                                              ": " + causes[0].message), {});
  driver_name = GetString(tmpl->spec, "driver");
  drivers::Driver* driver = drivers_.Find(driver_name);
  if (!driver)
    return done(absl::UnavailableError("driver \"" + driver_name +
                                       "\" is not available in this gantryd"), {});

  drivers::DeployRequest req;
  req.action = GetString(run, "spec.action") == "deploy" ? "apply" : "destroy";
  req.run_name = run_name;
  req.run_uid = uid;
  req.attempt = static_cast<int>(GetInt(run, "status.attempt", 1));
  const json::object& meta = At(*instance, "metadata");
  req.instance = json::object{{"kind", KindOf(run)}, {"name", GetString(meta, "name")}, {"project", ns},
                              {"uid", GetString(meta, "uid")},
                              {"labels", At(meta, "labels")}, {"annotations", At(meta, "annotations")},
                              {"displayName", GetString(ispec, "displayName")},
                              {"description", GetString(ispec, "description")}};
  std::vector<std::string> secrets;
  for (auto& [k, v] : resolved) {
    req.variables[k] = v.value;
    if (v.sensitive) secrets.push_back(v.value);
  }
  req.resources = At(profile->spec, "resources");
  if (KindOf(run) == kService) {
    // The compute instance's outputs are the service template's inputs (its endpoint, job
    // id, GPUs), as they are now: a redeployed compute instance may have new ones.
    std::string cns = GetString(ispec, "computeRef.namespace", ns);
    std::string cname = GetString(ispec, "computeRef.name");
    auto compute = store_.Get(kInstance, cns, cname);
    if (!compute.ok())
      return done(absl::FailedPreconditionError("compute instance " + cns + "/" + cname +
                                                " of the service is gone"), {});
    req.compute = json::object{{"name", cname}, {"project", cns},
                               {"phase", GetString(*compute, "status.phase")},
                               {"outputs", At(*compute, "status.outputs")},
                               {"gpus", At(*compute, "status").contains("gpus")
                                            ? At(*compute, "status").at("gpus")
                                            : json::value(json::array())},
                               {"resources", At(*compute, "status.resources")}};
    // A service has no resources of its own: it uses its compute instance's, and on this
    // host (local driver) sees the compute instance's GPUs.
    if (req.resources.empty()) req.resources = At(*compute, "status.resources");
    req.gpu_indices = StatusGpus(*compute);
  }
  req.config = At(tmpl->spec, driver_name);
  req.previous_outputs = At(*instance, "status.outputs");
  req.state_dir = options_.state_dir + "/" + GetString(meta, "uid");
  for (auto& g : StatusGpus(run)) req.gpu_indices.push_back(std::move(g));
  if (const json::value* g = model::FindPath(run, "status.gpuUuids"); g && g->is_array())
    for (const auto& e : g->get_array())
      if (e.is_string()) req.gpu_uuids.emplace_back(e.get_string());
  int64_t timeout = GetInt(req.config, "timeoutSeconds", 0);
  req.timeout = timeout > 0 ? std::chrono::seconds(timeout) : options_.default_timeout;

  Context ctx(*this, run, active, secrets);
  ctx.Log("gantry: " + GetString(run, "spec.action") + " run " + run_name + " (attempt " +
          std::to_string(req.attempt) + ") of instance " + GetString(meta, "name") +
          " with driver " + driver_name);
  absl::Status result;
  json::object outputs;
  if (req.action == "apply") {
    auto out = driver->Apply(req, ctx);
    if (out.ok()) outputs = std::move(*out);
    else result = out.status();
  } else {
    result = driver->Destroy(req, ctx);
  }
  // Driver errors quote the program's last output lines: no secret may reach a status, and
  // nothing a workload printed may make the objects unreadable (common/utf8.h).
  if (!result.ok())
    result = absl::Status(result.code(),
                          ScrubUtf8(Scrub(std::string(result.message()), secrets)));
  if (std::optional<std::string> bad = FindInvalidUtf8(outputs)) {
    json::value clean(std::move(outputs));
    ScrubUtf8(clean);
    outputs = std::move(clean.get_object());
  }
  ctx.Log(result.ok() ? "gantry: run succeeded"
                      : "gantry: run failed (" + ReasonFor(result) + "): " + std::string(result.message()));
  done(result, outputs);
}

void Engine::Finish(const json::object& claimed, const absl::Status& result,
                    const json::object& outputs, const std::string& reason_override,
                    const std::string& driver) {
  std::string ns = GetString(claimed, "metadata.namespace");
  std::string run_name = GetString(claimed, "metadata.name");
  std::string action = GetString(claimed, "spec.action");
  bool ok = result.ok();
  std::string reason = reason_override.empty() ? ReasonFor(result) : reason_override;
  std::string message(result.message());
  for (int attempt = 0; attempt < kMaxRetries * 5; ++attempt) {
    auto run = store_.Get(kRun, ns, run_name);
    if (!run.ok()) return;
    if (!options_.sole_owner) {
      // Several replicas: a run whose lease another replica took over (this one stalled
      // past its lease) is that replica's to end.
      std::string holder = GetString(*run, "status.lease.holder");
      if (!holder.empty() && holder != options_.holder) {
        spdlog::warn("run {}/{}: lease lost to {}; not recording this replica's result", ns,
                     run_name, holder);
        return;
      }
    }
    std::string now = Now();
    json::object& rs = model::EnsureObject(*run, "status");
    const bool canceled = result.code() == absl::StatusCode::kCancelled;
    rs["phase"] = ok ? "Succeeded" : canceled ? "Canceled" : "Failed";
    rs["reason"] = reason;
    rs["message"] = ok ? action + " succeeded" : message;
    rs["completionTime"] = now;
    rs.erase("lease");
    if (ok && action == "deploy") rs["outputs"] = outputs;
    std::vector<store::Write> writes;
    writes.push_back({store::Write::Op::kUpdate, kRun, *run, Rv(*run), 0});
    auto instance = store_.Get(KindOf(claimed), ns, GetString(claimed, "spec.instanceRef.name"));
    bool remove = ok && action == "destroy" && model::GetBool(claimed, "spec.deleteInstance");
    std::vector<json::object> runs_to_remove;
    std::string owner;
    bool release_gpus = false;
    if (instance.ok() && GetString(*instance, "metadata.uid") == GetString(claimed, "spec.instanceRef.uid")) {
      owner = GetString(*instance, "metadata.namespace") + "/" + GetString(*instance, "metadata.name") +
              "/" + GetString(*instance, "metadata.uid");
      // GPUs are held from the claim of a deploy until a destroy succeeds or the deploy fails.
      release_gpus = ok == (action == "destroy");
      if (remove) {
        auto runs = RunsOf(KindOf(claimed), ns, GetString(claimed, "spec.instanceRef.name"));
        if (runs.ok()) runs_to_remove = std::move(*runs);
        writes.clear();
        for (const auto& r : runs_to_remove)
          writes.push_back({store::Write::Op::kDelete, kRun, r, 0, 0});
        writes.push_back({store::Write::Op::kDelete, KindOf(claimed), *instance, Rv(*instance), 0});
      } else {
        json::object& is = model::EnsureObject(*instance, "status");
        if (ok && action == "deploy") {
          is["phase"] = "Success";
          is["reason"] = "";
          is["message"] = "deployed by run " + run_name;
          is["outputs"] = outputs;
          is["deployedGeneration"] = GetInt(claimed, "spec.generation", 1);
          SetCondition(is, "Deployed", true, "RunSucceeded", "deployed by run " + run_name, now);
          if (KindOf(claimed) == kService)
            SetCondition(is, "ComputeReady", true, "ComputeSucceeded",
                         "compute instance " + GetString(*instance, "spec.computeRef.name") +
                             " is Success",
                         now);
          is.erase("restartCount");
          // A long-running workload's pid and ports, for re-adoption after a restart.
          if ((driver == "local" || driver == "slurm") && rs.contains("driverState"))
            is["driverState"] = rs["driverState"];
          else is.erase("driverState");
        } else if (ok) {
          is["phase"] = "NotDeployed";
          is["reason"] = "";
          is["message"] = "destroyed by run " + run_name;
          is.erase("outputs");
          is.erase("deployedGeneration");
          is.erase("gpus");
          is.erase("driverState");
          is.erase("restartCount");
          SetCondition(is, "Deployed", false, "Destroyed", "destroyed by run " + run_name, now);
        } else if (action == "deploy" && result.code() == absl::StatusCode::kCancelled) {
          // Canceled while the infrastructure held it (a PENDING Slurm job): the driver
          // removed what it had started, so nothing is deployed.
          is["phase"] = "NotDeployed";
          is["reason"] = reason;
          is["message"] = action + " run " + run_name + " was canceled: " + message;
          is.erase("outputs");
          is.erase("deployedGeneration");
          is.erase("gpus");
          is.erase("driverState");
          SetCondition(is, "Deployed", false, reason, is["message"].as_string().c_str(), now);
        } else {
          is["phase"] = "Failed";
          is["reason"] = reason;
          is["message"] = action + " run " + run_name + " failed: " + message;
          if (action == "deploy") {
            is.erase("gpus");
            is.erase("driverState");
          }
          SetCondition(is, "Deployed", false, reason, is["message"].as_string().c_str(), now);
        }
        writes.push_back({store::Write::Op::kUpdate, KindOf(claimed), *instance, Rv(*instance), 0});
      }
    }
    auto stored = store_.Commit(std::move(writes));
    if (stored.ok()) {
      if (release_gpus || remove) gpus_.Release(owner);
      metrics_.Add("gantry_runs_total",
                   {{"action", action}, {"phase", ok ? "Succeeded" : canceled ? "Canceled" : "Failed"}});
      for (const auto& r : runs_to_remove) logs_.Remove(GetString(r, "metadata.uid"));
      if (remove && instance.ok() && KindOf(claimed) == kService) ReleaseCreatedCompute(*instance);
      if (!remove && KindOf(claimed) == kInstance && stored->size() > 1)
        NoteComputeState(stored->back());
      return;
    }
    if (!IsConflict(stored.status()) && !absl::IsNotFound(stored.status())) {
      spdlog::error("run {}: cannot record its end: {}", run_name, std::string(stored.status().message()));
      if (absl::IsUnavailable(stored.status())) return;  // the store is gone: recovery finishes it
    }
  }
}

absl::Status Engine::Recover() {
  store::ListOptions q;
  q.kind = kRun;
  q.fields = {{"status.phase", true, "Running"}};
  q.oldest_first = true;
  ASSIGN_OR_RETURN(auto page, store_.List(q));
  auto now = clock_.Now();
  for (const auto& run : page.items) {
    std::string holder = GetString(run, "status.lease.holder");
    if (holder == options_.holder) continue;
    if (options_.sole_owner) {
      RETURN_IF_ERROR(RecoverRun(run, true));
      continue;
    }
    // Another replica may be alive: only expired leases are taken over. Renewal times have
    // second precision; a second of slack keeps a live holder's lease.
    auto renewed = ParseRfc3339(GetString(run, "status.lease.renewTime"));
    auto duration = std::chrono::seconds(GetInt(run, "status.lease.durationSeconds", 30));
    if (renewed && now <= *renewed + duration + std::chrono::seconds(1)) continue;
    std::string lease_host = GetString(run, "status.lease.host");
    bool same_host = lease_host == options_.host;
    const drivers::Driver* d = drivers_.Find(DriverOf(run));
    if (d && d->Caps().host_bound && !same_host) continue;  // the replica on its host takes it over
    // Take the lease first: exactly one replica wins (the commit is guarded by the run's
    // resourceVersion) and recovers the run.
    json::object taken = run;
    model::EnsureObject(taken, "status")["lease"] =
        json::object{{"holder", options_.holder}, {"host", options_.host},
                     {"renewTime", Now()}, {"durationSeconds", options_.lease.count()}};
    std::vector<store::Write> w;
    w.push_back({store::Write::Op::kUpdate, kRun, std::move(taken), Rv(run), 0});
    auto stored = store_.Commit(std::move(w));
    if (!stored.ok()) continue;  // another replica took it, or it moved on
    spdlog::info("taking over run {}/{} from {} (lease expired)", GetString(run, "metadata.namespace"),
                 GetString(run, "metadata.name"), holder);
    RecoverRun((*stored)[0], same_host).IgnoreError();
  }
  return absl::OkStatus();
}

std::string Engine::DriverOf(const json::object& run) {
  std::string ns = GetString(run, "metadata.namespace");
  auto instance = store_.Get(KindOf(run), ns, GetString(run, "spec.instanceRef.name"));
  if (!instance.ok()) return "";
  auto deployment = ResolveRun(store_, *instance, run);
  return deployment.ok() ? deployment->driver : "";
}

absl::Status Engine::RecoverRun(const json::object& run, bool cleanup) {
  std::string ns = GetString(run, "metadata.namespace");
  std::string name = GetString(run, "metadata.name");
  // The driver cleans up what the dead run left (its process group) and says whether
  // running the action again from the start is safe.
  bool resume = false;
  auto instance = store_.Get(KindOf(run), ns, GetString(run, "spec.instanceRef.name"));
  // Another host's run: its processes are out of reach; the driver's contract (apply and
  // destroy are idempotent) makes a re-run safe. Host-bound drivers never get here.
  if (drivers::Driver* d = drivers_.Find(DriverOf(run)))
    resume = cleanup ? d->Recover(At(run, "status.driverState")) : true;
  int64_t attempts = GetInt(run, "status.attempt", 1);
  std::string uid = GetString(run, "metadata.uid");
  if (resume && attempts < kMaxAttempts) {
    logs_.Append(uid, "gantry: gantryd restarted during attempt " + std::to_string(attempts) +
                          "; the run is queued again (the driver says re-running is safe)");
    RETURN_IF_ERROR(UpdateRun(ns, name, [](json::object& r) {
      auto& st = model::EnsureObject(r, "status");
      st["phase"] = "Queued";
      st.erase("lease");
      st.erase("driverState");
    }));
    if (instance.ok()) {
      for (int i = 0; i < kMaxRetries; ++i) {
        auto inst = store_.Get(KindOf(run), ns, GetString(run, "spec.instanceRef.name"));
        if (!inst.ok()) break;
        auto& is = model::EnsureObject(*inst, "status");
        is["phase"] = "Waiting";
        is["reason"] = "ControlPlaneRestarted";
        is["message"] = "gantryd restarted while run " + name + " was running; it is queued again";
        std::vector<store::Write> w;
        w.push_back({store::Write::Op::kUpdate, KindOf(run), *inst, Rv(*inst), 0});
        if (store_.Commit(std::move(w)).ok()) break;
      }
    }
    spdlog::info("recovery: run {}/{} re-queued", ns, name);
  } else {
    logs_.Append(uid, "gantry: gantryd restarted during the run; it cannot be resumed safely");
    Finish(run, absl::AbortedError("gantryd restarted while the run was in progress"), {});
    // Finish maps the code to DriverError; say precisely why.
    UpdateRun(ns, name, [](json::object& r) {
      model::EnsureObject(r, "status")["reason"] = "ControlPlaneRestarted";
    }).IgnoreError();
    for (int i = 0; i < kMaxRetries; ++i) {
      auto inst = store_.Get(KindOf(run), ns, GetString(run, "spec.instanceRef.name"));
      if (!inst.ok() || GetString(*inst, "status.phase") != "Failed") break;
      auto& is = model::EnsureObject(*inst, "status");
      is["reason"] = "ControlPlaneRestarted";
      std::vector<store::Write> w;
      w.push_back({store::Write::Op::kUpdate, KindOf(run), *inst, Rv(*inst), 0});
      if (store_.Commit(std::move(w)).ok()) break;
    }
    spdlog::info("recovery: run {}/{} failed with reason ControlPlaneRestarted", ns, name);
  }
  return absl::OkStatus();
}

Engine::Admission Engine::Admit(const json::object& run, std::set<std::string>* blocked_types) {
  Admission a;
  std::string ns = GetString(run, "metadata.namespace");
  std::string name = GetString(run, "spec.instanceRef.name");
  const std::string kind = KindOf(run);
  const std::string action = GetString(run, "spec.action");
  if (kind == kService && action == "deploy") {
    // A service deploys only onto a compute instance in Success.
    auto service = store_.Get(kService, ns, name);
    if (!service.ok()) return a;  // the worker reports it
    std::string cns = GetString(*service, "spec.computeRef.namespace", ns);
    std::string cname = GetString(*service, "spec.computeRef.name");
    auto compute = store_.Get(kInstance, cns, cname);
    if (!compute.ok()) {
      a.decision = Admission::Decision::kFail;
      a.reason = "ComputeNotFound";
      a.message = "compute instance " + cname + " of project " + cns + " does not exist";
      return a;
    }
    std::string phase = GetString(*compute, "status.phase", "NotDeployed");
    if (phase != "Success") {
      a.decision = Admission::Decision::kWait;
      a.reason = "ComputeNotReady";
      a.message = "waiting for compute instance " + (cns == ns ? "" : cns + "/") + cname +
                  " to be Success (it is " +
                  std::string(model::PhaseWords(model::ParsePhase(phase))) +
                  (GetString(*compute, "status.reason").empty()
                       ? ""
                       : ": " + GetString(*compute, "status.reason")) +
                  "); the service deploys as soon as it is";
      return a;
    }
  }
  if (kind == kInstance && action == "destroy") {
    // Services on this compute instance go first (a cascading destroy or delete queued them).
    auto services = ServicesOn(store_, ns, name);
    if (services.ok()) {
      std::vector<json::object> blocking =
          model::GetBool(run, "spec.deleteInstance") ? *services : ActiveServices(*services);
      if (!blocking.empty()) {
        a.decision = Admission::Decision::kWait;
        a.reason = "ServicesRunning";
        a.message = "waiting for " + std::to_string(blocking.size()) + " service instance" +
                    (blocking.size() == 1 ? "" : "s") + " to be " +
                    (model::GetBool(run, "spec.deleteInstance") ? "deleted" : "destroyed") + " first: " +
                    DescribeServices(blocking, ns);
        return a;
      }
    }
  }
  if (options_.sole_owner && action != "deploy") return a;
  auto instance = store_.Get(KindOf(run), ns, name);
  if (!instance.ok()) return a;  // the worker reports it
  a.owner = ns + "/" + name + "/" + GetString(*instance, "metadata.uid");
  auto deployment = ResolveRun(store_, *instance, run);
  if (!deployment.ok()) return a;  // the worker reports it
  const store::Revision* profile = &deployment->profile;
  const drivers::Driver* driver = drivers_.Find(deployment->driver);
  a.host_bound = driver && driver->Caps().host_bound;
  if (!options_.sole_owner && a.host_bound) {
    // Several replicas: an instance that a host-bound driver deployed stays on its host.
    std::string host = GetString(*instance, "status.host");
    if (!host.empty() && host != options_.host) {
      a.decision = Admission::Decision::kSkip;
      return a;
    }
  }
  // Services use their compute instance's resources: no capacity or quota of their own.
  if (action != "deploy" || kind == kService) return a;
  a.resources = At(profile->spec, "resources");
  std::string type = GetString(a.resources, "gpu.type");  // "" = any type
  int count = static_cast<int>(GetInt(a.resources, "gpu.count", 0));
  bool local = deployment->driver == "local";
  if (local && count > 0 && type.empty()) {
    // Any type will do: the type with the most free GPUs among those with enough in all.
    std::set<std::string> types;
    for (const auto& g : gpus_.inventory().gpus) types.insert(g.type);
    int best_free = -1;
    for (const auto& t : types) {
      if (gpus_.Total(t) < count) continue;
      int f = gpus_.Free(t);
      if (f > best_free) {
        best_free = f;
        type = t;
      }
    }
  }
  std::string type_words = type.empty() ? "" : type + " ";
  if (!type.empty()) model::EnsureObject(a.resources, "gpu")["type"] = type;

  if (local && count > 0) {
    int total = gpus_.Total(type);
    if (total < count) {
      // Several replicas: a replica on another host may have them.
      a.decision = options_.sole_owner ? Admission::Decision::kFail : Admission::Decision::kWait;
      a.reason = "Unschedulable";
      std::map<std::string, int> have;
      for (const auto& g : gpus_.inventory().gpus) ++have[g.type];
      std::string inventory;
      for (const auto& [t, n] : have) inventory += (inventory.empty() ? "" : ", ") + std::to_string(n) + " " + t;
      a.message = "instance " + name + " needs " + std::to_string(count) + " " + type_words +
                  "GPU" + (count == 1 ? "" : "s") + " but this host has " +
                  (total == 0 ? "none" : std::to_string(total)) + " (" +
                  (inventory.empty() ? "no GPUs" : inventory) + ", " + gpus_.inventory().source + ")";
      return a;
    }
  }

  // Project quota: deployed instances and GPUs per type.
  auto project = store_.Get("Project", "", ns);
  if (project.ok()) {
    const json::object& quota = At(*project, "spec.quota");
    int64_t max_instances = GetInt(quota, "instances", -1);
    const json::value* gpu_quota = quota.if_contains("gpus");
    int64_t max_gpus = -1;
    if (gpu_quota && gpu_quota->is_object() && count > 0) {
      if (const json::value* q = gpu_quota->get_object().if_contains(type)) {
        if (q->is_number()) max_gpus = q->to_number<int64_t>();
        else if (q->is_string()) max_gpus = std::atoll(std::string(q->get_string()).c_str());
      }
    }
    if (max_instances >= 0 || max_gpus >= 0) {
      int64_t deployed = 0, used = 0;
      // What the project holds: instances being or deployed, and failed ones whose GPUs
      // are still assigned (held until a destroy).
      for (const char* phase : {"InProgress", "Success", "Failed", "Waiting"}) {
        store::ListOptions q;
        q.kind = kInstance;
        q.ns = ns;
        q.fields = {{"status.phase", true, phase}};
        auto page = store_.List(q);
        if (!page.ok()) continue;
        for (const auto& i : page->items) {
          const json::value* held = model::FindPath(i, "status.gpus");
          if (std::string_view(phase) == "Failed" &&
              (!held || !held->is_array() || held->get_array().empty()))
            continue;
          // Waiting counts only while its deploy runs (a Slurm job PENDING), not when queued.
          if (std::string_view(phase) == "Waiting") {
            auto r = store_.Get(kRun, ns, GetString(i, "status.lastRunRef.name"));
            if (!r.ok() || GetString(*r, "status.phase") != "Running" ||
                GetString(*r, "spec.action") != "deploy")
              continue;
          }
          ++deployed;
          if (GetString(i, "status.resources.gpu.type") == type)
            used += GetInt(i, "status.resources.gpu.count", 0);
        }
      }
      if (max_instances >= 0 && deployed + 1 > max_instances) {
        a.decision = Admission::Decision::kWait;
        a.reason = "QuotaExceeded";
        a.message = "project " + ns + " allows " + std::to_string(max_instances) +
                    " deployed instance" + (max_instances == 1 ? "" : "s") + " and has " +
                    std::to_string(deployed) + "; " + name + " waits until one is destroyed";
        return a;
      }
      if (max_gpus >= 0 && used + count > max_gpus) {
        a.decision = Admission::Decision::kWait;
        a.reason = "QuotaExceeded";
        a.message = "project " + ns + " has a quota of " + std::to_string(max_gpus) + " " + type +
                    " GPUs; " + std::to_string(used) + " are in use and " + name + " needs " +
                    std::to_string(count);
        return a;
      }
    }
  }

  if (local && count > 0) {
    if (blocked_types->count(type)) {
      a.decision = Admission::Decision::kWait;
      a.reason = "InsufficientCapacity";
      a.message = "needs " + std::to_string(count) + " " + type_words + "GPU" +
                  (count == 1 ? "" : "s") + "; queued behind earlier deploys waiting for " +
                  type_words + "GPUs";
      return a;
    }
    int free_before = gpus_.Free(type);
    bool held = false;
    for (const auto& [index, owner] : gpus_.Assignments()) held = held || owner == a.owner;
    auto assigned = gpus_.Assign(a.owner, type, count);
    if (!assigned) {
      blocked_types->insert(type);
      a.decision = Admission::Decision::kWait;
      a.reason = "InsufficientCapacity";
      a.message = "needs " + std::to_string(count) + " " + type_words + "GPU" +
                  (count == 1 ? "" : "s") + "; " + std::to_string(free_before) + " of " + std::to_string(gpus_.Total(type)) +
                  " are free";
      return a;
    }
    a.gpus = std::move(*assigned);
    a.gpus_were_held = held;
  }
  return a;
}

void Engine::NoteWaiting(const json::object& run, const Admission& a) {
  std::string ns = GetString(run, "metadata.namespace");
  auto instance = store_.Get(KindOf(run), ns, GetString(run, "spec.instanceRef.name"));
  if (!instance.ok()) return;
  json::object& is = model::EnsureObject(*instance, "status");
  if (GetString(is, "phase") != "Waiting" ||
      GetString(is, "lastRunRef.name") != GetString(run, "metadata.name"))
    return;
  if (GetString(is, "reason") == a.reason && GetString(is, "message") == a.message) return;
  is["reason"] = a.reason;
  is["message"] = a.message;
  std::vector<store::Write> w;
  w.push_back({store::Write::Op::kUpdate, KindOf(run), *instance, Rv(*instance), 0});
  // A concurrent change wins; the next look retries.
  store_.Commit(std::move(w), store::Durability::kRelaxed).IgnoreError();
}

absl::Status Engine::RebuildGpuAssignments() {
  store::ListOptions q;
  q.kind = kInstance;
  q.limit = 1000;
  while (true) {
    ASSIGN_OR_RETURN(auto page, store_.List(q));
    for (const auto& i : page.items) {
      if (!options_.sole_owner && GetString(i, "status.host") != options_.host) continue;
      const json::value* g = model::FindPath(i, "status.gpus");
      if (!g || !g->is_array() || g->get_array().empty()) continue;
      std::vector<int> indices;
      for (const auto& e : g->get_array())
        if (e.is_string()) indices.push_back(std::atoi(std::string(e.get_string()).c_str()));
      std::string owner = GetString(i, "metadata.namespace") + "/" + GetString(i, "metadata.name") +
                          "/" + GetString(i, "metadata.uid");
      auto rejected = gpus_.Restore(owner, indices);
      if (!rejected.empty())
        spdlog::warn("instance {} holds GPUs this host does not have (any more) or another holds",
                     owner);
    }
    if (page.continue_token.empty()) break;
    q.continue_token = page.continue_token;
  }
  return absl::OkStatus();
}

void Engine::AdoptWorkloads() {
  for (const char* kind : {kInstance, kService}) AdoptWorkloads(kind);
}

void Engine::AdoptWorkloads(const std::string& kind) {
  store::ListOptions q;
  q.kind = kind;
  q.fields = {{"status.phase", true, "Success"}};
  auto page = store_.List(q);
  if (!page.ok()) return;
  for (const auto& inst : page->items) {
    const json::object& state = At(inst, "status.driverState");
    if (state.empty()) continue;
    // Several replicas: each adopts the workloads of its own host.
    if (!options_.sole_owner && GetString(inst, "status.host") != options_.host) continue;
    std::string ns = GetString(inst, "metadata.namespace");
    std::string name = GetString(inst, "metadata.name");
    auto deployment = ResolvePinned(store_, inst);
    if (!deployment.ok()) continue;
    const store::Revision* prof = &deployment->profile;
    const store::Revision* tmpl = &deployment->tmpl;
    std::string driver_name = deployment->driver;
    drivers::Driver* driver = drivers_.Find(driver_name);
    if (!driver) continue;
    drivers::DeployRequest req;
    req.action = "apply";
    const json::object& meta = At(inst, "metadata");
    req.instance = json::object{{"kind", kind}, {"name", name}, {"project", ns}, {"uid", GetString(meta, "uid")},
                                {"labels", At(meta, "labels")}};
    req.config = At(tmpl->spec, driver_name);
    req.resources = At(prof->spec, "resources");
    req.state_dir = options_.state_dir + "/" + GetString(meta, "uid");
    req.gpu_indices = StatusGpus(inst);
    if (kind == kService) {
      auto compute = store_.Get(kInstance, GetString(inst, "spec.computeRef.namespace", ns),
                                GetString(inst, "spec.computeRef.name"));
      if (compute.ok()) req.gpu_indices = StatusGpus(*compute);
    }
    if (driver->Adopt(req, state)) {
      spdlog::info("adopted the workload of instance {}/{}", ns, name);
      continue;
    }
    drivers::WorkloadEvent e;
    e.kind = drivers::WorkloadEvent::Kind::kFailed;
    e.ns = ns;
    e.name = name;
    e.instance_uid = GetString(meta, "uid");
    e.reason = "WorkloadLost";
    e.message = "the workload was gone when gantryd restarted (pid " +
                std::to_string(GetInt(state, "pid", 0)) + ")";
    e.restart_count = static_cast<int>(GetInt(inst, "status.restartCount", 0));
    OnWorkloadEvent(e);
  }
}

void Engine::OnWorkloadEvent(const drivers::WorkloadEvent& e) {
  for (int attempt = 0; attempt < kMaxRetries; ++attempt) {
    // The event names the instance by project, name and uid; a compute and a service
    // instance may share a name, never a uid.
    std::string kind = kInstance;
    auto instance = store_.Get(kind, e.ns, e.name);
    if (!instance.ok() || GetString(*instance, "metadata.uid") != e.instance_uid) {
      kind = kService;
      instance = store_.Get(kind, e.ns, e.name);
    }
    if (!instance.ok() || GetString(*instance, "metadata.uid") != e.instance_uid) return;
    json::object& is = model::EnsureObject(*instance, "status");
    std::string phase = GetString(is, "phase");
    // Only a deployed workload's news matter; a run in progress owns the status.
    if (phase != "Success" && phase != "Failed") return;
    std::string now = Now();
    is["restartCount"] = e.restart_count;
    if (!e.driver_state.empty()) is["driverState"] = e.driver_state;
    switch (e.kind) {
      case drivers::WorkloadEvent::Kind::kRunning:
        is["phase"] = "Success";
        is["reason"] = "";
        is["message"] = e.message.empty() ? "the workload is running" : e.message;
        SetCondition(is, "Ready", true, "Running", is["message"].as_string().c_str(), now);
        break;
      case drivers::WorkloadEvent::Kind::kRestarting:
        is["reason"] = e.reason;
        is["message"] = e.message;
        SetCondition(is, "Ready", false, e.reason, e.message, now);
        break;
      case drivers::WorkloadEvent::Kind::kFailed:
        is["phase"] = "Failed";
        is["reason"] = e.reason;
        is["message"] = e.message;
        SetCondition(is, "Ready", false, e.reason, e.message, now);
        break;
    }
    std::vector<store::Write> w;
    w.push_back({store::Write::Op::kUpdate, kind, *instance, Rv(*instance), 0});
    auto stored = store_.Commit(std::move(w));
    if (stored.ok() && kind == kInstance) NoteComputeState((*stored)[0]);
    if (stored.ok() || !IsConflict(stored.status())) return;
  }
}

json::object Engine::NodeView() {
  const Inventory& inv = gpus_.inventory();
  auto assignments = gpus_.Assignments();
  std::map<std::string, int64_t> capacity, allocated;
  json::array gpus;
  for (const auto& g : inv.gpus) {
    ++capacity[g.type];
    json::object o{{"index", g.index}, {"uuid", g.uuid}, {"name", g.name}, {"type", g.type},
                   {"memoryMiB", g.memory_mib}};
    if (auto it = assignments.find(g.index); it != assignments.end()) {
      ++allocated[g.type];
      std::string owner = it->second;
      o["assignedTo"] = owner.substr(0, owner.rfind('/'));
    }
    gpus.push_back(std::move(o));
  }
  json::object cap, alloc;
  for (const auto& [t, n] : capacity) {
    cap[t] = n;
    alloc[t] = allocated[t];
  }
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  return json::object{{"apiVersion", model::kApiVersion},
                      {"kind", "Node"},
                      {"metadata", json::object{{"name", host}}},
                      {"status", json::object{{"gpuSource", inv.source},
                                              {"capacity", std::move(cap)},
                                              {"allocated", std::move(alloc)},
                                              {"gpus", std::move(gpus)}}}};
}

void Engine::HeartbeatLoop() {
  auto period = std::max<std::chrono::seconds>(std::chrono::seconds(1), options_.lease / 3);
  while (running_) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait_for(lock, period, [this] { return !running_; });
      if (!running_) return;
    }
    std::vector<std::shared_ptr<Active>> active;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [uid, a] : active_) active.push_back(a);
    }
    std::string now = Now();
    for (auto& a : active)
      UpdateRun(a->ns, a->name, [&](json::object& r) {
        if (GetString(r, "status.phase") != "Running") return;
        if (GetString(r, "status.lease.holder") != options_.holder) return;
        model::EnsureObject(r, "status.lease")["renewTime"] = now;
      }).IgnoreError();
    // Several replicas: take over the runs of replicas whose leases expired.
    if (!options_.sole_owner) Recover().IgnoreError();
  }
}

}  // namespace gantry::engine
