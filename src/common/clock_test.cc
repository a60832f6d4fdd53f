// Clock timers: SystemClock's SleepUntil waits on real time and stops early on its token;
// FakeClock's sleepers wake only when Advance reaches their deadline, and a test can wait
// until they are parked.
#include "common/clock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stop_token>
#include <thread>
#include <vector>

#include "common/fake_clock.h"
#include "common/loop_thread.h"

namespace gantry {
namespace {

using namespace std::chrono_literals;

TEST(SystemClockTest, SleepUntilWaitsForTheDeadline) {
  SystemClock clock;
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(clock.SleepFor(20ms));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 20ms);
  EXPECT_TRUE(clock.SleepUntil(clock.SteadyNow() - 1s));  // already passed
}

TEST(SystemClockTest, StopEndsASleepEarly) {
  SystemClock clock;
  std::stop_source stop;
  auto start = std::chrono::steady_clock::now();
  std::thread stopper([&] {
    std::this_thread::sleep_for(20ms);
    stop.request_stop();
  });
  EXPECT_FALSE(clock.SleepFor(1h, stop.get_token()));
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1h);
  EXPECT_FALSE(clock.SleepFor(1h, stop.get_token()));  // already stopped: at once
}

TEST(FakeClockTest, AdvanceMovesWallAndSteadyTimeTogether) {
  FakeClock clock;
  auto wall = clock.Now();
  auto steady = clock.SteadyNow();
  EXPECT_EQ(FormatRfc3339(wall), "2026-01-01T00:00:00Z");
  clock.Advance(90s);
  EXPECT_EQ(clock.Now() - wall, 90s);
  EXPECT_EQ(clock.SteadyNow() - steady, 90s);
}

TEST(FakeClockTest, ASleeperWakesOnlyWhenTheClockReachesItsDeadline) {
  FakeClock clock;
  std::atomic<int> woke = 0;
  std::thread sleeper([&] {
    EXPECT_TRUE(clock.SleepFor(10s));
    ++woke;
  });
  ASSERT_TRUE(clock.WaitForSleepers(1));
  EXPECT_EQ(clock.NextDeadline() - clock.SteadyNow(), 10s);
  clock.Advance(9s);
  EXPECT_EQ(clock.Sleepers(), 1u);  // still ahead
  EXPECT_EQ(woke.load(), 0);
  clock.Advance(1s);  // exactly at the deadline
  EXPECT_EQ(clock.Sleepers(), 0u);
  sleeper.join();
  EXPECT_EQ(woke.load(), 1);
  EXPECT_EQ(clock.NextDeadline(), clock.SteadyNow());  // none parked
}

TEST(FakeClockTest, APassedDeadlineReturnsAtOnceWithoutParking) {
  FakeClock clock;
  EXPECT_TRUE(clock.SleepUntil(clock.SteadyNow()));
  EXPECT_TRUE(clock.SleepFor(0s));
  EXPECT_EQ(clock.Sleepers(), 0u);
}

TEST(FakeClockTest, StopWakesAParkedSleeper) {
  FakeClock clock;
  std::stop_source stop;
  std::atomic<bool> reached = true;
  std::thread sleeper([&] { reached = clock.SleepFor(1h, stop.get_token()); });
  ASSERT_TRUE(clock.WaitForSleepers(1));
  stop.request_stop();
  sleeper.join();
  EXPECT_FALSE(reached.load());
  EXPECT_EQ(clock.Sleepers(), 0u);
}

TEST(FakeClockTest, OneAdvanceWakesEverySleeperWhoseDeadlineItPasses) {
  FakeClock clock;
  std::atomic<int> woke = 0;
  std::vector<std::jthread> sleepers;
  for (int s : {1, 2, 3, 60})
    sleepers.emplace_back([&clock, &woke, s](std::stop_token stop) {
      if (clock.SleepFor(std::chrono::seconds(s), stop)) ++woke;
    });
  ASSERT_TRUE(clock.WaitForSleepers(4));
  clock.Advance(3s);
  for (int i = 0; i < 3; ++i) sleepers[i].join();
  EXPECT_EQ(woke.load(), 3);
  EXPECT_EQ(clock.Sleepers(), 1u);
  sleepers[3].request_stop();  // the 60 s one is stopped, not woken
  sleepers[3].join();
  EXPECT_EQ(woke.load(), 3);
}

// The shape of a lifecycle timer (a heartbeat, a time-to-live sweep): a loop that sleeps a
// period and acts, driven tick by tick without real waits.
TEST(FakeClockTest, ATimerLoopIsDrivenTickByTick) {
  FakeClock clock;
  std::atomic<int> beats = 0;
  std::jthread heartbeat([&](std::stop_token stop) {
    while (clock.SleepFor(10s, stop)) ++beats;
  });
  for (int i = 1; i <= 5; ++i) {
    ASSERT_TRUE(clock.WaitForSleepers(1));
    clock.Advance(10s);
    ASSERT_TRUE(clock.WaitForSleepers(1));  // parked again: the beat is counted
    EXPECT_EQ(beats.load(), i);
  }
  heartbeat.request_stop();
  heartbeat.join();
  EXPECT_EQ(beats.load(), 5);
}

// RepeatEvery on a LoopThread: a pass at once, one per interval, none after Stop.
TEST(LoopThreadTest, RepeatEveryPassesAtOnceThenEachIntervalUntilStopped) {
  FakeClock clock;
  std::atomic<int> passes = 0;
  LoopThread loop;
  loop.Start([&](std::stop_token stop) { RepeatEvery(clock, 5s, stop, [&] { ++passes; }); });
  loop.Start([&](std::stop_token) { passes += 100; });  // already running: nothing
  ASSERT_TRUE(clock.WaitForSleepers(1));
  EXPECT_EQ(passes.load(), 1);
  clock.Advance(5s);
  ASSERT_TRUE(clock.WaitForSleepers(1));
  EXPECT_EQ(passes.load(), 2);
  loop.Stop();  // the sleeper is stopped, not woken
  loop.Stop();  // idempotent
  EXPECT_EQ(passes.load(), 2);
  EXPECT_EQ(clock.Sleepers(), 0u);
}

TEST(FakeClockTest, WaitForSleepersTimesOutWhenNobodySleeps) {
  FakeClock clock;
  EXPECT_FALSE(clock.WaitForSleepers(1, 10ms));
  EXPECT_TRUE(clock.WaitForSleepers(0, 10ms));
}

}  // namespace
}  // namespace gantry
