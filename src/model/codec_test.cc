#include "model/codec.h"

#include <boost/json.hpp>
#include <string>

#include "absl/status/status.h"
#include "common/errors.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace boost::json {
// Readable JSON in gtest failure messages (gtest would otherwise dump the bytes).
inline void PrintTo(const object& o, std::ostream* os) { *os << serialize(o); }
inline void PrintTo(const value& v, std::ostream* os) { *os << serialize(v); }
}  // namespace boost::json

namespace gantry::model {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// The message of a refused body; also checks it is a 400 BadRequest.
std::string ParseError(std::string_view body) {
  auto parsed = ParseObjectJson(body);
  if (parsed.ok()) return "<parsed ok>";
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(HttpCodeOf(parsed.status()), 400);
  EXPECT_EQ(ReasonOf(parsed.status()), "BadRequest");
  return std::string(parsed.status().message());
}

// An object holding `levels` - 1 nested arrays: `levels` levels of nesting in all.
std::string Nested(int levels) {
  std::string s = "{\"a\":";
  for (int i = 1; i < levels; ++i) s += "[";
  s += "0";
  for (int i = 1; i < levels; ++i) s += "]";
  return s + "}";
}

// ------------------------------------------------------------------------------------------
// ParseObjectJson

TEST(ParseObjectJson, ParsesAnObject) {
  auto o = ParseObjectJson(R"( {"kind": "ComputeInstance", "spec": {"n": [1, 2.5, true, null]}} )");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(*o, json::parse(R"({"kind": "ComputeInstance", "spec": {"n": [1, 2.5, true, null]}})")
                    .as_object());
  auto empty = ParseObjectJson("{}");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(ParseObjectJson, AcceptsValidUtf8) {
  auto o = ParseObjectJson(
      "{\"displayName\": \"Gr\xC3\xBC\xC3\x9F"
      "e \xE2\x9C\x93\"}");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(GetString(*o, "displayName"),
            "Gr\xC3\xBC\xC3\x9F"
            "e \xE2\x9C\x93");
}

TEST(ParseObjectJson, EmptyBody) {
  EXPECT_EQ(ParseError(""), "the request body is empty; expected a JSON object");
}

TEST(ParseObjectJson, MalformedJson) {
  // Each message names where the parser stopped.
  EXPECT_EQ(ParseError("{"),
            "the request body is not valid JSON: incomplete JSON at line 1, column 2");
  EXPECT_EQ(ParseError("   "),
            "the request body is not valid JSON: incomplete JSON at line 1, column 4");
  EXPECT_EQ(ParseError(R"({"a" 1})"),
            "the request body is not valid JSON: syntax error at line 1, column 6");
  EXPECT_EQ(ParseError(R"({"a": 1,})"),
            "the request body is not valid JSON: syntax error at line 1, column 9");
  EXPECT_EQ(ParseError(R"({'a': 1})"),
            "the request body is not valid JSON: syntax error at line 1, column 2");
  EXPECT_EQ(ParseError(R"({"a": 1} x)"),
            "the request body is not valid JSON: extra data at line 1, column 10");
  EXPECT_EQ(ParseError(R"({}{})"),
            "the request body is not valid JSON: extra data at line 1, column 3");
  EXPECT_EQ(ParseError("apiVersion: v1\nkind: X\n"),
            "the request body is not valid JSON: syntax error at line 1, column 1");
}

TEST(ParseObjectJson, CommentsAreNotJson) {
  EXPECT_THAT(ParseError("{} // comment"), StartsWith("the request body is not valid JSON: "));
  EXPECT_THAT(ParseError("/* c */ {}"), StartsWith("the request body is not valid JSON: "));
}

// Regression (fixed; was: src/model/codec.cc, ParseObjectJson): codec.h promises that the message
// of malformed JSON "names line/offset", and the comment above the return says "Report the line and
// column of the failure", but the message is only Boost's error text ("syntax error"), with no
// position. Fix: track the bytes consumed (stream_parser::write returns them) and append
// " at line L, column C" (or " at offset N").
TEST(ParseObjectJson, MalformedJsonNamesThePosition) {
  EXPECT_THAT(ParseError("{\n  \"a\": tru\n}"), HasSubstr("line 2"));
  EXPECT_THAT(ParseError(R"({"a": 1,})"), HasSubstr("line 1"));
}

TEST(ParseObjectJson, ValuesThatAreNotObjects) {
  for (const char* body : {"[1, 2]", "[]", "\"str\"", "42", "-1.5", "true", "null"}) {
    EXPECT_EQ(ParseError(body), "the request body must be a JSON object") << body;
  }
}

TEST(ParseObjectJson, InvalidUtf8) {
  // A lone continuation byte, a truncated sequence, an overlong encoding, a surrogate.
  for (std::string body :
       {std::string("{\"a\": \"\xFF\"}"), std::string("{\"a\": \"\x80\"}"),
        std::string("{\"a\": \"\xC3\"}"), std::string("{\"a\": \"\xC0\xAF\"}"),
        std::string("{\"a\": \"\xED\xA0\x80\"}"), std::string("{\"\xFE\": 1}")}) {
    EXPECT_THAT(ParseError(body), StartsWith("the request body is not valid JSON: ")) << body;
  }
}

TEST(ParseObjectJson, NestingUpToTheLimitIsAccepted) {
  EXPECT_EQ(kMaxJsonDepth, 64);
  auto o = ParseObjectJson(Nested(kMaxJsonDepth));
  EXPECT_TRUE(o.ok()) << o.status();
}

TEST(ParseObjectJson, NestingDeeperThan64IsRefused) {
  EXPECT_THAT(ParseError(Nested(kMaxJsonDepth + 1)),
              testing::StartsWith(
                  "the request body is not valid JSON: nesting deeper than 64 levels at line 1"));
  // Far deeper input is refused the same way, without recursing into it.
  std::string deep(100000, '[');
  EXPECT_EQ(
      ParseError("{\"a\":" + deep),
      "the request body is not valid JSON: nesting deeper than 64 levels at line 1, column 69");
}

TEST(ParseObjectJson, DuplicateKeysKeepTheLast) {
  auto o = ParseObjectJson(R"({"a": 1, "a": 2})");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(GetInt(*o, "a"), 2);
}

TEST(ToJson, SerialisesCompactly) {
  EXPECT_EQ(ToJson(json::parse(R"({ "a" : [1, "x", null, true] })")), R"({"a":[1,"x",null,true]})");
  EXPECT_EQ(ToJson(json::value("s")), R"("s")");
}

TEST(ToJson, RoundTripsThroughParseObjectJson) {
  json::object o = json::parse(R"({"metadata": {"name": "x", "labels": {"a.b/c": "d"}},
                                   "spec": {"q": "quote \" and \\ and \n"}})")
                       .as_object();
  auto back = ParseObjectJson(ToJson(o));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, o);
}

