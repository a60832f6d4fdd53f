// The Slurm driver end to end (issue 7), against a real gantryd and a real single-node Slurm
// cluster (slurm_cluster.h: slurmctld + slurmd of Debian's slurm-wlm, auth/none, four
// placeholder h100 GPUs): deploy → Waiting → Success with the job id, node list and GPUs in
// the outputs; PENDING behind a larger job with Slurm's reason, starting by itself; destroy
// and cancel cancelling the job until it is gone; a job cancelled or failing outside Gantry
// failing the instance within seconds; re-adoption after kill -9 of gantryd; the cluster down
// and Slurm refusing a job, each a clear error.
//
// Without slurm-wlm (or as non-root) every test skips with the reason; GANTRY_REQUIRE_SLURM=1
// turns that into a failure (CI).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>

#include "engine_fixture.h"
#include "slurm_cluster.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

// The value of `key` in an `env` dump (KEY=VALUE lines); "<unset>" when absent.
std::string EnvValue(const std::string& dump, const std::string& key) {
  std::istringstream in(dump);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key + "=", 0) == 0) return line.substr(key.size() + 1);
  return "<unset>";
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class SlurmDriverTest : public EngineTest {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new SlurmCluster();
    start_status_ = new absl::Status(cluster_->Start());
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
    delete start_status_;
    start_status_ = nullptr;
  }

  void SetUp() override {
    if (!start_status_->ok()) {
      if (SlurmRequired()) FAIL() << "GANTRY_REQUIRE_SLURM=1 but " << start_status_->message();
      GTEST_SKIP() << "no Slurm cluster can run here: " << start_status_->message();
    }
    EngineTest::SetUp();
  }

  void TearDown() override {
    if (!start_status_->ok()) return;
    EngineTest::TearDown();
    // The next test starts on an idle cluster.
    if (!cluster_->CancelAll()) {
      cluster_->StopController();
      EXPECT_TRUE(cluster_->StartController().ok()) << cluster_->Logs();
      EXPECT_TRUE(cluster_->CancelAll()) << cluster_->Logs();
    }
  }

  // The job: dumps its environment to env-INSTANCE, then waits until fail-INSTANCE exists
  // and exits 3.
  std::string JobScript() {
    return "#!/bin/sh\nD='" + dir() + "'\n" + R"SH(
env | sort > "$D/.env-$GANTRY_INSTANCE.tmp" && mv "$D/.env-$GANTRY_INSTANCE.tmp" "$D/env-$GANTRY_INSTANCE"
echo "job of $GANTRY_INSTANCE on $SLURM_JOB_NODELIST with GPUs [$CUDA_VISIBLE_DEVICES]"
while [ ! -f "$D/fail-$GANTRY_INSTANCE" ]; do sleep 0.2; done
echo "failing on purpose"
exit 3
)SH";
  }

  json::object CreateSlurmTemplate(const std::string& name, json::object extra = {}) {
    json::object slurm{{"slurmConf", cluster_->conf()},
                       {"partition", SlurmCluster::kPartition},
                       {"timeLimit", "30"},
                       {"script", JobScript()},
                       {"env", json::object{{"WORKLOAD_MARK", "set-by-template"}}}};
    for (auto& kv : extra) slurm[kv.key()] = kv.value();
    return api().MustCreate(NsPath("default", "environmenttemplates"),
                            json::object{{"apiVersion", "paas.gantry.dev/v1"},
                                         {"kind", "EnvironmentTemplate"},
                                         {"metadata", {{"name", name}}},
                                         {"spec",
                                          {{"displayName", "Slurm " + name},
                                           {"driver", "slurm"},
                                           {"slurm", std::move(slurm)}}}});
  }

  json::object CreateProfile(const std::string& name, const std::string& tmpl, int gpus) {
    return api().MustCreate(
        NsPath("default", "computeprofiles"),
        json::object{{"apiVersion", "paas.gantry.dev/v1"},
                     {"kind", "ComputeProfile"},
                     {"metadata", {{"name", name}}},
                     {"spec",
                      {{"templateRef", {{"name", tmpl}}},
                       {"resources", {{"gpu", {{"type", "h100"}, {"count", gpus}}}}}}}});
  }

  std::string Deploy(const std::string& name) {
    Resp r = Action(name, "deploy");
    EXPECT_EQ(r.status, 202) << r.raw;
    return Str(r.obj(), "status.lastRunRef.name");
  }

  // Deploys and waits for Success; returns the Slurm job id.
  std::string DeployRunning(const std::string& name) {
    Deploy(name);
    json::object o = WaitPhase(name, "Success");
    std::string id = Str(o, "status.outputs.jobId");
    EXPECT_FALSE(id.empty()) << json::serialize(o);
    return id;
  }

  std::string RunLog(const std::string& run) {
    return api().Get(NsPath("default", "runs", run) + "/log").raw;
  }

  // Polls until Slurm reports `job` over (or no longer lists it) and no process of it is left.
  bool WaitJobGone(const std::string& job) {
    // slurmd runs the batch script from SPOOL/jobNNNNN/slurm_script.
    char spool[32];
    std::snprintf(spool, sizeof spool, "/spool/job%05lld/", std::stoll(job));
    const std::string marker = cluster_->dir() + spool;
    std::string state;
    bool ok = PollUntil([&] {
      state = cluster_->JobState(job);
      return (state.empty() || state == "CANCELLED" || state == "FAILED" || state == "COMPLETED") &&
             ProcessesWith(marker).empty();
    });
    EXPECT_TRUE(ok) << "job " << job << " is " << state
                    << "; processes left: " << ::testing::PrintToString(ProcessesWith(marker));
    return ok;
  }

  static SlurmCluster* cluster_;
  static absl::Status* start_status_;
};

