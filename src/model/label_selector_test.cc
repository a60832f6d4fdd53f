#include "model/label_selector.h"

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/errors.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/validator_messages_test.h"

namespace gantry::model {
namespace {

using ::testing::ElementsAre;

std::string Cat(std::initializer_list<std::string> parts) {
  std::string out;
  for (const auto& p : parts) out += p;
  return out;
}

LabelSelector MustParse(std::string_view text) {
  auto s = ParseLabelSelector(text);
  EXPECT_TRUE(s.ok()) << text << ": " << s.status();
  return s.ok() ? *s : LabelSelector{};
}

// The message of a refused selector; also checks it is a 400 BadRequest.
std::string ParseError(std::string_view text) {
  auto s = ParseLabelSelector(text);
  if (s.ok()) return "<parsed ok>";
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << text;
  EXPECT_EQ(HttpCodeOf(s.status()), 400) << text;
  EXPECT_EQ(ReasonOf(s.status()), "BadRequest") << text;
  return std::string(s.status().message());
}

const std::vector<std::string> kFields = {"metadata.name", "status.phase"};

std::string FieldError(std::string_view text) {
  auto s = ParseFieldSelector(text, kFields);
  if (s.ok()) return "<parsed ok>";
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << text;
  EXPECT_EQ(HttpCodeOf(s.status()), 400) << text;
  return std::string(s.status().message());
}

// ----------------------------------------------------------------------------- parsing

TEST(ParseLabelSelectorTest, EmptyAndBlankSelectEverything) {
  EXPECT_TRUE(MustParse("").Empty());
  EXPECT_TRUE(MustParse("  \t\r\n ").Empty());
  EXPECT_TRUE(MustParse("").Matches({}));
  EXPECT_TRUE(MustParse("").Matches({{"a", "b"}}));
}

TEST(ParseLabelSelectorTest, EachOperator) {
  struct Case {
    std::string text;
    SelectorOp op;
    std::vector<std::string> values;
  };
  const std::vector<Case> cases = {
      {"a=b", SelectorOp::kEquals, {"b"}},
      {"a==b", SelectorOp::kEquals, {"b"}},
      {"a!=b", SelectorOp::kNotEquals, {"b"}},
      {"a in (x,y)", SelectorOp::kIn, {"x", "y"}},
      {"a notin (x, y)", SelectorOp::kNotIn, {"x", "y"}},
      {"a", SelectorOp::kExists, {}},
      {"!a", SelectorOp::kDoesNotExist, {}},
  };
  for (const Case& c : cases) {
    LabelSelector s = MustParse(c.text);
    ASSERT_EQ(s.requirements.size(), 1u) << c.text;
    EXPECT_EQ(s.requirements[0].key, "a") << c.text;
    EXPECT_EQ(s.requirements[0].op, c.op) << c.text;
    EXPECT_EQ(s.requirements[0].values, c.values) << c.text;
  }
}

TEST(ParseLabelSelectorTest, WhitespaceTolerant) {
  LabelSelector s = MustParse("  a = b ,\tc\n!= d , e  in( x ,y ) , f notin(z) , g , ! h  ");
  ASSERT_EQ(s.requirements.size(), 6u);
  EXPECT_EQ(s.requirements[0].key, "a");
  EXPECT_EQ(s.requirements[0].values, std::vector<std::string>{"b"});
  EXPECT_EQ(s.requirements[1].key, "c");
  EXPECT_EQ(s.requirements[1].op, SelectorOp::kNotEquals);
  EXPECT_EQ(s.requirements[2].values, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(s.requirements[3].op, SelectorOp::kNotIn);
  EXPECT_EQ(s.requirements[4].op, SelectorOp::kExists);
  EXPECT_EQ(s.requirements[5].key, "h");
  EXPECT_EQ(s.requirements[5].op, SelectorOp::kDoesNotExist);
}

TEST(ParseLabelSelectorTest, RequirementsSortedByKeyAndValuesAsSet) {
  LabelSelector s = MustParse("zone in (b,a,b),app=web,tier");
  ASSERT_EQ(s.requirements.size(), 3u);
  EXPECT_EQ(s.requirements[0].key, "app");
  EXPECT_EQ(s.requirements[1].key, "tier");
  EXPECT_EQ(s.requirements[2].key, "zone");
  EXPECT_THAT(s.requirements[2].values, ElementsAre("a", "b"));
}

TEST(ParseLabelSelectorTest, EmptyValues) {
  EXPECT_THAT(MustParse("a=").requirements[0].values, ElementsAre(""));
  EXPECT_THAT(MustParse("a!=,b").requirements[0].values, ElementsAre(""));
  EXPECT_EQ(MustParse("a!=,b").requirements[1].op, SelectorOp::kExists);
  // As Kubernetes: commas inside the set stand for empty values.
  EXPECT_THAT(MustParse("a in (,)").requirements[0].values, ElementsAre(""));
  EXPECT_THAT(MustParse("a in (,x)").requirements[0].values, ElementsAre("", "x"));
  EXPECT_THAT(MustParse("a in (x,)").requirements[0].values, ElementsAre("", "x"));
  EXPECT_THAT(MustParse("a in (x,,y)").requirements[0].values, ElementsAre("", "x", "y"));
}

TEST(ParseLabelSelectorTest, KeywordsAreValuesAndKeysInValuePosition) {
  EXPECT_THAT(MustParse("a in (in,notin)").requirements[0].values, ElementsAre("in", "notin"));
  EXPECT_THAT(MustParse("a=in").requirements[0].values, ElementsAre("in"));
  LabelSelector s = MustParse("in in (notin)");
  EXPECT_EQ(s.requirements[0].key, "in");
  EXPECT_EQ(s.requirements[0].op, SelectorOp::kIn);
  EXPECT_EQ(MustParse("notin").requirements[0].op, SelectorOp::kExists);
  EXPECT_EQ(MustParse("!in").requirements[0].op, SelectorOp::kDoesNotExist);
}

TEST(ParseLabelSelectorTest, PrefixedKeys) {
  LabelSelector s = MustParse("gantry.dev/gpu-class=H100,example.com/Team_A.b in (x)");
  EXPECT_EQ(s.requirements[0].key, "example.com/Team_A.b");
  EXPECT_EQ(s.requirements[1].key, "gantry.dev/gpu-class");
  EXPECT_THAT(s.requirements[1].values, ElementsAre("H100"));
}

// ----------------------------------------------------------------------------- matching

TEST(LabelSelectorMatchesTest, Equality) {
  LabelSelector s = MustParse("app=web");
  EXPECT_TRUE(s.Matches({{"app", "web"}}));
  EXPECT_TRUE(s.Matches({{"app", "web"}, {"x", "y"}}));
  EXPECT_FALSE(s.Matches({{"app", "db"}}));
  EXPECT_FALSE(s.Matches({}));
  EXPECT_TRUE(MustParse("app==web").Matches({{"app", "web"}}));
}

TEST(LabelSelectorMatchesTest, EmptyValueEqualityNeedsKey) {
  LabelSelector s = MustParse("app=");
  EXPECT_TRUE(s.Matches({{"app", ""}}));
  EXPECT_FALSE(s.Matches({}));
}

TEST(LabelSelectorMatchesTest, NotEqualsHoldsForMissingKey) {
  LabelSelector s = MustParse("app!=web");
  EXPECT_TRUE(s.Matches({}));
  EXPECT_TRUE(s.Matches({{"app", "db"}}));
  EXPECT_FALSE(s.Matches({{"app", "web"}}));
}

TEST(LabelSelectorMatchesTest, InAndNotIn) {
  LabelSelector in = MustParse("tier in (a, b)");
  EXPECT_TRUE(in.Matches({{"tier", "a"}}));
  EXPECT_TRUE(in.Matches({{"tier", "b"}}));
  EXPECT_FALSE(in.Matches({{"tier", "c"}}));
  EXPECT_FALSE(in.Matches({}));
  LabelSelector notin = MustParse("tier notin (a, b)");
  EXPECT_FALSE(notin.Matches({{"tier", "a"}}));
  EXPECT_TRUE(notin.Matches({{"tier", "c"}}));
  EXPECT_TRUE(notin.Matches({}));  // missing key: holds, as in Kubernetes
}

TEST(LabelSelectorMatchesTest, ExistsAndDoesNotExist) {
  EXPECT_TRUE(MustParse("gpu").Matches({{"gpu", ""}}));
  EXPECT_FALSE(MustParse("gpu").Matches({{"cpu", "x"}}));
  EXPECT_TRUE(MustParse("!gpu").Matches({{"cpu", "x"}}));
  EXPECT_FALSE(MustParse("!gpu").Matches({{"gpu", ""}}));
}

TEST(LabelSelectorMatchesTest, AllRequirementsMustHold) {
  LabelSelector s = MustParse("app=web,tier in (fe),!legacy");
  EXPECT_TRUE(s.Matches({{"app", "web"}, {"tier", "fe"}}));
  EXPECT_FALSE(s.Matches({{"app", "web"}, {"tier", "fe"}, {"legacy", "1"}}));
  EXPECT_FALSE(s.Matches({{"app", "web"}}));
}

TEST(LabelSelectorMatchesTest, HandBuiltSelector) {
  LabelSelector s;
  s.requirements.push_back({"k", SelectorOp::kIn, {"v1", "v2"}});
  EXPECT_TRUE(s.Matches({{"k", "v2"}}));
  EXPECT_FALSE(s.Matches({{"k", "v3"}}));
}

// ----------------------------------------------------------------------------- parse errors

TEST(ParseLabelSelectorErrorTest, StructuralMessages) {
  EXPECT_EQ(ParseError("=a"), "found '=', expected: !, identifier, or 'end of string'");
  EXPECT_EQ(ParseError(","), "found ',', expected: !, identifier, or 'end of string'");
  EXPECT_EQ(ParseError("a,"), "found '', expected: identifier after ','");
  EXPECT_EQ(ParseError("a,,b"), "found ',', expected: identifier after ','");
  EXPECT_EQ(ParseError("a=b c"), "found 'c', expected: ',' or 'end of string'");
  EXPECT_EQ(ParseError("a=b=c"), "found '=', expected: ',' or 'end of string'");
  EXPECT_EQ(ParseError("!a=b"), "found '=', expected: ',' or 'end of string'");
  EXPECT_EQ(ParseError("a in (x) b"), "found 'b', expected: ',' or 'end of string'");
}

TEST(ParseLabelSelectorErrorTest, RequirementMessages) {
  EXPECT_EQ(ParseError("!"), "unable to parse requirement: found '', expected: identifier");
  EXPECT_EQ(ParseError("! =a"), "unable to parse requirement: found '=', expected: identifier");
  EXPECT_EQ(ParseError("a b"),
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=");
  EXPECT_EQ(ParseError("a ("),
            "unable to parse requirement: found '(', expected: in, notin, =, ==, !=");
  EXPECT_EQ(ParseError("a=="), "<parsed ok>");  // "a==" is a == ""
  EXPECT_EQ(ParseError("a=(b)"), "unable to parse requirement: found '(', expected: identifier");
  EXPECT_EQ(ParseError("a in x"), "unable to parse requirement: found 'x' expected: '('");
  EXPECT_EQ(ParseError("a in"), "unable to parse requirement: found '' expected: '('");
  EXPECT_EQ(ParseError("a in ("),
            "unable to parse requirement: found '', expected: ',', ')' or identifier");
  EXPECT_EQ(ParseError("a in (="),
            "unable to parse requirement: found '=', expected: ',', ')' or identifier");
  EXPECT_EQ(ParseError("a in (x"), "unable to parse requirement: found '', expected: ',' or ')'");
  EXPECT_EQ(ParseError("a in (x y)"),
            "unable to parse requirement: found 'y', expected: ',' or ')'");
  EXPECT_EQ(ParseError("a in (x,"),
            "unable to parse requirement: found '', expected: ',', or identifier");
  EXPECT_EQ(ParseError("a in (x,="),
            "unable to parse requirement: found '=', expected: ',', or identifier");
}

TEST(ParseLabelSelectorErrorTest, EmptySetRefused) {
  constexpr char kMsg[] =
      "unable to parse requirement: for 'in', 'notin' operators, values set can't be empty";
  EXPECT_EQ(ParseError("a in ()"), kMsg);
  EXPECT_EQ(ParseError("a notin ( )"), kMsg);
}

TEST(ParseLabelSelectorErrorTest, OrderingOperatorsUnsupported) {
  EXPECT_EQ(ParseError("a>1"),
            "unable to parse requirement: operator '>' is not supported, expected: in, notin, "
            "=, ==, !=");
  EXPECT_EQ(ParseError("a < 1"),
            "unable to parse requirement: operator '<' is not supported, expected: in, notin, "
            "=, ==, !=");
}

TEST(ParseLabelSelectorErrorTest, InvalidKeyQuotesKey) {
  EXPECT_EQ(ParseError("-x=a"), Cat({"unable to parse requirement: invalid label key \"-x\": ",
                                     "name part ", kNameRegexMsg}));
  EXPECT_EQ(ParseError("a/b/c"),
            Cat({"unable to parse requirement: invalid label key \"a/b/c\": a qualified name ",
                 kNameRegexMsg,
                 " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"}));
  EXPECT_EQ(ParseError("!Bad.Prefix/x"),
            Cat({"unable to parse requirement: invalid label key \"Bad.Prefix/x\": prefix part ",
                 kSubdomainRegexMsg}));
}

TEST(ParseLabelSelectorErrorTest, InvalidValueQuotesValueAndKey) {
  EXPECT_EQ(ParseError("a=-b"),
            Cat({"unable to parse requirement: invalid label value \"-b\" for key \"a\": ",
                 kValueRegexMsg}));
  // Values are checked in sorted order; the first bad one is reported.
  EXPECT_EQ(ParseError("a notin (ok, z_, b.)"),
            Cat({"unable to parse requirement: invalid label value \"b.\" for key \"a\": ",
                 kValueRegexMsg}));
  std::string long_value(64, 'v');
  EXPECT_EQ(ParseError("a!=" + long_value),
            Cat({"unable to parse requirement: invalid label value \"", long_value,
                 "\" for key \"a\": must be no more than 63 characters"}));
}

TEST(ParseLabelSelectorErrorTest, NonPrintableTextIsEscaped) {
  EXPECT_EQ(ParseError(std::string("a\0b", 3)),
            Cat({"unable to parse requirement: invalid label key \"a\\x00b\": name part ",
                 kNameRegexMsg}));
  EXPECT_EQ(ParseError("a=b \xff"), "found '\\xff', expected: ',' or 'end of string'");
}

TEST(ParseLabelSelectorErrorTest, NeverCrashesOnOddInputs) {
  const std::vector<std::string> inputs = {"(",
                                           ")",
                                           "((((",
                                           "))))",
                                           "!!!!",
                                           "!=",
                                           "==",
                                           "=",
                                           "<>",
                                           ">=",
                                           "a!",
                                           "a!!b",
                                           "a in ((",
                                           "a in (,,,,",
                                           "a in )",
                                           "a notin",
                                           "in",
                                           "in in",
                                           "notin notin notin",
                                           "a=b,",
                                           ",a",
                                           std::string(1, '\0'),
                                           std::string(10000, '('),
                                           std::string(10000, 'a'),
                                           "a in (" + std::string(5000, ',') + ")"};
  for (const std::string& in : inputs) {
    auto s = ParseLabelSelector(in);
    if (!s.ok()) {
      EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << in;
    }
    (void)(s.ok() && s->Matches({{"a", "b"}}));
  }
}

// ----------------------------------------------------------------------------- field selectors

TEST(ParseFieldSelectorTest, Operators) {
  auto r = ParseFieldSelector("metadata.name=web-1,status.phase!=Running", kFields);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].field, "metadata.name");
  EXPECT_TRUE((*r)[0].equals);
  EXPECT_EQ((*r)[0].value, "web-1");
  EXPECT_EQ((*r)[1].field, "status.phase");
  EXPECT_FALSE((*r)[1].equals);
  EXPECT_EQ((*r)[1].value, "Running");

  r = ParseFieldSelector("status.phase==Pending", kFields);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)[0].equals);
  EXPECT_EQ((*r)[0].value, "Pending");
}

