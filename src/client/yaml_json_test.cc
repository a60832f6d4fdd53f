#include "client/yaml_json.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace gantry::client {
namespace {

namespace json = boost::json;

json::object One(std::string_view text) {
  auto docs = YamlToJsonObjects(text);
  EXPECT_TRUE(docs.ok()) << docs.status();
  if (!docs.ok() || docs->size() != 1) {
    ADD_FAILURE() << "expected one document";
    return {};
  }
  return (*docs)[0];
}

TEST(YamlToJson, PlainScalarsFollowTheCoreSchema) {
  json::object o =
      One("t: true\nf: False\ni: 12\nneg: -3\nplus: +4\nhex: 0x1F\noct: 0o17\nd: 2.5\n"
          "e: 1e3\nn: null\ntilde: ~\nempty:\ns: hello world\nver: 1.2.3\nyes: yes\n"
          "big: 18446744073709551615\ninf: .inf\n");
  EXPECT_EQ(o["t"], json::value(true));
  EXPECT_EQ(o["f"], json::value(false));
  EXPECT_EQ(o["i"], json::value(12));
  EXPECT_EQ(o["neg"], json::value(-3));
  EXPECT_EQ(o["plus"], json::value(4));
  EXPECT_EQ(o["hex"], json::value(31));
  EXPECT_EQ(o["oct"], json::value(15));
  EXPECT_TRUE(o["d"].is_double());
  EXPECT_DOUBLE_EQ(o["d"].get_double(), 2.5);
  EXPECT_DOUBLE_EQ(o["e"].get_double(), 1000.0);
  EXPECT_TRUE(o["n"].is_null());
  EXPECT_TRUE(o["tilde"].is_null());
  EXPECT_TRUE(o["empty"].is_null());
  EXPECT_EQ(o["s"], json::value("hello world"));
  EXPECT_EQ(o["ver"], json::value("1.2.3"));
  EXPECT_EQ(o["yes"], json::value("yes"));  // YAML 1.2: not a boolean
  EXPECT_EQ(o["big"], json::value(18446744073709551615ull));
  EXPECT_EQ(o["inf"], json::value(".inf"));  // JSON has no infinity
}

TEST(YamlToJson, QuotedScalarsStayStrings) {
  json::object o = One("a: \"12\"\nb: 'true'\nc: \"\"\nd: 'null'\ne: !!str 5\nf: !!float 3\n");
  EXPECT_EQ(o["a"], json::value("12"));
  EXPECT_EQ(o["b"], json::value("true"));
  EXPECT_EQ(o["c"], json::value(""));
  EXPECT_EQ(o["d"], json::value("null"));
  EXPECT_EQ(o["e"], json::value("5"));
  EXPECT_TRUE(o["f"].is_double());
}

TEST(YamlToJson, NestedStructures) {
  json::object o =
      One("kind: ComputeProfile\nspec:\n  resources: {gpu: {type: h100, count: 8}}\n"
          "  variables:\n  - {name: nodes, default: \"1\"}\n  - name: image\n    allowedValues: "
          "[a, b]\n");
  const json::object& spec = o["spec"].get_object();
  EXPECT_EQ(spec.at("resources").at("gpu").at("count"), json::value(8));
  EXPECT_EQ(spec.at("variables").at(1).at("allowedValues").at(1), json::value("b"));
  EXPECT_EQ(spec.at("variables").at(0).at("default"), json::value("1"));
}

TEST(YamlToJson, MultipleDocumentsSkipEmptyOnes) {
  auto docs = YamlToJsonObjects("---\nkind: A\n---\n---\n# only a comment\n---\nkind: B\n...\n");
  ASSERT_TRUE(docs.ok()) << docs.status();
  ASSERT_EQ(docs->size(), 2u);
  EXPECT_EQ((*docs)[0]["kind"], json::value("A"));
  EXPECT_EQ((*docs)[1]["kind"], json::value("B"));
}

TEST(YamlToJson, EmptyTextGivesNoObjects) {
  auto docs = YamlToJsonObjects("  \n# nothing\n");
  ASSERT_TRUE(docs.ok());
  EXPECT_TRUE(docs->empty());
}

TEST(YamlToJson, ListKindExpandsItems) {
  auto docs = YamlToJsonObjects(
      "apiVersion: v1\nkind: List\nitems:\n- kind: Project\n  metadata: {name: a}\n"
      "- kind: Project\n  metadata: {name: b}\n---\nkind: ComputeInstanceList\nitems: []\n");
  ASSERT_TRUE(docs.ok()) << docs.status();
  ASSERT_EQ(docs->size(), 2u);
  EXPECT_EQ((*docs)[1]["metadata"].at("name"), json::value("b"));
}

TEST(YamlToJson, JsonInput) {
  auto docs = YamlToJsonObjects(R"({"kind":"Project","metadata":{"name":"x"},"n":1.0,"s":"1"})");
  ASSERT_TRUE(docs.ok()) << docs.status();
  ASSERT_EQ(docs->size(), 1u);
  EXPECT_EQ((*docs)[0]["s"], json::value("1"));
  EXPECT_TRUE((*docs)[0]["n"].is_double());
  auto arr = YamlToJsonObjects(R"([{"kind":"A"},{"kind":"B"}])");
  ASSERT_TRUE(arr.ok());
  EXPECT_EQ(arr->size(), 2u);
}

TEST(YamlToJson, SyntaxErrorNamesLineAndColumn) {
  auto docs = YamlToJsonObjects("kind: A\nmetadata:\n  name: [x\n");
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(docs.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(docs.status().message().find("line "), std::string::npos) << docs.status();
  auto bad = YamlToJsonObjects("a: 1\nb: 2\n  c: 3\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 3"), std::string::npos) << bad.status();
  auto badjson = YamlToJsonObjects("{\"a\": 1,\n \"b\": }\n");
  ASSERT_FALSE(badjson.ok());
  EXPECT_EQ(badjson.status().message(), "line 2, column 7: syntax error") << badjson.status();
  // Flow-style YAML that is not JSON is still read as YAML.
  auto flow = YamlToJsonObjects("{kind: Project, metadata: {name: a}}");
  ASSERT_TRUE(flow.ok()) << flow.status();
  EXPECT_EQ((*flow)[0]["kind"], json::value("Project"));
}

TEST(YamlToJson, NonMappingDocumentIsRefused) {
  auto docs = YamlToJsonObjects("kind: A\n---\n- a\n- b\n");
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(docs.status().message(),
            "document 2 (line 3): item 0 is a string, expected a mapping (an API object)");
  auto num = YamlToJsonObjects("kind: A\n---\n42\n");
  ASSERT_FALSE(num.ok());
  EXPECT_EQ(num.status().message(),
            "document 2 (line 3): expected a mapping (an API object), got a number");
  auto scalar = YamlToJsonObjects("just text\n");
  ASSERT_FALSE(scalar.ok());
  EXPECT_NE(scalar.status().message().find("got a string"), std::string::npos);
}

TEST(YamlToJson, DuplicateKeysAndDeepNestingAreRefused) {
  auto dup = YamlToJsonObjects("a: 1\na: 2\n");
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("duplicate key \"a\""), std::string::npos);
  std::string deep = "a: " + std::string(200, '[') + std::string(200, ']') + "\n";
  auto d = YamlToJsonObjects(deep);
  EXPECT_FALSE(d.ok());
}

