#include <gmock/gmock.h>
#include <gtest/gtest.h>

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
  EXPECT_EQ(props.size(), 4u);
  EXPECT_EQ(props.at("command").at("items").at("type"), "string");
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

}  // namespace
}  // namespace gantry::drivers::exec
