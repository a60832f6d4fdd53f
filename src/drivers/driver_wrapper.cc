#include "drivers/driver_wrapper.h"

#include <optional>
#include <utility>

namespace gantry::drivers {
namespace {

// How often a call held at a gate looks at RunContext::Canceled().
constexpr std::chrono::milliseconds kCancelPoll{5};

size_t Index(DriverCall call) { return static_cast<size_t>(call); }

}  // namespace

void DriverWrapper::Inject(Fault fault) {
  std::lock_guard lock(mu_);
  int nth = fault.nth < 1 ? 1 : fault.nth;
  if (fault.status.ok())
    fault.status = absl::InternalError("DriverWrapper: a fault needs an error");
  faults_.push_back(Armed{std::move(fault), nth});
}

void DriverWrapper::Block(DriverCall call) {
  std::lock_guard lock(mu_);
  closed_[Index(call)] = true;
}

void DriverWrapper::Release(DriverCall call) {
  {
    std::lock_guard lock(mu_);
    closed_[Index(call)] = false;
  }
  cv_.notify_all();
}

size_t DriverWrapper::Blocked(DriverCall call) const {
  std::lock_guard lock(mu_);
  return waiting_[Index(call)];
}

bool DriverWrapper::WaitForBlocked(DriverCall call, size_t n,
                                   std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout,
                      [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return waiting_[Index(call)] >= n; });
}

int64_t DriverWrapper::Calls(DriverCall call) const { return calls_[Index(call)].load(); }

bool DriverWrapper::PassGate(DriverCall call, RunContext& context) {
  std::unique_lock lock(mu_);
  if (!closed_[Index(call)]) return true;
  ++waiting_[Index(call)];
  cv_.notify_all();  // WaitForBlocked
  bool canceled = false;
  while (closed_[Index(call)] && !(canceled = context.Canceled())) cv_.wait_for(lock, kCancelPoll);
  --waiting_[Index(call)];
  return !canceled;
}

absl::Status DriverWrapper::Enter(DriverCall call, RunContext& context) {
  Count(call);
  if (!PassGate(call, context)) return absl::CancelledError("canceled while held by DriverWrapper");
  std::lock_guard lock(mu_);
  std::optional<absl::Status> fired;
  for (auto it = faults_.begin(); it != faults_.end();) {
    if (it->fault.call == call && --it->remaining == 0) {
      if (!fired) fired = std::move(it->fault.status);
      it = faults_.erase(it);
    } else {
      ++it;
    }
  }
  return fired ? *fired : absl::OkStatus();
}

absl::StatusOr<boost::json::object> DriverWrapper::Apply(const DeployRequest& request,
                                                         RunContext& context) {
  if (absl::Status s = Enter(DriverCall::kApply, context); !s.ok()) return s;
  return inner_->Apply(request, context);
}

absl::Status DriverWrapper::Destroy(const DeployRequest& request, RunContext& context) {
  if (absl::Status s = Enter(DriverCall::kDestroy, context); !s.ok()) return s;
  return inner_->Destroy(request, context);
}

Capabilities DriverWrapper::Caps() const {
  Count(DriverCall::kCaps);
  return inner_->Caps();
}

void DriverWrapper::ValidateConfig(const boost::json::object& config,
                                   std::vector<FieldCause>* causes) const {
  Count(DriverCall::kValidateConfig);
  inner_->ValidateConfig(config, causes);
}

boost::json::object DriverWrapper::ConfigSchema() const {
  Count(DriverCall::kConfigSchema);
  return inner_->ConfigSchema();
}

bool DriverWrapper::Recover(const boost::json::object& state) {
  Count(DriverCall::kRecover);
  return inner_->Recover(state);
}

void DriverWrapper::SetObserver(WorkloadObserver* observer) {
  Count(DriverCall::kSetObserver);
  inner_->SetObserver(observer);
}

bool DriverWrapper::Adopt(const DeployRequest& request, const boost::json::object& state) {
  Count(DriverCall::kAdopt);
  return inner_->Adopt(request, state);
}

void DriverWrapper::Shutdown() {
  Count(DriverCall::kShutdown);
  inner_->Shutdown();
}

}  // namespace gantry::drivers
