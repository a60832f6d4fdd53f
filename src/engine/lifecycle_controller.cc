#include "engine/lifecycle_controller.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <set>

#include "common/errors.h"
#include "common/ids.h"
#include "common/status_macros.h"
#include "engine/approvals.h"
#include "engine/created_compute.h"
#include "engine/dependencies.h"
#include "engine/deployment.h"
#include "engine/engine_internal.h"
#include "model/approval.h"
#include "model/codec.h"
#include "model/schema.h"

namespace gantry::engine {

namespace json = boost::json;
using std::chrono::seconds;

namespace {

constexpr seconds kFirstBackoff{60};
constexpr seconds kMaxBackoff{3600};
constexpr seconds kPruneEvery{3600};
constexpr seconds kRetryList{1};  // a pass that could not read tries again this soon
constexpr std::array<const char*, 2> kInstanceKinds = {"ComputeInstance", "ServiceInstance"};

std::string PluralOf(const std::string& kind) {
  const model::KindInfo* info = model::FindKindByName(kind);
  return info ? info->plural : kind;
}

// "ttl 8h expired", "schedule stop "0 20 * * 1-5" (Europe/Berlin) fell due".
std::string Because(const Due& due) {
  switch (due.trigger) {
    case Trigger::kTtl:
      return due.policy + " expired";
    case Trigger::kIdle:
      return due.policy;
    default:
      return due.policy + " fell due";
  }
}

// A schedule's start asks the approval gate first (docs/approvals.md), as system:lifecycle:
// for a compute instance, its own start (true: it now waits for approval and nothing is to
// be started); for a service, the start of the compute instance it auto-created, after which
// the service itself starts and waits for it. Without gates (nullptr) nothing asks.
absl::StatusOr<bool> AskApproval(store::Store& store, Approvals* approvals,
                                 const model::Instance& instance) {
  if (!approvals) return false;
  const std::string& ns = instance.metadata.ns;
  if (instance.kind == kComputeInstanceKind) {
    ASSIGN_OR_RETURN(auto gated, approvals->Gate(ns, instance.metadata.name,
                                                 model::RunAction::kStart, kLifecycleUser));
    return gated.has_value();
  }
  if (!instance.status.compute_created) return false;
  auto compute = internal::LoadInstance(store, kComputeInstanceKind, instance.compute_ns,
                                        instance.compute_name);
  auto action = compute.ok() ? CreatedComputeAction(compute->status.PhaseOr()) : std::nullopt;
  // A refusal is the engine's to report when the service's start queues the compute instance.
  if (action)
    approvals->Gate(instance.compute_ns, instance.compute_name, *action, kLifecycleUser)
        .IgnoreError();
  return false;
}

std::string Until(WallTime deadline, WallTime now) {
  auto left = std::chrono::duration_cast<seconds>(deadline - now);
  return Words(std::max(left, seconds(1)));
}

}  // namespace

LifecycleController::LifecycleController(store::Store& store, Engine& engine,
                                         const drivers::DriverRegistry& drivers,
                                         auth::AuditLog& audit, const Clock& clock,
                                         Metrics& metrics, LifecycleControllerOptions options)
    : store_(store),
      engine_(engine),
      drivers_(drivers),
      audit_(audit),
      clock_(clock),
      metrics_(metrics),
      options_(options),
      started_(clock.Now()),
      next_prune_(clock.Now()),
      pass_over_all_at_(clock.Now()) {
  metrics_.Describe("gantry_lifecycle_actions_total", "counter",
                    "Automatic lifecycle actions queued, by action (stop, destroy, start) and "
                    "reason (TTLExpired, Idle, Scheduled).");
  metrics_.Describe("gantry_gpu_seconds_reclaimed_total", "counter",
                    "GPU-seconds that instances stopped by a lifecycle policy did not hold, "
                    "counted by this gantryd while they stay stopped.");
  metrics_.Add("gantry_gpu_seconds_reclaimed_total", {}, 0);
  metrics_.Describe("gantry_lifecycle_instances_examined_total", "counter",
                    "Instances the lifecycle controller read, by pass: over all running and "
                    "stopped ones (all), or over those commits touched (touched).");
}

void LifecycleController::Start() {
  thread_.Start([this](std::stop_token stop) { Loop(stop); });
}

// The loop's waits end on `stop` (the one between passes through its stop_callback).
void LifecycleController::Stop() { thread_.Stop(); }

void LifecycleController::Notify() {
  std::lock_guard<std::mutex> lock(mu_);
  over_all_ = true;
  notified_ = true;
  if (wake_.stop_possible()) wake_.request_stop();
}

void LifecycleController::OnCommit(const std::vector<store::Event>& events) {
  std::lock_guard<std::mutex> lock(mu_);
  bool touched = false;
  for (const store::Event& e : events) {
    if (e.kind != kComputeInstanceKind && e.kind != kServiceInstanceKind) continue;
    // A request for approval made or changed: its expiry is read at the next pass.
    if (e.type != "DELETED" &&
        model::GetString(e.object, "status.reason") == model::kPendingApprovalReason) {
      approvals_touched_ = true;
      touched = true;
    }
    // Only a running or stopped instance has deadlines to read; one that left those phases
    // needs nothing (its reclaimed GPU-seconds stop when it is no longer Stopped at a look).
    const std::string phase = model::GetString(e.object, "status.phase");
    if (over_all_ || (phase != "Success" && phase != "Stopped")) continue;
    touched = true;
    touched_.emplace(e.kind, e.ns, e.name);
    if (touched_.size() > kMaxTouched) {
      over_all_ = true;
      touched_.clear();
    }
  }
  if (!touched) return;
  notified_ = true;
  if (wake_.stop_possible()) wake_.request_stop();
}

bool LifecycleController::WaitForPass(WallTime at_least, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return passed_.wait_for(lock, timeout, [&] { return last_pass_ && *last_pass_ >= at_least; });
}

void LifecycleController::Loop(std::stop_token stop) {
  auto last_pass = clock_.SteadyNow() - options_.min_pass_interval;
  while (!stop.stop_requested()) {
    // Commits that came in quick succession make one pass.
    clock_.SleepUntil(last_pass + options_.min_pass_interval, stop);
    if (stop.stop_requested()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      notified_ = false;
    }
    last_pass = clock_.SteadyNow();
    WallTime began = clock_.Now();
    WallTime next = Pass(began);
    {
      std::lock_guard<std::mutex> lock(mu_);
      last_pass_ = began;
    }
    passed_.notify_all();
    auto wait =
        std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(next - clock_.Now()),
                   std::chrono::milliseconds(0), std::chrono::milliseconds(kRescan));
    std::stop_source wake;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (notified_) continue;
      wake_ = wake;
    }
    std::stop_callback on_stop(stop, [wake]() mutable { wake.request_stop(); });
    clock_.SleepUntil(clock_.SteadyNow() + wait, wake.get_token());
    std::lock_guard<std::mutex> lock(mu_);
    wake_ = std::stop_source(std::nostopstate);
  }
}