// ------------------------------------------------------------------------------------------
// ApplyMergePatch: RFC 7386 Appendix A, every example.

struct MergeCase {
  const char* target;
  const char* patch;
  const char* result;
};

class MergePatchRfc7386 : public ::testing::TestWithParam<MergeCase> {};

TEST_P(MergePatchRfc7386, AppendixA) {
  json::value target = json::parse(GetParam().target);
  ApplyMergePatch(target, json::parse(GetParam().patch));
  EXPECT_EQ(target, json::parse(GetParam().result))
      << "target " << GetParam().target << " patch " << GetParam().patch << " gave "
      << json::serialize(target);
}

INSTANTIATE_TEST_SUITE_P(
    Rfc7386, MergePatchRfc7386,
    ::testing::Values(MergeCase{R"({"a":"b"})", R"({"a":"c"})", R"({"a":"c"})"},
                      MergeCase{R"({"a":"b"})", R"({"b":"c"})", R"({"a":"b","b":"c"})"},
                      MergeCase{R"({"a":"b"})", R"({"a":null})", R"({})"},
                      MergeCase{R"({"a":"b","b":"c"})", R"({"a":null})", R"({"b":"c"})"},
                      MergeCase{R"({"a":["b"]})", R"({"a":"c"})", R"({"a":"c"})"},
                      MergeCase{R"({"a":"c"})", R"({"a":["b"]})", R"({"a":["b"]})"},
                      MergeCase{R"({"a":{"b":"c"}})", R"({"a":{"b":"d","c":null}})",
                                R"({"a":{"b":"d"}})"},
                      MergeCase{R"({"a":[{"b":"c"}]})", R"({"a":[1]})", R"({"a":[1]})"},
                      MergeCase{R"(["a","b"])", R"(["c","d"])", R"(["c","d"])"},
                      MergeCase{R"({"a":"b"})", R"(["c"])", R"(["c"])"},
                      MergeCase{R"({"a":"foo"})", R"(null)", R"(null)"},
                      MergeCase{R"({"a":"foo"})", R"("bar")", R"("bar")"},
                      MergeCase{R"({"e":null})", R"({"a":1})", R"({"e":null,"a":1})"},
                      MergeCase{R"([1,2])", R"({"a":"b","c":null})", R"({"a":"b"})"},
                      MergeCase{R"({})", R"({"a":{"bb":{"ccc":null}}})", R"({"a":{"bb":{}}})"}));