SlurmCluster* SlurmDriverTest::cluster_ = nullptr;
absl::Status* SlurmDriverTest::start_status_ = nullptr;

TEST_F(SlurmDriverTest, DeployRunsTheJobWithItsGpusAndDestroyCancelsItUntilGone) {
  CreateSlurmTemplate("train");
  CreateProfile("h100x2", "train", 2);
  api().CreateInstance("default", "trainer", "h100x2", json::object{{"team", "llm"}});
  std::string run = Deploy("trainer");
  EXPECT_EQ(run, "trainer-1");
  json::object o = WaitPhase("trainer", "Success");

  // Outputs: the job, where it runs and its GPUs.
  std::string id = Str(o, "status.outputs.jobId");
  ASSERT_FALSE(id.empty()) << json::serialize(o);
  EXPECT_EQ(Str(o, "status.outputs.jobName"), "default.trainer");
  EXPECT_EQ(Str(o, "status.outputs.cluster"), SlurmCluster::kClusterName);
  EXPECT_EQ(Str(o, "status.outputs.partition"), "gpu");
  EXPECT_EQ(Str(o, "status.outputs.nodes"), SlurmCluster::kNode);
  EXPECT_EQ(Str(o, "status.outputs.nodeCount"), "1");
  EXPECT_EQ(Str(o, "status.outputs.gpus").rfind("gpu:h100:2(IDX:", 0), 0u) << json::serialize(o);
  EXPECT_EQ(Int(o, "status.driverState.jobId"), std::stoll(id)) << json::serialize(o);
  std::string log = RunLog(run);
  EXPECT_TRUE(Has(log, "sbatch --parsable --job-name=default.trainer")) << log;
  EXPECT_TRUE(Has(log, "--gres=gpu:h100:2")) << log;
  EXPECT_TRUE(Has(log, "submitted Slurm job " + id)) << log;

  // Slurm's view: the job runs under its name with the labels in its comment.
  EXPECT_EQ(cluster_->JobState(id), "RUNNING");
  std::string comment = cluster_->JobField(id, "comment");
  EXPECT_TRUE(Has(comment, R"("team":"llm")")) << comment;
  EXPECT_TRUE(Has(comment, R"("paas.gantry.dev/instance":"default/trainer")")) << comment;

  // The job's own environment.
  ASSERT_TRUE(WaitFile("env-trainer"));
  std::string env = ReadFile(Path("env-trainer"));
  EXPECT_EQ(EnvValue(env, "SLURM_JOB_ID"), id);
  EXPECT_EQ(EnvValue(env, "SLURM_JOB_NAME"), "default.trainer");
  EXPECT_EQ(EnvValue(env, "SLURM_GPUS_ON_NODE"), "2");
  EXPECT_EQ(EnvValue(env, "GANTRY_INSTANCE"), "trainer");
  EXPECT_EQ(EnvValue(env, "GANTRY_PROJECT"), "default");
  EXPECT_EQ(EnvValue(env, "WORKLOAD_MARK"), "set-by-template");

  // Destroy: scancel, and the run ends only once the job is gone.
  Resp d = Action("trainer", "destroy");
  EXPECT_EQ(d.status, 202) << d.raw;
  o = WaitPhase("trainer", "NotDeployed");
  std::string state = cluster_->JobState(id);
  EXPECT_TRUE(state == "CANCELLED" || state.empty()) << state;
  EXPECT_TRUE(WaitJobGone(id));
  std::string dlog = RunLog("trainer-2");
  EXPECT_TRUE(Has(dlog, "scancel " + id)) << dlog;
  EXPECT_TRUE(Has(dlog, "Slurm job " + id + " ended CANCELLED") ||
              Has(dlog, "Slurm job " + id + " is gone"))
      << dlog;
}