WallTime LifecycleController::Pass(WallTime now) {
  bool over_all, approvals_touched;
  std::set<Touched> touched;
  {
    std::lock_guard<std::mutex> lock(mu_);
    over_all = over_all_ || now >= pass_over_all_at_;
    over_all_ = false;
    touched.swap(touched_);
    approvals_touched = approvals_touched_;
    approvals_touched_ = false;
  }
  if (over_all)
    pass_over_all_at_ = PassOverAll(now);
  else
    pass_over_all_at_ = std::min(pass_over_all_at_, PassOverTouched(touched, now));
  WallTime next = pass_over_all_at_;
  if (approvals_) {
    // The pending requests are listed when one was made or changed, or the earliest
    // expiry (or the rescan) is due; not after every commit to an instance.
    if (over_all || approvals_touched || now >= approvals_due_at_)
      approvals_due_at_ = approvals_->ExpireDue(now);
    next = std::min(next, approvals_due_at_);
  }
  if (now >= next_prune_) PruneEvents(now);
  return next;
}

WallTime LifecycleController::PassOverAll(WallTime now) {
  WallTime next = now + kRescan;
  std::set<std::string> stopped_uids;
  size_t examined = 0;
  for (const char* kind : kInstanceKinds) {
    for (const char* phase : {"Success", "Stopped"}) {
      auto listed = ListPhase(kind, phase);
      if (!listed.ok()) {
        spdlog::warn("lifecycle: cannot list {} instances: {}", kind,
                     std::string(listed.status().message()));
        next = std::min(next, now + kRetryList);
        continue;
      }
      examined += listed->size();
      for (const model::Instance& instance : *listed) {
        if (instance.status.PhaseOr() == model::Phase::kStopped)
          stopped_uids.insert(instance.metadata.uid);
        Look(instance, now, &next);
      }
    }
  }
  std::erase_if(accrued_, [&](const auto& kv) { return !stopped_uids.count(kv.first); });
  metrics_.Add("gantry_lifecycle_instances_examined_total", {{"pass", "all"}},
               static_cast<double>(examined));
  return next;
}

