#include "model/validation.h"

#include <boost/json.hpp>
#include <map>
#include <string>
#include <vector>

#include "common/errors.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/schema.h"
#include "model/validator_messages_test.h"

namespace boost::json {
// Readable JSON in gtest failure messages (gtest would otherwise dump the bytes).
inline void PrintTo(const object& o, std::ostream* os) { *os << serialize(o); }
inline void PrintTo(const value& v, std::ostream* os) { *os << serialize(v); }
}  // namespace boost::json

namespace gantry {
// Lets gmock print and compare causes (same definition in every file of model_test).
inline bool operator==(const FieldCause& a, const FieldCause& b) {
  return a.field == b.field && a.message == b.message && a.type == b.type;
}
inline void PrintTo(const FieldCause& c, std::ostream* os) {
  *os << "{" << c.field << " | " << c.message << " | " << c.type << "}";
}
}  // namespace gantry

namespace gantry::model {
// Prints resolved variables in failure messages.
inline void PrintTo(const ResolvedVariable& v, std::ostream* os) {
  *os << "{" << v.value << (v.sensitive ? ", sensitive" : "") << "}";
}
inline bool operator==(const ResolvedVariable& a, const ResolvedVariable& b) {
  return a.value == b.value && a.sensitive == b.sensitive;
}

namespace {

namespace json = boost::json;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

json::object Obj(std::string_view text) { return json::parse(text).as_object(); }

std::vector<FieldCause> Metadata(std::string_view text) {
  std::vector<FieldCause> causes;
  ValidateMetadata(Obj(text), &causes);
  return causes;
}

std::vector<FieldCause> Spec(std::string_view kind, std::string_view text) {
  std::vector<FieldCause> causes;
  const KindInfo* k = FindKindByName(kind);
  EXPECT_NE(k, nullptr) << kind;
  if (k) ValidateSpec(*k, Obj(text), &causes);
  return causes;
}

std::vector<FieldCause> ProfileAgainstTemplate(std::string_view profile, std::string_view tmpl) {
  std::vector<FieldCause> causes;
  ValidateProfileAgainstTemplate(Obj(profile), Obj(tmpl), &causes);
  return causes;
}

FieldCause Invalid(std::string field, std::string message) {
  return {std::move(field), std::move(message), "FieldValueInvalid"};
}

ResolvedVariable Val(std::string v, bool sensitive = false) { return {std::move(v), sensitive}; }

// ------------------------------------------------------------------------------------------
// metadata

TEST(ValidateMetadata, ValidNameLabelsAndAnnotations) {
  EXPECT_THAT(Metadata(R"({"name": "gpu-instance-prod",
      "labels": {"env": "prod", "app.kubernetes.io/name": "web", "empty": "",
                 "Team_Name.x": "LLM_team-1.0"},
      "annotations": {"owner-notes": "free text, any: chars!", "example.com/x": ""}})"),
              IsEmpty());
  EXPECT_THAT(Metadata(R"({"name": "a"})"), IsEmpty());
  EXPECT_THAT(Metadata(R"({"name": "0-9"})"), IsEmpty());
  EXPECT_THAT(Metadata(R"({"name": ")" + std::string(63, 'a') + R"("})"), IsEmpty());
}

TEST(ValidateMetadata, NameIsRequired) {
  EXPECT_THAT(Metadata(R"({})"),
              ElementsAre(FieldCause{"metadata.name", "Required value: name is required",
                                     "FieldValueRequired"}));
  EXPECT_THAT(Metadata(R"({"name": ""})"),
              ElementsAre(FieldCause{"metadata.name", "Required value: name is required",
                                     "FieldValueRequired"}));
}

TEST(ValidateMetadata, NameMustBeADns1123Label) {
  EXPECT_THAT(Metadata(R"({"name": "GPU_1"})"),
              ElementsAre(Invalid("metadata.name",
                                  std::string("Invalid value: \"GPU_1\": ") + kLabelRegexMsg)));
  EXPECT_THAT(Metadata(R"({"name": "-gpu"})"),
              ElementsAre(Invalid("metadata.name",
                                  std::string("Invalid value: \"-gpu\": ") + kLabelRegexMsg)));
  EXPECT_THAT(Metadata(R"({"name": "gpu-"})"),
              ElementsAre(Invalid("metadata.name",
                                  std::string("Invalid value: \"gpu-\": ") + kLabelRegexMsg)));
  EXPECT_THAT(
      Metadata(R"({"name": "gpu.prod"})"),
      ElementsAre(Invalid("metadata.name", "Invalid value: \"gpu.prod\": must not contain dots")));
}

TEST(ValidateMetadata, NameAtMost63Characters) {
  std::string name(64, 'a');
  EXPECT_THAT(Metadata(R"({"name": ")" + name + R"("})"),
              ElementsAre(Invalid("metadata.name", "Invalid value: \"" + name +
                                                       "\": must be no more than 63 characters")));
}

TEST(ValidateMetadata, LabelKeyErrors) {
  EXPECT_THAT(
      Metadata(R"({"name": "x", "labels": {"-x": "v"}})"),
      ElementsAre(Invalid("metadata.labels",
                          std::string("Invalid value: \"-x\": name part ") + kNameRegexMsg)));
  EXPECT_THAT(Metadata(R"({"name": "x", "labels": {"Example.com/x": "v"}})"),
              ElementsAre(Invalid("metadata.labels",
                                  std::string("Invalid value: \"Example.com/x\": prefix part ") +
                                      kSubdomainRegexMsg)));
  EXPECT_THAT(Metadata(R"({"name": "x", "labels": {"/x": "v"}})"),
              ElementsAre(Invalid("metadata.labels",
                                  "Invalid value: \"/x\": prefix part must be non-empty")));
  std::string long_key(64, 'k');
  EXPECT_THAT(Metadata(R"({"name": "x", "labels": {")" + long_key + R"(": "v"}})"),
              ElementsAre(Invalid("metadata.labels",
                                  "Invalid value: \"" + long_key +
                                      "\": name part must be no more than 63 characters")));
}

TEST(ValidateMetadata, LabelValueErrorsNameTheKey) {
  EXPECT_THAT(Metadata(R"({"name": "x", "labels": {"team": "bad value"}})"),
              ElementsAre(Invalid("metadata.labels.team",
                                  std::string("Invalid value: \"bad value\": ") + kValueRegexMsg)));
  std::string long_value(64, 'v');
  EXPECT_THAT(
      Metadata(R"({"name": "x", "labels": {"team": ")" + long_value + R"("}})"),
      ElementsAre(Invalid("metadata.labels.team", "Invalid value: \"" + long_value +
                                                      "\": must be no more than 63 characters")));
}

TEST(ValidateMetadata, AllProblemsReported) {
  EXPECT_THAT(
      Metadata(R"({"name": "Bad", "labels": {"-k": "-v"}})"),
      ElementsAre(
          Invalid("metadata.name", std::string("Invalid value: \"Bad\": ") + kLabelRegexMsg),
          Invalid("metadata.labels",
                  std::string("Invalid value: \"-k\": name part ") + kNameRegexMsg),
          Invalid("metadata.labels.-k", std::string("Invalid value: \"-v\": ") + kValueRegexMsg)));
}

TEST(ValidateMetadata, AnnotationKeysFollowLabelKeyRules) {
  EXPECT_THAT(
      Metadata(R"({"name": "x", "annotations": {"bad key": "v"}})"),
      ElementsAre(Invalid("metadata.annotations",
                          std::string("Invalid value: \"bad key\": name part ") + kNameRegexMsg)));
}

TEST(ValidateMetadata, AnnotationsAtMost256KiB) {
  // Keys and values count; exactly 262144 bytes is allowed, one more is refused.
  std::string at_limit(262144 - 1, 'x');
  EXPECT_THAT(Metadata(R"({"name": "x", "annotations": {"a": ")" + at_limit + R"("}})"), IsEmpty());
  std::string over(262144, 'x');
  EXPECT_THAT(
      Metadata(R"({"name": "x", "annotations": {"a": ")" + over + R"("}})"),
      ElementsAre(FieldCause{"metadata.annotations", "Too long: must have at most 262144 bytes",
                             "FieldValueTooLong"}));
}

// ------------------------------------------------------------------------------------------
// sharing

TEST(ValidateSpec, SharingSelectedNeedsProjects) {
  FieldCause need{"spec.sharing.projects", "at least one project is required when mode is Selected",
                  "FieldValueRequired"};
  EXPECT_THAT(Spec("ComputeInstance", R"({"sharing": {"mode": "Selected"}})"), ElementsAre(need));
  EXPECT_THAT(Spec("ComputeInstance", R"({"sharing": {"mode": "Selected", "projects": []}})"),
              ElementsAre(need));
  EXPECT_THAT(Spec("ComputeProfile", R"({"sharing": {"mode": "Selected"}})"), ElementsAre(need));
  EXPECT_THAT(
      Spec("ComputeInstance", R"({"sharing": {"mode": "Selected", "projects": ["a", "b"]}})"),
      IsEmpty());
}

TEST(ValidateSpec, SharingProjectsForbiddenUnlessSelected) {
  FieldCause forbidden{"spec.sharing.projects", "may only be set when mode is Selected",
                       "FieldValueForbidden"};
  EXPECT_THAT(Spec("ComputeInstance", R"({"sharing": {"mode": "All", "projects": ["a"]}})"),
              ElementsAre(forbidden));
  EXPECT_THAT(Spec("ComputeInstance", R"({"sharing": {"mode": "None", "projects": ["a"]}})"),
              ElementsAre(forbidden));
  // No mode means None.
  EXPECT_THAT(Spec("EnvironmentTemplate",
                   R"({"driver": "local", "local": {}, "sharing": {"projects": ["a"]}})"),
              ElementsAre(forbidden));
  EXPECT_THAT(Spec("ComputeInstance", R"({"sharing": {"mode": "All"}})"), IsEmpty());
  EXPECT_THAT(Spec("ComputeInstance", R"({"sharing": {"mode": "None"}})"), IsEmpty());
  EXPECT_THAT(Spec("ComputeInstance", R"({})"), IsEmpty());
}

TEST(ValidateSpec, SharedProjectNamesMustBeLabels) {
  EXPECT_THAT(
      Spec("ComputeInstance", R"({"sharing": {"mode": "Selected", "projects": ["ok", "Bad_P"]}})"),
      ElementsAre(Invalid("spec.sharing.projects[1]", kLabelRegexMsg)));
}

// ------------------------------------------------------------------------------------------
// template variable declarations

TEST(ValidateSpec, TemplateDuplicateVariableNames) {
  EXPECT_THAT(Spec("EnvironmentTemplate", R"({"driver": "local", "local": {},
      "variables": [{"name": "nodes"}, {"name": "image"}, {"name": "nodes"}]})"),
              ElementsAre(FieldCause{"spec.variables[2].name", "Duplicate value: \"nodes\"",
                                     "FieldValueDuplicate"}));
}

