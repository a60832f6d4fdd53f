#include "drivers/local/local_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "drivers/local/local_driver.h"

namespace gantry::drivers::local {
namespace {

namespace json = boost::json;

json::object Obj(std::string_view text) { return json::parse(text).as_object(); }

std::string Error(std::string_view text) {
  auto c = ParseLocalConfig(Obj(text));
  EXPECT_FALSE(c.ok());
  if (c.ok()) return "";
  EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition);
  return std::string(c.status().message());
}

TEST(LocalConfigTest, ParsesEverything) {
  auto c = ParseLocalConfig(Obj(R"({"command": ["python3", "-m", "http.server"],
      "args": ["${GANTRY_PORT_HTTP}"], "env": {"A": "x", "N": 3, "B": true},
      "workingDir": "/tmp", "ports": [{"name": "http"}, {"name": "metrics"}],
      "readiness": {"httpPath": "/healthz", "timeoutSeconds": 5},
      "restartPolicy": "Always", "maxRestarts": 2, "timeoutSeconds": 600})"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->command, (std::vector<std::string>{"python3", "-m", "http.server"}));
  EXPECT_EQ(c->args, (std::vector<std::string>{"${GANTRY_PORT_HTTP}"}));
  EXPECT_EQ(c->env.size(), 3u);
  EXPECT_EQ(c->ports, (std::vector<std::string>{"http", "metrics"}));
  EXPECT_EQ(c->readiness.kind, Readiness::Kind::kHttp);
  EXPECT_EQ(c->readiness.port, "http");  // the first port by default
  EXPECT_EQ(c->readiness.timeout, std::chrono::seconds(5));
  EXPECT_EQ(c->restart_policy, RestartPolicy::kAlways);
  EXPECT_EQ(c->max_restarts, 2);
}

TEST(LocalConfigTest, Defaults) {
  auto c = ParseLocalConfig(Obj(R"({"command": ["sleep", "10"]})"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->readiness.kind, Readiness::Kind::kNone);
  EXPECT_EQ(c->restart_policy, RestartPolicy::kOnFailure);
  EXPECT_EQ(c->max_restarts, 5);
}

TEST(LocalConfigTest, RefusalsNameTheField) {
  EXPECT_EQ(Error("{}"),
            "spec.local.command is required: the program to run and its arguments, e.g. "
            "[\"python3\", \"-m\", \"http.server\"]");
  EXPECT_EQ(
      Error(R"({"command": []})"),
      "spec.local.command must name a program to run, e.g. [\"python3\", \"-m\", \"http.server\"]");
  EXPECT_EQ(Error(R"({"command": ["a", 1]})"),
            "spec.local.command[1] must be a string, not a number");
  EXPECT_EQ(Error(R"({"command": ["a"], "restartPolicy": "always"})"),
            "spec.local.restartPolicy must be one of Always, OnFailure, Never (got always)");
  EXPECT_EQ(Error(R"({"command": ["a"], "comand": ["b"]})"),
            "spec.local.comand is not a known field (known: command, args, env, workingDir, "
            "ports, readiness, restartPolicy, maxRestarts, timeoutSeconds)");
  EXPECT_EQ(Error(R"({"command": ["a"], "ports": [{"name": "http"}],
                      "readiness": {"httpPath": "/", "port": "web"}})"),
            "spec.local.readiness.port \"web\" is not one of spec.local.ports (http)");
  EXPECT_EQ(Error(R"({"command": ["a"], "readiness": {"tcpPort": "http"}})"),
            "spec.local.readiness needs a port to check: declare it in spec.local.ports, e.g. "
            "[{name: http}]");
  EXPECT_EQ(Error(R"({"command": ["a"], "ports": [{"name": "a-b"}, {"name": "A_B"}]})"),
            "spec.local.ports[1].name \"A_B\" clashes with another port (both would be "
            "GANTRY_PORT_A_B)");
  EXPECT_EQ(Error(R"({"command": ["a"], "ports": [{"name": "http"}],
                      "readiness": {"httpPath": "healthz"}})"),
            "spec.local.readiness.httpPath must start with '/' (got \"healthz\")");
  EXPECT_EQ(Error(R"({"command": ["a"], "maxRestarts": -1})"),
            "spec.local.maxRestarts must be a whole number from 0 to 1000000");
  EXPECT_EQ(Error(R"({"command": ["a"], "env": {"1X": "y"}})"),
            "spec.local.env: \"1X\" is not a valid variable name (letters, digits and '_', not "
            "starting with a digit)");
  EXPECT_EQ(Error(R"({"command": ["a"], "env": {"X": [1]}})"),
            "spec.local.env.X must be a string, number or boolean, not a list");
}

TEST(LocalConfigTest, ExpandsVariables) {
  std::map<std::string, std::string> env{{"A", "1"}, {"B", "two"}};
  EXPECT_EQ(*ExpandVariables("x${A}y${B}", env, "f"), "x1ytwo");
  EXPECT_EQ(*ExpandVariables("$${A} $A", env, "f"), "${A} $A");
  auto missing = ExpandVariables("${C}", env, "spec.local.args[0]");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            "spec.local.args[0]: ${C} is not set in the workload's environment");
  EXPECT_FALSE(ExpandVariables("${A", env, "f").ok());
}

