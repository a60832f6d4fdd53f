#include "drivers/slurm/slurm_json.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace gantry::drivers::slurm {
namespace {

std::string Read(const std::string& name) {
  std::ifstream in(std::string(SLURM_TESTDATA) + "/" + name);
  EXPECT_TRUE(in) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(SlurmJsonTest, RunningAndPendingJobsOfSlurm2205) {
  auto l = ParseJobListing(Read("squeue-22.05-running-pending.json"));
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_TRUE(l->errors.empty());
  ASSERT_EQ(l->jobs.size(), 2u);
  const SlurmJob* run = FindJob(*l, 1);
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(run->state, "RUNNING");
  EXPECT_TRUE(IsRunningState(run->state));
  EXPECT_EQ(run->name, "proj.big");
  EXPECT_EQ(run->comment, R"(gantry:{"a":"b"})");
  EXPECT_EQ(run->nodes, "gnode1");
  EXPECT_EQ(run->node_count, 1);
  EXPECT_EQ(run->cluster, "gtest");
  EXPECT_EQ(run->partition, "gpu");
  EXPECT_EQ(run->gres_detail, std::vector<std::string>{"gpu:h100:4(IDX:0-3)"});
  EXPECT_EQ(run->tres_per_node, "gres:gpu:h100:4");
  EXPECT_GT(run->start_time, 0);

  const SlurmJob* pend = FindJob(*l, 2);
  ASSERT_NE(pend, nullptr);
  EXPECT_EQ(pend->state, "PENDING");
  EXPECT_TRUE(IsPendingState(pend->state));
  EXPECT_FALSE(IsTerminalState(pend->state));
  EXPECT_EQ(pend->reason, "Resources");
  EXPECT_EQ(pend->nodes, "");
  EXPECT_TRUE(pend->gres_detail.empty());
  EXPECT_EQ(pend->start_time, 0);
  EXPECT_EQ(FindJob(*l, 3), nullptr);
}

TEST(SlurmJsonTest, EndedJobsOfSlurm2205) {
  auto l = ParseJobListing(Read("squeue-22.05-ended.json"));
  ASSERT_TRUE(l.ok()) << l.status();
  ASSERT_EQ(l->jobs.size(), 4u);
  const SlurmJob* cancelled = FindJob(*l, 1);
  ASSERT_NE(cancelled, nullptr);
  EXPECT_EQ(cancelled->state, "CANCELLED");
  EXPECT_TRUE(IsTerminalState(cancelled->state));
  EXPECT_EQ(cancelled->exit_signal, 15);  // exit_code 15: a wait status, SIGTERM
  EXPECT_EQ(EndReason(cancelled->state), "JobCancelled");
  const SlurmJob* completed = FindJob(*l, 3);
  ASSERT_NE(completed, nullptr);
  EXPECT_EQ(completed->state, "COMPLETED");
  EXPECT_EQ(completed->exit_code, 0);
  EXPECT_EQ(completed->exit_signal, 0);
  const SlurmJob* failed = FindJob(*l, 4);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->state, "FAILED");
  EXPECT_EQ(failed->reason, "NonZeroExitCode");
  EXPECT_EQ(failed->exit_code, 3);  // exit_code 768 = 3 << 8
  EXPECT_EQ(failed->exit_signal, 0);
  EXPECT_EQ(FindJob(*l, 2)->gres_detail, std::vector<std::string>{"gpu:h100:1(IDX:0)"});
}

TEST(SlurmJsonTest, ControllerDownIsReportedInErrors) {
  auto l = ParseJobListing(Read("squeue-22.05-controller-down.json"));
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_TRUE(l->jobs.empty());
  EXPECT_EQ(l->errors, std::vector<std::string>{"slurm_load_jobs: Failed while looking for jobs"});
}

// The shape of Slurm 23.02 and later (data_parser v0.0.39+), as their squeue --json prints it:
// state as a list (base state, then flags), numbers as {set, infinite, number}, exit_code as
// an object. Hand-written after that format: no such Slurm is installed here.
TEST(SlurmJsonTest, NewerShape) {
  auto l = ParseJobListing(R"J({"jobs": [
    {"job_id": 7, "name": "p.i", "job_state": ["RUNNING", "COMPLETING"],
     "state_reason": "None", "nodes": "n[1-2]", "node_count": {"set": true, "infinite": false, "number": 2},
     "gres_detail": ["gpu:h100:8(IDX:0-7)", "gpu:h100:8(IDX:0-7)"],
     "start_time": {"set": true, "infinite": false, "number": 1700000000},
     "exit_code": {"status": ["SUCCESS"], "return_code": {"set": true, "infinite": false, "number": 0}}},
    {"job_id": 8, "job_state": ["PENDING"], "state_reason": "Priority",
     "start_time": {"set": false, "infinite": false, "number": 0}},
    {"job_id": 9, "job_state": ["FAILED"], "exit_code": {"status": ["SIGNALED"],
     "return_code": {"set": true, "infinite": false, "number": 0}, "signal": {"id": {"set": true, "infinite": false, "number": 9}, "name": "KILL"}}}
  ], "errors": [], "warnings": []})J");
  ASSERT_TRUE(l.ok()) << l.status();
  ASSERT_EQ(l->jobs.size(), 3u);
  EXPECT_EQ(l->jobs[0].state, "COMPLETING");
  EXPECT_TRUE(IsRunningState(l->jobs[0].state));
  EXPECT_EQ(l->jobs[0].node_count, 2);
  EXPECT_EQ(l->jobs[0].start_time, 1700000000);
  EXPECT_EQ(l->jobs[0].gres_detail.size(), 2u);
  EXPECT_EQ(l->jobs[1].state, "PENDING");
  EXPECT_EQ(l->jobs[1].reason, "Priority");
  EXPECT_EQ(l->jobs[1].start_time, 0);
  EXPECT_EQ(l->jobs[2].exit_signal, 9);
}

