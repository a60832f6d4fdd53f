#include "model/approval.h"

#include <gtest/gtest.h>

namespace gantry::model {
namespace {

namespace json = boost::json;

json::object Spec(json::object approval) { return {{"approval", std::move(approval)}}; }

std::vector<std::string> Fields(const json::object& spec) {
  std::vector<FieldCause> causes;
  ValidateApprovalPolicy(spec, &causes);
  std::vector<std::string> out;
  for (const auto& c : causes) out.push_back(c.field + ": " + c.message);
  return out;
}

TEST(ApprovalPolicy, DecodesWithDefaultsAndDecidesByGpus) {
  EXPECT_FALSE(DecodeApprovalPolicy(json::object{}));
  EXPECT_FALSE(DecodeApprovalPolicy(Spec({{"required", false}})));
  auto p = DecodeApprovalPolicy(Spec({{"required", true}, {"whenGpusAtLeast", 8}}));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->expires_after, kDefaultApprovalExpiry);
  EXPECT_FALSE(NeedsApproval(*p, 7));
  EXPECT_TRUE(NeedsApproval(*p, 8));
  auto always = DecodeApprovalPolicy(Spec({{"required", true}, {"expiresAfter", "90m"}}));
  ASSERT_TRUE(always);
  EXPECT_TRUE(NeedsApproval(*always, 0));
  EXPECT_EQ(always->expires_after, std::chrono::seconds(5400));
}

TEST(ApprovalPolicy, ValidationNamesTheField) {
  EXPECT_TRUE(
      Fields(Spec({{"required", true}, {"whenGpusAtLeast", 4}, {"expiresAfter", "3d"}})).empty());
  EXPECT_EQ(Fields(Spec({{"required", true}, {"whenGpusAtLeast", 0}})),
            std::vector<std::string>{"spec.approval.whenGpusAtLeast: Invalid value: 0: must be "
                                     "at least 1 (leave it out to ask for every deploy)"});
  EXPECT_EQ(Fields(Spec({{"required", true}, {"expiresAfter", "31d"}})),
            std::vector<std::string>{"spec.approval.expiresAfter: Invalid value: \"31d\": at "
                                     "most 30d"});
  EXPECT_EQ(Fields(Spec({{"whenGpusAtLeast", 2}})),
            std::vector<std::string>{"spec.approval.whenGpusAtLeast: applies only when "
                                     "spec.approval.required is true"});
  auto bad = Fields(Spec({{"required", true}, {"expiresAfter", "soon"}}));
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].rfind("spec.approval.expiresAfter: Invalid value: \"soon\": ", 0), 0u) << bad[0];
}

TEST(ApprovalRequest, RoundTripsThroughStatusAndKnowsPending) {
  ApprovalRequest r;
  r.action = "start";
  r.gpus = 8;
  r.requested_by = "alice";
  r.requested_at = "2026-12-02T04:00:00Z";
  r.expires_at = "2026-12-05T04:00:00Z";
  r.previous_phase = Phase::kStopped;
  json::object instance{{"status", {{"phase", "Waiting"}, {"reason", "PendingApproval"}}}};
  SetApprovalRequest(r, &instance);
  EXPECT_TRUE(IsPendingApproval(instance));
  auto back = DecodeApprovalRequest(instance);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->action, "start");
  EXPECT_EQ(back->gpus, 8);
  EXPECT_EQ(back->previous_phase, Phase::kStopped);
  EXPECT_EQ(back->expires_at, r.expires_at);
  r.state = ApprovalState::kApproved;
  r.decided_by = "pam";
  SetApprovalRequest(r, &instance);
  EXPECT_FALSE(IsPendingApproval(instance));
  EXPECT_EQ(DecodeApprovalRequest(instance)->decided_by, "pam");
  instance["status"].as_object()["approval"] = json::object{{"state", "Bogus"}};
  EXPECT_FALSE(DecodeApprovalRequest(instance));
}

}  // namespace
}  // namespace gantry::model
