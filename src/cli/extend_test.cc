// The arithmetic of `gantry extend`: the new ttl is the effective one (the instance's own,
// else its profile's default) plus the extension, so status.expiresAt (startedAt + ttl) moves
// by exactly the extension. The command itself runs against a real gantryd in
// tests/cli_test.cc.
#include "cli/extend.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace gantry::cli {
namespace {

namespace json = boost::json;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

json::object Parse(const char* text) { return json::parse(text).as_object(); }

TEST(ExtendedTtl, AddsToTheInstancesOwnTtl) {
  json::object instance = Parse(R"({"metadata":{"name":"nb"},"spec":{"lifecycle":{"ttl":"8h"}}})");
  json::object profile = Parse(R"({"spec":{"lifecycle":{"ttl":{"default":"1h","max":"72h"}}}})");
  EXPECT_EQ(*ExtendedTtl(instance, &profile, hours(2)), hours(10));
  EXPECT_EQ(*ExtendedTtl(instance, nullptr, minutes(30)), minutes(510));
}

TEST(ExtendedTtl, AddsToTheProfilesDefaultWhenTheInstanceSetsNone) {
  json::object instance = Parse(R"({"metadata":{"name":"nb"},"spec":{"profileRef":{"name":"p"}}})");
  json::object profile = Parse(R"({"spec":{"lifecycle":{"ttl":{"default":"1h","max":"72h"}}}})");
  EXPECT_EQ(*ExtendedTtl(instance, &profile, hours(2)), hours(3));
  EXPECT_EQ(*ExtendedTtl(instance, &profile, seconds(90)), seconds(3690));
}

TEST(ExtendedTtl, NothingToExtendWithoutAnyTtl) {
  json::object instance = Parse(R"({"metadata":{"name":"nb"},"spec":{}})");
  json::object profile = Parse(R"({"spec":{"lifecycle":{"idle":{"after":"30m"}}}})");
  absl::StatusOr<seconds> ttl = ExtendedTtl(instance, &profile, hours(2));
  ASSERT_FALSE(ttl.ok());
  EXPECT_EQ(ttl.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ttl.status().message(),
            "computeinstance/nb has no time-to-live to extend: neither its spec.lifecycle.ttl nor "
            "its profile's spec.lifecycle.ttl.default is set, so it does not expire");
  EXPECT_FALSE(ExtendedTtl(instance, nullptr, hours(2)).ok());
}

}  // namespace
}  // namespace gantry::cli
