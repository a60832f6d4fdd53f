// Approval gates (issue 20 item 2; docs/approvals.md) against a real gantryd on SQLite, and
// PostgreSQL as the _pg run: a deploy of a profile with spec.approval waits with reason
// PendingApproval (no run, an ApprovalRequested Event and its webhook delivery in the same
// commit); the requester, members and viewers get 403, another project-admin approves (the
// run goes, who approved is in status and the audit log); a PaaS Admin rejects with a message
// (back to NotDeployed, reason Rejected); an org-admin approves their own; a start is gated
// too and a cancel withdraws it; a service's auto-created compute instance is gated when the
// service deploys; a profile under the GPU threshold is not gated; bad policies
// and bad answers are 422 naming fields; an unanswered request expires once, also when
// gantryd was killed with SIGKILL over its deadline.
//
// No sleeps: each step waits for a condition with PollUntil, whose deadline bounds a failure.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ctime>
#include <iomanip>
#include <map>
#include <memory>
#include <sstream>

#include "engine_fixture.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;

class ApprovalsTest : public EngineTest {
 protected:
  std::vector<std::string> Args() override {
    auto args = EngineTest::Args();
    args.push_back("--webhook-allow-private");
    return args;
  }

  void SetUp() override {
    EngineTest::SetUp();
    if (HasFatalFailure()) return;
    CreateExecTemplate("std-tmpl", json::array{StandardScript()},
                       json::object{{"actions", json::array{"apply", "destroy", "stop", "start"}}});
    CreateProfile("big", json::object{{"required", true}, {"whenGpusAtLeast", 8}});
    MakeUsers();
  }

  void CreateProfile(const std::string& name, json::object approval, int gpus = 8) {
    api().MustCreate(NsPath("default", "computeprofiles"),
                     json::object{{"metadata", {{"name", name}}},
                                  {"spec",
                                   {{"templateRef", {{"name", "std-tmpl"}}},
                                    {"resources", {{"gpu", {{"type", "h100"}, {"count", gpus}}}}},
                                    {"approval", std::move(approval)}}}});
  }

  // alice and bob are members, vera a viewer, pam and pete project-admins, paula paas-admin.
  void MakeUsers() {
    const std::map<std::string, std::string> roles = {
        {"alice", "member"},      {"bob", "member"},         {"vera", "viewer"},
        {"pam", "project-admin"}, {"pete", "project-admin"}, {"paula", ""}};
    for (const auto& [user, role] : roles) {
      json::object spec{{"displayName", user}, {"password", "password-of-" + user}};
      if (user == "paula") spec["orgRole"] = "paas-admin";
      api().MustCreate(ClusterPath("users"),
                       json::object{{"metadata", {{"name", user}}}, {"spec", spec}});
      if (!role.empty())
        api().MustCreate(NsPath("default", "rolebindings"),
                         json::object{{"metadata", {{"name", user + "-" + role}}},
                                      {"spec", {{"user", user}, {"role", role}}}});
      Resp t = api().Post(ClusterPath("users", user) + "/tokens",
                          json::object{{"description", "approvals test"}});
      ASSERT_EQ(t.status, 201) << t.raw;
      tokens_[user] = std::string(t.obj().at("token").as_string());
    }
  }

  // A client with `user`'s token (made afresh: gantryd's port changes on a restart).
  Api As(const std::string& user) { return Api(gantryd_->base_url(), tokens_.at(user)); }
  std::string InstancePath(const std::string& name, const std::string& sub = "") {
    return NsPath("default", "computeinstances", name) + (sub.empty() ? "" : "/" + sub);
  }
  Resp Answer(const std::string& user, const std::string& name, const std::string& verb,
              json::object body = {}) {
    return As(user).Post(InstancePath(name, verb), body);
  }

  std::vector<json::object> EventsOf(const std::string& name) {
    Resp r = api().Get("/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3D" +
                       name + ",involvedObject.kind%3DComputeInstance");
    EXPECT_EQ(r.status, 200) << r.raw;
    std::vector<json::object> out;
    if (r.status == 200)
      for (const auto& e : r.obj().at("items").as_array()) out.push_back(e.as_object());
    return out;
  }
  bool HasEvent(const std::string& name, const std::string& reason) {
    for (const auto& e : EventsOf(name))
      if (Str(e, "reason") == reason) return true;
    return false;
  }
  std::vector<json::object> Audit(const std::string& user, const std::string& verb) {
    Resp r = api().Get("/apis/paas.gantry.dev/v1/auditevents");
    EXPECT_EQ(r.status, 200) << r.raw;
    std::vector<json::object> out;
    if (r.status == 200)
      for (const auto& e : r.obj().at("items").as_array())
        if (Str(e.as_object(), "user") == user && Str(e.as_object(), "verb") == verb)
          out.push_back(e.as_object());
    return out;
  }

