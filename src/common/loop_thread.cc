#include "common/loop_thread.h"

#include <utility>

namespace gantry {

void LoopThread::Start(std::function<void(std::stop_token)> loop) {
  if (thread_.joinable()) return;
  thread_ = std::jthread(std::move(loop));
}

void LoopThread::Stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  thread_.join();
}

void RepeatEvery(const Clock& clock, std::chrono::nanoseconds interval, std::stop_token stop,
                 const std::function<void()>& pass) {
  while (!stop.stop_requested()) {
    pass();
    clock.SleepFor(interval, stop);
  }
}

}  // namespace gantry