// Each instance as stored now (it may have moved on since the commit that touched it). One
// that cannot be read now (not deleted: the store failed) makes the next pass, soon, one over
// all.
WallTime LifecycleController::PassOverTouched(const std::set<Touched>& touched, WallTime now) {
  WallTime next = now + kRescan;
  for (const auto& [kind, ns, name] : touched) {
    auto instance = internal::LoadInstance(store_, kind, ns, name);
    if (!instance.ok()) {
      if (!absl::IsNotFound(instance.status())) next = std::min(next, now + kRetryList);
      continue;
    }
    model::Phase phase = instance->status.PhaseOr();
    if (phase != model::Phase::kStopped) accrued_.erase(instance->metadata.uid);
    if (phase == model::Phase::kSuccess || phase == model::Phase::kStopped)
      Look(*instance, now, &next);
  }
  metrics_.Add("gantry_lifecycle_instances_examined_total", {{"pass", "touched"}},
               static_cast<double>(touched.size()));
  return next;
}

void LifecycleController::Look(const model::Instance& instance, WallTime now, WallTime* next) {
  const PolicyView* view = PolicyOf(instance);
  if (!view) return;
  const model::Phase phase = instance.status.PhaseOr();
  std::optional<WallTime> stopped;
  if (phase == model::Phase::kStopped) {
    AccrueReclaimed(instance, *view, now);
    stopped = StoppedAt(instance);
  }
  if (view->policy.idle && !view->gpu_metrics && phase == model::Phase::kSuccess)
    NoteNoGpuMetrics(instance, *view);
  for (const Due& due : DeadlinesOf(instance, *view, stopped)) Handle(instance, due, now, next);
}

absl::StatusOr<std::vector<model::Instance>> LifecycleController::ListPhase(
    const std::string& kind, const std::string& phase) {
  store::ListOptions q;
  q.kind = kind;
  q.fields.push_back({"status.phase", true, phase});
  ASSIGN_OR_RETURN(auto objects, internal::ListAll(store_, std::move(q)));
  return internal::DecodeInstances(std::move(objects));
}

const PolicyView* LifecycleController::PolicyOf(const model::Instance& instance) {
  RevisionKey key{instance.kind, instance.profile_ns, instance.profile_name,
                  instance.status.profile_revision, instance.status.template_revision};
  auto it = policies_.find(key);
  if (it == policies_.end()) {
    auto d = ResolvePinned(store_, instance);
    if (!d.ok() && !absl::IsFailedPrecondition(d.status())) return nullptr;  // try next pass
    std::optional<PolicyView> view;
    if (d.ok()) {
      const drivers::Driver* driver = drivers_.Find(d->tmpl.driver);
      view = MakePolicyView(d->profile.raw, driver && driver->Caps().gpu_metrics);
      view->driver = d->tmpl.driver;
    }
    it = policies_.emplace(key, std::move(view)).first;
  }
  return it->second ? &*it->second : nullptr;
}

