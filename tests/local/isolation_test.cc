// Workload isolation (issue 15, item 3): what a local workload and an exec script can reach of
// gantryd. gantryd is started the way the harness starts it, with GANTRY_BOOTSTRAP_TOKEN and
// GANTRY_ADMIN_PASSWORD in its environment; the workload and the script dump their
// environment and try to read secret.key, gantry.db and /proc/<gantryd>/environ.
//
// Always: no child sees either variable (the allow-listed ChildEnvironment), and gantryd's
// own /proc/PID/environ no longer holds their values (overwritten once read). As root (CI):
// the child runs as the workload user, not root; the three reads fail; its GANTRY_STATE_DIR
// is its own, writable, and outside the data directory; an outputs file that is a symlink
// to secret.key is refused instead of read as root.
#include <unistd.h>

#include <string>

#include "local_fixture.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
using local_test::EnvValue;

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

class IsolationTest : public LocalTest {
 protected:
  // A script that writes probe-NAME (its uid, then "read F" or "denied F" per secret, then
  // "wrote" when GANTRY_STATE_DIR is writable) and env-NAME; for exec it also writes outputs.
  // NAME is $GANTRY_INSTANCE.
  std::string ProbeScript() {
    const std::string data = gantryd_->data_dir();
    const std::string pid = std::to_string(gantryd_->pid());
    return WriteScript("probe.sh", "D='" + dir() + "'\n" + R"SH(
out="$D/.probe-$GANTRY_INSTANCE.tmp"
id -u > "$out"
for f in ')SH" + data + "/secret.key' '" +
                                       data + "/gantry.db' '/proc/" + pid + R"SH(/environ'; do
  if cat "$f" > /dev/null 2>&1; then echo "read $f" >> "$out"; else echo "denied $f" >> "$out"; fi
done
touch "$GANTRY_STATE_DIR/mine" 2>/dev/null && echo wrote >> "$out"
env | sort > "$D/env-$GANTRY_INSTANCE"
mv "$out" "$D/probe-$GANTRY_INSTANCE"
[ -n "$GANTRY_OUTPUTS" ] && { echo '{"probed": "yes"}' > "$GANTRY_OUTPUTS"; exit 0; }
exec tail -f /dev/null "$D/probe.sh"
)SH");
  }

  // What every probe must show: no credential in the environment, and as root no secret
  // readable, a uid that is not root and a state directory of its own outside the data dir.
  void ExpectIsolated(const std::string& name) {
    ASSERT_TRUE(WaitFile("probe-" + name));
    const std::string env = ReadFile(Path("env-" + name));
    const std::string probe = ReadFile(Path("probe-" + name));
    EXPECT_FALSE(Contains(env, "GANTRY_BOOTSTRAP_TOKEN")) << env;
    EXPECT_FALSE(Contains(env, "GANTRY_ADMIN_PASSWORD")) << env;
    EXPECT_FALSE(Contains(env, kBootstrapToken)) << env;
    EXPECT_FALSE(Contains(env, kAdminPassword)) << env;
    EXPECT_FALSE(EnvValue(env, "PATH").empty()) << env;
    EXPECT_EQ(EnvValue(env, "GANTRY_INSTANCE"), name) << env;
    const std::string state_dir = EnvValue(env, "GANTRY_STATE_DIR");
    EXPECT_TRUE(Contains(probe, "wrote"))
        << "GANTRY_STATE_DIR " << state_dir << " is not writable: " << probe;
    if (::geteuid() != 0) return;
    EXPECT_NE(probe.substr(0, probe.find('\n')), "0") << "the child runs as root: " << probe;
    EXPECT_FALSE(Contains(probe, "read ")) << probe;
    EXPECT_TRUE(Contains(probe, "denied " + gantryd_->data_dir() + "/secret.key")) << probe;
    EXPECT_TRUE(Contains(probe, "denied " + gantryd_->data_dir() + "/gantry.db")) << probe;
    EXPECT_TRUE(Contains(probe, "/environ")) << probe;
    EXPECT_NE(state_dir.rfind(gantryd_->data_dir() + "/", 0), 0u)
        << "GANTRY_STATE_DIR is inside the data directory: " << state_dir;
  }
};

TEST_F(IsolationTest, GantrydForgetsItsCredentialsOnceRead) {
  // Read by us (root or gantryd's own user): what any child of the same uid could read.
  const std::string environ = ReadFile("/proc/" + std::to_string(gantryd_->pid()) + "/environ");
  EXPECT_FALSE(environ.empty());
  EXPECT_FALSE(Contains(environ, kBootstrapToken));
  EXPECT_FALSE(Contains(environ, kAdminPassword));
  // And they still worked: the harness logged in with them.
  EXPECT_EQ(api().Get(ClusterPath("projects")).status, 200);
}

TEST_F(IsolationTest, LocalWorkloadGetsNoCredentialsAndCannotReadTheDataDirectory) {
  json::object local{{"command", json::array{"/bin/sh", ProbeScript()}}};
  api().MustCreate(
      NsPath("default", "environmenttemplates"),
      json::object{
          {"apiVersion", "paas.gantry.dev/v1"},
          {"kind", "EnvironmentTemplate"},
          {"metadata", {{"name", "probe"}}},
          {"spec", {{"displayName", "Probe"}, {"driver", "local"}, {"local", std::move(local)}}}});
  CreateLocalProfile("probe", "probe", json::object{{"cpu", 1}});
  api().CreateInstance("default", "nosy", "probe");
  Deploy("nosy");
  WaitPhase("nosy", "Success");
  ExpectIsolated("nosy");
}

TEST_F(IsolationTest, ExecScriptGetsNoCredentialsAndCannotReadTheDataDirectory) {
  CreateExecTemplate("probe", json::array{"/bin/sh", ProbeScript()});
  api().CreateProfile("default", "probe", "probe");
  api().CreateInstance("default", "nosy", "probe");
  ASSERT_EQ(Action("nosy", "deploy").status, 202);
  json::object o = WaitPhase("nosy", "Success");
  EXPECT_EQ(Str(o, "status.outputs.probed"), "yes") << json::serialize(o);
  ExpectIsolated("nosy");
}

TEST_F(IsolationTest, ExecOutputsThatLinkToTheSecretKeyAreRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "only a root gantryd could read secret.key for a script";
  const std::string script = WriteScript(
      "link.sh", "ln -sf '" + gantryd_->data_dir() + "/secret.key' \"$GANTRY_OUTPUTS\"\n");
  CreateExecTemplate("link", json::array{"/bin/sh", script});
  api().CreateProfile("default", "link", "link");
  api().CreateInstance("default", "sly", "link");
  ASSERT_EQ(Action("sly", "deploy").status, 202);
  json::object o = WaitPhase("sly", "Failed");
  const std::string key = ReadFile(gantryd_->data_dir() + "/secret.key");
  ASSERT_FALSE(key.empty());
  EXPECT_FALSE(Contains(json::serialize(o), key));
  EXPECT_TRUE(Contains(Str(o, "status.message"), "the outputs file")) << json::serialize(o);
}

}  // namespace
}  // namespace gantry::testing
