#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "drivers/common/fake_process_launcher.h"
#include "drivers/exec/exec_driver.h"

namespace gantry::drivers::exec {
namespace {

namespace json = boost::json;

std::vector<FieldCause> Causes(std::string_view text) {
  std::vector<FieldCause> causes;
  ExecDriver().ValidateConfig(json::parse(text).as_object(), &causes);
  return causes;
}

// A run refuses only a command with no program in it; ValidateConfig refuses the same.
TEST(ExecConfigTest, ValidateConfigRefusesWhatARunRefuses) {
  EXPECT_THAT(Causes(R"({"command": ["/opt/deploy.sh"], "env": {"A": 1}})"), testing::IsEmpty());
  for (std::string_view text : {R"({})", R"({"command": []})", R"({"command": [1, true]})",
                                R"({"command": "deploy.sh"})"}) {
    std::vector<FieldCause> causes = Causes(text);
    ASSERT_EQ(causes.size(), 1u) << text;
    EXPECT_EQ(causes[0].field, "command");
    EXPECT_EQ(causes[0].message, "the template's spec.exec.command is empty");
    EXPECT_EQ(causes[0].type, "FieldValueRequired");
  }
}

// timeoutSeconds, when given, is a whole number of seconds above 0 (as the schema says).
TEST(ExecConfigTest, ValidateConfigRefusesATimeoutThatIsNotPositive) {
  for (std::string_view text :
       {R"({"command": ["a"], "timeoutSeconds": 0})", R"({"command": ["a"], "timeoutSeconds": -5})",
        R"({"command": ["a"], "timeoutSeconds": "10"})"}) {
    std::vector<FieldCause> causes = Causes(text);
    ASSERT_EQ(causes.size(), 1u) << text;
    EXPECT_EQ(causes[0].field, "timeoutSeconds");
    EXPECT_EQ(causes[0].message, "must be greater than 0");
  }
  EXPECT_THAT(Causes(R"({"command": ["a"], "timeoutSeconds": 1})"), testing::IsEmpty());
}

TEST(ExecConfigTest, CheckReadsTheConfigARunUses) {
  ConfigProblems problems("spec.exec");
  ExecConfig c = CheckExecConfig(
      json::parse(R"({"command": ["a", 2, "b"], "workingDir": "/srv", "env": {"N": 3, "S": "x"}})")
          .as_object(),
      &problems);
  EXPECT_TRUE(problems.ok());
  EXPECT_EQ(c.command, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(c.working_dir, "/srv");
  EXPECT_EQ(c.env, (std::map<std::string, std::string>{{"N", "3"}, {"S", "x"}}));
}

TEST(ExecConfigTest, Schema) {
  json::object schema = ExecDriver().ConfigSchema();
  EXPECT_EQ(schema.at("type"), "object");
  EXPECT_EQ(schema.at("required"), json::array{"command"});
  const json::object& props = schema.at("properties").as_object();
  EXPECT_EQ(props.size(), 5u);
  EXPECT_EQ(props.at("command").at("items").at("type"), "string");
  EXPECT_EQ(props.at("actions").at("items").at("type"), "string");
  EXPECT_EQ(props.at("timeoutSeconds").at("type"), "integer");
}

TEST(ConfigProblemsTest, CausesDropTheLeadingFieldName) {
  ConfigProblems problems("spec.x");
  problems.Add("a", "spec.x.a must be set", "FieldValueRequired");
  problems.Add("b", "spec.x.b: \"q\" is not valid");
  problems.Add("c", "spec.x needs c");
  problems.Add("d", "spec.x.dd is longer");
  EXPECT_EQ(problems.FirstAsStatus(), absl::FailedPreconditionError("spec.x.a must be set"));
  std::vector<FieldCause> causes;
  problems.AppendCauses(&causes);
  ASSERT_EQ(causes.size(), 4u);
  EXPECT_EQ(causes[0].message, "must be set");
  EXPECT_EQ(causes[0].type, "FieldValueRequired");
  EXPECT_EQ(causes[1].message, "\"q\" is not valid");
  EXPECT_EQ(causes[2].message, "spec.x needs c");
  EXPECT_EQ(causes[3].message, "spec.x.dd is longer");
}

// The driver starts its program through the launcher it is given, with the action appended.
TEST(ExecDriverTest, StartsProgramsThroughTheInjectedLauncher) {
  struct NoContext : RunContext {
    void Log(std::string_view) override {}
    bool Canceled() const override { return false; }
    void SaveDriverState(const json::object&) override {}
  } context;
  FakeProcessLauncher launcher;
  launcher.FailWith(absl::UnavailableError("no more processes"));
  ExecDriver driver({}, launcher);
  DeployRequest request;
  request.action = "apply";
  request.run_uid = "run-1";
  request.config = json::parse(R"({"command": ["/opt/deploy.sh", "-v"]})").as_object();
  char dir[] = "/tmp/gantry-exec-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  request.state_dir = std::string(dir) + "/state";
  EXPECT_EQ(driver.Apply(request, context).status(), absl::UnavailableError("no more processes"));
  std::filesystem::remove_all(dir);
  ASSERT_EQ(launcher.started().size(), 1u);
  EXPECT_EQ(launcher.started()[0].argv,
            (std::vector<std::string>{"/opt/deploy.sh", "-v", "apply"}));
  EXPECT_TRUE(launcher.started()[0].die_with_parent);
}

// spec.exec.actions: what the program implements; stop and start only when both are listed.
TEST(ExecConfigTest, ActionsAreASubsetOfTheFour) {
  EXPECT_THAT(Causes(R"({"command": ["x"], "actions": ["apply", "destroy", "stop", "start"]})"),
              testing::IsEmpty());
  std::vector<FieldCause> causes =
      Causes(R"({"command": ["x"], "actions": ["apply", "pause", "apply", 3]})");
  ASSERT_EQ(causes.size(), 3u);
  EXPECT_EQ(causes[0].field, "actions[1]");
  EXPECT_EQ(causes[0].message,
            "Unsupported value: \"pause\": supported values: \"apply\", \"destroy\", \"stop\", "
            "\"start\"");
  EXPECT_EQ(causes[0].type, "FieldValueNotSupported");
  EXPECT_EQ(causes[1].field, "actions[2]");
  EXPECT_EQ(causes[1].type, "FieldValueDuplicate");
  EXPECT_EQ(causes[2].field, "actions[3]");
  causes = Causes(R"({"command": ["x"], "actions": "stop"})");
  ASSERT_EQ(causes.size(), 1u);
  EXPECT_EQ(causes[0].field, "actions");
}

TEST(ExecConfigTest, CanStopOnlyWhenStopAndStartAreListed) {
  ExecDriver d;
  EXPECT_TRUE(d.Caps().stop_start);
  EXPECT_TRUE(
      d.CanStop(json::parse(R"({"command": ["x"], "actions": ["stop", "start"]})").as_object())
          .ok());
  for (std::string_view text :
       {R"({"command": ["x"]})", R"({"command": ["x"], "actions": ["stop"]})"}) {
    absl::Status s = d.CanStop(json::parse(text).as_object());
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << text;
    EXPECT_THAT(std::string(s.message()), testing::HasSubstr("spec.exec.actions does not list"));
  }
}

}  // namespace
}  // namespace gantry::drivers::exec