TEST(ApplyMergePatch, RfcSection3Example) {
  json::value target = json::parse(R"({
    "title": "Goodbye!",
    "author": {"givenName": "John", "familyName": "Doe"},
    "tags": ["example", "sample"],
    "content": "This will be unchanged"})");
  ApplyMergePatch(target, json::parse(R"({
    "title": "Hello!", "phoneNumber": "+01-123-456-7890",
    "author": {"familyName": null}, "tags": ["example"]})"));
  EXPECT_EQ(target, json::parse(R"({
    "title": "Hello!",
    "author": {"givenName": "John"},
    "tags": ["example"],
    "content": "This will be unchanged",
    "phoneNumber": "+01-123-456-7890"})"));
}

TEST(ApplyMergePatch, DeletingAMissingKeyIsANoOp) {
  json::value target = json::parse(R"({"a": 1})");
  ApplyMergePatch(target, json::parse(R"({"b": null, "c": {"d": null}})"));
  EXPECT_EQ(target, json::parse(R"({"a": 1, "c": {}})"));
}

TEST(ApplyMergePatch, EmptyPatchChangesNothing) {
  json::value target = json::parse(R"({"spec": {"variables": {"nodes": "12"}}})");
  ApplyMergePatch(target, json::object{});
  EXPECT_EQ(target, json::parse(R"({"spec": {"variables": {"nodes": "12"}}})"));
}

// ------------------------------------------------------------------------------------------
// Path helpers

const json::object kDoc = json::parse(R"({
  "metadata": {"name": "gpu-1", "generation": 3, "labels": {"app.kubernetes.io/name": "web"}},
  "spec": {"profileRef": {"name": "h100-x8"}, "nodes": 18446744073709551615, "ratio": 2.75,
           "flag": true, "list": [1]},
  "status": null})")
                              .as_object();

TEST(FindPath, FindsNestedValues) {
  const json::value* v = FindPath(kDoc, "spec.profileRef.name");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(*v, json::value("h100-x8"));
  ASSERT_NE(FindPath(kDoc, "spec"), nullptr);
  EXPECT_TRUE(FindPath(kDoc, "spec")->is_object());
  ASSERT_NE(FindPath(kDoc, "status"), nullptr);
  EXPECT_TRUE(FindPath(kDoc, "status")->is_null());
}

