#include "drivers/common/sandbox.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "drivers/common/process.h"

namespace gantry::drivers {
namespace {

TEST(ChildEnvironmentTest, KeepsTheAllowListAndWhatIsSetOnly) {
  ::setenv("GANTRY_BOOTSTRAP_TOKEN", "bootstrap-secret", 1);
  ::setenv("LC_TIME", "C", 1);
  ::setenv("TZ", "UTC", 1);
  ::setenv("SLURM_CONF", "/x.conf", 1);
  auto env = ChildEnvironment({{"GANTRY_RUN", "r-1"}, {"TZ", "Europe/Paris"}});
  auto with_slurm = ChildEnvironment({}, nullptr, {"SLURM_CONF"});
  ::unsetenv("GANTRY_BOOTSTRAP_TOKEN");
  ::unsetenv("SLURM_CONF");
  EXPECT_FALSE(env.count("GANTRY_BOOTSTRAP_TOKEN"));
  EXPECT_FALSE(env.count("SLURM_CONF"));
  EXPECT_EQ(with_slurm["SLURM_CONF"], "/x.conf");
  EXPECT_EQ(env["LC_TIME"], "C");
  EXPECT_EQ(env["TZ"], "Europe/Paris") << "what the driver sets wins";
  EXPECT_EQ(env["GANTRY_RUN"], "r-1");
  EXPECT_TRUE(env.count("PATH"));
}

TEST(ChildEnvironmentTest, AWorkloadUserGetsItsOwnHome) {
  WorkloadUser user{
      .name = "nobody", .uid = 65534, .gid = 65534, .groups = {65534}, .home = "/nonexistent"};
  auto env = ChildEnvironment({}, &user);
  EXPECT_EQ(env["HOME"], "/nonexistent");
  EXPECT_EQ(env["USER"], "nobody");
  EXPECT_EQ(env["LOGNAME"], "nobody");
}

TEST(WorkloadUserTest, RootIsRefusedAndUnknownUsersAreNotFound) {
  auto root = LookUpWorkloadUser("root");
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(root.status().message(),
            "the workload user root is root: workloads must not run as root");
  auto missing = LookUpWorkloadUser("no-such-user-x");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "no user no-such-user-x on this host");
}

TEST(WorkloadDirTest, IsTheStateDirectoryWithoutARoot) {
  EXPECT_EQ(WorkloadDir(Sandbox{}, "/d/instances/u1"), "/d/instances/u1");
  Sandbox sandbox;
  sandbox.workload_root = "/d.workloads";
  EXPECT_EQ(WorkloadDir(sandbox, "/d/instances/u1"), "/d.workloads/u1");
}

// As root: a child of SpawnChild runs as the workload user, owns its workload directory and
// cannot use what only root may.
TEST(SpawnChildTest, RunsAsTheWorkloadUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "only root can switch users";
  auto user = LookUpWorkloadUser("nobody");
  ASSERT_TRUE(user.ok()) << user.status();
  char tmpl[] = "/tmp/gantry-sandbox-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string base = tmpl;
  Sandbox sandbox{.user = *user, .workload_root = base + "/w"};
  // mkdtemp made it 0700: closed to the workload user, which start-up says at once.
  absl::Status closed = PrepareWorkloadRoot(sandbox);
  EXPECT_EQ(closed.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(closed.message(), "the workload user nobody cannot reach " + base + "/w: " + base +
                                  " is closed to it (choose a --workload-dir it can reach, "
                                  "e.g. under /var/lib)");
  ::chmod(tmpl, 0711);
  ASSERT_TRUE(PrepareWorkloadRoot(sandbox).ok());
  auto dir = PrepareWorkloadDir(sandbox, base + "/state/u1");
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(*dir, base + "/w/u1");
  std::string out;
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", "id -u; touch mine && echo wrote; cat /etc/shadow || echo denied"};
  spec.working_dir = *dir;
  spec.run_as = *user;
  ProcessHooks hooks;
  hooks.on_line = [&](std::string_view line) { out += std::string(line) + "\n"; };
  auto r = RunProcess(spec, hooks);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(out.substr(0, out.find('\n')), std::to_string(user->uid)) << out;
  EXPECT_NE(out.find("wrote\n"), std::string::npos) << out;
  EXPECT_NE(out.find("denied\n"), std::string::npos) << out;
  std::error_code ec;
  std::filesystem::remove_all(base, ec);
}

}  // namespace
}  // namespace gantry::drivers