  // `user` creates and deploys `name` of `profile`; expects it to wait for approval.
  json::object RequestDeploy(const std::string& user, const std::string& name,
                             const std::string& profile = "big") {
    Resp c = As(user).Post(NsPath("default", "computeinstances"), InstanceObject(name, profile));
    EXPECT_EQ(c.status, 201) << c.raw;
    Resp r = As(user).Post(InstancePath(name, "deploy"), json::object{});
    EXPECT_EQ(r.status, 202) << r.raw;
    json::object o = Get(name);
    EXPECT_EQ(Str(o, "status.phase"), "Waiting") << json::serialize(o);
    EXPECT_EQ(Str(o, "status.reason"), "PendingApproval");
    EXPECT_EQ(Str(o, "status.approval.state"), "Pending");
    EXPECT_EQ(Str(o, "status.approval.requestedBy"), user);
    return o;
  }

  std::map<std::string, std::string> tokens_;
};

TEST_F(ApprovalsTest, DeployWaitsUntilAnotherProjectAdminApproves) {
  api().MustCreate(NsPath("default", "webhooks"),
                   json::object{{"metadata", {{"name", "chat"}}},
                                {"spec",
                                 {{"url", "http://127.0.0.1:1/hook"},
                                  {"events", json::array{"ApprovalRequested"}},
                                  {"secret", "a-long-random-secret"}}}});
  json::object pending = RequestDeploy("alice", "train");
  EXPECT_THAT(Str(pending, "status.message"), HasSubstr("deploy of 8 GPUs requested by alice"));
  EXPECT_EQ(Int(pending, "status.approval.gpus"), 8);
  EXPECT_EQ(Str(pending, "status.approval.previousPhase"), "NotDeployed");
  EXPECT_TRUE(RunsOf("train").empty());
  EXPECT_TRUE(HasEvent("train", "ApprovalRequested"));
  // The webhook's delivery was written with the request.
  Resp deliveries = api().Get(NsPath("default", "webhookdeliveries"));
  ASSERT_EQ(deliveries.status, 200) << deliveries.raw;
  int told = 0;
  for (const auto& d : deliveries.obj().at("items").as_array())
    if (Str(d.as_object(), "spec.event") == "ApprovalRequested") ++told;
  EXPECT_EQ(told, 1) << deliveries.raw;

  // Asking again, deploying again: 409 naming the pending request.
  Resp again = As("alice").Post(InstancePath("train", "deploy"), json::object{});
  EXPECT_TRUE(again.IsStatus(409, "PendingApproval")) << again.raw;
  EXPECT_THAT(again.message(), HasSubstr("waits for approval"));

  // Who may not answer.
  Resp own = Answer("alice", "train", "approve");
  EXPECT_EQ(own.status, 403) << own.raw;
  EXPECT_THAT(own.message(), HasSubstr("project-admin or paas-admin role; alice is member"));
  EXPECT_EQ(Answer("bob", "train", "approve").status, 403);
  EXPECT_EQ(Answer("vera", "train", "reject").status, 403);
  EXPECT_EQ(Str(Get("train"), "status.reason"), "PendingApproval");

  Resp ok = Answer("pam", "train", "approve", {{"message", "go ahead"}});
  ASSERT_EQ(ok.status, 202) << ok.raw;
  json::object done = WaitPhase("train", "Success");
  EXPECT_EQ(Str(done, "status.approval.state"), "Approved");
  EXPECT_EQ(Str(done, "status.approval.decidedBy"), "pam");
  EXPECT_EQ(Str(done, "status.approval.message"), "go ahead");
  EXPECT_EQ(RunsOf("train").size(), 1u);
  EXPECT_TRUE(PollUntil([&] { return HasEvent("train", "Approved"); }));
  std::vector<json::object> audit;
  ASSERT_TRUE(PollUntil([&] { return !(audit = Audit("pam", "approve")).empty(); }));
  ASSERT_EQ(audit.size(), 1u);
  EXPECT_EQ(Int(audit[0], "code"), 202) << json::serialize(audit[0]);
  EXPECT_EQ(Str(audit[0], "message"), "approved deploy of 8 GPUs requested by alice: go ahead");
  // Nothing is pending any more.
  EXPECT_TRUE(Answer("pete", "train", "approve").IsStatus(409, "NoPendingApproval"));
}