TEST(LocalConfigTest, PortEnvName) {
  EXPECT_EQ(PortEnvName("http"), "GANTRY_PORT_HTTP");
  EXPECT_EQ(PortEnvName("jupyter-lab"), "GANTRY_PORT_JUPYTER_LAB");
}

// ValidateConfig refuses at save time exactly what a deploy refuses, every problem at once,
// each with its field relative to spec.local and the deploy's sentence without the field.
std::vector<FieldCause> Causes(std::string_view text) {
  static LocalDriver driver;
  std::vector<FieldCause> causes;
  driver.ValidateConfig(Obj(text), &causes);
  return causes;
}

MATCHER_P3(Cause, field, message, type, "") {
  return arg.field == field && arg.message == message && arg.type == type;
}

TEST(LocalConfigTest, ValidateConfigListsEveryProblemWithItsField) {
  EXPECT_THAT(Causes(R"({"command": ["a"]})"), testing::IsEmpty());
  EXPECT_THAT(
      Causes(R"({"comand": ["a"], "ports": [{"name": "http"}, {"name": 7}],
                 "readiness": {"httpPath": "/", "port": "web"}, "restartPolicy": "always",
                 "env": {"1X": "y", "OK": "z", "L": [1]}})"),
      testing::ElementsAre(
          Cause("comand",
                "is not a known field (known: command, args, env, workingDir, ports, "
                "readiness, restartPolicy, maxRestarts, timeoutSeconds)",
                "FieldValueNotSupported"),
          Cause("command",
                "is required: the program to run and its arguments, e.g. [\"python3\", \"-m\", "
                "\"http.server\"]",
                "FieldValueRequired"),
          Cause("env",
                "\"1X\" is not a valid variable name (letters, digits and '_', not starting "
                "with a digit)",
                "FieldValueInvalid"),
          Cause("env.L", "must be a string, number or boolean, not a list", "FieldValueInvalid"),
          Cause("ports[1].name", "must be a string, not a number", "FieldValueInvalid"),
          // the readiness port is not checked against ports that have a problem
          Cause("restartPolicy", "must be one of Always, OnFailure, Never (got always)",
                "FieldValueNotSupported")));
  EXPECT_THAT(
      Causes(R"({"command": ["a"], "ports": [{"name": "http"}],
                         "readiness": {"httpPath": "/", "port": "web"}})"),
      testing::ElementsAre(Cause("readiness.port", "\"web\" is not one of spec.local.ports (http)",
                                 "FieldValueInvalid")));
  EXPECT_THAT(Causes(R"({"command": ["a", 1], "readiness": {"tcpPort": "db"}})"),
              testing::ElementsAre(
                  Cause("command[1]", "must be a string, not a number", "FieldValueInvalid"),
                  Cause("readiness",
                        "needs a port to check: declare it in spec.local.ports, e.g. [{name: "
                        "http}]",
                        "FieldValueInvalid")));
}

TEST(LocalConfigTest, ValidateConfigAgreesWithTheDeployOnTheFirstProblem) {
  for (std::string_view text :
       {R"({})", R"({"command": []})", R"({"command": ["a"], "maxRestarts": -1})",
        R"({"command": ["a"], "ports": [{"name": "a-b"}, {"name": "A_B"}]})",
        R"({"x": 1, "command": 3, "timeoutSeconds": 0})"}) {
    std::vector<FieldCause> causes = Causes(text);
    ASSERT_FALSE(causes.empty()) << text;
    std::string deploy = Error(text);
    EXPECT_EQ(deploy.substr(deploy.size() - causes[0].message.size()), causes[0].message) << text;
  }
}

TEST(LocalConfigTest, SchemaDescribesWhatTheParserAccepts) {
  json::object schema = LocalDriver().ConfigSchema();
  EXPECT_EQ(schema.at("type"), "object");
  EXPECT_EQ(schema.at("additionalProperties"), false);
  EXPECT_EQ(schema.at("required"), json::array{"command"});
  const json::object& props = schema.at("properties").as_object();
  for (const char* field : {"command", "args", "env", "workingDir", "ports", "readiness",
                            "restartPolicy", "maxRestarts", "timeoutSeconds"}) {
    ASSERT_TRUE(props.contains(field)) << field;
    EXPECT_FALSE(props.at(field).as_object().at("description").as_string().empty()) << field;
  }
  EXPECT_EQ(props.size(), 9u);
  EXPECT_EQ(props.at("restartPolicy").at("enum"), (json::array{"Always", "OnFailure", "Never"}));
  EXPECT_EQ(props.at("ports").at("items").at("required"), json::array{"name"});
  EXPECT_EQ(props.at("readiness").at("properties").as_object().size(), 4u);
}

}  // namespace
}  // namespace gantry::drivers::local