TEST_F(SlurmDriverTest, PendingBehindALargerJobShowsSlurmsReasonAndStartsByItself) {
  CreateSlurmTemplate("train");
  CreateProfile("all", "train", SlurmCluster::kGpus);
  CreateProfile("one", "train", 1);
  api().CreateInstance("default", "big", "all");
  api().CreateInstance("default", "small", "one");
  std::string big = DeployRunning("big");

  Deploy("small");
  json::object o = WaitInstance(
      "small",
      [](const json::object& i) {
        return Str(i, "status.phase") == "Waiting" && Str(i, "status.reason") == "Resources";
      },
      "small Waiting with Slurm's reason Resources");
  std::string message = Str(o, "status.message");
  EXPECT_TRUE(Has(message,
                  " is PENDING in partition gpu (reason Resources: the resources the "
                  "job asks for are in use)"))
      << message;
  EXPECT_EQ(Str(GetRun("small-1"), "status.phase"), "Running");
  std::string small_job = Int(GetRun("small-1"), "status.driverState.jobId") > 0
                              ? std::to_string(Int(GetRun("small-1"), "status.driverState.jobId"))
                              : "";
  ASSERT_FALSE(small_job.empty());
  EXPECT_EQ(cluster_->JobState(small_job), "PENDING");
  // A Waiting instance cannot be deployed again.
  EXPECT_EQ(Action("small", "deploy").status, 409);

  // The big job goes: the small one starts by itself.
  EXPECT_EQ(Action("big", "destroy").status, 202);
  WaitPhase("big", "NotDeployed");
  o = WaitPhase("small", "Success");
  EXPECT_EQ(Str(o, "status.outputs.jobId"), small_job);
  EXPECT_EQ(Str(o, "status.outputs.gpus").rfind("gpu:h100:1(IDX:", 0), 0u) << json::serialize(o);
  EXPECT_EQ(Str(o, "status.reason"), "");
  EXPECT_EQ(Action("small", "destroy").status, 202);
  WaitPhase("small", "NotDeployed");
  EXPECT_TRUE(WaitJobGone(small_job));
}

