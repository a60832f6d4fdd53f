// Crash test (ctest -L slow): 100 deploys in flight, kill -9 of gantryd while runs are in
// progress, restart on the same data directory. Every instance must end Success or Failed
// with a reason, no run may stay Queued or Running, no instance may have two runs, and no
// script process of the first gantryd may survive the restart.
//
// The script's long-lived part runs in a grandchild (`sh -c … MARKER-genN`): the direct child
// of gantryd dies with it (PR_SET_PDEATHSIG), the grandchild does not, so only recovery's
// process-group kill can end it. The generation in the marker tells the first gantryd's
// scripts from the re-runs of the second.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "engine_fixture.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;

constexpr int kInstances = 100;
constexpr int kWorkers = 4;

// The parent process id of `pid` (/proc/PID/stat), or 0.
int ParentOf(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t end = stat.rfind(')');  // after the command name, which may hold spaces
  int ppid = 0;
  char state = 0;
  if (end != std::string::npos) std::istringstream(stat.substr(end + 1)) >> state >> ppid;
  return ppid;
}

// The script processes carrying `marker`: ProcessesWith, less the `sleep` a script's loop has
// forked and not yet exec'd, which carries its parent's command line for that moment.
std::vector<int> Scripts(const std::string& marker) {
  std::vector<int> all = ProcessesWith(marker), out;
  for (int pid : all)
    if (std::find(all.begin(), all.end(), ParentOf(pid)) == all.end()) out.push_back(pid);
  return out;
}

class EngineCrashTest : public EngineTest {
 protected:
  int Workers() override { return kWorkers; }

  void SetGeneration(int gen) { std::ofstream(Path("gen"), std::ios::trunc) << gen << "\n"; }

  std::vector<json::object> Items(const std::string& target) {
    Resp r = api().Get(target);
    EXPECT_EQ(r.status, 200) << r.raw;
    EXPECT_TRUE(r.meta("continue").empty()) << "the list was paged";
    std::vector<json::object> out;
    if (const json::value* items = r.obj().if_contains("items"); items && items->is_array())
      for (const auto& it : items->get_array()) out.push_back(it.get_object());
    return out;
  }
};

TEST_F(EngineCrashTest, Kill9WithHundredDeploysInFlightThenRestart) {
  const std::string marker = "gantry-crash-" + fs::path(dir()).filename().string() + "-gen";
  SetGeneration(1);
  std::string script = WriteScript("crash.sh", R"SH(D=')SH" + dir() + R"SH('
cat > /dev/null
GEN=$(cat "$D/gen")
echo "attempt of $GANTRY_RUN in generation $GEN"
sh -c 'while [ ! -f "$1" ]; do sleep 0.05; done; :' )SH" +
                                                   marker + R"SH($GEN "$D/release"
printf '{"generation": "%s"}' "$GEN" > "$GANTRY_OUTPUTS"
)SH");
  CreateExecTemplate("crash-tmpl", json::array{script});
  api().CreateProfile("default", "crash", "crash-tmpl");
  for (int i = 0; i < kInstances; ++i)
    api().CreateInstance("default", "c" + std::to_string(i), "crash");
  for (int i = 0; i < kInstances; ++i) {
    Resp r = Action("c" + std::to_string(i), "deploy");
    ASSERT_EQ(r.status, 202) << r.raw;
  }

  // Every worker is inside a script, and the engine has recorded each script's process group.
  const std::string running_runs =
      NsPath("default", "runs") + "?fieldSelector=" + Escape("status.phase=Running");
  std::set<std::string> interrupted;
  ASSERT_TRUE(PollUntil([&] {
    interrupted.clear();
    for (const auto& r : Items(running_runs))
      if (Int(r, "status.driverState.pgid") > 0) interrupted.insert(Str(r, "metadata.name"));
    return interrupted.size() == kWorkers && Scripts(marker + "1").size() == kWorkers;
  })) << "runs in progress: "
      << interrupted.size() << ", scripts: " << Scripts(marker + "1").size();

  gantryd_->Kill9();
  // The scripts' grandchildren outlive gantryd: recovery has something to clean up.
  EXPECT_EQ(Scripts(marker + "1").size(), static_cast<size_t>(kWorkers));

  SetGeneration(2);
  ASSERT_TRUE(gantryd_->Restart().ok());
  Reconnect();
  EXPECT_TRUE(PollUntil([&] { return Scripts(marker + "1").empty(); }))
      << "scripts from before the restart are still running: " << Scripts(marker + "1").size();

  // Right after recovery: one run per instance, none lost, none doubled.
  {
    std::map<std::string, int> runs_per_instance;
    for (const auto& r : Items(NsPath("default", "runs")))
      ++runs_per_instance[Str(r, "spec.instanceRef.name")];
    EXPECT_EQ(runs_per_instance.size(), static_cast<size_t>(kInstances));
    for (const auto& [instance, n] : runs_per_instance)
      EXPECT_EQ(n, 1) << instance << " has " << n << " runs";
  }

  Touch("release");
  ASSERT_TRUE(PollUntil(
      [&] {
        for (const auto& o : Items(NsPath("default", "computeinstances"))) {
          std::string phase = Str(o, "status.phase");
          if (phase != "Success" && phase != "Failed") return false;
        }
        return true;
      },
      3 * kEngineWaitSeconds))
      << "instances still not done after the restart\n"
      << gantryd_->Log();

  int success = 0, failed = 0;
  std::vector<json::object> instances = Items(NsPath("default", "computeinstances"));
  EXPECT_EQ(instances.size(), static_cast<size_t>(kInstances));
  for (const auto& o : instances) {
    std::string name = Str(o, "metadata.name");
    std::string phase = Str(o, "status.phase");
    if (phase == "Success") {
      ++success;
      EXPECT_EQ(Str(o, "status.lastRunRef.name"), name + "-1");
      EXPECT_EQ(Str(o, "status.outputs.generation"), "2") << name;
    } else {
      ++failed;
      EXPECT_EQ(phase, "Failed") << name;
      EXPECT_FALSE(Str(o, "status.reason").empty()) << name << " failed without a reason";
    }
  }
  std::map<std::string, int> runs_per_instance;
  for (const auto& r : Items(NsPath("default", "runs"))) {
    std::string name = Str(r, "metadata.name");
    std::string phase = Str(r, "status.phase");
    ++runs_per_instance[Str(r, "spec.instanceRef.name")];
    EXPECT_TRUE(phase == "Succeeded" || phase == "Failed") << name << " is stuck " << phase;
    // The interrupted runs were re-run once (exec: apply is idempotent by contract).
    EXPECT_EQ(Int(r, "status.attempt"), interrupted.count(name) ? 2 : 1) << name;
  }
  EXPECT_EQ(runs_per_instance.size(), static_cast<size_t>(kInstances));
  for (const auto& [instance, n] : runs_per_instance)
    EXPECT_EQ(n, 1) << instance << " has " << n << " runs";
  EXPECT_EQ(success + failed, kInstances);
  RecordProperty("success", success);
  RecordProperty("failed", failed);
  EXPECT_TRUE(PollUntil([&] { return Scripts(marker).empty(); }))
      << "scripts still running after every run ended";
}

