// The executor of engine.h: runs a claimed run through its driver (Execute) and records its
// end and the instance's resulting status in one transaction (Finish, model::ApplyOutcome).
#include <spdlog/spdlog.h>

#include "common/status_macros.h"
#include "common/utf8.h"
#include "engine/dependencies.h"
#include "engine/deployment.h"
#include "engine/engine.h"
#include "engine/engine_internal.h"
#include "engine/usage_ledger.h"
#include "model/codec.h"
#include "model/sealed_fields.h"
#include "model/validation.h"

namespace gantry::engine {

namespace json = boost::json;
using internal::IsConflict;
using internal::kMaxRetries;
using internal::Scrub;
using model::Phase;
using model::RunAction;

struct Engine::Prepared {
  drivers::DeployRequest req;
  drivers::Driver* driver = nullptr;
  std::string driver_name;           // the template's spec.driver
  std::vector<std::string> secrets;  // sensitive values, scrubbed from logs and messages
  // The ttl that applies to the instance (profile revision's policy, instance's spec).
  std::optional<std::chrono::seconds> ttl;
};

// The RunContext a driver sees: log lines scrubbed of sensitive values, cancellation, and
// durable driver state.
class Engine::Context final : public drivers::RunContext {
 public:
  Context(Engine& engine, const model::Run& run, std::shared_ptr<Active> active,
          std::vector<std::string> secrets)
      : engine_(engine), run_(run), active_(std::move(active)), secrets_(std::move(secrets)) {}

  void Log(std::string_view line) override {
    engine_.logs_.Append(run_.metadata.uid, Scrub(std::string(line), secrets_));
  }
  bool Canceled() const override { return active_->cancel.load(); }
  void SaveDriverState(const json::object& state) override {
    absl::Status s = engine_.UpdateRun(active_->ns, active_->name,
                                       [&](model::Run& run) { run.driver_state = state; });
    if (!s.ok())
      spdlog::warn("run {}: cannot save driver state: {}", active_->name, std::string(s.message()));
  }
  void SetWaiting(std::string_view reason, std::string_view message) override {
    for (int attempt = 0; attempt < kMaxRetries; ++attempt) {
      auto instance = internal::InstanceOf(engine_.store_, run_);
      if (!instance.ok()) return;
      model::InstanceStatus& st = instance->status;
      const Phase phase = st.PhaseOr();
      if (st.last_run != run_.metadata.name ||
          (phase != Phase::kInProgress && phase != Phase::kWaiting))
        return;
      const Phase next = reason.empty() ? Phase::kInProgress : Phase::kWaiting;
      const std::string next_message = reason.empty()
                                           ? std::string(model::RunActionName(run_.action)) +
                                                 " run " + run_.metadata.name + " is running"
                                           : Scrub(std::string(message), secrets_);
      if (phase == next && st.reason.value_or("") == reason &&
          (reason.empty() || st.message.value_or("") == next_message))
        return;
      st.phase = next;
      st.reason = std::string(reason);
      st.message = next_message;
      std::vector<store::Write> w;
      w.push_back(internal::UpdateOf(*instance));
      absl::Status s = internal::CommitRelaxed(engine_.store_, std::move(w));
      if (s.ok() || !IsConflict(s)) return;
    }
  }

