// FakeClock: a Clock for tests that moves only when the test says so (STYLE.md #1). Wall
// and steady time start at fixed points and advance together by Advance().
//
// Thread-safety: all methods are safe from any thread.
#pragma once

#include <chrono>
#include <mutex>

#include "common/clock.h"

namespace gantry {

class FakeClock final : public Clock {
 public:
  // 2026-01-01T00:00:00Z; steady time starts at an arbitrary epoch.
  FakeClock() : wall_(std::chrono::sys_days{std::chrono::year{2026} / 1 / 1}) {}
  explicit FakeClock(std::chrono::system_clock::time_point start) : wall_(start) {}

  std::chrono::system_clock::time_point Now() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return wall_;
  }
  std::chrono::steady_clock::time_point SteadyNow() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return steady_;
  }
  // Moves both clocks forward by `d` (>= 0).
  void Advance(std::chrono::nanoseconds d) {
    std::lock_guard<std::mutex> lock(mu_);
    wall_ += std::chrono::duration_cast<std::chrono::system_clock::duration>(d);
    steady_ += std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
  }

 private:
  mutable std::mutex mu_;
  std::chrono::system_clock::time_point wall_;
  std::chrono::steady_clock::time_point steady_{std::chrono::hours(1)};
};

}  // namespace gantry
