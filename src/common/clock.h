// Clock: the only way Gantry code reads the time, so tests can inject one (STYLE.md #1).
// Thread-safety: implementations must be safe to call from any thread.
#pragma once

#include <chrono>
#include <string>

namespace gantry {

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time, for timestamps shown to people and stored in objects.
  virtual std::chrono::system_clock::time_point Now() const = 0;
  // Monotonic time, for intervals, timeouts and backoffs (never goes back).
  virtual std::chrono::steady_clock::time_point SteadyNow() const {
    return std::chrono::steady_clock::now();
  }
};

// The real system clock.
class SystemClock final : public Clock {
 public:
  std::chrono::system_clock::time_point Now() const override {
    return std::chrono::system_clock::now();
  }
};

// RFC 3339 in UTC with second precision, as Kubernetes writes creationTimestamp.
std::string FormatRfc3339(std::chrono::system_clock::time_point t);

}  // namespace gantry