TEST_F(ApprovalsTest, RejectReturnsToThePreviousPhaseWithTheMessage) {
  RequestDeploy("pam", "train");
  Resp own = Answer("pam", "train", "reject");
  EXPECT_EQ(own.status, 403) << own.raw;
  EXPECT_THAT(own.message(), HasSubstr("other than the requester"));
  Resp bad = Answer("paula", "train", "reject", {{"message", 7}, {"why", "x"}});
  EXPECT_EQ(bad.status, 422) << bad.raw;
  EXPECT_THAT(bad.cause_fields(), ::testing::UnorderedElementsAre("message", "why"));
  Resp no = Answer("paula", "train", "reject", {{"message", "8 GPUs for a notebook: no"}});
  ASSERT_EQ(no.status, 200) << no.raw;
  json::object o = Get("train");
  EXPECT_EQ(Str(o, "status.phase"), "NotDeployed");
  EXPECT_EQ(Str(o, "status.reason"), "Rejected");
  EXPECT_THAT(Str(o, "status.message"), HasSubstr("rejected by paula: 8 GPUs for a notebook: no"));
  EXPECT_EQ(Str(o, "status.approval.state"), "Rejected");
  EXPECT_TRUE(RunsOf("train").empty());
  EXPECT_TRUE(HasEvent("train", "Rejected"));
  // The 422 and the answer.
  EXPECT_TRUE(PollUntil([&] { return Audit("paula", "reject").size() == 2; }));
  EXPECT_TRUE(Answer("paula", "train", "reject").IsStatus(409, "NoPendingApproval"));

  // An org-admin may approve their own request.
  ASSERT_EQ(Action("train", "deploy").status, 202);
  EXPECT_EQ(Str(Get("train"), "status.reason"), "PendingApproval");
  ASSERT_EQ(api().Post(InstancePath("train", "approve"), json::object{}).status, 202);
  WaitPhase("train", "Success");
}

TEST_F(ApprovalsTest, StartIsGatedAndCancelWithdrawsTheRequest) {
  RequestDeploy("alice", "nb");
  ASSERT_EQ(Answer("pete", "nb", "approve").status, 202);
  WaitPhase("nb", "Success");
  ASSERT_EQ(As("alice").Post(InstancePath("nb", "stop"), json::object{}).status, 202);
  WaitPhase("nb", "Stopped");
  Resp start = As("alice").Post(InstancePath("nb", "start"), json::object{});
  ASSERT_EQ(start.status, 202) << start.raw;
  json::object o = Get("nb");
  EXPECT_EQ(Str(o, "status.reason"), "PendingApproval");
  EXPECT_EQ(Str(o, "status.approval.action"), "start");
  EXPECT_EQ(Str(o, "status.approval.previousPhase"), "Stopped");
  Resp cancel = As("alice").Post(InstancePath("nb", "cancel"), json::object{});
  ASSERT_EQ(cancel.status, 200) << cancel.raw;
  o = Get("nb");
  EXPECT_EQ(Str(o, "status.phase"), "Stopped");
  EXPECT_EQ(Str(o, "status.reason"), "Canceled");
  EXPECT_EQ(Str(o, "status.approval.state"), "Withdrawn");
  EXPECT_EQ(RunsOf("nb").size(), 2u);  // the deploy and the stop
}

// The compute instance a service auto-creates deploys with the service: through the same
// gate. The request is the service creator's (alice, so she may not answer it); the service
// waits for its compute instance (ComputeNotReady, saying why) until another project-admin
// approves, then both deploy.
TEST_F(ApprovalsTest, AServicesAutoCreatedComputeInstanceIsGatedToo) {
  CreateExecTemplate("svc-tmpl", json::array{StandardScript()});
  api().MustCreate(NsPath("default", "serviceprofiles"),
                   json::object{{"metadata", {{"name", "kubeflow"}}},
                                {"spec",
                                 {{"displayName", "Kubeflow"},
                                  {"serviceType", "mlops"},
                                  {"templateRef", {{"name", "svc-tmpl"}}},
                                  {"autoCreateCompute", {{"profileRef", {{"name", "big"}}}}}}}});
  const std::string service = NsPath("default", "serviceinstances", "mlops");
  Resp created = As("alice").Post(NsPath("default", "serviceinstances"),
                                  json::object{{"metadata", {{"name", "mlops"}}},
                                               {"spec", {{"profileRef", {{"name", "kubeflow"}}}}}});
  ASSERT_EQ(created.status, 201) << created.raw;
  Resp deploy = As("alice").Post(service + "/deploy", json::object{});
  ASSERT_EQ(deploy.status, 202) << deploy.raw;
  json::object compute = Get("mlops-compute");
  EXPECT_EQ(Str(compute, "status.phase"), "Waiting");
  EXPECT_EQ(Str(compute, "status.reason"), "PendingApproval");
  EXPECT_EQ(Str(compute, "status.approval.requestedBy"), "alice");
  EXPECT_TRUE(RunsOf("mlops-compute").empty());
  EXPECT_TRUE(HasEvent("mlops-compute", "ApprovalRequested"));
  ASSERT_TRUE(PollUntil([&] {
    Resp s = api().Get(service);
    return s.status == 200 && Str(s.obj(), "status.reason") == "ComputeNotReady" &&
           Str(s.obj(), "status.message").find("PendingApproval") != std::string::npos;
  })) << api().Get(service).raw;
  EXPECT_EQ(Answer("alice", "mlops-compute", "approve").status, 403);

  ASSERT_EQ(Answer("pam", "mlops-compute", "approve").status, 202);
  EXPECT_EQ(Str(WaitPhase("mlops-compute", "Success"), "status.approval.decidedBy"), "pam");
  ASSERT_TRUE(PollUntil([&] {
    Resp s = api().Get(service);
    return s.status == 200 && Str(s.obj(), "status.phase") == "Success";
  })) << api().Get(service).raw;
}

