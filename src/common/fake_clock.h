// FakeClock: a Clock for tests that moves only when the test says so (STYLE.md #1). Wall
// and steady time start at fixed points and advance together by Advance().
//
// Timers: a thread in SleepUntil is parked until Advance() moves steady time to its
// deadline (or its stop token is requested); nothing waits on real time. A test that drives
// a timer loop (a time-to-live, a heartbeat) waits until the loop is parked, advances, and
// checks what it did:
//   FakeClock clock;
//   std::jthread heartbeat([&](std::stop_token stop) {
//     while (clock.SleepFor(10s, stop)) Beat();
//   });
//   ASSERT_TRUE(clock.WaitForSleepers(1));   // parked on its first deadline
//   clock.Advance(10s);                      // wakes it: one beat, then it parks again
//   ASSERT_TRUE(clock.WaitForSleepers(1));
// A sleeper counts as parked only while its deadline is still ahead, so the count right
// after Advance() already excludes the sleepers it woke.
//
// Thread-safety: all methods are safe from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <iterator>
#include <mutex>
#include <set>
#include <stop_token>

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
  // Moves both clocks forward by `d` (>= 0) and wakes the sleepers whose deadline it reaches.
  void Advance(std::chrono::nanoseconds d) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      wall_ += std::chrono::duration_cast<std::chrono::system_clock::duration>(d);
      steady_ += std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
    }
    changed_.notify_all();
  }

  // Parks the caller until Advance() reaches `deadline` (true) or `stop` is requested (false).
  bool SleepUntil(std::chrono::steady_clock::time_point deadline,
                  std::stop_token stop = {}) const override {
    std::unique_lock<std::mutex> lock(mu_);
    auto parked = deadlines_.insert(deadline);
    changed_.notify_all();  // WaitForSleepers
    bool reached = changed_.wait(lock, stop, [&] { return steady_ >= deadline; });
    deadlines_.erase(parked);
    return reached;
  }

  // Threads parked in SleepUntil whose deadline is still ahead.
  size_t Sleepers() const {
    std::lock_guard<std::mutex> lock(mu_);
    return ParkedLocked();
  }
  // Waits (on real time, at most `timeout`, which only bounds a failing test) until at least
  // `n` threads are parked in SleepUntil. False on timeout.
  bool WaitForSleepers(size_t n,
                       std::chrono::milliseconds timeout = std::chrono::seconds(30)) const {
    std::unique_lock<std::mutex> lock(mu_);
    return changed_.wait_for(lock, timeout, [&] { return ParkedLocked() >= n; });
  }
  // The earliest deadline a parked thread waits for; steady time itself when none is parked.
  std::chrono::steady_clock::time_point NextDeadline() const {
    std::lock_guard<std::mutex> lock(mu_);
    auto next = deadlines_.upper_bound(steady_);
    return next == deadlines_.end() ? steady_ : *next;
  }

 private:
  size_t ParkedLocked() const {
    return static_cast<size_t>(std::distance(deadlines_.upper_bound(steady_), deadlines_.end()));
  }

  mutable std::mutex mu_;
  mutable std::condition_variable_any changed_;  // time moved, or a sleeper parked
  std::chrono::system_clock::time_point wall_;
  std::chrono::steady_clock::time_point steady_{std::chrono::hours(1)};
  mutable std::multiset<std::chrono::steady_clock::time_point> deadlines_;  // parked sleepers
};

}  // namespace gantry