TEST(ValidateSpec, TemplateEnumNeedsAllowedValues) {
  FieldCause need{"spec.variables[0].allowedValues", "an enum variable needs allowedValues",
                  "FieldValueRequired"};
  EXPECT_THAT(Spec("EnvironmentTemplate", R"({"driver": "local", "local": {},
      "variables": [{"name": "size", "type": "enum"}]})"),
              ElementsAre(need));
  EXPECT_THAT(Spec("EnvironmentTemplate", R"({"driver": "local", "local": {},
      "variables": [{"name": "size", "type": "enum", "allowedValues": []}]})"),
              ElementsAre(need));
  EXPECT_THAT(Spec("EnvironmentTemplate", R"({"driver": "local", "local": {},
      "variables": [{"name": "size", "type": "enum", "allowedValues": ["s", "m"],
                     "default": "m"}]})"),
              IsEmpty());
}

TEST(ValidateSpec, TemplateDefaultMustFitTheDeclaredType) {
  EXPECT_THAT(
      Spec("EnvironmentTemplate", R"({"driver": "local", "local": {},
      "variables": [{"name": "nodes", "type": "number", "default": "many"},
                    {"name": "debug", "type": "bool", "default": "yes"},
                    {"name": "size", "type": "enum", "allowedValues": ["s", "m"],
                     "default": "xl"},
                    {"name": "image", "type": "string", "default": "anything at all"},
                    {"name": "untyped", "default": "also fine"}]})"),
      ElementsAre(Invalid("spec.variables[0].default", "\"many\" is not a number"),
                  Invalid("spec.variables[1].default", "\"yes\" is not a boolean (true or false)"),
                  Invalid("spec.variables[2].default",
                          "unsupported value \"xl\": supported values: \"s\", \"m\"")));
}