TEST_F(SlurmDriverTest, DestroyOfAPendingInstanceCancelsItsJob) {
  CreateSlurmTemplate("train");
  CreateProfile("all", "train", SlurmCluster::kGpus);
  api().CreateInstance("default", "first", "all");
  api().CreateInstance("default", "second", "all");
  DeployRunning("first");
  Deploy("second");
  WaitInstance(
      "second",
      [](const json::object& i) {
        return Str(i, "status.phase") == "Waiting" && Str(i, "status.reason") == "Resources";
      },
      "second Waiting for Resources");
  std::string job = std::to_string(Int(GetRun("second-1"), "status.driverState.jobId"));

  Resp r = Action("second", "destroy");
  EXPECT_EQ(r.status, 202) << r.raw;
  json::object o = WaitPhase("second", "NotDeployed");
  EXPECT_EQ(Str(o, "status.reason"), "Canceled") << json::serialize(o);
  EXPECT_TRUE(Has(Str(o, "status.message"), "the job was cancelled")) << json::serialize(o);
  json::object run = GetRun("second-1");
  EXPECT_EQ(Str(run, "status.phase"), "Canceled") << json::serialize(run);
  EXPECT_TRUE(WaitJobGone(job));
  EXPECT_EQ(Str(Get("first"), "status.phase"), "Success");
}

TEST_F(SlurmDriverTest, JobsEndingOutsideGantryFailTheInstanceWithinSeconds) {
  CreateSlurmTemplate("train");
  CreateProfile("one", "train", 1);
  api().CreateInstance("default", "cancelled", "one");
  api().CreateInstance("default", "failing", "one");
  std::string a = DeployRunning("cancelled");
  std::string b = DeployRunning("failing");

  auto t0 = Clock::now();
  CommandOutput out = cluster_->Run({"scancel", a});
  ASSERT_EQ(out.exit_code, 0) << out.out;
  json::object o = WaitInstance(
      "cancelled", [](const json::object& i) { return Str(i, "status.phase") == "Failed"; },
      "cancelled Failed");
  double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  std::cout << "[ measured ] scancel outside Gantry -> instance Failed in " << seconds << " s\n";
  EXPECT_LT(seconds, 30) << "the supervisor polls every 2 s";
  EXPECT_EQ(Str(o, "status.reason"), "JobCancelled");
  EXPECT_TRUE(Has(Str(o, "status.message"), "Slurm job " + a + " ended CANCELLED"))
      << Str(o, "status.message");
  EXPECT_EQ(Str(Condition(o, "Ready"), "status"), "False");

  Touch("fail-failing");
  o = WaitInstance(
      "failing", [](const json::object& i) { return Str(i, "status.phase") == "Failed"; },
      "failing Failed");
  EXPECT_EQ(Str(o, "status.reason"), "JobFailed");
  EXPECT_TRUE(Has(Str(o, "status.message"), "Slurm job " + b + " ended FAILED (exit code 3)"))
      << Str(o, "status.message");

  // A Failed instance can be destroyed (nothing left to cancel) and deployed again.
  EXPECT_EQ(Action("cancelled", "destroy").status, 202);
  WaitPhase("cancelled", "NotDeployed");
  std::string again = DeployRunning("cancelled");
  EXPECT_NE(again, a);
  EXPECT_EQ(Action("cancelled", "destroy").status, 202);
  EXPECT_EQ(Action("failing", "destroy").status, 202);
  WaitPhase("cancelled", "NotDeployed");
  WaitPhase("failing", "NotDeployed");
}