// A profile shared from another project (the README's `gantry share` flow): its template
// lives in the profile's project, not the instance's. Recovery must find the run's driver
// through the same resolver the deploy used (engine/deployment.h), clean up the dead run's
// process group and queue the run again, instead of failing it.
TEST_F(EngineCrashTest, CrashDuringADeployOfASharedProfileIsCleanedUpAndRunAgain) {
  const std::string marker = "gantry-shared-crash-" + fs::path(dir()).filename().string() + "-gen";
  SetGeneration(1);
  std::string script = WriteScript("shared.sh", R"SH(D=')SH" + dir() + R"SH('
cat > /dev/null
GEN=$(cat "$D/gen")
sh -c 'while [ ! -f "$1" ]; do sleep 0.05; done; :' )SH" +
                                                    marker + R"SH($GEN "$D/release-$GEN"
printf '{"generation": "%s"}' "$GEN" > "$GANTRY_OUTPUTS"
)SH");
  api().CreateProject("platform");
  CreateExecTemplate("shared-tmpl", json::array{script}, {}, {}, "platform");
  api().CreateProfile("platform", "shared", "shared-tmpl");
  ASSERT_EQ(api()
                .Patch(NsPath("platform", "computeprofiles", "shared"),
                       json::object{{"spec", {{"sharing", {{"mode", "All"}}}}}})
                .status,
            200);
  api().MustCreate(
      NsPath("default", "computeinstances"),
      json::object{{"metadata", {{"name", "user-nb"}}},
                   {"spec", {{"profileRef", {{"name", "shared"}, {"namespace", "platform"}}}}}});
  ASSERT_EQ(Action("user-nb", "deploy").status, 202);
  ASSERT_TRUE(PollUntil([&] { return Scripts(marker + "1").size() == 1; }));
  ASSERT_TRUE(PollUntil([&] {
    for (const auto& r : Items(NsPath("default", "runs")))
      if (Int(r, "status.driverState.pgid") > 0) return true;
    return false;
  }));

  gantryd_->Kill9();
  EXPECT_EQ(Scripts(marker + "1").size(), 1u);  // outlived gantryd
  SetGeneration(2);
  Touch("release-2");  // the re-run, not the interrupted script, may finish
  ASSERT_TRUE(gantryd_->Restart().ok());
  Reconnect();
  // Recovery killed the first script's process group and ran the deploy again.
  EXPECT_TRUE(PollUntil([&] { return Scripts(marker + "1").empty(); }))
      << "the dead run's script was not cleaned up: its driver was not found";
  json::object o = WaitPhase("user-nb", "Success");
  EXPECT_EQ(Str(o, "status.outputs.generation"), "2") << json::serialize(o);
  std::vector<json::object> runs = Items(NsPath("default", "runs"));
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(Int(runs[0], "status.attempt"), 2) << json::serialize(runs[0]);
}

}  // namespace
}  // namespace gantry::testing