TEST(ValidateSpec, TemplateNumberDefaults) {
  for (const char* ok : {"1", "-2", "0.5", "1e3", "12.0"}) {
    EXPECT_THAT(Spec("EnvironmentTemplate", std::string(R"({"driver": "local", "local": {},
        "variables": [{"name": "n", "type": "number", "default": ")") +
                                                ok + R"("}]})"),
                IsEmpty())
        << ok;
  }
  for (const char* bad : {"", "1x", "inf", "nan", "1 2"}) {
    EXPECT_THAT(Spec("EnvironmentTemplate", std::string(R"({"driver": "local", "local": {},
        "variables": [{"name": "n", "type": "number", "default": ")") +
                                                bad + R"("}]})"),
                ElementsAre(Invalid("spec.variables[0].default",
                                    "\"" + std::string(bad) + "\" is not a number")))
        << bad;
  }
}

// Regression (fixed; was: src/model/validation.cc, ParsesAsNumber): the number check is
// std::strtod, which also accepts leading whitespace, hexadecimal ("0x10") and hex-float ("0x1p3")
// forms, so those pass as "number" values and reach drivers verbatim. Fix: accept only JSON-style
// decimal numbers (e.g. std::from_chars with chars_format::general, which takes no whitespace and
// no hex).
TEST(ValidateSpec, NumberDefaultsAreDecimalOnly) {
  for (const char* bad : {" 1", "0x10", "0x1p3"}) {
    EXPECT_THAT(Spec("EnvironmentTemplate", std::string(R"({"driver": "local", "local": {},
        "variables": [{"name": "n", "type": "number", "default": ")") +
                                                bad + R"("}]})"),
                ElementsAre(Invalid("spec.variables[0].default",
                                    "\"" + std::string(bad) + "\" is not a number")))
        << bad;
  }
}