TEST(YamlToJson, AliasBombIsRefused) {
  std::string text = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  char prev = 'a';
  for (char c = 'b'; c <= 'j'; ++c) {
    text += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) text += std::string(i ? ", *" : "*") + prev;
    text += "]\n";
    prev = c;
  }
  auto r = YamlToJsonObjects(text);
  EXPECT_FALSE(r.ok());
}

TEST(JsonToYaml, QuotesStringsThatWouldBeMisread) {
  for (const char* s :
       {"true", "False", "123", "",     "1.5", "null", "~",  "a: b", " lead", "trail ", "- x",
        "#c",   "yes",   "no",  "0x1F", "1e3", "@x",   "*a", "!t",   ".inf",  "a #b",   "x:"}) {
    EXPECT_TRUE(YamlNeedsQuotes(s)) << s;
  }
  for (const char* s : {"hello", "gpu-instance-prod", "nvcr.io/nvidia/pytorch:24.05", "a-b_c",
                        "Not Deployed", "http://x"}) {
    EXPECT_FALSE(YamlNeedsQuotes(s)) << s;
  }
  json::value v = json::parse(R"({"a":"true","b":"12","c":"","d":"x"})");
  EXPECT_EQ(JsonToYaml(v), "a: \"true\"\nb: \"12\"\nc: \"\"\nd: x\n");
}