 private:
  Engine& engine_;
  const model::Run run_;
  std::shared_ptr<Active> active_;
  const std::vector<std::string> secrets_;
};

namespace {

// The instance's variables with sealed values unsealed.
absl::StatusOr<json::object> UnsealGiven(const SecretBox& secrets,
                                         const model::Instance& instance) {
  json::object given = instance.variables;
  for (auto& kv : given) {
    if (!kv.value().is_string() || !SecretBox::IsSealed(kv.value().get_string())) continue;
    auto plain =
        secrets.Unseal(kv.value().get_string(), model::VariableContext(instance.raw, kv.key()));
    if (!plain.ok())
      return absl::FailedPreconditionError(
          "variable " + std::string(kv.key()) +
          " cannot be decrypted: " + std::string(plain.status().message()));
    kv.value() = *plain;
  }
  return given;
}

// The variables the driver gets, resolved from the template, profile and instance.
absl::StatusOr<std::map<std::string, model::ResolvedVariable>> Variables(
    const SecretBox& secrets, const model::Instance& instance, const Deployment& d) {
  ASSIGN_OR_RETURN(json::object given, UnsealGiven(secrets, instance));
  ASSIGN_OR_RETURN(json::object profile,
                   model::UnsealDefaults(secrets, d.profile_kind, d.profile_ref.ns,
                                         d.profile_ref.name, d.profile.raw));
  ASSIGN_OR_RETURN(json::object tmpl,
                   model::UnsealDefaults(secrets, "EnvironmentTemplate", d.profile.template_ref.ns,
                                         d.profile.template_ref.name, d.tmpl.raw));
  std::vector<FieldCause> causes;
  auto resolved = model::ResolveVariables(tmpl, profile, given, &causes);
  if (!causes.empty())
    return absl::FailedPreconditionError("variables no longer valid: " + causes[0].field + ": " +
                                         causes[0].message);
  return resolved;
}

// The action a driver sees in DeployRequest::action.
std::string DriverAction(RunAction action) {
  switch (action) {
    case RunAction::kApply:
      return "apply";
    case RunAction::kDestroy:
      return "destroy";
    case RunAction::kStop:
      return "stop";
    case RunAction::kStart:
      return "start";
  }
  return "apply";
}

// Runs `run`'s action through the driver; the outputs of a deploy or start.
absl::StatusOr<json::object> RunDriver(drivers::Driver& driver, RunAction action,
                                       const drivers::DeployRequest& req,
                                       drivers::RunContext& ctx) {
  switch (action) {
    case RunAction::kApply:
      return driver.Apply(req, ctx);
    case RunAction::kStart:
      return driver.Start(req, ctx);
    case RunAction::kStop:
      RETURN_IF_ERROR(driver.Stop(req, ctx));
      return json::object{};
    case RunAction::kDestroy:
      break;
  }
  RETURN_IF_ERROR(driver.Destroy(req, ctx));
  return json::object{};
}

json::object InstanceView(const model::Instance& i) {
  return json::object{{"kind", i.kind},
                      {"name", i.metadata.name},
                      {"project", i.metadata.ns},
                      {"uid", i.metadata.uid},
                      {"labels", i.metadata.labels},
                      {"annotations", i.metadata.annotations},
                      {"displayName", i.display_name},
                      {"description", i.description}};
}

}  // namespace

absl::Status Engine::AddCompute(const model::Instance& service, drivers::DeployRequest* req) {
  // The compute instance's outputs are the service template's inputs (its endpoint, job
  // id, GPUs), as they are now: a redeployed compute instance may have new ones.
  const std::string& cns = service.compute_ns;
  const std::string& cname = service.compute_name;
  auto compute = internal::LoadInstance(store_, kComputeInstanceKind, cns, cname);
  if (!compute.ok())
    return absl::FailedPreconditionError("compute instance " + cns + "/" + cname +
                                         " of the service is gone");
  const model::InstanceStatus& cs = compute->status;
  json::array gpus;
  for (const auto& g : cs.gpus.value_or(std::vector<std::string>{}))
    gpus.push_back(json::string(g));
  const json::object resources = cs.resources.value_or(json::object{});
  req->compute = json::object{{"name", cname},
                              {"project", cns},
                              {"phase", cs.phase ? model::PhaseName(*cs.phase) : ""},
                              {"outputs", cs.outputs.value_or(json::object{})},
                              {"gpus", std::move(gpus)},
                              {"resources", resources}};
  // A service has no resources of its own: it uses its compute instance's, and on this
  // host (local driver) sees the compute instance's GPUs.
  if (req->resources.empty()) req->resources = resources;
  req->gpu_indices = cs.gpus.value_or(std::vector<std::string>{});
  return absl::OkStatus();
}

absl::StatusOr<Engine::Prepared> Engine::Prepare(const model::Run& run,
                                                 std::optional<model::Instance> claimed) {
  // Everything the driver needs, from the revisions the instance pinned.
  auto instance = claimed ? *std::move(claimed)
                          : internal::LoadInstance(store_, run.instance_kind, run.metadata.ns,
                                                   run.instance_name);
  if (!instance.ok()) return absl::FailedPreconditionError("the instance is gone");
  ASSIGN_OR_RETURN(Deployment deployment, ResolveRun(store_, *instance, run));
  ASSIGN_OR_RETURN(auto resolved, Variables(secrets_, *instance, deployment));
  const model::TemplateSpec& tmpl = deployment.tmpl;
  Prepared p;
  p.driver = drivers_.Find(tmpl.driver);
  p.driver_name = tmpl.driver;
  if (!p.driver)
    return absl::UnavailableError("driver \"" + tmpl.driver +
                                  "\" is not available in this gantryd");
  drivers::DeployRequest& req = p.req;
  req.action = DriverAction(run.action);
  req.run_name = run.metadata.name;
  req.run_uid = run.metadata.uid;
  req.attempt = static_cast<int>(run.attempt);
  req.instance = InstanceView(*instance);
  for (auto& [k, v] : resolved) {
    req.variables[k] = v.value;
    if (v.sensitive) p.secrets.push_back(v.value);
  }
  req.resources = deployment.profile.resources.raw;
  if (run.instance_kind == kServiceInstanceKind) RETURN_IF_ERROR(AddCompute(*instance, &req));
  req.config = tmpl.config;
  req.previous_outputs = instance->status.outputs.value_or(json::object{});
  req.state_dir = options_.state_dir + "/" + instance->metadata.uid;
  for (const auto& g : run.gpus.value_or(std::vector<std::string>{})) req.gpu_indices.push_back(g);
  req.gpu_uuids = run.gpu_uuids.value_or(std::vector<std::string>{});
  // A preempted workload gets its profile's grace period between SIGTERM and the kill.
  if (run.action == RunAction::kStop && run.cause == kPreempted)
    req.stop_grace = model::DecodeScheduling(deployment.profile.raw).grace_period;
  req.timeout = tmpl.timeout_seconds > 0 ? std::chrono::seconds(tmpl.timeout_seconds)
                                         : options_.default_timeout;
  p.ttl = model::EffectiveTtl(model::DecodeLifecyclePolicy(deployment.profile.raw),
                              instance->lifecycle);
  return p;
}

void Engine::Execute(Claimed claimed) {
  const model::Run run = std::move(claimed.run);
  const auto started = clock_.SteadyNow();
  const std::string uid = run.metadata.uid;
  auto active = std::make_shared<Active>();
  active->ns = run.metadata.ns;
  active->name = run.metadata.name;
  active->uid = uid;
  {
    std::lock_guard<std::mutex> lock(mu_);
    active_[uid] = active;
  }
  auto prepared = Prepare(run, std::move(claimed.instance));
  absl::Status result;
  json::object outputs;
  const drivers::Driver* driver = nullptr;
  std::optional<std::chrono::seconds> ttl;
  if (!prepared.ok()) {
    result = prepared.status();
  } else {
    driver = prepared->driver;
    ttl = prepared->ttl;
    const drivers::DeployRequest& req = prepared->req;
    Context ctx(*this, run, active, prepared->secrets);
    ctx.Log("gantry: " + std::string(model::RunActionName(run.action)) + " run " +
            run.metadata.name + " (attempt " + std::to_string(req.attempt) + ") of instance " +
            run.instance_name + " with driver " + prepared->driver_name);
    auto out = RunDriver(*prepared->driver, run.action, req, ctx);
    if (out.ok())
      outputs = std::move(*out);
    else
      result = out.status();
    // Driver errors quote the program's last output lines: no secret may reach a status, and
    // nothing a workload printed may make the objects unreadable (common/utf8.h).
    if (!result.ok())
      result = absl::Status(result.code(),
                            ScrubUtf8(Scrub(std::string(result.message()), prepared->secrets)));
    if (FindInvalidUtf8(outputs)) {
      json::value clean(std::move(outputs));
      ScrubUtf8(clean);
      outputs = std::move(clean.get_object());
    }
    ctx.Log(result.ok() ? "gantry: run succeeded"
                        : "gantry: run failed (" + internal::ReasonFor(result) +
                              "): " + std::string(result.message()));
  }
  Finish(run, result, outputs, "", driver, ttl);
  logs_.Finish(uid);
  std::lock_guard<std::mutex> lock(mu_);
  active_.erase(uid);
  double secs = std::chrono::duration<double>(clock_.SteadyNow() - started).count();
  metrics_.Observe("gantry_run_duration_seconds",
                   {{"action", std::string(model::RunActionName(run.action))}}, secs);
}

void Engine::Finish(const model::Run& claimed, const absl::Status& result,
                    const json::object& outputs, const std::string& reason_override,
                    const drivers::Driver* driver, std::optional<std::chrono::seconds> ttl) {
  model::RunOutcome outcome;
  outcome.action = claimed.action;
  outcome.result = result.ok() ? model::RunOutcome::Result::kSucceeded
                   : result.code() == absl::StatusCode::kCancelled
                       ? model::RunOutcome::Result::kCanceled
                       : model::RunOutcome::Result::kFailed;
  outcome.run_name = claimed.metadata.name;
  outcome.reason = reason_override.empty() ? internal::ReasonFor(result) : reason_override;
  outcome.message = std::string(result.message());
  outcome.cause = claimed.cause;
  outcome.outputs = outputs;
  if (ttl) outcome.expires_at = FormatRfc3339(clock_.Now() + *ttl);
  outcome.generation = claimed.generation;
  outcome.service = claimed.instance_kind == kServiceInstanceKind;
  for (int attempt = 0; attempt < kMaxRetries * 5; ++attempt) {
    absl::Status s = FinishOnce(claimed, outcome, driver);
    if (s.ok()) return;
    // A conflict, or a usage rollup another close created first: read again and retry.
    if (!usage::IsRollupRace(s) && !absl::IsNotFound(s)) {
      spdlog::error("run {}: cannot record its end: {}", claimed.metadata.name,
                    std::string(s.message()));
      if (absl::IsUnavailable(s)) return;  // the store is gone: recovery finishes it
    }
  }
}

absl::Status Engine::FinishOnce(const model::Run& claimed, const model::RunOutcome& result,
                                const drivers::Driver* driver) {
  auto run = internal::LoadRun(store_, claimed.metadata.ns, claimed.metadata.name);
  if (!run.ok()) return absl::OkStatus();  // gone: nothing to record
  if (!options_.sole_owner && run->lease && !run->lease->holder.empty() &&
      run->lease->holder != options_.holder) {
    // Several replicas: a run whose lease another replica took over (this one stalled past
    // its lease) is that replica's to end.
    spdlog::warn("run {}/{}: lease lost to {}; not recording this replica's result",
                 claimed.metadata.ns, claimed.metadata.name, run->lease->holder);
    return absl::OkStatus();
  }
  model::RunOutcome outcome = result;
  outcome.now = Now();
  const bool ok = outcome.result == model::RunOutcome::Result::kSucceeded;
  const bool destroy = claimed.action == RunAction::kDestroy;
  const bool starts = StartsWorkload(claimed.action);
  run->phase = ok ? model::RunPhase::kSucceeded
               : outcome.result == model::RunOutcome::Result::kCanceled ? model::RunPhase::kCanceled
                                                                        : model::RunPhase::kFailed;
  run->reason = outcome.reason;
  run->message =
      ok ? std::string(model::RunActionName(claimed.action)) + " succeeded" : outcome.message;
  run->completion_time = outcome.now;
  run->lease.reset();
  if (ok && starts) run->outputs = outcome.outputs;
  std::vector<store::Write> writes;
  writes.push_back(internal::UpdateOf(*std::move(run)));  // its typed fields are read on
  auto instance = internal::InstanceOf(store_, claimed);
  const bool remove = ok && destroy && claimed.delete_instance;
  std::vector<model::Run> runs_to_remove;
  std::string owner;
  size_t instance_write = 0;  // the index of the instance's update in writes (0: none)
  // GPUs are held from the claim of a deploy (or start) until a destroy or stop succeeds or
  // the deploy (start) fails.
  const bool release_gpus = instance.ok() && ok != starts;
  if (instance.ok()) {
    owner = instance->metadata.OwnerKey();
    if (remove) {
      if (auto runs = RunsOf(claimed.instance_kind, claimed.metadata.ns, claimed.instance_name);
          runs.ok())
        runs_to_remove = *std::move(runs);
      writes = DeletesOf(runs_to_remove);
      writes.push_back({store::Write::Op::kDelete, instance->kind, instance->raw,
                        instance->metadata.resource_version, 0});
    } else {
      outcome.compute_name = instance->compute_name;
      // A long-running workload's pid and ports, for re-adoption after a restart.
      if (driver && driver->Caps().long_running && starts) outcome.driver_state = run->driver_state;
      model::ApplyOutcome(outcome, &instance->status);
      instance_write = writes.size();
      writes.push_back(internal::UpdateOf(*std::move(instance)));  // typed fields read on
    }
  }
  // The usage ledger closes in the commit that releases the GPUs (usage_ledger.h).
  if (release_gpus || remove)
    RETURN_IF_ERROR(usage::AppendClose(store_, claimed.metadata.ns, claimed.instance_uid,
                                       clock_.Now(), &writes));
  auto stored = store_.Commit(std::move(writes));
  if (!stored.ok()) return stored.status();
  if (release_gpus || remove) gpus_.Release(owner);
  metrics_.Add("gantry_runs_total", {{"action", std::string(model::RunActionName(claimed.action))},
                                     {"phase", std::string(model::RunPhaseName(run->phase))}});
  for (const auto& r : runs_to_remove) logs_.Remove(r.metadata.uid);
  if (remove && instance.ok() && outcome.service) ReleaseCreatedCompute(*instance);
  if (claimed.instance_kind == kComputeInstanceKind && instance_write > 0 &&
      instance_write < stored->size())
    if (auto now = model::DecodeInstance(std::move((*stored)[instance_write])); now.ok())
      NoteComputeState(*now);
  // A service stopped along with its compute instance starts again when that one does.
  if (ok && outcome.service && claimed.action == RunAction::kStop &&
      claimed.cause == "ComputeStopped" && instance.ok())
    RestartWhenComputeReady(*instance);
  // Fair share: a preempted instance starts again by itself; the project's labels follow.
  if (ok && !outcome.service && claimed.action == RunAction::kStop && claimed.cause == kPreempted &&
      instance.ok())
    RestartPreempted(*instance);
  if ((release_gpus || remove) && !outcome.service) RelabelAdmissions(claimed.metadata.ns);
  return absl::OkStatus();
}

}  // namespace gantry::engine