// ------------------------------------------------------------------------------------------
// driver configuration

TEST(ValidateSpec, DriverConfigurationRequired) {
  EXPECT_THAT(
      Spec("EnvironmentTemplate", R"({"driver": "exec"})"),
      ElementsAre(FieldCause{"spec.exec",
                             "Required value: driver \"exec\" needs its configuration in spec.exec",
                             "FieldValueRequired"}));
  EXPECT_THAT(
      Spec("EnvironmentTemplate", R"({"driver": "slurm", "slurm": "partition=gpu"})"),
      ElementsAre(FieldCause{
          "spec.slurm", "Required value: driver \"slurm\" needs its configuration in spec.slurm",
          "FieldValueRequired"}));
  EXPECT_THAT(Spec("EnvironmentTemplate", R"({"driver": "local", "local": {}})"), IsEmpty());
  // No driver at all is the schema's Required value, not repeated here.
  EXPECT_THAT(Spec("EnvironmentTemplate", R"({})"), IsEmpty());
}

TEST(ValidateSpec, OtherDriversConfigurationForbidden) {
  EXPECT_THAT(Spec("EnvironmentTemplate", R"({"driver": "local", "local": {},
      "exec": {"command": ["a"]}, "slurm": {}})"),
              ElementsAre(FieldCause{"spec.exec", "may only be set when driver is \"exec\"",
                                     "FieldValueForbidden"},
                          FieldCause{"spec.slurm", "may only be set when driver is \"slurm\"",
                                     "FieldValueForbidden"}));
}

// Regression (fixed; was: src/model/validation.cc, ValidateTemplateDriver): another driver's
// configuration sent as null (`exec: null`, which the schema reads as "not set") is refused with
// "may only be set when driver is ...", because the check is spec.contains(other). Fix: skip null
// values
// (`spec.contains(other) && !spec.at(other).is_null()`).
TEST(ValidateSpec, OtherDriversConfigurationNullIsNotSet) {
  EXPECT_THAT(Spec("EnvironmentTemplate",
                   R"({"driver": "local", "local": {}, "exec": null, "slurm": null})"),
              IsEmpty());
}

// The shape of spec.<driver> is the driver's own check (Driver::ValidateConfig at save:
// drivers/*/..._config_test.cc, and through the API tests/slurm, tests/resources_test.cc);
// the model checks only that the driver's section is there and no other driver's is.
TEST(ValidateSpec, LeavesTheDriversConfigurationToTheDriver) {
  EXPECT_THAT(Spec("EnvironmentTemplate", R"({"driver": "slurm", "slurm": {"script": "hostname",
                   "nodes": 0, "timeoutSeconds": 0, "slurmConf": "slurm.conf"}})"),
              IsEmpty());
  EXPECT_THAT(Spec("EnvironmentTemplate",
                   R"({"driver": "exec", "exec": {"command": [], "timeoutSeconds": 0}})"),
              IsEmpty());
}

