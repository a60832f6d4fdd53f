// FakeDriver: a real Driver for tests of the engine (no processes, no files). Each instance
// (by name) and action gets a scripted outcome:
//
//   succeed   Apply/Start return the scripted outputs, Destroy/Stop OK (the default, no
//             outputs)
//   fail      Apply/Destroy/Stop/Start return the scripted Status
//   block     the call waits until Release(instance) (then succeeds or fails as scripted)
//             or until the run is canceled (CANCELLED "canceled"); tests wait for it with
//             WaitBlocked, never by sleeping (STYLE.md #12)
//
// It records every call (action, instance, run, attempt, the whole request), what Recover
// was asked, and answers Recover with a configurable "re-running is safe". Its name and
// Capabilities are configurable, so one fake can stand for a host-bound or a long-running
// driver. Stop and Start are scripted like Apply and Destroy when Caps().stop_start; CanStop
// also refuses a template whose config says {"canStop": false}.
//
// Thread-safety: every method is safe from any thread; Apply/Destroy may run concurrently.
#pragma once

#include <boost/json.hpp>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "drivers/driver.h"

namespace gantry::drivers::fake {

struct Script {
  enum class Kind { kSucceed, kFail, kBlock };
  Kind kind = Kind::kSucceed;
  boost::json::object outputs;  // Apply's on success
  absl::Status error;           // kFail, or kBlock once released when not OK
  // kBlock: the run waits on the infrastructure meanwhile (RunContext::SetWaiting), as a
  // PENDING Slurm job does; "" = it does not.
  std::string waiting_reason;

  static Script Succeed(boost::json::object outputs = {});
  static Script Fail(absl::Status error);
  static Script Block(boost::json::object outputs = {});
};

struct Call {
  std::string action;  // "apply", "destroy", "stop" or "start"
  std::string instance;
  std::string run_name;
  int attempt = 0;
  DeployRequest request;
};

class FakeDriver final : public Driver {
 public:
  explicit FakeDriver(std::string name = "fake", Capabilities caps = {});

  std::string_view Name() const override { return name_; }
  Capabilities Caps() const override { return caps_; }

  // The outcome of `action` ("apply", "destroy", "stop", "start") on `instance` from now on.
  void SetScript(const std::string& instance, const std::string& action, Script script);
  // Lets the blocked (or next blocking) call of `instance` end.
  void Release(const std::string& instance);
  // Waits until a call of `instance` blocks; false after `timeout`.
  bool WaitBlocked(const std::string& instance, std::chrono::milliseconds timeout);
  // Waits until `n` calls have been made; false after `timeout`.
  bool WaitCalls(size_t n, std::chrono::milliseconds timeout);
  std::vector<Call> Calls() const;

  // What Recover answers (true: re-running is safe) and the states it was given.
  void SetRecoverSafe(bool safe);
  std::vector<boost::json::object> RecoverCalls() const;

  absl::StatusOr<boost::json::object> Apply(const DeployRequest& request,
                                            RunContext& context) override;
  absl::Status Destroy(const DeployRequest& request, RunContext& context) override;
  absl::Status CanStop(const boost::json::object& config) const override;
  absl::Status Stop(const DeployRequest& request, RunContext& context) override;
  absl::StatusOr<boost::json::object> Start(const DeployRequest& request,
                                            RunContext& context) override;
  bool Recover(const boost::json::object& state) override;

 private:
  absl::StatusOr<boost::json::object> Run(const DeployRequest& request, RunContext& context);

  const std::string name_;
  const Capabilities caps_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::pair<std::string, std::string>, Script> scripts_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> released_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> blocked_ ABSL_GUARDED_BY(mu_);
  std::vector<Call> calls_ ABSL_GUARDED_BY(mu_);
  bool recover_safe_ ABSL_GUARDED_BY(mu_) = true;
  std::vector<boost::json::object> recover_calls_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gantry::drivers::fake