TEST_F(ApprovalsTest, UnderTheThresholdNothingWaitsAndBadPoliciesAre422) {
  CreateProfile("small", json::object{{"required", true}, {"whenGpusAtLeast", 8}}, 2);
  api().CreateInstance("default", "tiny", "small");
  ASSERT_EQ(As("alice").Post(InstancePath("tiny", "deploy"), json::object{}).status, 202);
  WaitPhase("tiny", "Success");
  EXPECT_FALSE(At(Get("tiny"), "status.approval").is_object());

  json::object bad{
      {"metadata", {{"name", "bad"}}},
      {"spec",
       {{"templateRef", {{"name", "std-tmpl"}}},
        {"approval", {{"required", true}, {"whenGpusAtLeast", 0}, {"expiresAfter", "soon"}}}}}};
  Resp r = api().Post(NsPath("default", "computeprofiles"), bad);
  EXPECT_EQ(r.status, 422) << r.raw;
  EXPECT_THAT(r.cause_fields(), ::testing::UnorderedElementsAre("spec.approval.whenGpusAtLeast",
                                                                "spec.approval.expiresAfter"));
  EXPECT_THAT(r.cause_message("spec.approval.whenGpusAtLeast"), HasSubstr("at least 1"));
  bad["spec"].as_object()["approval"] = json::object{{"expiresAfter", "40d"}};
  r = api().Post(NsPath("default", "computeprofiles"), bad);
  EXPECT_EQ(r.status, 422) << r.raw;
  EXPECT_THAT(r.cause_message("spec.approval.expiresAfter"), HasSubstr("at most 30d"));
  bad["spec"].as_object()["approval"] = json::object{{"required", "yes"}};
  r = api().Post(NsPath("default", "computeprofiles"), bad);
  EXPECT_EQ(r.status, 422) << r.raw;
  EXPECT_THAT(r.cause_fields(), ::testing::ElementsAre("spec.approval.required"));
}

TEST_F(ApprovalsTest, AnUnansweredRequestExpiresOnceAlsoAfterAKill9) {
  CreateProfile("brief", json::object{{"required", true}, {"expiresAfter", "3s"}});
  json::object first = RequestDeploy("alice", "a", "brief");
  json::object expired = WaitInstance(
      "a", [](const json::object& o) { return Str(o, "status.reason") == "ApprovalExpired"; },
      "reason ApprovalExpired");
  EXPECT_EQ(Str(expired, "status.phase"), "NotDeployed");
  EXPECT_EQ(Str(expired, "status.approval.state"), "Expired");
  EXPECT_TRUE(HasEvent("a", "ApprovalExpired"));

  json::object second = RequestDeploy("alice", "b", "brief");
  auto expires = ParseUtc(Str(second, "status.approval.expiresAt"));
  ASSERT_TRUE(expires) << json::serialize(second);
  gantryd_->Kill9();
  ASSERT_TRUE(PollUntil([&] { return std::chrono::system_clock::now() > *expires; }));
  ASSERT_TRUE(gantryd_->Restart().ok());
  Reconnect();
  WaitInstance(
      "b", [](const json::object& o) { return Str(o, "status.reason") == "ApprovalExpired"; },
      "reason ApprovalExpired after the restart");
  EXPECT_TRUE(Answer("pam", "b", "approve").IsStatus(409, "NoPendingApproval"));
  std::vector<json::object> audit;
  ASSERT_TRUE(PollUntil([&] { return (audit = Audit("system:approvals", "expire")).size() >= 2; }));
  EXPECT_EQ(audit.size(), 2u);  // a and b, once each
  EXPECT_TRUE(RunsOf("b").empty());
}

}  // namespace
}  // namespace gantry::testing