TEST(ParseFieldSelectorTest, EmptyTermsAndValues) {
  auto r = ParseFieldSelector("", kFields);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
  r = ParseFieldSelector(",,metadata.name=,", kFields);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].value, "");
}

TEST(ParseFieldSelectorTest, Escapes) {
  auto r = ParseFieldSelector(R"(metadata.name=a\,b\=c\\d)", kFields);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].value, R"(a,b=c\d)");
}

TEST(ParseFieldSelectorTest, Errors) {
  EXPECT_EQ(FieldError("spec.gpu=1"), "field label not supported: spec.gpu");
  EXPECT_EQ(FieldError("metadata.name =x"), "field label not supported: metadata.name ");
  EXPECT_EQ(FieldError("=x"), "field label not supported: ");
  EXPECT_EQ(FieldError("metadata.name=a,status.phase"),
            "invalid selector: 'metadata.name=a,status.phase'; can't understand 'status.phase'");
  EXPECT_EQ(FieldError("metadata.name=a=b"),
            "invalid field selector: unescaped character in value: '='");
  EXPECT_EQ(FieldError(R"(metadata.name=a\x)"),
            "invalid field selector: invalid escape sequence: \\x");
  EXPECT_EQ(FieldError(R"(metadata.name=a\)"),
            "invalid field selector: invalid escape sequence: \\");
  // Syntax errors win over unsupported fields, wherever they are.
  EXPECT_EQ(FieldError("zzz=1,metadata.name=a=b"),
            "invalid field selector: unescaped character in value: '='");
}

