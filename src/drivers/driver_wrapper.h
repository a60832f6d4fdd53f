// DriverWrapper: a Driver that forwards every call to an inner driver and lets a test
// inject faults (STYLE.md #1, "Seams for tests" in ARCHITECTURE.md). With it a test fails
// the Nth Apply or Destroy with a chosen Status, holds Apply or Destroy at a gate until it
// releases them (or the run is canceled), and counts the calls each method got. It keeps
// the inner driver's name, so it registers in a DriverRegistry in the inner driver's place:
//
//   auto wrapper = std::make_unique<DriverWrapper>(std::make_unique<FakeDriver>());
//   DriverWrapper* driver = wrapper.get();
//   registry.Register(std::move(wrapper));
//   driver->Block(DriverCall::kApply);
//   ... start a deploy ...
//   ASSERT_TRUE(driver->WaitForBlocked(DriverCall::kApply, 1));  // the deploy is in Apply
//   driver->Release(DriverCall::kApply);
//
// The wrapper owns the inner driver, as the registry owns the drivers it holds.
//
// Thread-safety: as the Driver contract (Apply, Destroy and Recover run concurrently);
// faults and gates may be set from any thread while calls are in flight.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "drivers/driver.h"

namespace gantry::drivers {

// The methods of Driver, for Inject, Block and Calls.
enum class DriverCall {
  kApply,
  kDestroy,
  kRecover,
  kAdopt,
  kSetObserver,
  kShutdown,
  kCaps,
  kValidateConfig,
  kConfigSchema,
};
inline constexpr size_t kDriverCallCount = 9;

class DriverWrapper final : public Driver {
 public:
  explicit DriverWrapper(std::unique_ptr<Driver> inner) : inner_(std::move(inner)) {}

  // The wrapped driver: calls made on it directly bypass the faults, gates and counters.
  Driver& inner() { return *inner_; }

  struct Fault {
    DriverCall call = DriverCall::kApply;  // kApply or kDestroy
    // The fault fires on the nth call of `call`, counted from Inject (1: the next).
    int nth = 1;
    // What that call returns without reaching the inner driver (must not be OK).
    absl::Status status;
  };
  // Adds a fault; each fires once. When several fire on the same call, the one injected
  // first decides the answer and all of them are used up.
  void Inject(Fault fault);

  // Closes the gate of `call` (kApply or kDestroy): calls made from now on wait at entry,
  // before faults and the inner driver, until Release(call) or until their RunContext is
  // canceled, which answers CANCELLED without reaching the inner driver. Cancellation is
  // polled (RunContext has no notification) every few milliseconds.
  void Block(DriverCall call);
  // Opens the gate: the waiting calls and those made later go through.
  void Release(DriverCall call);
  // Calls waiting at the gate of `call` now.
  size_t Blocked(DriverCall call) const;
  // Waits (on real time, at most `timeout`, which only bounds a failing test) until at least
  // `n` calls wait at the gate of `call`. False on timeout.
  bool WaitForBlocked(DriverCall call, size_t n,
                      std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;

  // How many times `call` was made on the wrapper (faulted and canceled calls included).
  int64_t Calls(DriverCall call) const;

  std::string_view Name() const override { return inner_->Name(); }
  Capabilities Caps() const override;
  void ValidateConfig(const boost::json::object& config,
                      std::vector<FieldCause>* causes) const override;
  boost::json::object ConfigSchema() const override;
  absl::StatusOr<boost::json::object> Apply(const DeployRequest& request,
                                            RunContext& context) override;
  absl::Status Destroy(const DeployRequest& request, RunContext& context) override;
  // Stop and start go to the inner driver unchanged (no faults, gates or counts).
  absl::Status CanStop(const boost::json::object& config) const override {
    return inner_->CanStop(config);
  }
  absl::Status Stop(const DeployRequest& request, RunContext& context) override {
    return inner_->Stop(request, context);
  }
  absl::StatusOr<boost::json::object> Start(const DeployRequest& request,
                                            RunContext& context) override {
    return inner_->Start(request, context);
  }
  bool Recover(const boost::json::object& state) override;
  void SetObserver(WorkloadObserver* observer) override;
  bool Adopt(const DeployRequest& request, const boost::json::object& state) override;
  void Shutdown() override;

 private:
  struct Armed {
    Fault fault;
    int remaining = 0;
  };
  void Count(DriverCall call) const { ++calls_[static_cast<size_t>(call)]; }
  // Counts the call, waits at its gate, then checks its faults: OK to go on to the inner
  // driver, else the Status to answer.
  absl::Status Enter(DriverCall call, RunContext& context);
  // Waits while the gate of `call` is closed; false when the run was canceled first.
  bool PassGate(DriverCall call, RunContext& context);

  const std::unique_ptr<Driver> inner_;
  mutable std::array<std::atomic<int64_t>, kDriverCallCount> calls_{};
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;  // a gate opened or a call began waiting
  std::vector<Armed> faults_ ABSL_GUARDED_BY(mu_);
  std::array<bool, kDriverCallCount> closed_ ABSL_GUARDED_BY(mu_){};
  std::array<size_t, kDriverCallCount> waiting_ ABSL_GUARDED_BY(mu_){};
};

}  // namespace gantry::drivers
