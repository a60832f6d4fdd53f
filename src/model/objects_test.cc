#include "model/objects.h"

#include <boost/json.hpp>

#include "gtest/gtest.h"
#include "model/codec.h"

namespace gantry::model {
namespace {

namespace json = boost::json;

json::object Parse(std::string_view text) { return json::parse(text).as_object(); }

TEST(ObjectsTest, RunRoundTripKeepsTheStoredBytes) {
  const char* text =
      R"({"apiVersion":"paas.gantry.dev/v1","kind":"Run","metadata":{"name":"gpu-1-2",)"
      R"("namespace":"ml","uid":"u1","resourceVersion":"42","extra":1},"spec":{"instanceRef":)"
      R"({"kind":"ServiceInstance","name":"gpu-1","uid":"i1"},"action":"destroy","generation":3,)"
      R"("profileRevision":2,"templateRevision":5,"previousPhase":"Success","deleteInstance":true},)"
      R"("status":{"phase":"Running","attempt":2,"startTime":"t0","lease":{"holder":"a",)"
      R"("host":"h","renewTime":"t1","durationSeconds":30},"gpus":["0","1"],"custom":"kept"}})";
  auto run = DecodeRun(Parse(text));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->metadata.resource_version, 42);
  EXPECT_EQ(run->instance_kind, "ServiceInstance");
  EXPECT_EQ(run->action, RunAction::kDestroy);
  EXPECT_EQ(run->previous_phase, Phase::kSuccess);
  EXPECT_TRUE(run->delete_instance);
  EXPECT_EQ(run->phase, RunPhase::kRunning);
  EXPECT_EQ(run->attempt, 2);
  ASSERT_TRUE(run->lease.has_value());
  EXPECT_EQ(run->lease->holder, "a");
  EXPECT_EQ(run->gpus, (std::vector<std::string>{"0", "1"}));
  EXPECT_FALSE(run->reason.has_value());
  EXPECT_EQ(ToJson(EncodeRun(*run)), ToJson(Parse(text)));
}

TEST(ObjectsTest, RunEncodeWritesTypedStatusAndErasesAbsentFields) {
  auto run = DecodeRun(Parse(
      R"({"metadata":{"name":"r"},"status":{"phase":"Running","attempt":1,"lease":{},"x":0}})"));
  ASSERT_TRUE(run.ok());
  run->phase = RunPhase::kFailed;
  run->lease.reset();
  run->reason = "DriverError";
  json::object out = EncodeRun(*run);
  EXPECT_EQ(ToJson(out.at("status")),
            // boost::json's erase moves the last member into the erased one's place.
            R"({"phase":"Failed","attempt":1,"reason":"DriverError","x":0})");
}

TEST(ObjectsTest, NewRunHasTheQueuedShape) {
  model::Run run = NewRun("gpu-1-1", "ml", "u", "t", "ComputeInstance", "gpu-1", "iu",
                          RunAction::kApply, 4, 2, 3, Phase::kFailed, false);
  EXPECT_EQ(
      ToJson(run.raw),
      R"({"apiVersion":"paas.gantry.dev/v1","kind":"Run","metadata":{"name":"gpu-1-1",)"
      R"("namespace":"ml","uid":"u","generation":1,"creationTimestamp":"t","labels":)"
      R"({"paas.gantry.dev/instance":"gpu-1"}},"spec":{"instanceRef":{"kind":"ComputeInstance",)"
      R"("name":"gpu-1","uid":"iu"},"action":"deploy","generation":4,"profileRevision":2,)"
      R"("templateRevision":3,"previousPhase":"Failed","deleteInstance":false},)"
      R"("status":{"phase":"Queued","attempt":0}})");
  EXPECT_EQ(ToJson(EncodeRun(run)), ToJson(run.raw));
}

TEST(ObjectsTest, DecodeRefusesAnObjectWithoutName) {
  EXPECT_FALSE(DecodeRun(Parse(R"({"metadata":{}})")).ok());
  EXPECT_FALSE(DecodeInstance(Parse(R"({"spec":{}})")).ok());
}

TEST(ObjectsTest, InstanceRoundTripKeepsSpecAndUnmodeledStatus) {
  const char* text =
      R"({"kind":"ServiceInstance","metadata":{"name":"svc","namespace":"ml","uid":"u",)"
      R"("labels":{"a":"b"}},"spec":{"computeRef":{"name":"gpu-1"},"variables":{"x":"1"},)"
      R"("profileRef":{"name":"p"}},"status":{"phase":"Success","action":"deploy",)"
      R"("runCount":2,"lastRunRef":{"name":"svc-s2"},"profileRevision":3,"computeCreated":true,)"
      R"("conditions":[{"type":"Deployed","status":"True","reason":"RunSucceeded",)"
      R"("message":"m","lastTransitionTime":"t0"}],"gpus":["3"],"other":[1]}})";
  auto inst = DecodeInstance(Parse(text));
  ASSERT_TRUE(inst.ok()) << inst.status();
  EXPECT_EQ(inst->compute_ns, "ml");
  EXPECT_EQ(inst->compute_name, "gpu-1");
  EXPECT_EQ(inst->profile_ns, "ml");
  EXPECT_EQ(inst->profile_name, "p");
  EXPECT_EQ(inst->status.PhaseOr(), Phase::kSuccess);
  EXPECT_EQ(inst->status.last_run, "svc-s2");
  EXPECT_EQ(inst->status.profile_revision, 3);
  EXPECT_EQ(inst->status.template_revision, 1);
  EXPECT_TRUE(inst->status.compute_created);
  EXPECT_EQ(inst->metadata.OwnerKey(), "ml/svc/u");
  EXPECT_EQ(ToJson(EncodeInstance(*inst)), ToJson(Parse(text)));
}

TEST(ObjectsTest, NewInstanceHasNoPhase) {
  auto inst = DecodeInstance(Parse(R"({"metadata":{"name":"n"}})"));
  ASSERT_TRUE(inst.ok());
  EXPECT_FALSE(inst->status.phase.has_value());
  EXPECT_EQ(inst->status.PhaseOr(), Phase::kNotDeployed);
}

TEST(ObjectsTest, SetConditionKeepsTheTransitionTimeWhileTheStatusHolds) {
  InstanceStatus st;
  st.SetCondition("Ready", true, "Running", "m1", "t1");
  st.SetCondition("Ready", true, "Running", "m2", "t2");
  ASSERT_EQ(st.conditions->size(), 1u);
  EXPECT_EQ((*st.conditions)[0].last_transition_time, "t1");
  EXPECT_EQ((*st.conditions)[0].message, "m2");
  st.SetCondition("Ready", false, "Exited", "m3", "t3");
  EXPECT_EQ((*st.conditions)[0].last_transition_time, "t3");
  st.SetCondition("Deployed", true, "RunSucceeded", "m", "t4");
  EXPECT_EQ(st.conditions->size(), 2u);
}

TEST(ObjectsTest, RevisionsAndQuota) {
  Resources r = DecodeResources(Parse(R"({"resources":{"gpu":{"type":"h100","count":2}}})"));
  EXPECT_EQ(r.gpu_type, "h100");
  EXPECT_EQ(r.gpu_count, 2);
  TemplateSpec t = DecodeTemplate(Parse(R"({"driver":"exec","exec":{"timeoutSeconds":9}})"));
  EXPECT_EQ(t.driver, "exec");
  EXPECT_EQ(t.timeout_seconds, 9);
  Quota q =
      DecodeQuota(Parse(R"({"spec":{"quota":{"instances":3,"gpus":{"h100":"4","a100":1}}}})"));
  EXPECT_EQ(q.instances, 3);
  EXPECT_EQ(q.GpusOf("h100"), 4);
  EXPECT_EQ(q.GpusOf("a100"), 1);
  EXPECT_EQ(q.GpusOf("v100"), -1);
  EXPECT_EQ(DecodeQuota(Parse("{}")).instances, -1);
}

}  // namespace
}  // namespace gantry::model
