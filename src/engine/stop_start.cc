// Stop and start of engine.h (API.md "Lifecycle of an instance"): a stop run ends the
// workload through Driver::Stop and releases its GPUs, keeping the record, spec, outputs and
// what the workload wrote; a start run is admitted like a deploy (quota, capacity, GPU
// choice, host binding) and runs Driver::Start. Both are queued by Engine::Queue (actions.cc)
// like any run; what is particular to them lives here:
//
//   CanStop       a stop is refused with 409 before anything changes when the driver of the
//                 instance's pinned template cannot stop it (exec without spec.exec.actions)
//   services      a compute instance that stops takes its running services along: those
//                 whose driver can stop get a stop run (cause ComputeStopped) that goes
//                 before the compute's own (admission.cc GateComputeStop) and, once stopped,
//                 a start run that waits (ComputeNotReady) until the compute instance is
//                 Success again; the others get a deploy that waits the same way
#include <spdlog/spdlog.h>

#include "common/errors.h"
#include "common/status_macros.h"
#include "engine/dependencies.h"
#include "engine/deployment.h"
#include "engine/engine.h"
#include "engine/engine_internal.h"
#include "model/codec.h"

namespace gantry::engine {

namespace json = boost::json;
using model::Phase;
using model::RunAction;

namespace {

constexpr char kComputeStopped[] = "ComputeStopped";

std::string KindWords(const std::string& kind) {
  return kind == kServiceInstanceKind ? "service instance " : "compute instance ";
}

}  // namespace

absl::StatusOr<json::object> Engine::Stop(const std::string& kind, const std::string& ns,
                                          const std::string& name, const std::string& reason,
                                          store::AlsoCommit* also) {
  return Queue(kind, ns, name, RunAction::kStop, false, false,
               reason.empty() ? "StoppedByUser" : reason, nullptr, also);
}

absl::StatusOr<json::object> Engine::Start(const std::string& kind, const std::string& ns,
                                           const std::string& name, const std::string& reason,
                                           store::AlsoCommit* also,
                                           std::optional<model::Instance> read) {
  return Queue(kind, ns, name, RunAction::kStart, false, false, reason, nullptr, also,
               std::move(read));
}

absl::Status Engine::CheckCanStop(const model::Instance& instance) {
  const std::string what = KindWords(instance.kind) + instance.metadata.name;
  auto deployment = ResolvePinned(store_, instance);
  if (!deployment.ok())
    return ConflictError(what + " cannot be stopped: " + std::string(deployment.status().message()),
                         "StopNotSupported");
  const model::TemplateSpec& tmpl = deployment->tmpl;
  const drivers::Driver* driver = drivers_.Find(tmpl.driver);
  if (!driver)
    return ConflictError(what + " cannot be stopped: driver \"" + tmpl.driver +
                             "\" is not available in this gantryd",
                         "StopNotSupported");
  absl::Status can = driver->CanStop(tmpl.config);
  if (can.ok()) return absl::OkStatus();
  return ConflictError(what + " cannot be stopped: " + std::string(can.message()),
                       "StopNotSupported");
}

void Engine::StopServicesOn(const model::Instance& compute, bool queued) {
  auto services = ServicesOn(store_, compute.metadata.ns, compute.metadata.name);
  if (!services.ok()) return;
  for (model::Instance& s : internal::DecodeInstances(*std::move(services))) {
    s.kind = kServiceInstanceKind;
    const Phase phase = s.status.PhaseOr();
    if (phase != Phase::kSuccess && phase != Phase::kFailed) continue;
    const bool can_stop = CheckCanStop(s).ok();
    // Before the compute's stop is queued: the services that can stop, so that their stop
    // runs are queued first. After: the others (their deploy must not find the compute
    // instance still Success).
    if (can_stop == queued) continue;
    auto done = can_stop ? Queue(kServiceInstanceKind, s.metadata.ns, s.metadata.name,
                                 RunAction::kStop, false, false, kComputeStopped)
                         : Queue(kServiceInstanceKind, s.metadata.ns, s.metadata.name,
                                 RunAction::kApply, false, false, kComputeStopped);
    if (!done.ok())
      spdlog::warn("service {}/{} on stopping compute instance {}: {}", s.metadata.ns,
                   s.metadata.name, compute.metadata.name, std::string(done.status().message()));
  }
}

void Engine::RestartWhenComputeReady(const model::Instance& service) {
  auto queued = Queue(kServiceInstanceKind, service.metadata.ns, service.metadata.name,
                      RunAction::kStart, false, false, kComputeStopped);
  if (!queued.ok())
    spdlog::warn("service {}/{} stays Stopped: {}", service.metadata.ns, service.metadata.name,
                 std::string(queued.status().message()));
}

}  // namespace gantry::engine