std::optional<WallTime> LifecycleController::StoppedAt(const model::Instance& instance) {
  if (!instance.status.last_run) return std::nullopt;
  std::string key = instance.metadata.ns + "/" + *instance.status.last_run;
  if (auto it = stopped_at_.find(key); it != stopped_at_.end()) return it->second;
  auto run = internal::LoadRun(store_, instance.metadata.ns, *instance.status.last_run);
  if (!run.ok() || !run->completion_time) return std::nullopt;
  auto at = internal::ParseRfc3339(*run->completion_time);
  if (at) stopped_at_[key] = *at;  // an ended run does not change
  return at;
}

void LifecycleController::Handle(const model::Instance& instance, const Due& due, WallTime now,
                                 WallTime* next) {
  if (due.deadline > now) {
    *next = std::min(*next, due.deadline);
    if (!due.warning.empty()) Warn(instance, due, now, next);
    return;
  }
  std::string key = instance.metadata.uid + "/" + TriggerName(due.trigger);
  if (auto it = backoff_.find(key); it != backoff_.end()) {
    if (it->second.resource_version == instance.metadata.resource_version &&
        now < it->second.retry) {
      *next = std::min(*next, it->second.retry);
      return;
    }
  }
  WarnIfNeverWarned(instance, due, now);
  Fire(instance, due);
}

void LifecycleController::Fire(const model::Instance& instance, const Due& due) {
  auto waits = due.verb == Verb::kStart ? AskApproval(store_, approvals_, instance)
                                        : absl::StatusOr<bool>(false);
  absl::Status s = !waits.ok() ? waits.status() : *waits ? absl::OkStatus() : Act(instance, due);
  const std::string& kind = instance.kind;
  const std::string& name = instance.metadata.name;
  if (s.ok()) {
    backoff_.erase(instance.metadata.uid + "/" + TriggerName(due.trigger));
    spdlog::info("lifecycle: {} {}/{}: {}", VerbName(due.verb), instance.metadata.ns, name,
                 Because(due));
    metrics_.Add("gantry_lifecycle_actions_total",
                 {{"action", VerbName(due.verb)}, {"reason", due.reason}});
    auth::AuditEntry e;
    e.user = kLifecycleUser;
    e.authenticated = true;
    e.verb = VerbName(due.verb);
    e.resource = PluralOf(kind);
    e.ns = instance.metadata.ns;
    e.name = name;
    e.subresource = VerbName(due.verb);
    e.result = "Allowed";
    e.code = 202;
    e.message = due.reason + ": " + Because(due);
    if (*waits) e.message += "; the start waits for approval";
    audit_.Record(e);
    return;
  }
  // Another replica fired it first, or the instance changed under us (the engine's 409s
  // then say it is no longer running): nothing to do, the commit that changed it brings the
  // next pass. Only a refusal of the instance as we saw it is one (the driver cannot stop).
  if (absl::IsUnavailable(s)) return;  // the engine is stopping: the next start looks again
  auto now = internal::LoadInstance(store_, kind, instance.metadata.ns, name);
  if (!now.ok() || now->metadata.resource_version != instance.metadata.resource_version) return;
  Refused(instance, due, s);
}

absl::Status LifecycleController::Act(const model::Instance& instance, const Due& due) {
  const std::string& kind = instance.kind;
  const std::string& ns = instance.metadata.ns;
  const std::string& name = instance.metadata.name;
  switch (due.verb) {
    case Verb::kStop:
      return engine_.Stop(kind, ns, name, due.reason).status();
    case Verb::kDestroy:
      return engine_.Destroy(kind, ns, name, /*cascade=*/false, due.reason).status();
    case Verb::kStart:
      return engine_.Start(kind, ns, name, due.reason).status();
  }
  return absl::OkStatus();
}