// ------------------------------------------------------------------------------------------
// profile rules

TEST(ValidateSpec, ProfileRestrictedNeedsAllowedValues) {
  EXPECT_THAT(Spec("ComputeProfile", R"({"variables": [{"name": "image",
                                                        "override": "restricted"}]})"),
              ElementsAre(FieldCause{"spec.variables[0].allowedValues",
                                     "override \"restricted\" needs the list of allowed values",
                                     "FieldValueRequired"}));
}

TEST(ValidateSpec, ProfileAllowedValuesOnlyWhenRestricted) {
  FieldCause forbidden{"spec.variables[0].allowedValues",
                       "may only be set when override is \"restricted\"", "FieldValueForbidden"};
  EXPECT_THAT(Spec("ComputeProfile", R"({"variables": [{"name": "image", "override": "allowed",
                                                        "allowedValues": ["a"]}]})"),
              ElementsAre(forbidden));
  EXPECT_THAT(Spec("ComputeProfile", R"({"variables": [{"name": "image",
                                                        "allowedValues": ["a"]}]})"),
              ElementsAre(forbidden));
  EXPECT_THAT(Spec("ComputeProfile", R"({"variables": [{"name": "image",
                                                        "override": "notallowed",
                                                        "allowedValues": ["a"]}]})"),
              ElementsAre(forbidden));
}

TEST(ValidateSpec, ProfileRestrictedDefaultMustBeAllowed) {
  EXPECT_THAT(Spec("ComputeProfile", R"({"variables": [{"name": "image",
      "override": "restricted", "allowedValues": ["pytorch:24.05", "jax:0.4"],
      "default": "tf:2"}]})"),
              ElementsAre(Invalid("spec.variables[0].default",
                                  "\"tf:2\" is not one of the allowed values \"pytorch:24.05\", "
                                  "\"jax:0.4\"")));
  EXPECT_THAT(Spec("ComputeProfile", R"({"variables": [{"name": "image",
      "override": "restricted", "allowedValues": ["pytorch:24.05", "jax:0.4"],
      "default": "jax:0.4"}]})"),
              IsEmpty());
}

TEST(ValidateSpec, ProfileDuplicateRules) {
  EXPECT_THAT(Spec("ComputeProfile", R"({"variables": [{"name": "a"}, {"name": "a"}]})"),
              ElementsAre(FieldCause{"spec.variables[1].name", "Duplicate value: \"a\"",
                                     "FieldValueDuplicate"}));
}

TEST(ValidateSpec, ProfileResourcesNonNegative) {
  EXPECT_THAT(
      Spec("ComputeProfile", R"({"resources": {"gpu": {"type": "h100", "count": -1},
                                                       "cpu": -1, "memoryGiB": -0.5}})"),
      ElementsAre(Invalid("spec.resources.gpu.count", "must be greater than or equal to 0"),
                  Invalid("spec.resources.cpu", "must be greater than or equal to 0"),
                  Invalid("spec.resources.memoryGiB", "must be greater than or equal to 0")));
  EXPECT_THAT(Spec("ComputeProfile", R"({"resources": {"gpu": {"count": 0}, "cpu": 0,
                                                       "memoryGiB": 0}})"),
              IsEmpty());
}

TEST(ValidateSpec, InstanceProfileNamespaceMustBeALabel) {
  EXPECT_THAT(Spec("ComputeInstance", R"({"profileRef": {"name": "p", "namespace": "Bad_NS"}})"),
              ElementsAre(Invalid("spec.profileRef.namespace",
                                  std::string("Invalid value: \"Bad_NS\": ") + kLabelRegexMsg)));
  EXPECT_THAT(Spec("ComputeInstance", R"({"profileRef": {"name": "p", "namespace": "platform"}})"),
              IsEmpty());
}

// ------------------------------------------------------------------------------------------
// ValidateProfileAgainstTemplate

constexpr char kTemplateSpec[] = R"({"driver": "local", "local": {}, "variables": [
    {"name": "nodes", "type": "number", "default": "1"},
    {"name": "image", "type": "string", "default": "pytorch:24.05"},
    {"name": "size", "type": "enum", "allowedValues": ["s", "m", "l"]},
    {"name": "debug", "type": "bool"},
    {"name": "token", "type": "string", "required": true, "sensitive": true}]})";

