#include "drivers/slurm/slurm_cli.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "drivers/common/fake_process_launcher.h"

namespace gantry::drivers::slurm {
namespace {

bool Has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// What sbatch (and with --export=ALL the job) is started with: the allow-list and what the
// driver sets, never gantryd's credentials.
TEST(SlurmCliTest, CommandsGetTheAllowListedEnvironmentOnly) {
  ::setenv("GANTRY_BOOTSTRAP_TOKEN", "bootstrap-secret-for-the-test", 1);
  ::setenv("GANTRY_ADMIN_PASSWORD", "admin-secret-for-the-test", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "cloud-secret-for-the-test", 1);
  ::setenv("SLURM_CONF", "/etc/slurm/test.conf", 1);
  ::setenv("LC_ALL", "C.UTF-8", 1);
  auto r = RunCommand({"env"}, {{"GANTRY_RUN", "job-1"}}, "", "", std::chrono::seconds(30));
  ::unsetenv("GANTRY_BOOTSTRAP_TOKEN");
  ::unsetenv("GANTRY_ADMIN_PASSWORD");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  ::unsetenv("SLURM_CONF");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->exit_code, 0) << r->err;
  EXPECT_FALSE(Has(r->out, "GANTRY_BOOTSTRAP_TOKEN")) << r->out;
  EXPECT_FALSE(Has(r->out, "GANTRY_ADMIN_PASSWORD")) << r->out;
  EXPECT_FALSE(Has(r->out, "secret-for-the-test")) << r->out;
  EXPECT_TRUE(Has(r->out, "\nPATH=") || r->out.rfind("PATH=", 0) == 0) << r->out;
  EXPECT_TRUE(Has(r->out, "SLURM_CONF=/etc/slurm/test.conf\n")) << r->out;
  EXPECT_TRUE(Has(r->out, "LC_ALL=C.UTF-8\n")) << r->out;
  EXPECT_TRUE(Has(r->out, "GANTRY_RUN=job-1\n")) << r->out;
}

TEST(SlurmCliTest, AMissingToolIsUnavailable) {
  auto r = RunCommand({"no-such-slurm-tool-x"}, {}, "", "", std::chrono::seconds(30));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(r.status().message(), "cannot run no-such-slurm-tool-x: No such file or directory");
}

// Slurm's commands are started by the launcher the SlurmCli is given.
TEST(SlurmCliTest, StartsCommandsThroughTheInjectedLauncher) {
  FakeProcessLauncher launcher;
  launcher.FailWith(absl::UnavailableError("no more processes"));
  SlurmCli cli("", std::chrono::seconds(30), launcher);
  auto jobs = cli.Jobs({7});
  EXPECT_EQ(jobs.status(), absl::UnavailableError("the Slurm cluster (default slurm.conf) "
                                                  "cannot be used: no more processes"));
  ASSERT_EQ(launcher.started().size(), 1u);
  EXPECT_EQ(launcher.started()[0].argv,
            (std::vector<std::string>{"squeue", "--json", "--jobs=7,7"}));
  EXPECT_FALSE(launcher.started()[0].die_with_parent);
}

}  // namespace
}  // namespace gantry::drivers::slurm
