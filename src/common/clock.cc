#include "common/clock.h"

#include <condition_variable>
#include <ctime>
#include <mutex>

namespace gantry {

bool Clock::SleepUntil(std::chrono::steady_clock::time_point deadline, std::stop_token stop) const {
  // A private condition variable: only the stop token (through its stop callback) and the
  // deadline end the wait.
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  cv.wait_until(lock, stop, deadline, [] { return false; });
  return !stop.stop_requested();
}

std::string FormatRfc3339(std::chrono::system_clock::time_point t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace gantry
