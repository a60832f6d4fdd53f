#include "common/errors.h"

#include <gtest/gtest.h>

namespace gantry {
namespace {

TEST(Errors, InvalidCarriesCausesAndReason) {
  absl::Status s = InvalidError("ComputeInstance", "gpu-1",
                                {{"metadata.name", "must be a DNS-1123 label", "FieldValueInvalid"},
                                 {"spec.foo", "unknown field", "FieldValueNotSupported"}});
  EXPECT_EQ(HttpCodeOf(s), 422);
  EXPECT_EQ(ReasonOf(s), "Invalid");
  auto causes = CausesOf(s);
  ASSERT_EQ(causes.size(), 2u);
  EXPECT_EQ(causes[1].field, "spec.foo");
  EXPECT_EQ(causes[1].type, "FieldValueNotSupported");
  EXPECT_EQ(DetailKindOf(s), "ComputeInstance");
  EXPECT_EQ(std::string(s.message()),
            "ComputeInstance \"gpu-1\" is invalid: metadata.name: must be a DNS-1123 label, "
            "spec.foo: unknown field");
}

TEST(Errors, CodesMapToKubernetesHttp) {
  EXPECT_EQ(HttpCodeOf(BadRequestError("x")), 400);
  EXPECT_EQ(HttpCodeOf(NotFoundError("x")), 404);
  EXPECT_EQ(HttpCodeOf(AlreadyExistsError("x")), 409);
  EXPECT_EQ(ReasonOf(AlreadyExistsError("x")), "AlreadyExists");
  EXPECT_EQ(ReasonOf(ConflictError("x", "InstanceInProgress")), "InstanceInProgress");
  EXPECT_EQ(HttpCodeOf(TooLargeError("x")), 413);
  EXPECT_EQ(HttpCodeOf(ExpiredError("x")), 410);
  EXPECT_EQ(HttpCodeOf(absl::InternalError("x")), 500);
}

// Issue 16, item 5: codes carry the retry policy. A lost test-and-set is ABORTED (retry
// higher up); a refusal is FAILED_PRECONDITION (do not retry). Both are 409 on the wire.
TEST(Errors, ALostTestAndSetIsAbortedARefusalIsNot) {
  absl::Status lost = VersionConflictError("the object has been modified");
  EXPECT_TRUE(absl::IsAborted(lost));
  EXPECT_EQ(HttpCodeOf(lost), 409);
  EXPECT_EQ(ReasonOf(lost), "Conflict");
  absl::Status refused = ConflictError("instance x is In Progress", "InstanceInProgress");
  EXPECT_TRUE(absl::IsFailedPrecondition(refused));
  EXPECT_EQ(HttpCodeOf(refused), 409);
  EXPECT_EQ(ReasonOf(refused), "InstanceInProgress");
}

}  // namespace
}  // namespace gantry
