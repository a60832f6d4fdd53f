// The dispatcher and the workers of engine.h. One pass of the dispatcher reads the queue,
// oldest first, a page at a time (as many runs as the workers can take, then twice as many
// per page, up to 64) with what admission needs for them (one AdmissionSnapshot, added to
// page by page), decides on each queued run with the pure Admit (engine/admission.h), claims
// the admitted ones (an optimistic commit: exactly one claimer wins; a pass's claims go in
// one commit when it ends) and tells the waiting ones why they wait (and where they are in
// the queue). It reads the next page only while it has claimed less than the workers can
// take, up to 500 runs. Fair share and priorities: before it decides a run that needs GPUs,
// it reads the rest of the queue and puts it in OrderQueue's order, and the victims a
// waiting deploy names are preempted (engine/preemption.cc).
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/status_macros.h"
#include "engine/budgets.h"
#include "engine/dependencies.h"
#include "engine/deployment.h"
#include "engine/engine.h"
#include "engine/engine_internal.h"
#include "engine/usage_ledger.h"
#include "engine/usage_report.h"
#include "model/codec.h"

namespace gantry::engine {

namespace json = boost::json;
using Decision = Admission::Decision;

void Engine::DispatchLoop() {
  while (running_) {
    size_t free_slots;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait_for(lock, std::chrono::seconds(1), [this] {
        return !running_ ||
               (notified_ && busy_ + static_cast<int>(claimed_.size()) < options_.workers);
      });
      if (!running_) return;
      notified_ = false;
      int used = busy_ + static_cast<int>(claimed_.size());
      free_slots = used < options_.workers ? static_cast<size_t>(options_.workers - used) : 0;
    }
    if (free_slots == 0) continue;
    // Nothing moved: wait for a change (or the periodic look).
    if (!DispatchPass(free_slots)) continue;
    // More may be waiting: look again at once when something was claimed.
    std::lock_guard<std::mutex> lock(mu_);
    notified_ = true;
  }
}

namespace {

// A pass reads the queue a page at a time, oldest first, and stops reading when it has
// claimed what the workers can take: a burst's pass that claims 8 runs reads 8 runs and
// their instances, not the 500 it may look past. The first page holds as many runs as the
// workers can take (at least kFirstPage), each later one twice its page, up to kQueuePage.
constexpr int64_t kFirstPage = 8;
constexpr int64_t kQueuePage = 64;
// At most this many queued runs per pass: enough to look past runs waiting for capacity
// (and tell each why it waits).
constexpr size_t kQueueLook = 500;

// Whether OrderQueue may move `q` (engine/admission.h): a deploy or start that needs GPUs.
bool MayBeReordered(const QueuedRun& q) {
  return q.run.instance_kind != kServiceInstanceKind && StartsWorkload(q.run.action) && q.target &&
         q.target->resources.gpu_count > 0;
}

}  // namespace

// The next page of the queue after `pass->next_page` ("" : the first), resolved into
// pass->queue; false when there is none (or it cannot be read: logged).
bool Engine::ReadQueuePage(DispatchQueue* pass) {
  if (pass->done || pass->queue.size() >= kQueueLook) return false;
  store::ListOptions q;
  q.kind = model::kRunKind;
  q.fields = {{"status.phase", true, "Queued"}};
  q.oldest_first = true;
  q.limit = std::min<int64_t>(pass->page, static_cast<int64_t>(kQueueLook - pass->queue.size()));
  pass->page = std::min(pass->page * 2, kQueuePage);
  q.continue_token = pass->next_page;
  auto page = store_.List(q);
  if (!page.ok()) {
    spdlog::warn("engine: cannot read the run queue: {}", std::string(page.status().message()));
    return false;
  }
  pass->next_page = page->continue_token;
  pass->done = pass->next_page.empty();
  if (page->items.empty()) return false;
  std::vector<model::Run> runs;
  for (auto& stored : page->items)
    if (auto run = model::DecodeRun(std::move(stored)); run.ok()) runs.push_back(*std::move(run));
  absl::Status read =
      pass->snapshot ? AddForRuns(runs, pass->projects, &*pass->snapshot) : absl::OkStatus();
  if (!pass->snapshot) {
    auto snapshot = TakeSnapshot(runs, &pass->projects);
    if (snapshot.ok()) pass->snapshot.emplace(*std::move(snapshot));
    read = snapshot.status();
  }
  if (!read.ok()) {
    spdlog::warn("engine: cannot read what admission needs: {}", std::string(read.message()));
    return false;
  }
  for (auto& run : runs)
    pass->queue.push_back(Resolve(*pass->snapshot, std::move(run), &pass->targets));
  return true;
}