// ----------------------------------------------------------------------------- validators

TEST(Dns1123LabelErrorTest, Valid) {
  for (const char* v : {"a", "0", "my-name", "123-abc", "a-b-c"}) {
    EXPECT_EQ(Dns1123LabelError(v), std::nullopt) << v;
  }
  EXPECT_EQ(Dns1123LabelError(std::string(63, 'a')), std::nullopt);
}

TEST(Dns1123LabelErrorTest, Invalid) {
  for (const char* v : {"", "-a", "a-", "My-name", "UPPER", "a_b", "a b", "é"}) {
    EXPECT_EQ(Dns1123LabelError(v), kLabelRegexMsg) << v;
  }
  EXPECT_EQ(Dns1123LabelError("a.b"), "must not contain dots");
  EXPECT_EQ(Dns1123LabelError(std::string(64, 'a')), "must be no more than 63 characters");
  EXPECT_EQ(Dns1123LabelError(std::string(64, 'A')),
            Cat({"must be no more than 63 characters; ", kLabelRegexMsg}));
}

TEST(LabelKeyErrorTest, Valid) {
  for (const char* v : {"a", "A", "MyName", "my.name", "123-abc", "a_b", "example.com/MyName",
                        "a/b", "x.y-z/Z_9"}) {
    EXPECT_EQ(LabelKeyError(v), std::nullopt) << v;
  }
  EXPECT_EQ(LabelKeyError(std::string(63, 'k')), std::nullopt);
  // Prefix up to 253, each dotted part any length.
  std::string prefix = std::string(126, 'p') + "." + std::string(126, 'q');
  ASSERT_EQ(prefix.size(), 253u);
  EXPECT_EQ(LabelKeyError(prefix + "/k"), std::nullopt);
}

