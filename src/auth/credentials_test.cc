#include "auth/credentials.h"

#include <gtest/gtest.h>

#include "common/clock.h"

namespace gantry::auth {
namespace {

TEST(Password, HashesVerifyAndRefuseShortOnes) {
  auto h = HashPassword("correct horse");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->rfind("$argon2id$", 0), 0u) << *h;
  EXPECT_TRUE(VerifyPassword("correct horse", *h));
  EXPECT_FALSE(VerifyPassword("correct horsE", *h));
  EXPECT_FALSE(VerifyPassword("correct horse", "garbage"));
  EXPECT_FALSE(HashPassword("short").ok());
  EXPECT_NE(*HashPassword("correct horse"), *h);  // salted
}

TEST(Secrets, AreRandomPrefixedAndHashedStably) {
  std::string a = NewSecret("gnt_"), b = NewSecret("gnt_");
  EXPECT_NE(a, b);
  EXPECT_EQ(a.rfind("gnt_", 0), 0u);
  EXPECT_EQ(a.size(), 4u + 43u);
  EXPECT_EQ(HashSecret(a), HashSecret(a));
  EXPECT_EQ(HashSecret(a).size(), 64u);
  EXPECT_TRUE(HashesEqual(HashSecret(a), HashSecret(a)));
  EXPECT_FALSE(HashesEqual(HashSecret(a), HashSecret(b)));
  EXPECT_EQ(RecordName("tok-", HashSecret(a)).size(), 24u);
}

TEST(Timestamp, RoundTripsWhatGantryWrites) {
  auto t = ParseTimestamp("2026-11-30T17:56:15Z");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(gantry::FormatRfc3339(*t), "2026-11-30T17:56:15Z");
  EXPECT_FALSE(ParseTimestamp("yesterday").has_value());
  EXPECT_FALSE(ParseTimestamp("2026-13-30T17:56:15Z").has_value());
  EXPECT_FALSE(ParseTimestamp("2999-01-01T00:00:00Z").has_value());  // would overflow
}

}  // namespace
}  // namespace gantry::auth