TEST(ValidateProfileAgainstTemplate, KnownVariablesPass) {
  EXPECT_THAT(ProfileAgainstTemplate(R"({"variables": [
      {"name": "nodes", "default": "2", "override": "allowed"},
      {"name": "image", "override": "restricted", "allowedValues": ["a", "b"], "default": "a"},
      {"name": "size", "override": "restricted", "allowedValues": ["s", "m"]},
      {"name": "debug", "default": "true", "override": "notallowed"}]})",
                                     kTemplateSpec),
              IsEmpty());
  EXPECT_THAT(ProfileAgainstTemplate(R"({})", kTemplateSpec), IsEmpty());
}

TEST(ValidateProfileAgainstTemplate, UnknownVariableNamesTheDeclaredOnes) {
  EXPECT_THAT(ProfileAgainstTemplate(R"({"variables": [{"name": "nodes"}, {"name": "gpus"}]})",
                                     kTemplateSpec),
              ElementsAre(FieldCause{"spec.variables[1].name",
                                     "the template declares no variable \"gpus\" (it declares "
                                     "\"debug\", \"image\", \"nodes\", \"size\", \"token\")",
                                     "FieldValueNotFound"}));
}

TEST(ValidateProfileAgainstTemplate, UnknownVariableWhenTheTemplateDeclaresNone) {
  EXPECT_THAT(
      ProfileAgainstTemplate(R"({"variables": [{"name": "gpus"}]})", R"({"driver": "local"})"),
      ElementsAre(FieldCause{"spec.variables[0].name", "the template declares no variable \"gpus\"",
                             "FieldValueNotFound"}));
}

TEST(ValidateProfileAgainstTemplate, DefaultsAndAllowedValuesMustFitTheType) {
  EXPECT_THAT(
      ProfileAgainstTemplate(R"({"variables": [
      {"name": "nodes", "default": "many"},
      {"name": "debug", "override": "restricted", "allowedValues": ["true", "maybe"]},
      {"name": "size", "override": "restricted", "allowedValues": ["s", "xl"], "default": "s"}]})",
                             kTemplateSpec),
      ElementsAre(Invalid("spec.variables[0]", "variable \"nodes\": \"many\" is not a number"),
                  Invalid("spec.variables[1]",
                          "variable \"debug\": \"maybe\" is not a boolean (true or false)"),
                  Invalid("spec.variables[2]",
                          "variable \"size\": unsupported value \"xl\": supported values: "
                          "\"s\", \"m\", \"l\"")));
}

// ------------------------------------------------------------------------------------------
// ResolveVariables

constexpr char kResolveTemplate[] = R"({"variables": [
    {"name": "nodes", "type": "number", "default": "1"},
    {"name": "image", "type": "string", "default": "template-image"},
    {"name": "size", "type": "enum", "allowedValues": ["s", "m", "l"], "default": "s"},
    {"name": "debug", "type": "bool", "default": "false"},
    {"name": "note"}]})";

struct Resolved {
  std::map<std::string, ResolvedVariable> values;
  std::vector<FieldCause> causes;
};

Resolved Resolve(std::string_view tmpl, std::string_view profile, std::string_view instance) {
  Resolved r;
  r.values = ResolveVariables(Obj(tmpl), Obj(profile), Obj(instance), &r.causes);
  return r;
}

TEST(ResolveVariables, TemplateDefaultsWhenNothingElseIsSet) {
  Resolved r = Resolve(kResolveTemplate, R"({})", R"({})");
  EXPECT_THAT(r.causes, IsEmpty());
  // A variable with no default and no value is left out.
  EXPECT_THAT(r.values,
              ElementsAre(Pair("debug", Val("false")), Pair("image", Val("template-image")),
                          Pair("nodes", Val("1")), Pair("size", Val("s"))));
}

TEST(ResolveVariables, ProfileDefaultBeatsTemplateDefault) {
  Resolved r = Resolve(kResolveTemplate,
                       R"({"variables": [{"name": "nodes", "default": "4"},
                                         {"name": "note", "default": "from profile"}]})",
                       R"({})");
  EXPECT_THAT(r.causes, IsEmpty());
  EXPECT_EQ(r.values["nodes"].value, "4");
  EXPECT_EQ(r.values["note"].value, "from profile");
  EXPECT_EQ(r.values["image"].value, "template-image");
}

