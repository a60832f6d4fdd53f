#include "model/json_patch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/errors.h"

namespace gantry::model {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;

// Applies `patch` to `doc`; returns the result or "ERROR <code>: <message>".
std::string Patch(std::string_view doc, std::string_view patch) {
  json::value d = json::parse(doc);
  absl::Status s = ApplyJsonPatch(d, json::parse(patch));
  if (!s.ok()) return "ERROR " + std::to_string(HttpCodeOf(s)) + ": " + std::string(s.message());
  return json::serialize(d);
}

TEST(JsonPatchTest, Rfc6902Operations) {
  EXPECT_EQ(Patch(R"({"a":1})", R"([{"op":"add","path":"/b","value":2}])"), R"({"a":1,"b":2})");
  EXPECT_EQ(Patch(R"({"a":[1,3]})", R"([{"op":"add","path":"/a/1","value":2}])"),
            R"({"a":[1,2,3]})");
  EXPECT_EQ(Patch(R"({"a":[1]})", R"([{"op":"add","path":"/a/-","value":2}])"), R"({"a":[1,2]})");
  EXPECT_EQ(Patch(R"({"a":1,"b":2})", R"([{"op":"remove","path":"/a"}])"), R"({"b":2})");
  EXPECT_EQ(Patch(R"({"a":[1,2,3]})", R"([{"op":"remove","path":"/a/1"}])"), R"({"a":[1,3]})");
  EXPECT_EQ(Patch(R"({"a":1})", R"([{"op":"replace","path":"/a","value":"x"}])"), R"({"a":"x"})");
  EXPECT_EQ(Patch(R"({"a":{"b":1},"c":{}})", R"([{"op":"move","from":"/a/b","path":"/c/d"}])"),
            R"({"a":{},"c":{"d":1}})");
  EXPECT_EQ(Patch(R"({"a":{"b":1}})", R"([{"op":"copy","from":"/a","path":"/c"}])"),
            R"({"a":{"b":1},"c":{"b":1}})");
  EXPECT_EQ(Patch(R"({"a":{"b":1}})", R"([{"op":"test","path":"/a","value":{"b":1}}])"),
            R"({"a":{"b":1}})");
  EXPECT_EQ(Patch(R"({"a/b":1,"m~n":2})",
                  R"([{"op":"replace","path":"/a~1b","value":3},{"op":"remove","path":"/m~0n"}])"),
            R"({"a/b":3})");
  EXPECT_EQ(Patch(R"({"a":1})", R"([{"op":"replace","path":"","value":[1]}])"), "[1]");
}

TEST(JsonPatchTest, FailuresAre422NamingTheOperation) {
  EXPECT_EQ(Patch(R"({"a":1})",
                  R"([{"op":"add","path":"/b","value":2},{"op":"test","path":"/a","value":2}])"),
            "ERROR 422: the JSON patch's operation 2 (test) failed: the value at /a is not the "
            "one tested");
  EXPECT_EQ(Patch(R"({"a":1})", R"([{"op":"remove","path":"/x"}])"),
            "ERROR 422: the JSON patch's operation 1 (remove) failed: /x does not exist");
  EXPECT_THAT(
      Patch(R"({"a":{}})", R"([{"op":"replace","path":"/a/b/c","value":1}])"),
      HasSubstr("ERROR 422: the JSON patch's operation 1 (replace) failed: /a/b does not exist"));
  EXPECT_THAT(Patch(R"({"a":[1]})", R"([{"op":"add","path":"/a/5","value":1}])"),
              HasSubstr("ERROR 422"));
  EXPECT_THAT(Patch(R"({"a":[1]})", R"([{"op":"replace","path":"/a/01","value":1}])"),
              HasSubstr("ERROR 422"));
  EXPECT_THAT(Patch(R"({"a":{"b":{}}})", R"([{"op":"move","from":"/a","path":"/a/b/c"}])"),
              HasSubstr("into its own child"));
}

TEST(JsonPatchTest, MalformedPatchesAre400) {
  EXPECT_THAT(Patch("{}", R"({"op":"add"})"), HasSubstr("ERROR 400: a JSON patch must be a list"));
  EXPECT_THAT(Patch("{}", R"([{"op":"merge","path":"/a"}])"), HasSubstr("ERROR 400"));
  EXPECT_THAT(Patch("{}", R"([{"path":"/a"}])"), HasSubstr("has no \"op\""));
  EXPECT_THAT(Patch("{}", R"([{"op":"add","path":"/a"}])"), HasSubstr("has no \"value\""));
  EXPECT_THAT(Patch("{}", R"([{"op":"add","path":"a","value":1}])"),
              HasSubstr("ERROR 400: the JSON patch's operation 1 (add): path \"a\" must be"));
  EXPECT_THAT(Patch("{}", R"([{"op":"remove","path":"/a~2"}])"), HasSubstr("ERROR 400"));
  EXPECT_THAT(Patch("{}", R"([{"op":"copy","path":"/a"}])"), HasSubstr("has no \"from\""));
}

TEST(JsonPatchTest, CopyCannotBlowUpTheDocument) {
  std::string ops =
      R"([{"op":"add","path":"/a","value":"0123456789012345678901234567890123456789"})";
  for (int i = 0; i < 40; ++i)
    ops +=
        R"(,{"op":"copy","from":"/a","path":"/b"},{"op":"add","path":"/a","value":[]},{"op":"move","from":"/b","path":"/a/-"},{"op":"copy","from":"/a/0","path":"/a/-"})";
  ops += "]";
  std::string out = Patch("{}", ops);
  EXPECT_THAT(out, HasSubstr("ERROR 422"));
}

TEST(JsonPatchTest, DepthIsBounded) {
  // Moving an object into itself repeatedly would nest it without bound.
  std::string ops = R"([{"op":"add","path":"/a","value":{}})";
  for (int i = 0; i < 100; ++i)
    ops +=
        R"(,{"op":"move","from":"/a","path":"/b"},{"op":"add","path":"/a","value":{}},{"op":"move","from":"/b","path":"/a/x"})";
  ops += "]";
  EXPECT_THAT(Patch("{}", ops), HasSubstr("nested deeper than"));
}

}  // namespace
}  // namespace gantry::model