TEST_F(SlurmDriverTest, Kill9OfGantrydReadoptsItsJobsById) {
  CreateSlurmTemplate("train");
  CreateProfile("one", "train", 1);
  api().CreateInstance("default", "kept", "one");
  api().CreateInstance("default", "lost", "one");
  std::string kept = DeployRunning("kept");
  std::string lost = DeployRunning("lost");

  gantryd_->Kill9();
  // While gantryd is down, one job is cancelled.
  ASSERT_EQ(cluster_->Run({"scancel", lost}).exit_code, 0);
  ASSERT_TRUE(PollUntil([&] { return cluster_->JobState(lost) == "CANCELLED"; }));
  ASSERT_TRUE(gantryd_->Restart().ok()) << gantryd_->Log();
  Reconnect();

  json::object o = WaitInstance(
      "lost", [](const json::object& i) { return Str(i, "status.phase") == "Failed"; },
      "lost Failed after the restart");
  EXPECT_EQ(Str(o, "status.reason"), "JobCancelled");
  o = Get("kept");
  EXPECT_EQ(Str(o, "status.phase"), "Success");
  EXPECT_EQ(Str(o, "status.outputs.jobId"), kept);
  EXPECT_EQ(cluster_->JobState(kept), "RUNNING");
  EXPECT_TRUE(gantryd_->WaitForLog("adopted the workload of instance default/kept"))
      << gantryd_->Log();

  // The re-adopted job is supervised: cancelling it outside Gantry shows.
  ASSERT_EQ(cluster_->Run({"scancel", kept}).exit_code, 0);
  o = WaitInstance(
      "kept", [](const json::object& i) { return Str(i, "status.phase") == "Failed"; },
      "kept Failed");
  EXPECT_EQ(Str(o, "status.reason"), "JobCancelled");
}

TEST_F(SlurmDriverTest, Kill9WhileAJobIsPendingResumesThatJobInsteadOfSubmittingAnother) {
  CreateSlurmTemplate("train");
  CreateProfile("all", "train", SlurmCluster::kGpus);
  api().CreateInstance("default", "big", "all");
  api().CreateInstance("default", "next", "all");
  DeployRunning("big");
  Deploy("next");
  WaitInstance(
      "next",
      [](const json::object& i) {
        return Str(i, "status.phase") == "Waiting" && Str(i, "status.reason") == "Resources";
      },
      "next Waiting for Resources");
  std::string job = std::to_string(Int(GetRun("next-1"), "status.driverState.jobId"));

  gantryd_->Kill9();
  ASSERT_TRUE(gantryd_->Restart().ok()) << gantryd_->Log();
  Reconnect();
  // The interrupted deploy is queued again and waits for the same job.
  WaitInstance(
      "next",
      [](const json::object& i) {
        return Str(i, "status.phase") == "Waiting" && Str(i, "status.reason") == "Resources";
      },
      "next Waiting for Resources again");
  EXPECT_EQ(Int(GetRun("next-1"), "status.attempt"), 2);
  std::string log = RunLog("next-1");
  EXPECT_TRUE(Has(log, "resuming Slurm job " + job + " (PENDING), submitted by an earlier attempt"))
      << log;
  EXPECT_EQ(Action("big", "destroy").status, 202);
  json::object o = WaitPhase("next", "Success");
  EXPECT_EQ(Str(o, "status.outputs.jobId"), job);
  // Exactly one job was submitted for it.
  CommandOutput out = cluster_->Run({"squeue", "-h", "-n", "default.next", "-o", "%i"});
  EXPECT_EQ(out.out, job + "\n");
}

TEST_F(SlurmDriverTest, ClusterDownIsAClearErrorAndADeployedJobShowsIt) {
  CreateSlurmTemplate("train");
  CreateProfile("one", "train", 1);
  api().CreateInstance("default", "up", "one");
  api().CreateInstance("default", "late", "one");
  std::string job = DeployRunning("up");

  cluster_->StopController();
  Deploy("late");
  json::object o = WaitPhase("late", "Failed");
  EXPECT_EQ(Str(o, "status.reason"), "DriverUnavailable");
  std::string message = Str(o, "status.message");
  EXPECT_TRUE(
      Has(message, "the Slurm cluster (slurm.conf " + cluster_->conf() + ") does not answer"))
      << message;
  EXPECT_TRUE(Has(message, "Unable to contact slurm controller")) << message;

  // The deployed instance stays deployed, not Ready, with the reason.
  o = WaitInstance(
      "up",
      [](const json::object& i) {
        return Str(Condition(i, "Ready"), "reason") == "SlurmUnavailable";
      },
      "up not Ready: SlurmUnavailable");
  EXPECT_EQ(Str(o, "status.phase"), "Success");
  EXPECT_EQ(Str(Condition(o, "Ready"), "status"), "False");

  ASSERT_TRUE(cluster_->StartController().ok()) << cluster_->Logs();
  o = WaitInstance(
      "up", [](const json::object& i) { return Str(Condition(i, "Ready"), "status") == "True"; },
      "up Ready again");
  EXPECT_EQ(Str(o, "status.phase"), "Success");
  EXPECT_EQ(cluster_->JobState(job), "RUNNING");
  EXPECT_EQ(Action("up", "destroy").status, 202);
  WaitPhase("up", "NotDeployed");
}