// Before runs that need GPUs are decided, the rest of the queue is read and put in
// fair-share order: a later run may go first. The runs decided so far need no GPUs, so they
// keep their places.
void Engine::OrderBeforeGpuRuns(DispatchQueue* pass, size_t next) {
  if (pass->ordered || std::none_of(pass->queue.begin() + static_cast<ptrdiff_t>(next),
                                    pass->queue.end(), MayBeReordered))
    return;
  while (ReadQueuePage(pass)) {
  }
  OrderQueue(*pass->snapshot, &pass->queue);
  pass->ordered = true;
}

bool Engine::DispatchPass(size_t free_slots) {
  const auto began = std::chrono::steady_clock::now();  // gantry_dispatch_pass_seconds
  metrics_.Set("gantry_run_queue_depth", {}, static_cast<double>(QueueDepth()));
  DispatchQueue pass;
  pass.page = std::clamp(static_cast<int64_t>(free_slots), kFirstPage, kQueuePage);
  if (!ReadQueuePage(&pass)) return false;
  AdmissionPass admission(*pass.snapshot);
  ClaimBatch claims;
  for (size_t next = 0; running_ && claims.claims.size() < free_slots;) {
    if (next == pass.queue.size() && !ReadQueuePage(&pass)) break;
    OrderBeforeGpuRuns(&pass, next);
    for (; next < pass.queue.size() && running_ && claims.claims.size() < free_slots; ++next)
      Decide(pass.queue[next], &admission, &*pass.snapshot, &claims);
  }
  const size_t claimed = CommitClaims(&claims);
  metrics_.Observe("gantry_dispatch_pass_seconds", {},
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
  return claimed > 0;
}

// Admits, claims (in `claims`), tells to wait, or fails one queued run.
void Engine::Decide(const QueuedRun& queued, AdmissionPass* pass, AdmissionSnapshot* snapshot,
                    ClaimBatch* claims) {
  Admission a = Admit(*snapshot, queued, pass);
  switch (a.decision) {
    case Decision::kAdmit:
      if (HoldGpus(a) && Claim(queued, a, snapshot, claims)) return;
      ReleaseLost(a);
      if (!a.gpus.empty()) {
        if (!a.gpus_were_held) pass->Release(a.owner);
        // It was first in line for them: a later run of the type must not take them in
        // this pass (a borrowing start would jump the queue and be preempted again).
        pass->blocked_types.insert(a.gpus.front().type);
      }
      return;
    case Decision::kWait:
      if (!a.victims.empty()) TakeReclaim(queued, *snapshot, &a);
      NoteWaiting(queued, a);
      if (!a.victims.empty()) Preempt(queued, a);
      return;
    case Decision::kFail:
      Finish(queued.run, absl::FailedPreconditionError(a.message), {}, a.reason);
      return;
    case Decision::kSkip:
      return;
  }
}

// The snapshot holds what the queued `runs` can need, and no more, so that a pass costs the
// same with 100 or 100,000 instances stored: every project (quotas), the Running runs, the
// instances the runs are for (and a service's compute instance), the services on a compute
// instance being destroyed, and every compute instance of a project that has a quota.
absl::StatusOr<AdmissionSnapshot> Engine::TakeSnapshot(const std::vector<model::Run>& runs,
                                                       std::vector<json::object>* read_projects) {
  AdmissionSnapshot s;
  s.sole_owner = options_.sole_owner;
  s.host = options_.host;
  s.now = clock_.Now();
  store::ListOptions q;
  q.kind = "Project";
  ASSIGN_OR_RETURN(*read_projects, internal::ListAll(store_, q));
  const std::vector<json::object>& projects = *read_projects;
  for (const auto& p : projects)
    s.quotas[model::GetString(p, "metadata.name")] = model::DecodeQuota(p);
  q.kind = model::kRunKind;
  q.fields = {{"status.phase", true, "Running"}};
  ASSIGN_OR_RETURN(auto running, internal::ListAll(store_, q));
  for (auto& r : running)
    if (auto run = model::DecodeRun(std::move(r)); run.ok() && StartsWorkload(run->action))
      s.running_deploys.insert({run->metadata.ns, run->metadata.name});
  for (const auto& p : projects)
    if (auto g = model::DecodeGuaranteedGpus(p); !g.empty())
      s.guarantees[model::GetString(p, "metadata.name")] = std::move(g);
  RETURN_IF_ERROR(AddQuotaProjects(runs, &s));
  RETURN_IF_ERROR(AddRunInstances(runs, &s));
  s.inventory = gpus_.inventory();
  s.gpu_owners = gpus_.Assignments();
  if (s.FairShare()) RETURN_IF_ERROR(AddGpuHolders(&s));
  RETURN_IF_ERROR(AddBudgets(projects, runs, &s));
  return s;
}

// What admission needs for `runs`, a later page of the queue, added to the pass's snapshot;
// `projects` as TakeSnapshot read them.
absl::Status Engine::AddForRuns(const std::vector<model::Run>& runs,
                                const std::vector<json::object>& projects, AdmissionSnapshot* s) {
  RETURN_IF_ERROR(AddQuotaProjects(runs, s));
  RETURN_IF_ERROR(AddRunInstances(runs, s));
  return AddBudgets(projects, runs, s);
}

absl::Status Engine::AddBudgets(const std::vector<json::object>& projects,
                                const std::vector<model::Run>& runs, AdmissionSnapshot* s) {
  constexpr auto kBudgetLookEvery = std::chrono::seconds(5);
  std::set<std::string> asking;
  for (const auto& run : runs)
    if (run.instance_kind == kComputeInstanceKind && StartsWorkload(run.action))
      asking.insert(run.metadata.ns);
  std::optional<std::vector<json::object>> cards;
  for (const auto& p : projects) {
    const std::string ns = model::GetString(p, "metadata.name");
    std::optional<model::Budget> budget = model::DecodeBudget(p);
    if (!asking.count(ns) || !budget || budget->action != model::Budget::Action::kBlock) continue;
    if (!cards) {
      store::ListOptions q;
      q.kind = usage::kRateCardKind;
      ASSIGN_OR_RETURN(cards, internal::ListAll(store_, q));
    }
    std::string versions = model::GetString(p, "metadata.resourceVersion");
    for (const auto& c : *cards) versions += "," + model::GetString(c, "metadata.resourceVersion");
    const auto now = clock_.Now();
    BudgetLook& look = budget_looks_[ns];
    const double since = std::chrono::duration<double>(now - look.at).count();
    const double predicted = look.spend.cost + look.spend.per_second * since;
    if (look.versions != versions || now - look.at >= kBudgetLookEvery ||
        (!look.over && predicted >= budget->monthly)) {
      ASSIGN_OR_RETURN(usage::Spend spend, usage::MonthToDate(store_, ns, *cards, now));
      look = {versions, now, spend, std::nullopt};
      if (usage::PercentOf(spend, *budget) >= 100)
        look.over = usage::SpendWords(ns, spend, *budget);
    }
    if (look.over) s->over_budget[ns] = *look.over;
  }
  return absl::OkStatus();
}

// Every compute instance of each project with a quota that a queued deploy is in.
absl::Status Engine::AddQuotaProjects(const std::vector<model::Run>& runs, AdmissionSnapshot* s) {
  for (const auto& run : runs) {
    const std::string& ns = run.metadata.ns;
    auto quota = s->quotas.find(ns);
    if (quota == s->quotas.end() || !s->listed_projects.insert(ns).second) continue;
    // Fair share: every project's usage orders the queue.
    if (!s->FairShare() && quota->second.instances < 0 && quota->second.gpus.empty()) continue;
    store::ListOptions q;
    q.kind = kComputeInstanceKind;
    q.ns = ns;
    ASSIGN_OR_RETURN(auto computes, internal::ListAll(store_, q));
    for (auto& i : internal::DecodeInstances(computes))
      s->computes.insert_or_assign({i.metadata.ns, i.metadata.name}, std::move(i));
  }
  return absl::OkStatus();
}

// The instance of each run, a service's compute instance, and the services on a compute
// instance that is to be destroyed or stopped. The instances are read with one GetMany per
// kind, not one Get per run: a pass over 500 queued runs on PostgreSQL was 500 round trips.
absl::Status Engine::AddRunInstances(const std::vector<model::Run>& runs, AdmissionSnapshot* s) {
  std::vector<store::ObjectKey> computes, services;
  for (const auto& run : runs) {
    const bool service = run.instance_kind == kServiceInstanceKind;
    (service ? services : computes)
        .push_back({service ? kServiceInstanceKind : kComputeInstanceKind, run.metadata.ns,
                    run.instance_name});
  }
  RETURN_IF_ERROR(AddComputes(computes, s));
  auto add_services = [&](const std::vector<json::object>& objects) {
    for (auto& i : internal::DecodeInstances(objects))
      if (!s->Service(i.metadata.ns, i.metadata.name)) s->services.push_back(std::move(i));
  };
  std::vector<store::ObjectKey> unread = services;
  std::erase_if(unread, [&](const store::ObjectKey& k) { return s->Service(k.ns, k.name); });
  ASSIGN_OR_RETURN(auto service_objects, store_.GetMany(unread));
  add_services(service_objects);
  std::vector<store::ObjectKey> hosts;  // the compute instances of the services of runs
  for (const auto& k : services)
    if (const model::Instance* svc = s->Service(k.ns, k.name))
      hosts.push_back({kComputeInstanceKind, svc->compute_ns, svc->compute_name});
  RETURN_IF_ERROR(AddComputes(hosts, s));
  for (const auto& run : runs) {
    if (run.instance_kind == kServiceInstanceKind ||
        (run.action != model::RunAction::kDestroy && run.action != model::RunAction::kStop))
      continue;
    ASSIGN_OR_RETURN(auto on, ServicesOn(store_, run.metadata.ns, run.instance_name));
    add_services(on);
  }
  return absl::OkStatus();
}

// Reads the compute instances of `keys` that the snapshot does not hold yet, in one GetMany.
absl::Status Engine::AddComputes(std::vector<store::ObjectKey> keys, AdmissionSnapshot* s) {
  std::set<std::pair<std::string, std::string>> seen;
  std::erase_if(keys, [&](const store::ObjectKey& k) {
    return s->computes.count({k.ns, k.name}) || !seen.insert({k.ns, k.name}).second;
  });
  ASSIGN_OR_RETURN(auto objects, store_.GetMany(keys));
  for (auto& i : internal::DecodeInstances(std::move(objects)))
    s->computes.insert_or_assign({i.metadata.ns, i.metadata.name}, std::move(i));
  return absl::OkStatus();
}

// Fair share: the instances that hold GPUs of this host (victim candidates; their projects'
// usage) and the scheduling of their pinned profile revisions.
absl::Status Engine::AddGpuHolders(AdmissionSnapshot* s) {
  std::set<std::pair<std::string, std::string>> holders;
  for (const auto& [index, owner] : s->gpu_owners) {
    const size_t a = owner.find('/'), b = owner.find('/', a + 1);
    if (a != std::string::npos && b != std::string::npos)
      holders.insert({owner.substr(0, a), owner.substr(a + 1, b - a - 1)});
  }
  for (const auto& [ns, name] : holders) {
    if (!s->computes.count({ns, name})) {
      auto got = store_.Get(kComputeInstanceKind, ns, name);
      if (absl::IsNotFound(got.status())) continue;
      if (!got.ok()) return got.status();
      for (auto& i : internal::DecodeInstances({*std::move(got)}))
        s->computes.insert_or_assign({ns, name}, std::move(i));
    }
    auto it = s->computes.find({ns, name});
    if (it == s->computes.end()) continue;
    if (auto d = ResolvePinned(store_, it->second); d.ok())
      s->scheduling[{ns, name}] = model::DecodeScheduling(d->profile.raw);
  }
  return absl::OkStatus();
}

QueuedRun Engine::Resolve(const AdmissionSnapshot& snapshot, model::Run run, Targets* targets) {
  QueuedRun q;
  q.instance = run.instance_kind == kServiceInstanceKind
                   ? snapshot.Service(run.metadata.ns, run.instance_name)
                   : snapshot.Compute(run.metadata.ns, run.instance_name);
  if (q.instance && NeedsTarget(snapshot, run)) {
    auto key = std::make_tuple(q.instance->kind, q.instance->profile_ns, q.instance->profile_name,
                               run.profile_revision, run.template_revision);
    auto [it, added] = targets->try_emplace(std::move(key));
    if (added) {
      if (auto deployment = ResolveRun(store_, *q.instance, run); deployment.ok()) {
        Target t;
        if (const drivers::Driver* d = drivers_.Find(deployment->tmpl.driver)) t.caps = d->Caps();
        t.resources = deployment->profile.resources;
        t.scheduling = model::DecodeScheduling(deployment->profile.raw);
        it->second = std::move(t);
      }
    }
    q.target = it->second;
  }
  q.run = std::move(run);
  return q;
}

bool Engine::HoldGpus(const Admission& a) {
  if (a.gpus.empty()) return true;
  std::vector<int> indices;
  for (const auto& g : a.gpus) indices.push_back(g.index);
  // Only the dispatcher hands GPUs out, so the snapshot's free GPUs are still free.
  std::vector<int> rejected = gpus_.Restore(a.owner, indices);
  if (rejected.empty()) return true;
  spdlog::warn("engine: GPUs of {} were taken meanwhile; it waits for the next look", a.owner);
  return false;
}

void Engine::NoteWaiting(const QueuedRun& queued, const Admission& a) {
  if (!queued.instance) return;
  model::Instance instance = *queued.instance;  // as the pass read it
  model::InstanceStatus& st = instance.status;
  if (st.PhaseOr() != model::Phase::kWaiting || st.last_run != queued.run.metadata.name) return;
  // A preempted instance keeps its reason until it runs again (the message says why it waits).
  const bool preempted = queued.run.cause == kPreempted && a.reason == "InsufficientCapacity";
  const std::string reason = preempted ? kPreempted : a.reason;
  const std::optional<int64_t> position =
      a.queue_position > 0 ? std::optional<int64_t>(a.queue_position) : std::nullopt;
  if (st.reason == reason && st.message == a.message && st.queue_position == position) return;
  st.reason = reason;
  st.message = a.message;
  st.queue_position = position;
  std::vector<store::Write> w;
  w.push_back(internal::UpdateOf(instance));
  // A concurrent change wins; the next look retries.
  internal::CommitRelaxed(store_, std::move(w)).IgnoreError();
}

bool Engine::Claim(const QueuedRun& queued, const Admission& a, AdmissionSnapshot* snapshot,
                   ClaimBatch* claims) {
  std::optional<model::Instance> instance;
  auto writes = ClaimWrites(queued.run, a, queued.instance, &instance);
  if (!writes) return false;
  if (instance && instance->kind == kComputeInstanceKind)
    snapshot->computes.insert_or_assign({instance->metadata.ns, instance->metadata.name},
                                        *std::move(instance));
  claims->claims.push_back({queued.run, a, writes->size()});
  std::move(writes->begin(), writes->end(), std::back_inserter(claims->writes));
  return true;
}

std::optional<std::vector<store::Write>> Engine::ClaimWrites(
    const model::Run& queued, const Admission& a, const model::Instance* read,
    std::optional<model::Instance>* instance) {
  model::Run run = queued;
  absl::StatusOr<model::Instance> loaded =
      read ? *read
           : internal::LoadInstance(store_, run.instance_kind, run.metadata.ns, run.instance_name);
  if (loaded.ok() && loaded->kind.empty()) loaded->kind = run.instance_kind;
  const std::string now = Now();
  run.phase = model::RunPhase::kRunning;
  run.attempt = queued.attempt + 1;
  run.start_time = now;
  run.lease = model::Lease{options_.holder, options_.host, now, options_.lease.count()};
  std::vector<std::string> indices, uuids;
  for (const auto& g : a.gpus) {
    indices.push_back(std::to_string(g.index));
    uuids.push_back(g.uuid);
  }
  if (!a.gpus.empty()) {
    run.gpus = indices;
    run.gpu_uuids = uuids;
  }
  std::vector<store::Write> writes;
  writes.push_back(internal::UpdateOf(std::move(run)));  // its typed fields are read on
  if (!loaded.ok()) return writes;                       // gone: the worker reports it
  model::InstanceStatus& st = loaded->status;
  if (StartsWorkload(run.action)) {
    if (!a.resources.empty()) st.resources = a.resources;
    if (!a.admission.empty()) st.admission = a.admission;
    st.queue_position.reset();
    if (!a.gpus.empty())
      st.gpus = indices;
    else
      st.gpus.reset();
  }
  // Several replicas: the instance's later runs go to this host.
  if (!options_.sole_owner && a.host_bound) st.host = options_.host;
  st.phase = model::Phase::kInProgress;
  st.reason = "";
  st.message =
      std::string(model::RunActionName(run.action)) + " run " + run.metadata.name + " is running";
  writes.push_back(internal::UpdateOf(*loaded));
  // The usage ledger opens in the commit that assigns the GPUs (usage_ledger.h).
  if (absl::Status open = usage::AppendOpen(store_, run, *loaded, a, clock_.Now(), &writes);
      !open.ok()) {
    spdlog::warn("engine: run {}/{} waits: cannot open its usage interval: {}", run.metadata.ns,
                 run.metadata.name, std::string(open.message()));
    return std::nullopt;
  }
  budget_looks_.erase(run.metadata.ns);  // it spends faster now: look again
  *instance = *std::move(loaded);
  return writes;
}

size_t Engine::CommitClaims(ClaimBatch* claims) {
  if (claims->claims.empty()) return 0;
  if (!running_) {  // stopping: the runs stay Queued for the next start
    for (const auto& c : claims->claims) ReleaseLost(c.admission);
    return 0;
  }
  // Relaxed: a claim lost to a power failure leaves the run Queued, and it runs then.
  auto stored = store_.Commit(std::move(claims->writes), store::Durability::kRelaxed);
  if (stored.ok()) {
    size_t at = 0;
    for (const auto& c : claims->claims) {
      std::vector<json::object> own(std::make_move_iterator(stored->begin() + at),
                                    std::make_move_iterator(stored->begin() + at + c.writes));
      at += c.writes;
      HandOver(c.run, std::move(own));
    }
    return claims->claims.size();
  }
  size_t claimed = 0;
  for (const auto& c : claims->claims) {
    std::optional<model::Instance> instance;
    auto writes = ClaimWrites(c.run, c.admission, nullptr, &instance);
    if (!writes) {  // ClaimWrites logged why
      ReleaseLost(c.admission);
      continue;
    }
    auto alone = store_.Commit(*std::move(writes), store::Durability::kRelaxed);
    if (!alone.ok()) {  // another claimer (or a cancel, or a concurrent change) won
      spdlog::info("engine: run {}/{} is not claimed in this pass: {}", c.run.metadata.ns,
                   c.run.metadata.name, std::string(alone.status().message()));
      ReleaseLost(c.admission);
      continue;
    }
    HandOver(c.run, *std::move(alone));
    ++claimed;
  }
  return claimed;
}

void Engine::HandOver(const model::Run& queued, std::vector<json::object> stored) {
  auto claimed = model::DecodeRun(std::move(stored[0]));
  if (!claimed.ok()) return;
  std::optional<model::Instance> instance;  // ClaimWrites' second write, when it had one
  if (stored.size() > 1) {
    if (auto now_instance = model::DecodeInstance(std::move(stored[1])); now_instance.ok()) {
      now_instance->kind = queued.instance_kind;
      instance = *std::move(now_instance);
    }
  }
  if (instance && instance->kind == kComputeInstanceKind) NoteComputeState(*instance);
  {
    std::lock_guard<std::mutex> lock(mu_);
    claimed_.push_back({*std::move(claimed), std::move(instance)});
  }
  work_ready_.notify_one();
}

// The GPUs a lost claim held go back (those its instance held before stay its own).
void Engine::ReleaseLost(const Admission& a) {
  if (!a.gpus.empty() && !a.gpus_were_held) gpus_.Release(a.owner);
}

void Engine::WorkerLoop() {
  while (true) {
    Claimed claimed;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_ready_.wait(lock, [this] { return !running_ || !claimed_.empty(); });
      if (!running_) return;
      claimed = std::move(claimed_.front());
      claimed_.erase(claimed_.begin());
      ++busy_;
    }
    metrics_.Set("gantry_runs_active", {}, busy_);
    Execute(std::move(claimed));
    {
      std::lock_guard<std::mutex> lock(mu_);
      --busy_;
      notified_ = true;
    }
    idle_.notify_all();
    wake_.notify_all();
  }
}

}  // namespace gantry::engine
