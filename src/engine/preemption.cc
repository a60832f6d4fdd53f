// Fair-share preemption of engine.h (API.md "Sharing GPUs fairly", docs/fair-share.md). The
// pure admission (engine/admission.h) names the victims of a deploy within its project's
// guarantee; what happens to them lives here:
//
//   Preempt            each victim gets a stop run with cause Preempted through the ordinary
//                      stop path (Engine::Queue, so a victim already stopping is refused and
//                      never preempted twice), an Event naming who reclaimed it, and a count
//                      in gantry_preemptions_total. The local driver stops it with SIGTERM,
//                      the profile's preemptionGracePeriod, then SIGKILL.
//   RestartPreempted   once Stopped, a start run (cause Preempted): the instance is Waiting
//                      with reason Preempted and starts by itself when GPUs are free again
//   RelabelAdmissions  when a project's instance releases GPUs, status.admission of its
//                      other instances is recomputed (a Borrowed one becomes Guaranteed once
//                      the project is back within its guarantee)
//
// Thread-safety: called from the dispatcher and the workers; every write is a guarded commit.
#include <spdlog/spdlog.h>

#include "common/ids.h"
#include "engine/dependencies.h"
#include "engine/engine.h"
#include "engine/engine_internal.h"
#include "engine/stored_events.h"
#include "model/codec.h"
#include "model/schema.h"

namespace gantry::engine {

namespace json = boost::json;

// How long a reclaim outlasts the longest grace period of its victims: their stops and the
// claim of the deploy they make room for.
constexpr std::chrono::seconds kReclaimSlack{60};

void Engine::TakeReclaim(const QueuedRun& queued, const AdmissionSnapshot& snapshot, Admission* a) {
  if (options_.sole_owner) return;
  std::chrono::seconds longest{0};
  for (const auto& key : a->victims)
    if (auto it = snapshot.scheduling.find(key); it != snapshot.scheduling.end())
      longest = std::max(longest, it->second.grace_period);
  model::Run run = queued.run;
  run.reclaim =
      model::Lease{options_.holder, options_.host, Now(), (longest + kReclaimSlack).count()};
  std::vector<store::Write> w;
  w.push_back(internal::UpdateOf(run));
  if (auto stored = store_.Commit(std::move(w)); stored.ok()) return;
  // Another replica took it in the same moment (or the run moved on): it reclaims.
  auto now = store_.Get(model::kRunKind, run.metadata.ns, run.metadata.name);
  auto other = now.ok() ? model::DecodeRun(*now) : now.status();
  ForgoVictims(other.ok() && other->reclaim ? other->reclaim->host : "", a);
}

void Engine::Preempt(const QueuedRun& queued, const Admission& a) {
  const std::string& ns = queued.run.metadata.ns;
  const std::string who = "instance " + queued.run.instance_name + " of project " + ns;
  const std::string type = queued.target ? queued.target->resources.gpu_type : "";
  for (const auto& [vns, vname] : a.victims) {
    auto stopped =
        Queue(kComputeInstanceKind, vns, vname, model::RunAction::kStop, false, false, kPreempted);
    if (!stopped.ok()) {
      spdlog::info("engine: {}/{} is not preempted for {}: {}", vns, vname, who,
                   std::string(stopped.status().message()));
      continue;
    }
    auto victim = model::DecodeInstance(*stopped);
    if (!victim.ok()) continue;
    const std::string message =
        "preempted: its GPUs were borrowed beyond project " + vns + "'s guarantee and " + who +
        " reclaimed them (within its project's guaranteedGpus); it starts again by itself "
        "when GPUs are free";
    StoredEvent e;
    e.ns = victim->metadata.ns;
    e.name = victim->metadata.name + ".preempted." + NewUid();
    e.involved = {model::kApiVersion, kComputeInstanceKind, victim->metadata.ns,
                  victim->metadata.name, victim->metadata.uid};
    e.reason = kPreempted;
    e.message = message;
    e.component = "gantry-scheduler";
    if (auto s = CreateStoredEvent(store_, e, clock_.Now()); !s.ok())
      spdlog::warn("engine: cannot store the preemption event of {}/{}: {}", vns, vname,
                   std::string(s.message()));
    metrics_.Add("gantry_preemptions_total", {{"project", vns}, {"gpu_type", type}});
  }
}

void Engine::RestartPreempted(const model::Instance& instance) {
  auto queued = Queue(kComputeInstanceKind, instance.metadata.ns, instance.metadata.name,
                      model::RunAction::kStart, false, false, kPreempted);
  if (!queued.ok())
    spdlog::warn("engine: preempted instance {}/{} stays Stopped: {}", instance.metadata.ns,
                 instance.metadata.name, std::string(queued.status().message()));
}

void Engine::RelabelAdmissions(const std::string& ns) {
  auto project = store_.Get("Project", "", ns);
  if (!project.ok()) return;
  const auto guarantee = model::DecodeGuaranteedGpus(*project);
  store::ListOptions q;
  q.kind = kComputeInstanceKind;
  q.ns = ns;
  auto listed = internal::ListAll(store_, q);
  if (!listed.ok()) return;
  std::vector<model::Instance> instances = internal::DecodeInstances(*std::move(listed));
  const auto labels = AdmissionLabels(instances, guarantee);
  for (model::Instance& i : instances) {
    auto label = labels.find(i.metadata.name);
    // Only instances that carry a label (admitted under fair share) are relabelled.
    if (label == labels.end() || !i.status.admission || *i.status.admission == label->second)
      continue;
    i.status.admission = label->second;
    std::vector<store::Write> w;
    w.push_back(internal::UpdateOf(i));
    // A concurrent change wins; the next release recomputes.
    internal::CommitRelaxed(store_, std::move(w)).IgnoreError();
  }
}

}  // namespace gantry::engine