TEST(SlurmJsonTest, MalformedOutputIsAnErrorNotACrash) {
  for (const char* bad :
       {"", "not json", "[]", "{\"jobs\": 3}", "{}", "{\"jobs\": [1, \"x\", null]"}) {
    auto l = ParseJobListing(bad);
    EXPECT_FALSE(l.ok()) << bad;
  }
  auto odd = ParseJobListing(R"({"jobs": [1, "x", null, {"job_id": "12", "job_state": 5}]})");
  ASSERT_TRUE(odd.ok());
  ASSERT_EQ(odd->jobs.size(), 1u);
  EXPECT_EQ(odd->jobs[0].job_id, 0);
  EXPECT_EQ(odd->jobs[0].state, "");
  // Found by fuzz_squeue_json: numbers beyond int64 (converting them was undefined behaviour).
  auto huge = ParseJobListing(R"({"jobs": [{"job_id": 1e300, "start_time": -5.5e32,
      "exit_code": {"return_code": 99999, "signal": {"id": -4}}}]})");
  ASSERT_TRUE(huge.ok());
  EXPECT_EQ(huge->jobs[0].job_id, 0);
  EXPECT_EQ(huge->jobs[0].start_time, 0);
  EXPECT_EQ(huge->jobs[0].exit_code, 255);
  EXPECT_EQ(huge->jobs[0].exit_signal, 0);
}

TEST(SlurmJsonTest, EndReasons) {
  EXPECT_EQ(EndReason("NODE_FAIL"), "JobNodeFail");
  EXPECT_EQ(EndReason("OUT_OF_MEMORY"), "JobOutOfMemory");
  EXPECT_EQ(EndReason("TIMEOUT"), "JobTimeout");
  EXPECT_EQ(EndReason(""), "JobEnded");
  EXPECT_EQ(ExplainPendingReason("Resources"), "the resources the job asks for are in use");
  EXPECT_EQ(ExplainPendingReason("QOSMaxGRESPerUser"), "a limit of its QOS is reached");
  EXPECT_EQ(ExplainPendingReason("Whatever"), "");
}

TEST(SlurmJsonTest, SubmittedJobId) {
  EXPECT_EQ(*ParseSubmittedJobId("42\n"), 42);
  EXPECT_EQ(*ParseSubmittedJobId("42;gtest\n"), 42);
  EXPECT_EQ(*ParseSubmittedJobId("sbatch: warning: x\n1042\n"), 1042);
  EXPECT_FALSE(ParseSubmittedJobId("").ok());
  EXPECT_FALSE(ParseSubmittedJobId("Submitted batch job 42").ok());
  EXPECT_FALSE(ParseSubmittedJobId("99999999999999999999999").ok());
}

}  // namespace
}  // namespace gantry::drivers::slurm
