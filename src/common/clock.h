// Clock: the only way Gantry code reads the time or waits for it, so tests can inject one
// (STYLE.md #1).
//
// Timers: code that waits for a moment (a time-to-live, a schedule, a lease heartbeat, a
// backoff) waits with SleepUntil on a steady deadline, stopped early through a
// std::stop_token, instead of std::this_thread::sleep_for or a condition variable's own
// timeout. With the real clock that is an ordinary timed wait; with FakeClock
// (fake_clock.h) the sleeper wakes only when the test advances the clock past its deadline,
// so a lifecycle timer is unit-tested without sleeping.
//
// Thread-safety: implementations must be safe to call from any thread; any number of
// threads may sleep at once.
#pragma once

#include <chrono>
#include <stop_token>
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
  // Blocks until SteadyNow() reaches `deadline` (true), or until `stop` is requested
  // (false: whenever it was requested by the time the wait ends, at once when it already
  // was). A deadline already passed returns true at once.
  // The default waits on the real steady clock; the default token is never stopped.
  virtual bool SleepUntil(std::chrono::steady_clock::time_point deadline,
                          std::stop_token stop = {}) const;
  // SleepUntil(SteadyNow() + d, stop).
  bool SleepFor(std::chrono::nanoseconds d, std::stop_token stop = {}) const {
    return SleepUntil(
        SteadyNow() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(d),
        std::move(stop));
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
