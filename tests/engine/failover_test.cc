// Failover (ctest -L slow; PostgreSQL): two gantryd replicas on one database, 100 deploys of
// an exec template, kill -9 of one replica while both are running scripts. The survivor must
// finish every run: its own, the queued ones, and (once their leases expire) the ones the dead
// replica was running, after killing what is left of them. No run may complete twice.
//
// The script records every execution in execs.log ("start RUN PID") and every completion in
// done.log ("done RUN"). Its long-lived part runs in a grandchild that outlives a killed
// gantryd (like tests/engine/crash_test.cc), so only the takeover's process-group kill ends
// it; the script shell itself dies with its gantryd (PR_SET_PDEATHSIG), so an interrupted
// execution never writes "done".
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "engine_fixture.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;

constexpr int kInstances = 100;
constexpr int kWorkers = 4;

class FailoverTest : public TwoReplicaTest<EngineTest> {
 protected:
  int Workers() override { return kWorkers; }  // EngineTest's --workers
  std::vector<std::string> ReplicaArgs() override {
    return {"--lease-seconds", "6", "--host-id", "failover-host"};
  }

  std::vector<json::object> Items(Api& api, const std::string& target) {
    Resp r = api.Get(target);
    EXPECT_EQ(r.status, 200) << r.raw;
    std::vector<json::object> out;
    if (const json::value* items = r.obj().if_contains("items"); items && items->is_array())
      for (const auto& it : items->get_array()) out.push_back(it.get_object());
    return out;
  }

  std::vector<std::string> Lines(const std::string& file) {
    std::ifstream in(Path(file));
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) out.push_back(line);
    return out;
  }
};

TEST_F(FailoverTest, Kill9OfOneReplicaDuringHundredDeploys) {
  const std::string marker = "gantry-failover-" + fs::path(dir()).filename().string();
  std::string script = WriteScript("run.sh", R"SH(D=')SH" + dir() + R"SH('
cat > /dev/null
echo "start $GANTRY_RUN $$" >> "$D/execs.log"
sh -c 'while [ ! -f "$1" ]; do sleep 0.05; done; :' )SH" +
                                                 marker + R"SH( "$D/release"
echo "done $GANTRY_RUN" >> "$D/done.log"
printf '{"pid": "%s"}' "$$" > "$GANTRY_OUTPUTS"
)SH");
  CreateExecTemplate("fo-tmpl", json::array{script});
  api().CreateProfile("default", "fo", "fo-tmpl");
  for (int i = 0; i < kInstances; ++i)
    api().CreateInstance("default", "f" + std::to_string(i), "fo");
  // Deploys go to both replicas, as behind a load balancer.
  for (int i = 0; i < kInstances; ++i) {
    Api& via = i % 2 ? second_api() : api();
    Resp r = via.Post(NsPath("default", "computeinstances", "f" + std::to_string(i)) + "/deploy",
                      json::object{});
    ASSERT_EQ(r.status, 202) << r.raw;
  }

  // Both replicas are inside scripts: 2 × kWorkers runs Running, each with its process group.
  const std::string running =
      NsPath("default", "runs") + "?fieldSelector=" + Escape("status.phase=Running");
  std::map<std::string, std::set<std::string>> by_holder;
  ASSERT_TRUE(PollUntil([&] {
    by_holder.clear();
    for (const auto& r : Items(second_api(), running))
      if (Int(r, "status.driverState.pgid") > 0)
        by_holder[Str(r, "status.lease.holder")].insert(Str(r, "metadata.name"));
    return by_holder.size() == 2 && by_holder.begin()->second.size() == kWorkers &&
           by_holder.rbegin()->second.size() == kWorkers &&
           ProcessesWith(marker).size() == 2 * kWorkers;
  })) << "holders: "
      << by_holder.size() << ", scripts: " << ProcessesWith(marker).size();

  // Which holder is the first replica: the one whose runs it reports through its own log.
  std::string first_holder;
  for (const auto& [holder, runs] : by_holder)
    if (gantryd_->Log().find(holder) != std::string::npos) first_holder = holder;
  ASSERT_FALSE(first_holder.empty()) << gantryd_->Log();
  const std::set<std::string> interrupted = by_holder[first_holder];

  gantryd_->Kill9();
  // (Polled: the waiting loop's forks carry the marker for a moment before they exec sleep.)
  EXPECT_TRUE(PollUntil([&] { return ProcessesWith(marker).size() == 2u * kWorkers; }))
      << "the dead replica's scripts should live on: " << ProcessesWith(marker).size();
  Touch("release");

  // The survivor ends everything.
  ASSERT_TRUE(PollUntil(
      [&] {
        for (const auto& o : Items(second_api(), NsPath("default", "computeinstances")))
          if (Str(o, "status.phase") != "Success") return false;
        return true;
      },
      3 * kEngineWaitSeconds))
      << "instances not done after the failover\n"
      << second_->Log();

  std::vector<json::object> instances = Items(second_api(), NsPath("default", "computeinstances"));
  EXPECT_EQ(instances.size(), static_cast<size_t>(kInstances));
  std::map<std::string, int> runs_per_instance;
  for (const auto& r : Items(second_api(), NsPath("default", "runs"))) {
    std::string name = Str(r, "metadata.name");
    ++runs_per_instance[Str(r, "spec.instanceRef.name")];
    EXPECT_EQ(Str(r, "status.phase"), "Succeeded") << name;
    // The dead replica's runs ran again once (exec: idempotent by contract), the rest once.
    EXPECT_EQ(Int(r, "status.attempt"), interrupted.count(name) ? 2 : 1)
        << name << "\nsurvivor's log:\n"
        << second_->Log();
  }
  EXPECT_EQ(runs_per_instance.size(), static_cast<size_t>(kInstances));
  for (const auto& [instance, n] : runs_per_instance) EXPECT_EQ(n, 1) << instance;

  // Executions: each run completed exactly once; only the interrupted ones started twice.
  std::map<std::string, int> starts, done;
  for (const auto& l : Lines("execs.log")) {
    std::istringstream in(l);
    std::string word, run;
    in >> word >> run;
    ++starts[run];
  }
  for (const auto& l : Lines("done.log")) ++done[l.substr(5)];
  EXPECT_EQ(done.size(), static_cast<size_t>(kInstances));
  for (const auto& [run, n] : done) EXPECT_EQ(n, 1) << run << " completed " << n << " times";
  EXPECT_EQ(starts.size(), static_cast<size_t>(kInstances));
  for (const auto& [run, n] : starts)
    EXPECT_EQ(n, interrupted.count(run) ? 2 : 1) << run << " started " << n << " times";
  EXPECT_TRUE(PollUntil([&] { return ProcessesWith(marker).empty(); }))
      << "scripts still running after every run ended";
  RecordProperty("interrupted", static_cast<int>(interrupted.size()));
}

}  // namespace
}  // namespace gantry::testing