TEST(FindPath, AbsentOrThroughANonObjectIsNull) {
  EXPECT_EQ(FindPath(kDoc, "spec.missing"), nullptr);
  EXPECT_EQ(FindPath(kDoc, "missing.name"), nullptr);
  EXPECT_EQ(FindPath(kDoc, "metadata.name.first"), nullptr);  // through a string
  EXPECT_EQ(FindPath(kDoc, "status.phase"), nullptr);         // through null
  EXPECT_EQ(FindPath(kDoc, "spec.list.0"), nullptr);          // arrays are not indexed
  EXPECT_EQ(FindPath(kDoc, ""), nullptr);
  EXPECT_EQ(FindPath(json::object{}, "a"), nullptr);
}

TEST(GetString, StringOrFallback) {
  EXPECT_EQ(GetString(kDoc, "metadata.name"), "gpu-1");
  EXPECT_EQ(GetString(kDoc, "metadata.missing"), "");
  EXPECT_EQ(GetString(kDoc, "metadata.missing", "dflt"), "dflt");
  EXPECT_EQ(GetString(kDoc, "metadata.generation", "dflt"), "dflt");  // not a string
  EXPECT_EQ(GetString(kDoc, "spec.profileRef", "dflt"), "dflt");      // an object
}

TEST(GetInt, IntegerOrFallback) {
  EXPECT_EQ(GetInt(kDoc, "metadata.generation"), 3);
  EXPECT_EQ(GetInt(kDoc, "spec.ratio"), 2);  // doubles are truncated
  EXPECT_EQ(GetInt(kDoc, "metadata.name", -1), -1);
  EXPECT_EQ(GetInt(kDoc, "spec.flag", -1), -1);
  EXPECT_EQ(GetInt(kDoc, "spec.missing"), 0);
  EXPECT_EQ(GetInt(kDoc, "spec.missing", 42), 42);
  EXPECT_EQ(GetInt(json::parse(R"({"a": -5})").as_object(), "a"), -5);
  EXPECT_EQ(GetInt(json::parse(R"({"a": 9223372036854775807})").as_object(), "a"),
            9223372036854775807LL);
}

TEST(EnsureObject, CreatesTheChain) {
  json::object o;
  json::object& leaf = EnsureObject(o, "status.lastRunRef");
  leaf["name"] = "gpu-1-1";
  EXPECT_EQ(o, json::parse(R"({"status": {"lastRunRef": {"name": "gpu-1-1"}}})").as_object());
}

TEST(EnsureObject, KeepsExistingObjects) {
  json::object o = json::parse(R"({"metadata": {"name": "x", "labels": {"a": "b"}}})").as_object();
  EnsureObject(o, "metadata")["resourceVersion"] = "7";
  EnsureObject(o, "metadata.labels")["c"] = "d";
  EXPECT_EQ(o, json::parse(R"({"metadata": {"name": "x", "resourceVersion": "7",
                                            "labels": {"a": "b", "c": "d"}}})")
                   .as_object());
}

TEST(EnsureObject, ReplacesNonObjects) {
  json::object o = json::parse(R"({"status": "weird", "spec": {"x": [1]}})").as_object();
  EnsureObject(o, "status.outputs")["endpoint"] = "http://x";
  EnsureObject(o, "spec.x");
  EXPECT_EQ(o, json::parse(R"({"status": {"outputs": {"endpoint": "http://x"}},
                               "spec": {"x": {}}})")
                   .as_object());
}

// Issue 15, item 5: an object stored before every write was checked for UTF-8 must still be
// readable (and so deletable): invalid bytes come back as U+FFFD.
TEST(ParseStoredObject, ReadsInvalidUtf8WithReplacementCharacters) {
  auto o = ParseStoredObject(
      "{\"metadata\":{\"name\":\"i\",\"managedFields\":"
      "[{\"manager\":\"\xff\"}]}}");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(GetString(*o, "metadata.name"), "i");
  EXPECT_EQ(o->at("metadata").at("managedFields").at(0).at("manager").as_string(), "\xEF\xBF\xBD");
  EXPECT_TRUE(ParseStoredObject(R"({"a": 1})").ok());
  EXPECT_EQ(ParseStoredObject("not json").status().code(), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace gantry::model
