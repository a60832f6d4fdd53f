// Crash test (label "slow"): client threads stream creates into a real gantryd, the test
// kill -9's it mid-stream, restarts it on the same data directory, and checks that every
// create acknowledged with 201 is there. Several rounds on the same directory.
//
// Enough writers run at once that the store's group commit batches their creates (several
// calls per transaction), and half of them also send each create a second time, which fails
// alone with 409 inside the batch: the kill lands in the middle of such batches.
//
// No sleeps: the kill happens once a counter of acknowledged creates reaches a threshold
// (condition variable); the writers stop when their connection breaks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "api_client.h"
#include "gantryd_process.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;

constexpr int kRounds = 3;
constexpr int kAckedBeforeKill = 150;  // per round, over all writers
constexpr int kInstanceWriters = 8;
// Bounds a failing wait only.
constexpr auto kDeadline = std::chrono::seconds(300);

struct Acks {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> instances;   // guarded by mu
  std::vector<std::string> projects;    // guarded by mu
  int this_round = 0;                   // guarded by mu
  std::vector<std::string> unexpected;  // guarded by mu: answers other than 201
};

// Creates objects named PREFIX-N, N = 0, 1, ... until the connection breaks. Records every
// 201. Any other HTTP answer is unexpected (a create of a fresh name must succeed). With
// `duplicates`, sends each acknowledged create again and expects 409 AlreadyExists.
void Writer(const std::string& base_url, const std::string& collection, const std::string& prefix,
            bool instances, bool duplicates, Acks* acks) {
  client::HttpClient client(base_url, kBootstrapToken);
  for (int i = 0; i < 1000000; ++i) {
    std::string name = prefix + "-" + std::to_string(i);
    json::object obj = instances ? InstanceObject(name, "p")
                                 : json::object{{"metadata", {{"name", name}}},
                                                {"spec", {{"displayName", "crash " + name}}}};
    auto res = client.Send("POST", collection, json::serialize(obj));
    if (!res.ok()) return;  // gantryd is gone
    {
      std::lock_guard<std::mutex> lock(acks->mu);
      if (res->status != 201) {
        acks->unexpected.push_back(name + ": " + std::to_string(res->status) + " " + res->body);
        return;
      }
      (instances ? acks->instances : acks->projects).push_back(name);
      ++acks->this_round;
      acks->cv.notify_all();
    }
    if (!duplicates) continue;
    auto again = client.Send("POST", collection, json::serialize(obj));
    if (!again.ok()) return;
    if (again->status != 409) {
      std::lock_guard<std::mutex> lock(acks->mu);
      acks->unexpected.push_back(name + " again: " + std::to_string(again->status) + " " +
                                 again->body);
      return;
    }
  }
}

std::set<std::string> ListNames(Api& api, const std::string& path) {
  Resp r = api.Get(path);
  EXPECT_EQ(r.status, 200) << r.raw;
  auto names = r.names();
  return std::set<std::string>(names.begin(), names.end());
}

TEST(CrashTest, EveryAcknowledgedCreateSurvivesKill9) {
  GantrydProcess gantryd;
  ASSERT_TRUE(gantryd.Start().ok()) << gantryd.Log();
  {
    Api api(gantryd.base_url());
    api.CreateTemplate("default", "t");
    api.CreateProfile("default", "p", "t");
  }
  Acks acks;
  std::set<std::string> all_instances_sent, all_projects_sent;
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    {
      std::lock_guard<std::mutex> lock(acks.mu);
      acks.this_round = 0;
    }
    const std::string base = gantryd.base_url();
    const std::string r = std::to_string(round);
    std::vector<std::thread> writers;
    for (int w = 0; w < kInstanceWriters; ++w)
      writers.emplace_back(Writer, base, NsPath("default", "computeinstances"),
                           "ci" + r + "w" + std::to_string(w), true, w % 2 == 1, &acks);
    writers.emplace_back(Writer, base, ClusterPath("projects"), "pr" + r, false, false, &acks);
    {
      std::unique_lock<std::mutex> lock(acks.mu);
      bool reached = acks.cv.wait_for(lock, kDeadline, [&] {
        return acks.this_round >= kAckedBeforeKill || !acks.unexpected.empty();
      });
      EXPECT_TRUE(reached) << "writers stalled at " << acks.this_round << " creates";
    }
    gantryd.Kill9();  // while the writers are mid-stream
    for (auto& w : writers) w.join();
    {
      std::lock_guard<std::mutex> lock(acks.mu);
      ASSERT_TRUE(acks.unexpected.empty()) << acks.unexpected.front();
    }

    ASSERT_TRUE(gantryd.Restart().ok()) << gantryd.Log();
    Api api(gantryd.base_url());
    std::set<std::string> instances = ListNames(api, NsPath("default", "computeinstances"));
    std::set<std::string> projects = ListNames(api, ClusterPath("projects"));
    std::lock_guard<std::mutex> lock(acks.mu);
    int missing = 0;
    for (const auto& n : acks.instances)
      if (!instances.count(n)) {
        ADD_FAILURE() << "acknowledged instance " << n << " is gone after kill -9";
        ++missing;
      }
    for (const auto& n : acks.projects)
      if (!projects.count(n)) {
        ADD_FAILURE() << "acknowledged project " << n << " is gone after kill -9";
        ++missing;
      }
    EXPECT_EQ(missing, 0);
    // At most one unacknowledged create per writer (the one in flight) may have landed.
    EXPECT_LE(instances.size(), acks.instances.size() + kInstanceWriters * (round + 1));
    EXPECT_LE(projects.size(), acks.projects.size() + 1 + (round + 1));  // + "default"
    EXPECT_GE(acks.instances.size() + acks.projects.size(),
              static_cast<size_t>(kAckedBeforeKill * (round + 1)));

    // The restarted server accepts writes and every stored object reads back whole.
    for (const auto& n : instances) {
      Resp got = api.Get(NsPath("default", "computeinstances", n));
      ASSERT_EQ(got.status, 200) << n << ": " << got.raw;
      EXPECT_EQ(got.obj().at("status").at("phase"), "NotDeployed");
    }
  }
  EXPECT_EQ(gantryd.Terminate(), 0) << gantryd.Log();
}

}  // namespace
}  // namespace gantry::testing