TEST(ResolveVariables, InstanceValueBeatsProfileDefault) {
  Resolved r = Resolve(kResolveTemplate, R"({"variables": [{"name": "nodes", "default": "4"}]})",
                       R"({"nodes": "12", "image": "mine", "size": "l", "debug": "true"})");
  EXPECT_THAT(r.causes, IsEmpty());
  EXPECT_THAT(r.values, ElementsAre(Pair("debug", Val("true")), Pair("image", Val("mine")),
                                    Pair("nodes", Val("12")), Pair("size", Val("l"))));
}

TEST(ResolveVariables, NonStringInstanceValuesBecomeStrings) {
  Resolved r = Resolve(kResolveTemplate, R"({})", R"({"nodes": 12, "debug": true})");
  EXPECT_THAT(r.causes, IsEmpty());
  EXPECT_EQ(r.values["nodes"].value, "12");
  EXPECT_EQ(r.values["debug"].value, "true");
}

TEST(ResolveVariables, NotAllowedOverrideIsRefusedAndTheDefaultKept) {
  Resolved r = Resolve(kResolveTemplate,
                       R"({"variables": [{"name": "nodes", "default": "4",
                                          "override": "notallowed"}]})",
                       R"({"nodes": "12"})");
  EXPECT_THAT(r.causes, ElementsAre(FieldCause{
                            "spec.variables.nodes",
                            "Forbidden: the profile does not allow overriding variable \"nodes\"",
                            "FieldValueForbidden"}));
  EXPECT_EQ(r.values["nodes"].value, "4");
}

TEST(ResolveVariables, RestrictedValueMustBeInTheList) {
  const char* profile = R"({"variables": [{"name": "image", "override": "restricted",
      "allowedValues": ["pytorch:24.05", "jax:0.4"], "default": "pytorch:24.05"}]})";
  Resolved bad = Resolve(kResolveTemplate, profile, R"({"image": "tf:2"})");
  EXPECT_THAT(bad.causes, ElementsAre(FieldCause{"spec.variables.image",
                                                 "Unsupported value: \"tf:2\": supported values: "
                                                 "\"pytorch:24.05\", \"jax:0.4\"",
                                                 "FieldValueNotSupported"}));
  EXPECT_EQ(bad.values["image"].value, "pytorch:24.05");
  Resolved good = Resolve(kResolveTemplate, profile, R"({"image": "jax:0.4"})");
  EXPECT_THAT(good.causes, IsEmpty());
  EXPECT_EQ(good.values["image"].value, "jax:0.4");
}

TEST(ResolveVariables, ValueMustParseAsTheDeclaredType) {
  Resolved r = Resolve(kResolveTemplate, R"({})", R"({"nodes": "twelve", "debug": "yes"})");
  EXPECT_THAT(
      r.causes,
      ElementsAre(Invalid("spec.variables.nodes", "Invalid value: \"twelve\" is not a number"),
                  Invalid("spec.variables.debug",
                          "Invalid value: \"yes\" is not a boolean (true or false)")));
}

TEST(ResolveVariables, EnumValueMustBeAllowed) {
  Resolved r = Resolve(kResolveTemplate, R"({})", R"({"size": "xl"})");
  EXPECT_THAT(r.causes,
              ElementsAre(Invalid("spec.variables.size",
                                  "Invalid value: unsupported value \"xl\": supported values: "
                                  "\"s\", \"m\", \"l\"")));
  EXPECT_EQ(r.values["size"].value, "s");
}

TEST(ResolveVariables, RequiredVariableWithoutAValue) {
  const char* tmpl = R"({"variables": [{"name": "token", "required": true},
                                       {"name": "region"}]})";
  Resolved r = Resolve(tmpl, R"({})", R"({})");
  EXPECT_THAT(r.causes, ElementsAre(FieldCause{"spec.variables.token",
                                               "Required value: variable \"token\" has no default",
                                               "FieldValueRequired"}));
  EXPECT_THAT(r.values, IsEmpty());
  // The profile can make a variable required too.
  Resolved by_profile = Resolve(tmpl, R"({"variables": [{"name": "region", "required": true}]})",
                                R"({"token": "t"})");
  EXPECT_THAT(by_profile.causes,
              ElementsAre(FieldCause{"spec.variables.region",
                                     "Required value: variable \"region\" has no default",
                                     "FieldValueRequired"}));
  // A value from any level satisfies it.
  EXPECT_THAT(
      Resolve(tmpl, R"({"variables": [{"name": "token", "default": "p"}]})", R"({})").causes,
      IsEmpty());
  EXPECT_THAT(Resolve(tmpl, R"({})", R"({"token": "i"})").causes, IsEmpty());
}

