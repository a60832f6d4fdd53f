#include "drivers/slurm/slurm_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "drivers/slurm/slurm_driver.h"

namespace gantry::drivers::slurm {
namespace {

namespace json = boost::json;

json::object Obj(std::string_view text) { return json::parse(text).as_object(); }

std::string Error(std::string_view text) {
  auto c = ParseSlurmConfig(Obj(text));
  EXPECT_FALSE(c.ok()) << text;
  if (c.ok()) return "";
  EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition);
  return std::string(c.status().message());
}

TEST(SlurmConfigTest, ParsesEverything) {
  auto c = ParseSlurmConfig(Obj(R"({"slurmConf": "/etc/slurm/a.conf", "partition": "gpu",
      "account": "ml-team", "qos": "high", "timeLimit": "1-00:00:00", "nodes": 2,
      "command": ["python3", "train.py", "--lr", "1e-4 x"], "env": {"A": "x", "N": 3},
      "workingDir": "/shared", "timeoutSeconds": 600})"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->slurm_conf, "/etc/slurm/a.conf");
  EXPECT_EQ(c->partition, "gpu");
  EXPECT_EQ(c->account, "ml-team");
  EXPECT_EQ(c->qos, "high");
  EXPECT_EQ(c->time_limit, "1-00:00:00");
  EXPECT_EQ(c->nodes, 2);
  EXPECT_EQ(c->env.size(), 2u);
  EXPECT_EQ(c->env[1], (std::pair<std::string, std::string>{"N", "3"}));

  SbatchCall call = BuildSbatch(*c, "proj.inst", R"({"team":"llm"})", "/shared", "gpu:h100:8");
  EXPECT_EQ(call.args, (std::vector<std::string>{
                           "--parsable", "--job-name=proj.inst", R"(--comment={"team":"llm"})",
                           "--partition=gpu", "--account=ml-team", "--qos=high",
                           "--time=1-00:00:00", "--nodes=2", "--gres=gpu:h100:8", "--chdir=/shared",
                           "--export=ALL", "--wrap=python3 train.py --lr '1e-4 x'"}));
  EXPECT_EQ(call.stdin_script, "");
}

TEST(SlurmConfigTest, ScriptGoesOnStdinAndDefaults) {
  auto c = ParseSlurmConfig(Obj(R"({"script": "#!/bin/sh\nsrun hostname\n", "timeLimit": 30})"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->nodes, 1);
  EXPECT_EQ(c->time_limit, "30");
  SbatchCall call = BuildSbatch(*c, "p.i", "{}", "/tmp", "");
  EXPECT_EQ(call.args,
            (std::vector<std::string>{"--parsable", "--job-name=p.i", "--comment={}", "--time=30",
                                      "--nodes=1", "--chdir=/tmp", "--export=ALL"}));
  EXPECT_EQ(call.stdin_script, "#!/bin/sh\nsrun hostname\n");
}

TEST(SlurmConfigTest, AWorkloadUserSubmitsWithItsUidAndGid) {
  auto c = ParseSlurmConfig(Obj(R"({"command": ["hostname"]})"));
  ASSERT_TRUE(c.ok()) << c.status();
  WorkloadUser user{.name = "gantry-workload", .uid = 998, .gid = 997, .groups = {}, .home = ""};
  SbatchCall call = BuildSbatch(*c, "p.i", "{}", "/w/u1", "", &user);
  EXPECT_EQ(call.args, (std::vector<std::string>{"--parsable", "--job-name=p.i", "--comment={}",
                                                 "--nodes=1", "--chdir=/w/u1", "--uid=998",
                                                 "--gid=997", "--export=ALL", "--wrap=hostname"}));
}

TEST(SlurmConfigTest, RefusalsNameTheField) {
  EXPECT_EQ(Error(R"({})"),
            "spec.slurm needs the job: a batch script (script) or a command (command)");
  EXPECT_EQ(Error(R"({"script": "#!/bin/sh", "command": ["x"]})"),
            "spec.slurm.script and spec.slurm.command are exclusive: give one");
  EXPECT_EQ(Error(R"({"script": "echo hi"})"),
            "spec.slurm.script must start with \"#!\" (an interpreter line, as sbatch requires)");
  EXPECT_EQ(Error(R"({"command": []})"), "spec.slurm.command must be a non-empty list of strings");
  EXPECT_EQ(Error(R"({"command": ["x"], "nodes": 0})"),
            "spec.slurm.nodes must be at least 1 (got 0)");
  EXPECT_EQ(Error(R"({"command": ["x"], "nodes": "2"})"),
            "spec.slurm.nodes must be a whole number");
  EXPECT_EQ(Error(R"({"command": ["x"], "partition": "gpu,cpu"})"),
            "spec.slurm.partition must be a Slurm name (letters, digits, '_', '-', '.'; got "
            "\"gpu,cpu\")");
  EXPECT_EQ(Error(R"({"command": ["x"], "timeLimit": "1 hour"})"),
            "spec.slurm.timeLimit must be a Slurm time (minutes, \"HH:MM:SS\", \"D-HH:MM:SS\" or "
            "\"UNLIMITED\"; got \"1 hour\")");
  EXPECT_EQ(Error(R"({"command": ["x"], "slurmConf": "slurm.conf"})"),
            "spec.slurm.slurmConf must be an absolute path (got \"slurm.conf\")");
  EXPECT_EQ(Error(R"({"command": ["x"], "partiton": "gpu"})"),
            "spec.slurm.partiton is not a field of the Slurm driver (known: slurmConf, partition, "
            "account, qos, timeLimit, nodes, script, command, env, workingDir, timeoutSeconds)");
  EXPECT_EQ(Error(R"({"command": ["x"], "env": {"1A": "x"}})"),
            "spec.slurm.env has an invalid variable name \"1A\"");
}

TEST(SlurmConfigTest, TimeFormats) {
  for (const char* ok :
       {"10", "10:00", "2:00:00", "1-0", "1-2:00", "3-04:05:06", "UNLIMITED", "infinite"})
    EXPECT_TRUE(
        ParseSlurmConfig(Obj(std::string(R"({"command": ["x"], "timeLimit": ")") + ok + "\"}"))
            .ok())
        << ok;
  for (const char* bad : {"", "1:2:3:4", "-1", "a", "1-", "1-a"})
    EXPECT_FALSE(
        ParseSlurmConfig(Obj(std::string(R"({"command": ["x"], "timeLimit": ")") + bad + "\"}"))
            .ok())
        << bad;
}

TEST(SlurmConfigTest, GresFromTheProfile) {
  EXPECT_EQ(*GresForResources(Obj(R"({"gpu": {"type": "h100", "count": 8}})")), "gpu:h100:8");
  EXPECT_EQ(*GresForResources(Obj(R"({"gpu": {"count": 2}})")), "gpu:2");
  EXPECT_EQ(*GresForResources(Obj(R"({"gpu": {"count": 0}})")), "");
  EXPECT_EQ(*GresForResources(Obj(R"({"cpu": 4})")), "");
  EXPECT_FALSE(GresForResources(Obj(R"({"gpu": {"type": "h100,nic", "count": 1}})")).ok());
}

TEST(SlurmConfigTest, ShellQuote) {
  EXPECT_EQ(ShellQuote("plain-arg_1.py"), "plain-arg_1.py");
  EXPECT_EQ(ShellQuote("it's"), R"('it'"'"'s')");
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("$HOME; rm"), "'$HOME; rm'");
}

std::vector<FieldCause> Causes(std::string_view text) {
  static SlurmDriver driver;
  std::vector<FieldCause> causes;
  driver.ValidateConfig(Obj(text), &causes);
  return causes;
}

MATCHER_P3(Cause, field, message, type, "") {
  return arg.field == field && arg.message == message && arg.type == type;
}

TEST(SlurmConfigTest, ValidateConfigListsEveryProblemWithItsField) {
  EXPECT_THAT(Causes(R"({"script": "#!/bin/sh\ntrue"})"), testing::IsEmpty());
  EXPECT_THAT(
      Causes(R"({"partiton": "gpu", "slurmConf": "etc/slurm.conf", "nodes": 0,
                 "qos": "a b", "command": ["a", 1], "env": {"9": "x"}, "timeoutSeconds": 0})"),
      testing::ElementsAre(
          Cause("partiton",
                "is not a field of the Slurm driver (known: slurmConf, partition, account, qos, "
                "timeLimit, nodes, script, command, env, workingDir, timeoutSeconds)",
                "FieldValueNotSupported"),
          Cause("slurmConf", "must be an absolute path (got \"etc/slurm.conf\")",
                "FieldValueInvalid"),
          Cause("qos", "must be a Slurm name (letters, digits, '_', '-', '.'; got \"a b\")",
                "FieldValueInvalid"),
          Cause("nodes", "must be at least 1 (got 0)", "FieldValueInvalid"),
          Cause("command", "must be a non-empty list of strings", "FieldValueInvalid"),
          Cause("env", "has an invalid variable name \"9\"", "FieldValueInvalid"),
          Cause("timeoutSeconds", "must be greater than 0", "FieldValueInvalid")));
  EXPECT_THAT(
      Causes(R"({})"),
      testing::ElementsAre(Cause(
          "script", "spec.slurm needs the job: a batch script (script) or a command (command)",
          "FieldValueRequired")));
  EXPECT_THAT(Causes(R"({"script": "#!/bin/sh", "command": ["a"]})"),
              testing::ElementsAre(Cause(
                  "command", "spec.slurm.script and spec.slurm.command are exclusive: give one",
                  "FieldValueForbidden")));
}

TEST(SlurmConfigTest, ValidateConfigAgreesWithTheDeployOnTheFirstProblem) {
  for (std::string_view text :
       {R"({})", R"({"script": "echo"})", R"({"script": "#!/bin/sh", "timeLimit": "soon"})",
        R"({"x": 1, "nodes": "two"})", R"({"command": [""]})"}) {
    std::vector<FieldCause> causes = Causes(text);
    ASSERT_FALSE(causes.empty()) << text;
    std::string deploy = Error(text);
    EXPECT_EQ(deploy.substr(deploy.size() - causes[0].message.size()), causes[0].message) << text;
  }
}

TEST(SlurmConfigTest, SchemaDescribesWhatTheParserAccepts) {
  json::object schema = SlurmConfigSchema();
  EXPECT_EQ(schema.at("type"), "object");
  EXPECT_EQ(schema.at("additionalProperties"), false);
  const json::object& props = schema.at("properties").as_object();
  for (const char* field : {"slurmConf", "partition", "account", "qos", "timeLimit", "nodes",
                            "script", "command", "env", "workingDir", "timeoutSeconds"}) {
    ASSERT_TRUE(props.contains(field)) << field;
    EXPECT_FALSE(props.at(field).as_object().at("description").as_string().empty()) << field;
  }
  EXPECT_EQ(props.size(), 11u);
  EXPECT_EQ(props.at("nodes").at("minimum"), 1);
}

}  // namespace
}  // namespace gantry::drivers::slurm