TEST(JsonToYaml, BlockLayout) {
  json::value v =
      json::parse(R"({"kind":"ComputeProfile","metadata":{"name":"p","labels":{}},)"
                  R"("spec":{"variables":[{"name":"nodes","default":"1"},{"name":"image"}],)"
                  R"("outputs":["endpoint"],"nested":[[1,2],[]],"n":3.0,"none":null}})");
  EXPECT_EQ(JsonToYaml(v),
            "kind: ComputeProfile\n"
            "metadata:\n"
            "  name: p\n"
            "  labels: {}\n"
            "spec:\n"
            "  variables:\n"
            "  - name: nodes\n"
            "    default: \"1\"\n"
            "  - name: image\n"
            "  outputs:\n"
            "  - endpoint\n"
            "  nested:\n"
            "  - - 1\n"
            "    - 2\n"
            "  - []\n"
            "  \"n\": 3.0\n"
            "  none: null\n");
}

TEST(JsonToYaml, MultiLineStringsUseLiteralBlocks) {
  json::value v = json::parse(R"({"script":"#!/bin/sh\necho hi\n","nonl":"a\n\nb"})");
  EXPECT_EQ(JsonToYaml(v), "script: |\n  #!/bin/sh\n  echo hi\nnonl: |-\n  a\n\n  b\n");
}

TEST(JsonToYaml, RoundTripsThroughYamlToJsonObjects) {
  json::value v = json::parse(R"({
    "apiVersion": "paas.gantry.dev/v1", "kind": "ComputeInstance",
    "metadata": {"name": "gpu-1", "labels": {"env": "prod", "tier": "1"}, "annotations": {}},
    "spec": {"displayName": "GPU: prod #1", "variables": {"nodes": "12", "flag": "yes",
             "empty": "", "nl": "line1\nline2\n", "lead": "\n x", "tabs": "a\tb",
             "ctrl": "a\u0001b", "uni": "h\u00e9llo \u2028 x", "quote": "\"q\" 'r'",
             "trail": "a\n\n", "spaces": "a\n  \n"},
             "numbers": [0, -1, 2.5, 1e300, 18446744073709551615, true, false, null],
             "deep": [[{"a": [{}]}]], "weird key: x": {"- y": 1, "": 2, "123": 3}}
  })");
  std::string yaml = JsonToYaml(v);
  auto back = YamlToJsonObjects(yaml);
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << yaml;
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ(json::value((*back)[0]), v) << yaml;
}

TEST(PrettyJson, IndentsLikeKubectl) {
  json::value v = json::parse(R"({"a":[1,{"b":"c"}],"e":{},"f":[],"d":2.0})");
  EXPECT_EQ(PrettyJson(v),
            "{\n    \"a\": [\n        1,\n        {\n            \"b\": \"c\"\n        }\n    ],\n"
            "    \"e\": {},\n    \"f\": [],\n    \"d\": 2.0\n}\n");
}

// Found by fuzz_yaml_json: yaml-cpp loops forever (allocating) on a stray flow entry in block
// context. Refused instead, and at once.
TEST(YamlToJson, StrayFlowEntryIsRefusedNotLoopedOn) {
  for (const char* text : {",-", ", -", "- a\n,-", "\"x\"\n,", ",[", "---\n,-"}) {
    auto docs = YamlToJsonObjects(text);
    EXPECT_FALSE(docs.ok()) << text;
    EXPECT_EQ(docs.status().code(), absl::StatusCode::kInvalidArgument) << text;
  }
  EXPECT_TRUE(YamlToJsonObjects("a: [b, c]\n").ok());
}

TEST(YamlToJson, InvalidUtf8IsRefused) {
  auto docs = YamlToJsonObjects("metadata:\n  name: \"\xff\"\n");
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(docs.status().message(), "the text is not valid UTF-8");
}

}  // namespace
}  // namespace gantry::client
