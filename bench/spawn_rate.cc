// bench/spawn_rate.cc: how many programs per second drivers/common/process.cc starts and
// reaps (RunProcess of `true`, one after the other), from a process that looks like
// gantryd: a few idle threads and RSS_MB of touched heap (fork's cost grows with both).
// References measured in the same process right after: fork+execvp+waitpid and
// posix_spawnp+waitpid of the same `true`.
//
//   g++ -O2 -std=c++20 -Isrc bench/spawn_rate.cc src/drivers/common/process.cc
//       src/drivers/common/sandbox.cc -labsl_status -labsl_statusor -lpthread -o /tmp/spawn_rate
//   /tmp/spawn_rate [COUNT=500] [RSS_MB=256] [THREADS=8]
//   (bench/run_all.sh section "spawn" builds and runs it)
//
// Prints: runs=COUNT failures=F seconds=S per_second=R fork_per_second=R1
//         posix_spawn_per_second=R2
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "drivers/common/process.h"

extern char** environ;

namespace {

// Runs `true` `count` times through `start` (returns the pid or -1) and waitpid; runs/s.
template <typename Start>
double Rate(int count, Start start) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < count; ++i) {
    pid_t pid = start();
    int status = 0;
    if (pid > 0) ::waitpid(pid, &status, 0);
  }
  return count / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

pid_t ForkExec() {
  pid_t pid = ::fork();
  if (pid == 0) {
    char* argv[] = {const_cast<char*>("true"), nullptr};
    ::execvp("true", argv);
    ::_exit(127);
  }
  return pid;
}

pid_t PosixSpawn() {
  char* argv[] = {const_cast<char*>("true"), nullptr};
  pid_t pid = -1;
  return ::posix_spawnp(&pid, "true", nullptr, nullptr, argv, environ) == 0 ? pid : -1;
}

}  // namespace

int main(int argc, char** argv) {
  const int count = argc > 1 ? std::atoi(argv[1]) : 500;
  const size_t rss_mb = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 256;
  const int threads = argc > 3 ? std::atoi(argv[3]) : 8;
  std::vector<char> heap(rss_mb << 20);
  std::memset(heap.data(), 1, heap.size());  // touched: its page tables are real
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::vector<std::thread> idle;
  for (int i = 0; i < threads; ++i)
    idle.emplace_back([&] {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return done; });
    });
  gantry::drivers::ProcessSpec spec;
  spec.argv = {"true"};
  gantry::drivers::ProcessHooks hooks;
  int failures = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < count; ++i) {
    auto r = gantry::drivers::RunProcess(spec, hooks);
    if (!r.ok() || r->exit_code != 0) ++failures;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double fork_rate = Rate(count, ForkExec);
  const double spawn_rate = Rate(count, PosixSpawn);
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_all();
  for (auto& t : idle) t.join();
  std::printf(
      "runs=%d failures=%d seconds=%.3f per_second=%.1f fork_per_second=%.1f "
      "posix_spawn_per_second=%.1f\n",
      count, failures, s, count / s, fork_rate, spawn_rate);
  return failures ? 1 : 0;
}
