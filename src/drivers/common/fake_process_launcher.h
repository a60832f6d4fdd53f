// FakeProcessLauncher: a ProcessLauncher for tests (STYLE.md #1, #2). It records every
// ChildSpec it is asked to start and either refuses with the Status set by FailWith or
// forwards to the system launcher, so a test can see what a driver starts and make a start
// fail without touching the system.
//
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <mutex>
#include <optional>
#include <vector>

#include "drivers/common/process.h"

namespace gantry::drivers {

class FakeProcessLauncher final : public ProcessLauncher {
 public:
  absl::StatusOr<Spawn> Start(const ChildSpec& spec) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      started_.push_back(spec);
      if (failure_) return *failure_;
    }
    return system_.Start(spec);
  }
  // Every later Start returns `status` (not OK) instead of starting anything.
  void FailWith(absl::Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    failure_ = std::move(status);
  }
  // What Start was asked to start, in order.
  std::vector<ChildSpec> started() const {
    std::lock_guard<std::mutex> lock(mu_);
    return started_;
  }

 private:
  SystemProcessLauncher system_;
  mutable std::mutex mu_;
  std::vector<ChildSpec> started_;
  std::optional<absl::Status> failure_;
};

}  // namespace gantry::drivers