void LifecycleController::Refused(const model::Instance& instance, const Due& due,
                                  const absl::Status& why) {
  std::string key = instance.metadata.uid + "/" + TriggerName(due.trigger);
  Backoff& b = backoff_[key];
  bool same = b.resource_version == instance.metadata.resource_version;
  b.delay = same && b.delay.count() > 0 ? std::min(b.delay * 2, kMaxBackoff) : kFirstBackoff;
  b.retry = clock_.Now() + b.delay;
  b.resource_version = instance.metadata.resource_version;
  std::string message = Because(due) + ", but the instance cannot be " +
                        (due.verb == Verb::kStart ? "started" : VerbName(due.verb) + "ped") + ": " +
                        std::string(why.message()) + " (tried again in " + Words(b.delay) + ")";
  if (due.verb == Verb::kDestroy)
    message =
        Because(due) + ", but the instance cannot be destroyed: " + std::string(why.message());
  spdlog::warn("lifecycle: {}/{}: {}", instance.metadata.ns, instance.metadata.name, message);
  // Our own write must not count as a change that ends the backoff.
  if (int64_t rv = SetCondition(instance, "LifecyclePolicy", "ActionRefused", message); rv > 0)
    b.resource_version = rv;
}

std::vector<seconds> LifecycleController::WarningLeads(const Due& due) {
  std::vector<seconds> leads;
  for (absl::Time t :
       model::WarningTimes(absl::FromChrono(due.deadline), absl::FromChrono(due.since))) {
    auto at = std::chrono::time_point_cast<WallTime::duration>(absl::ToChronoTime(t));
    leads.push_back(std::chrono::duration_cast<seconds>(due.deadline - at));
  }
  return leads;  // longest first
}

void LifecycleController::Warn(const model::Instance& instance, const Due& due, WallTime now,
                               WallTime* next) {
  std::optional<seconds> reached;  // the shortest lead whose moment has come
  for (seconds lead : WarningLeads(due)) {
    if (due.deadline - lead <= now)
      reached = lead;
    else
      *next = std::min(*next, due.deadline - lead);
  }
  if (!reached) return;
  std::string what = due.verb == Verb::kDestroy ? "destroyed" : "stopped";
  StoreWarning(instance, due, *reached, now,
               "the instance will be " + what + " at " + FormatRfc3339(due.deadline) + " (in " +
                   Until(due.deadline, now) + "): " + due.policy);
}

// A deadline reached before any notice of it went out (the pass at a warning moment came
// late, or gantryd was down over all of them): the notice goes out now, before the action,
// so an automatic stop is never unexplained.
void LifecycleController::WarnIfNeverWarned(const model::Instance& instance, const Due& due,
                                            WallTime now) {
  if (due.warning.empty()) return;
  std::vector<seconds> leads = WarningLeads(due);
  if (leads.empty()) return;
  std::set<std::string> names;
  for (seconds lead : leads) {
    std::string name = WarningEventName(instance.metadata.name, due, lead);
    if (warned_.count(name)) return;
    names.insert(std::move(name));
  }
  auto stored = StoredEvents(instance.metadata.ns, instance.kind, instance.metadata.name);
  if (!stored.ok()) return;
  for (const json::object& e : *stored)
    if (names.count(model::GetString(e, "metadata.name"))) return;
  std::string what = due.verb == Verb::kDestroy ? "destroyed" : "stopped";
  StoreWarning(instance, due, leads.back(), now,
               "the instance will be " + what + " at " + FormatRfc3339(due.deadline) +
                   " (now: the earlier notice was missed): " + due.policy);
}

void LifecycleController::StoreWarning(const model::Instance& instance, const Due& due,
                                       seconds lead, WallTime now, const std::string& message) {
  std::string name = WarningEventName(instance.metadata.name, due, lead);
  if (warned_.count(name)) return;
  StoredEvent e;
  e.ns = instance.metadata.ns;
  e.name = name;
  e.involved = {model::kApiVersion, instance.kind, instance.metadata.ns, instance.metadata.name,
                instance.metadata.uid};
  e.reason = due.warning;
  e.message = message;
  e.component = "gantry-lifecycle";
  if (auto s = CreateStoredEvent(store_, e, now); !s.ok()) {
    spdlog::warn("lifecycle: cannot store event {}: {}", name, std::string(s.message()));
    return;
  }
  warned_[name] = due.deadline;
}

