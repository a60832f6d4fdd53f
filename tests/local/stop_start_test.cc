// Stop and start with the local driver (issue 17 item 1) on a real gantryd with three
// configured GPUs: a stop ends the workload's process group and frees its GPUs but keeps its
// working directory (a file the workload wrote survives), and a start runs it again, on the
// GPUs free at that moment (here not the ones it had).
#include <gtest/gtest.h>

#include "local_fixture.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
using local_test::Assignments;
using local_test::EnvValue;
using local_test::GetNode;

class LocalStopStartTest : public LocalTest {
 protected:
  std::string Gpus() override { return "h100:3"; }

  // A workload that appends a line to notes.txt in its working directory each time it starts,
  // dumps its environment, then waits.
  std::string NotesWorkload() {
    return WriteScript("notes.sh", R"SH(D=')SH" + dir() + R"SH('
echo "started with GPUs [$CUDA_VISIBLE_DEVICES]" >> "$GANTRY_STATE_DIR/notes.txt"
env | sort > "$D/.env-$GANTRY_INSTANCE.tmp" && mv "$D/.env-$GANTRY_INSTANCE.tmp" "$D/env-$GANTRY_INSTANCE"
tail -f /dev/null "$D/notes.sh" > /dev/null &
wait
)SH");
  }
};

TEST_F(LocalStopStartTest, StopKeepsTheWorkingDirectoryAndStartUsesTheFreeGpus) {
  CreateLocalTemplate(
      "notes", false,
      json::object{{"command", json::array{"/bin/sh", NotesWorkload()}}, {"args", json::array{}}});
  CreateLocalProfile("two", "notes", Gpu(2));
  CreateLocalProfile("one", "notes", Gpu(1));
  api().CreateInstance("default", "nb", "two");
  Deploy("nb");
  json::object o = WaitPhase("nb", "Success");
  EXPECT_EQ(local_test::JoinStrings(At(o, "status.gpus")), "0,1");
  const int pid = DriverPid(o);
  ASSERT_GT(pid, 0);
  std::string env = WorkloadEnv("nb");
  const std::string notes = EnvValue(env, "GANTRY_STATE_DIR") + "/notes.txt";
  EXPECT_EQ(ReadFile(notes), "started with GPUs [0,1]\n");

  // Stop: the process group is gone, the GPUs free, the directory and its file still there.
  ASSERT_EQ(Action("nb", "stop").status, 202);
  o = WaitPhase("nb", "Stopped");
  EXPECT_TRUE(At(o, "status.gpus").is_null()) << json::serialize(o);
  EXPECT_TRUE(At(o, "status.driverState").is_null()) << json::serialize(o);
  EXPECT_TRUE(WaitNoProcesses(pid, dir() + "/notes.sh"));
  for (const auto& [index, owner] : Assignments(GetNode(api())))
    EXPECT_EQ(owner, "") << "GPU " << index;
  EXPECT_EQ(ReadFile(notes), "started with GPUs [0,1]\n");

  // Another instance takes GPU 0 meanwhile; the start gets the two left.
  api().CreateInstance("default", "other", "one");
  Deploy("other");
  EXPECT_EQ(local_test::JoinStrings(At(WaitPhase("other", "Success"), "status.gpus")), "0");
  std::filesystem::remove(Path("env-nb"));
  ASSERT_EQ(Action("nb", "start").status, 202);
  o = WaitPhase("nb", "Success");
  EXPECT_EQ(local_test::JoinStrings(At(o, "status.gpus")), "1,2");
  EXPECT_EQ(Str(o, "status.message"), "started by run nb-3");
  const int again = DriverPid(o);
  EXPECT_GT(again, 0);
  EXPECT_NE(again, pid);
  env = WorkloadEnv("nb");
  EXPECT_EQ(EnvValue(env, "CUDA_VISIBLE_DEVICES"), "1,2");
  EXPECT_EQ(ReadFile(notes), "started with GPUs [0,1]\nstarted with GPUs [1,2]\n");
  std::map<int64_t, std::string> owners = Assignments(GetNode(api()));
  EXPECT_EQ(owners[1], owners[2]);
  EXPECT_NE(owners[1], "");

  ASSERT_EQ(Action("nb", "destroy").status, 202);
  WaitPhase("nb", "NotDeployed");
  EXPECT_TRUE(PollUntil([&] { return local_test::ProcessesInGroup(again).empty(); }));
}

}  // namespace
}  // namespace gantry::testing