TEST_F(SlurmDriverTest, WhatSlurmRefusesReachesTheUserInItsWords) {
  CreateSlurmTemplate("nopart", json::object{{"partition", "nosuchpartition"}});
  CreateProfile("np", "nopart", 1);
  api().CreateInstance("default", "np", "np");
  Deploy("np");
  json::object o = WaitPhase("np", "Failed");
  EXPECT_EQ(Str(o, "status.reason"), "DriverError");
  EXPECT_TRUE(Has(Str(o, "status.message"),
                  "Slurm refused the job: sbatch: error: invalid partition specified: "
                  "nosuchpartition; sbatch: error: Batch job submission failed: Invalid "
                  "partition name specified"))
      << Str(o, "status.message");

  // More GPUs per node than any node has.
  CreateSlurmTemplate("toomany");
  CreateProfile("eight", "toomany", 8);
  api().CreateInstance("default", "greedy", "eight");
  Deploy("greedy");
  o = WaitPhase("greedy", "Failed");
  EXPECT_EQ(Str(o, "status.reason"), "DriverError");
  EXPECT_TRUE(Has(Str(o, "status.message"), "Slurm refused the job: sbatch: error:"))
      << Str(o, "status.message");

  // A template the API refuses outright.
  Resp r = api().Post(NsPath("default", "environmenttemplates"),
                      json::object{{"apiVersion", "paas.gantry.dev/v1"},
                                   {"kind", "EnvironmentTemplate"},
                                   {"metadata", {{"name", "bad"}}},
                                   {"spec", {{"driver", "slurm"}, {"slurm", {{"nodes", 0}}}}}});
  EXPECT_EQ(r.status, 422) << r.raw;
  EXPECT_TRUE(Has(r.raw, "spec.slurm.script")) << r.raw;
  EXPECT_TRUE(Has(r.raw, "spec.slurm.nodes")) << r.raw;
}

// Stop cancels the job (the instance Stopped, its outputs kept); start submits a new one.
TEST_F(SlurmDriverTest, StopCancelsTheJobAndStartResubmitsIt) {
  CreateSlurmTemplate("train");
  CreateProfile("h100x1", "train", 1);
  api().CreateInstance("default", "trainer", "h100x1");
  std::string first = DeployRunning("trainer");
  Resp r = Action("trainer", "stop");
  ASSERT_EQ(r.status, 202) << r.raw;
  json::object o = WaitPhase("trainer", "Stopped");
  EXPECT_EQ(Str(o, "status.reason"), "StoppedByUser");
  EXPECT_EQ(Str(o, "status.outputs.jobId"), first);  // what it last ran
  EXPECT_TRUE(WaitJobGone(first));
  std::string slog = RunLog("trainer-2");
  EXPECT_TRUE(Has(slog, "scancel " + first)) << slog;

  r = Action("trainer", "start");
  ASSERT_EQ(r.status, 202) << r.raw;
  o = WaitPhase("trainer", "Success");
  std::string second = Str(o, "status.outputs.jobId");
  ASSERT_FALSE(second.empty()) << json::serialize(o);
  EXPECT_NE(second, first);
  EXPECT_EQ(cluster_->JobState(second), "RUNNING");
  EXPECT_TRUE(Has(RunLog("trainer-3"), "submitted Slurm job " + second));
  ASSERT_EQ(Action("trainer", "destroy").status, 202);
  WaitPhase("trainer", "NotDeployed");
  EXPECT_TRUE(WaitJobGone(second));
}

}  // namespace
}  // namespace gantry::testing
