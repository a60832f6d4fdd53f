#include "client/kube_status.h"

#include <gtest/gtest.h>

#include "common/errors.h"

namespace gantry::client {
namespace {

TEST(KubeStatus, ConflictKeepsMessageReasonAndCode) {
  absl::Status s = StatusFromBody(
      409, R"({"kind":"Status","apiVersion":"v1","status":"Failure","code":409,)"
           R"("reason":"InstanceBusy","message":"computeinstance \"x\" is In Progress"})");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "computeinstance \"x\" is In Progress");
  EXPECT_EQ(ReasonOf(s), "InstanceBusy");
  EXPECT_EQ(HttpCodeOf(s), 409);
}

TEST(KubeStatus, AlreadyExistsAndNotFound) {
  absl::Status a = StatusFromBody(409, R"({"kind":"Status","code":409,"reason":"AlreadyExists",)"
                                       R"("message":"exists"})");
  EXPECT_EQ(a.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(a.message(), "exists");
  absl::Status n = StatusFromBody(404, R"({"kind":"Status","code":404,"reason":"NotFound",)"
                                       R"("message":"computeinstances \"x\" not found"})");
  EXPECT_EQ(n.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(HttpCodeOf(n), 404);
  EXPECT_EQ(n.message(), "computeinstances \"x\" not found");
}

TEST(KubeStatus, InvalidCarriesCauses) {
  absl::Status s = StatusFromBody(
      422, R"({"kind":"Status","code":422,"reason":"Invalid","message":"ComputeInstance \"x\" is )"
           R"(invalid: spec.profileRef.name: Required value","details":{"name":"x","kind":)"
           R"("ComputeInstance","causes":[{"field":"spec.profileRef.name","message":)"
           R"("Required value","reason":"FieldValueRequired"}]}})");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(HttpCodeOf(s), 422);
  EXPECT_EQ(ReasonOf(s), "Invalid");
  EXPECT_EQ(s.message(), "ComputeInstance \"x\" is invalid: spec.profileRef.name: Required value");
  auto causes = CausesOf(s);
  ASSERT_EQ(causes.size(), 1u);
  EXPECT_EQ(causes[0].field, "spec.profileRef.name");
  EXPECT_EQ(causes[0].type, "FieldValueRequired");
}

TEST(KubeStatus, AuthCodes) {
  EXPECT_EQ(StatusFromBody(401, R"({"kind":"Status","message":"no"})").code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(HttpCodeOf(StatusFromBody(403, R"({"kind":"Status","message":"no"})")), 403);
  EXPECT_EQ(HttpCodeOf(StatusFromBody(429, R"({"kind":"Status","message":"slow"})")), 429);
}

TEST(KubeStatus, NonStatusBody) {
  absl::Status s = StatusFromBody(502, "<html>Bad Gateway</html>");
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(s.message(), "the server answered HTTP 502: <html>Bad Gateway</html>");
  EXPECT_EQ(StatusFromBody(500, "").message(), "the server answered HTTP 500 without a message");
  EXPECT_TRUE(StatusFromBody(201, "{}").ok());
}

}  // namespace
}  // namespace gantry::client
