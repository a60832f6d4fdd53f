// LoopThread: the one background loop an object owns (a monitor, a sampler, a controller).
// Start runs `loop(stop)` on a thread of its own; Stop asks it to stop through `stop` and
// waits for it. The owner declares its LoopThread last, so that it is stopped before the
// members its loop uses go.
//
// RepeatEvery is the loop most of them run: a pass at once, then one every interval, each
// wait stopped early by the token (common/clock.h: a FakeClock advances it in tests).
//
// Thread-safety: Start and Stop from one thread (the owner's).
#pragma once

#include <chrono>
#include <functional>
#include <stop_token>
#include <thread>

#include "common/clock.h"

namespace gantry {

class LoopThread {
 public:
  LoopThread() = default;
  ~LoopThread() { Stop(); }
  LoopThread(const LoopThread&) = delete;
  LoopThread& operator=(const LoopThread&) = delete;

  // Runs `loop` until it returns; does nothing while a loop runs.
  void Start(std::function<void(std::stop_token)> loop);
  // Requests the stop and waits for the loop to return. Idempotent.
  void Stop();

 private:
  std::jthread thread_;
};

// Calls `pass` at once and then `interval` after each pass ends, until `stop` is requested.
void RepeatEvery(const Clock& clock, std::chrono::nanoseconds interval, std::stop_token stop,
                 const std::function<void()>& pass);

}  // namespace gantry