TEST(LabelKeyErrorTest, NamePart) {
  EXPECT_EQ(LabelKeyError(""), Cat({"name part must be non-empty; name part ", kNameRegexMsg}));
  EXPECT_EQ(LabelKeyError("a/"), Cat({"name part must be non-empty; name part ", kNameRegexMsg}));
  EXPECT_EQ(LabelKeyError(std::string(64, 'k')), "name part must be no more than 63 characters");
  for (const char* v : {"-a", "a-", "_a", "a.", "a b", "a:b"}) {
    EXPECT_EQ(LabelKeyError(v), Cat({"name part ", kNameRegexMsg})) << v;
  }
}

TEST(LabelKeyErrorTest, PrefixPart) {
  EXPECT_EQ(LabelKeyError("/a"), "prefix part must be non-empty");
  EXPECT_EQ(LabelKeyError("Example.com/a"), Cat({"prefix part ", kSubdomainRegexMsg}));
  EXPECT_EQ(LabelKeyError("a..b/a"), Cat({"prefix part ", kSubdomainRegexMsg}));
  std::string prefix = std::string(127, 'p') + "." + std::string(126, 'q');
  EXPECT_EQ(LabelKeyError(prefix + "/a"), "prefix part must be no more than 253 characters");
  EXPECT_EQ(LabelKeyError("-p/-n"),
            Cat({"prefix part ", kSubdomainRegexMsg, "; name part ", kNameRegexMsg}));
}

TEST(LabelKeyErrorTest, TooManySlashes) {
  EXPECT_EQ(LabelKeyError("a/b/c"),
            Cat({"a qualified name ", kNameRegexMsg,
                 " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"}));
}

TEST(LabelValueErrorTest, Valid) {
  for (const char* v : {"", "a", "MyValue", "my_value", "12345", "a.b-c_d"}) {
    EXPECT_EQ(LabelValueError(v), std::nullopt) << v;
  }
  EXPECT_EQ(LabelValueError(std::string(63, 'v')), std::nullopt);
}

TEST(LabelValueErrorTest, Invalid) {
  for (const char* v : {"-a", "a-", ".a", "a_", "a b", "a/b", "a=b"}) {
    EXPECT_EQ(LabelValueError(v), kValueRegexMsg) << v;
  }
  EXPECT_EQ(LabelValueError(std::string(64, 'v')), "must be no more than 63 characters");
  EXPECT_EQ(LabelValueError(std::string(64, '-')),
            Cat({"must be no more than 63 characters; ", kValueRegexMsg}));
}

}  // namespace
}  // namespace gantry::model
