#include "drivers/fake/fake_driver.h"

#include "common/status_macros.h"

namespace gantry::drivers::fake {

namespace json = boost::json;

Script Script::Succeed(json::object outputs) {
  Script s;
  s.outputs = std::move(outputs);
  return s;
}

Script Script::Fail(absl::Status error) {
  Script s;
  s.kind = Kind::kFail;
  s.error = std::move(error);
  return s;
}

Script Script::Block(json::object outputs) {
  Script s;
  s.kind = Kind::kBlock;
  s.outputs = std::move(outputs);
  return s;
}

FakeDriver::FakeDriver(std::string name, Capabilities caps) : name_(std::move(name)), caps_(caps) {}

void FakeDriver::SetScript(const std::string& instance, const std::string& action, Script script) {
  std::lock_guard<std::mutex> lock(mu_);
  scripts_[{instance, action}] = std::move(script);
}

void FakeDriver::Release(const std::string& instance) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    released_.insert(instance);
  }
  changed_.notify_all();
}

bool FakeDriver::WaitBlocked(const std::string& instance, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return changed_.wait_for(lock, timeout, [&] { return blocked_.count(instance) > 0; });
}

bool FakeDriver::WaitCalls(size_t n, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return changed_.wait_for(lock, timeout, [&] { return calls_.size() >= n; });
}

std::vector<Call> FakeDriver::Calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

void FakeDriver::SetRecoverSafe(bool safe) {
  std::lock_guard<std::mutex> lock(mu_);
  recover_safe_ = safe;
}

std::vector<json::object> FakeDriver::RecoverCalls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return recover_calls_;
}

absl::StatusOr<json::object> FakeDriver::Run(const DeployRequest& request, RunContext& context) {
  const std::string instance =
      request.instance.contains("name") ? std::string(request.instance.at("name").as_string()) : "";
  std::unique_lock<std::mutex> lock(mu_);
  calls_.push_back({request.action, instance, request.run_name, request.attempt, request});
  Script script = scripts_[{instance, request.action}];
  changed_.notify_all();
  if (script.kind == Script::Kind::kFail) return script.error;
  if (script.kind == Script::Kind::kBlock) {
    if (!script.waiting_reason.empty()) {
      lock.unlock();  // SetWaiting writes to the store
      context.SetWaiting(script.waiting_reason, "waiting on the fake infrastructure");
      lock.lock();
    }
    blocked_.insert(instance);
    changed_.notify_all();
    // Cancellation is a flag the engine sets (RunContext::Canceled): look at it often.
    while (!released_.count(instance)) {
      if (context.Canceled()) {
        blocked_.erase(instance);
        return absl::CancelledError("canceled");
      }
      changed_.wait_for(lock, std::chrono::milliseconds(2));
    }
    released_.erase(instance);
    blocked_.erase(instance);
    if (!script.error.ok()) return script.error;
  }
  return script.outputs;
}

absl::StatusOr<json::object> FakeDriver::Apply(const DeployRequest& request, RunContext& context) {
  return Run(request, context);
}

absl::Status FakeDriver::Destroy(const DeployRequest& request, RunContext& context) {
  return Run(request, context).status();
}

absl::Status FakeDriver::CanStop(const json::object& config) const {
  if (const json::value* v = config.if_contains("canStop"); v && v->is_bool() && !v->as_bool())
    return absl::FailedPreconditionError("the fake template says it cannot stop");
  return Driver::CanStop(config);
}

absl::Status FakeDriver::Stop(const DeployRequest& request, RunContext& context) {
  RETURN_IF_ERROR(Driver::CanStop(request.config));
  return Run(request, context).status();
}

absl::StatusOr<json::object> FakeDriver::Start(const DeployRequest& request, RunContext& context) {
  RETURN_IF_ERROR(Driver::CanStop(request.config));
  return Run(request, context);
}

bool FakeDriver::Recover(const json::object& state) {
  std::lock_guard<std::mutex> lock(mu_);
  recover_calls_.push_back(state);
  return recover_safe_;
}

}  // namespace gantry::drivers::fake