void LifecycleController::NoteNoGpuMetrics(const model::Instance& instance,
                                           const PolicyView& view) {
  std::string name = view.driver.empty() ? "instance's" : view.driver;
  SetCondition(instance, "IdleReclaim", "NoGpuMetrics",
               "the " + name +
                   " driver reports no GPU utilisation; the profile's idle policy is "
                   "ignored");
}

int64_t LifecycleController::SetCondition(const model::Instance& instance, const std::string& type,
                                          const std::string& reason, const std::string& message) {
  if (instance.status.conditions)
    for (const model::Condition& c : *instance.status.conditions)
      if (c.type == type && !c.ok && c.reason == reason && c.message == message) return 0;
  model::Instance next = instance;
  next.status.SetCondition(type, false, reason, message, FormatRfc3339(clock_.Now()));
  auto stored = store_.Commit({internal::UpdateOf(next)});
  if (!stored.ok() || stored->empty()) return 0;  // changed meanwhile: the next pass again
  return std::strtoll(model::GetString(stored->front(), "metadata.resourceVersion").c_str(),
                      nullptr, 10);
}

void LifecycleController::AccrueReclaimed(const model::Instance& instance, const PolicyView& view,
                                          WallTime now) {
  const std::string reason = instance.status.reason.value_or("");
  if (reason != "TTLExpired" && reason != "Idle" && reason != "Scheduled") return;
  if (view.gpu_count <= 0) return;
  auto stopped = StoppedAt(instance);
  WallTime from = std::max(started_, stopped.value_or(now));
  auto& until = accrued_[instance.metadata.uid];
  from = std::max(from, until);
  until = std::max(until, now);
  if (now <= from) return;
  double secs = std::chrono::duration<double>(now - from).count();
  metrics_.Add("gantry_gpu_seconds_reclaimed_total", {}, secs * view.gpu_count);
}

void LifecycleController::PruneEvents(WallTime now) {
  next_prune_ = now + kPruneEvery;
  for (auto it = warned_.begin(); it != warned_.end();)
    it = it->second < now ? warned_.erase(it) : std::next(it);
  store::ListOptions q;
  q.kind = kStoredEventKind;
  auto events = internal::ListAll(store_, std::move(q));
  if (!events.ok()) return;
  std::string cutoff = FormatRfc3339(now - options_.event_retention);
  for (const json::object& e : *events) {
    // RFC 3339 in UTC with second precision (FormatRfc3339) sorts as text.
    if (model::GetString(e, "lastTimestamp") >= cutoff) continue;
    json::object key{
        {"metadata", json::object{{"namespace", model::GetString(e, "metadata.namespace")},
                                  {"name", model::GetString(e, "metadata.name")}}}};
    auto s = store_.Commit(
        {{store::Write::Op::kDelete, kStoredEventKind, std::move(key),
          std::strtoll(model::GetString(e, "metadata.resourceVersion").c_str(), nullptr, 10), 0}},
        store::Durability::kRelaxed);
    if (!s.ok() && !absl::IsNotFound(s.status()) && !internal::IsConflict(s.status()))
      spdlog::warn("lifecycle: cannot prune events: {}", std::string(s.status().message()));
  }
}

absl::StatusOr<std::vector<json::object>> LifecycleController::StoredEvents(
    const std::string& ns, const std::string& kind, const std::string& name) const {
  store::ListOptions q;
  q.kind = kStoredEventKind;
  q.ns = ns;
  if (!kind.empty()) q.fields.push_back({"involvedObject.kind", true, kind});
  if (!name.empty()) q.fields.push_back({"involvedObject.name", true, name});
  return internal::ListAll(store_, std::move(q));
}

}  // namespace gantry::engine