TEST(ResolveVariables, UnknownInstanceVariableNamesTheDeclaredOnes) {
  Resolved r = Resolve(kResolveTemplate, R"({})", R"({"gpus": "8", "nodes": "2"})");
  EXPECT_THAT(r.causes,
              ElementsAre(FieldCause{"spec.variables.gpus",
                                     "Not found: the profile has no variable \"gpus\" (it has "
                                     "\"debug\", \"image\", \"nodes\", \"note\", \"size\")",
                                     "FieldValueNotFound"}));
}

TEST(ResolveVariables, UnknownVariableWhenNoneDeclared) {
  Resolved r = Resolve(R"({})", R"({})", R"({"gpus": "8"})");
  EXPECT_THAT(r.causes, ElementsAre(FieldCause{"spec.variables.gpus",
                                               "Not found: the profile has no variable \"gpus\"",
                                               "FieldValueNotFound"}));
  EXPECT_THAT(r.values, IsEmpty());
}

TEST(ResolveVariables, SensitiveFromTemplateOrProfile) {
  const char* tmpl = R"({"variables": [{"name": "token", "sensitive": true, "default": "t"},
                                       {"name": "password", "default": "p"},
                                       {"name": "user", "default": "u"}]})";
  Resolved r =
      Resolve(tmpl, R"({"variables": [{"name": "password", "sensitive": true}]})", R"({})");
  EXPECT_THAT(r.causes, IsEmpty());
  EXPECT_THAT(r.values, ElementsAre(Pair("password", Val("p", true)), Pair("token", Val("t", true)),
                                    Pair("user", Val("u", false))));
}

TEST(ResolveVariables, EveryProblemIsReported) {
  Resolved r =
      Resolve(kResolveTemplate, R"({"variables": [{"name": "image", "override": "notallowed"}]})",
              R"({"image": "x", "nodes": "n", "zzz": "1"})");
  ASSERT_EQ(r.causes.size(), 3u);
  EXPECT_EQ(r.causes[0].field, "spec.variables.nodes");
  EXPECT_EQ(r.causes[1].field, "spec.variables.image");
  EXPECT_EQ(r.causes[2].field, "spec.variables.zzz");
}

// ------------------------------------------------------------------------------------------
// NormalizeVariableValues

TEST(NormalizeVariableValues, NumbersAndBooleansBecomeStrings) {
  json::object vars = Obj(R"({"a": 1, "b": true, "c": "x", "d": false, "e": -7,
                              "f": 18446744073709551615})");
  NormalizeVariableValues(vars);
  EXPECT_EQ(vars, Obj(R"({"a": "1", "b": "true", "c": "x", "d": "false", "e": "-7",
                          "f": "18446744073709551615"})"));
}

TEST(NormalizeVariableValues, StringsAreUntouched) {
  json::object vars = Obj(R"({"a": "1.50", "b": "TRUE", "c": ""})");
  NormalizeVariableValues(vars);
  EXPECT_EQ(vars, Obj(R"({"a": "1.50", "b": "TRUE", "c": ""})"));
}

// Regression (fixed; was: src/model/validation.cc, NormalizeVariableValues and ResolveVariables):
// non-integer numbers are turned into strings with boost::json::serialize, which writes doubles in
// exponent form: `lr: 0.5` in a YAML manifest is stored as "5E-1", `nodes: 3.0` as "3E0" and
// `version: 1.10` as "1.1E0". Users see those strings in the API and drivers receive them.
// Fix: format doubles with std::to_chars (shortest round-trip, plain notation), e.g.
// "0.5", "3", "1.1".
TEST(NormalizeVariableValues, FractionalNumbersKeepTheirDecimalForm) {
  json::object vars = Obj(R"({"lr": 0.5, "nodes": 3.0, "ratio": 2.25})");
  NormalizeVariableValues(vars);
  EXPECT_EQ(vars, Obj(R"({"lr": "0.5", "nodes": "3", "ratio": "2.25"})"));
  Resolved r = Resolve(kResolveTemplate, R"({})", R"({"nodes": 0.5})");
  EXPECT_EQ(r.values["nodes"].value, "0.5");
}

}  // namespace
}  // namespace gantry::model
