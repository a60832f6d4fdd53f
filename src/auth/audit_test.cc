// Unit tests of the audit log's bounds: BoundedText, AddressOf and the per-address rate
// limit of unauthenticated records (time passed in, no clock read).
#include "auth/audit.h"

#include <gtest/gtest.h>

namespace gantry::auth {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Time = std::chrono::system_clock::time_point;

TEST(BoundedText, KeepsValidUtf8AndCutsOnACharacterBoundary) {
  EXPECT_EQ(BoundedText("computeinstances", 63), "computeinstances");
  EXPECT_EQ(BoundedText(std::string(5000, 'a'), 63), std::string(63, 'a'));
  // "é" is two bytes: a cut inside it drops it whole.
  EXPECT_EQ(BoundedText("ab\xC3\xA9", 3), "ab");
  EXPECT_EQ(BoundedText("ab\xC3\xA9", 4), "ab\xC3\xA9");
}

TEST(BoundedText, ReplacesInvalidUtf8AndControlCharacters) {
  EXPECT_EQ(BoundedText("a\xFF"
                        "b",
                        10),
            "a?b");
  EXPECT_EQ(BoundedText("a\nb\tc\x7F", 10), "a?b?c?");
  EXPECT_EQ(BoundedText("\xC0\xAF", 10), "??");            // overlong "/"
  EXPECT_EQ(BoundedText("\xED\xA0\x80", 10), "???");       // a UTF-16 surrogate
  EXPECT_EQ(BoundedText("\xF4\x90\x80\x80", 10), "????");  // past U+10FFFF
  EXPECT_EQ(BoundedText("\xE2\x82", 10), "??");            // truncated sequence
  EXPECT_EQ(BoundedText("\xF0\x9F\x98\x80", 10), "\xF0\x9F\x98\x80");
}

TEST(AddressOf, DropsThePort) {
  EXPECT_EQ(AddressOf("127.0.0.1:5555"), "127.0.0.1");
  EXPECT_EQ(AddressOf("::1:5555"), "::1");
  EXPECT_EQ(AddressOf(""), "");
}

AuditOptions Limits(double per_second, double burst, size_t sources = 4096) {
  AuditOptions o;
  o.unauthenticated_per_second = per_second;
  o.unauthenticated_burst = burst;
  o.max_sources = sources;
  return o;
}

TEST(AuditRateLimiter, AllowsABurstThenTheRateAndSummarisesWhatItDropped) {
  AuditRateLimiter limiter(Limits(2, 3));
  Time t0{};
  for (int i = 0; i < 3; ++i) {
    auto d = limiter.Admit("10.0.0.1", t0);
    EXPECT_TRUE(d.record);
    EXPECT_EQ(d.summary, 0);
  }
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(limiter.Admit("10.0.0.1", t0).record);
  // Another address has its own bucket.
  EXPECT_TRUE(limiter.Admit("10.0.0.2", t0).record);
  // Half a second later one token is back: it goes to the summary of the five dropped, and
  // the record that came with it is dropped in turn (counted in the next summary).
  auto d = limiter.Admit("10.0.0.1", t0 + milliseconds(500));
  EXPECT_EQ(d.summary, 5);
  EXPECT_FALSE(d.record);
  // A second later two tokens: the summary of that one, and the record.
  d = limiter.Admit("10.0.0.1", t0 + milliseconds(1500));
  EXPECT_EQ(d.summary, 1);
  EXPECT_TRUE(d.record);
  // A clock that goes back refills nothing and takes nothing away.
  d = limiter.Admit("10.0.0.1", t0);
  EXPECT_FALSE(d.record);
}

TEST(AuditRateLimiter, NeverGrowsPastMaxSources) {
  AuditRateLimiter limiter(Limits(1, 1, 4));
  Time t0{};
  for (int i = 0; i < 100; ++i) (void)limiter.Admit("10.0.1." + std::to_string(i), t0);
  EXPECT_LE(limiter.SourcesForTest(), 5u);  // four addresses and the shared bucket
  // Once their buckets are full again (and nothing is left to summarise), addresses are
  // forgotten to make room for new ones.
  for (int i = 0; i < 4; ++i) (void)limiter.Admit("10.0.1." + std::to_string(i), t0 + seconds(10));
  auto d = limiter.Admit("10.0.2.1", t0 + seconds(20));
  EXPECT_TRUE(d.record);
  EXPECT_LE(limiter.SourcesForTest(), 5u);
}

TEST(AuditLog, PruneIntervalIsATenthOfTheRetentionWithinOneSecondAndOneHour) {
  EXPECT_EQ(AuditLog::PruneInterval(seconds(1)), seconds(1));
  EXPECT_EQ(AuditLog::PruneInterval(seconds(60)), seconds(6));
  EXPECT_EQ(AuditLog::PruneInterval(std::chrono::hours(24 * 90)), std::chrono::hours(1));
}

}  // namespace
}  // namespace gantry::auth
