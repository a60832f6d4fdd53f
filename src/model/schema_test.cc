#include "model/schema.h"

#include <boost/json.hpp>
#include <string>
#include <vector>

#include "common/errors.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace boost::json {
// Readable JSON in gtest failure messages (gtest would otherwise dump the bytes).
inline void PrintTo(const object& o, std::ostream* os) { *os << serialize(o); }
inline void PrintTo(const value& v, std::ostream* os) { *os << serialize(v); }
}  // namespace boost::json

namespace gantry {
// Lets gmock print and compare causes in failure messages.
inline bool operator==(const FieldCause& a, const FieldCause& b) {
  return a.field == b.field && a.message == b.message && a.type == b.type;
}
inline void PrintTo(const FieldCause& c, std::ostream* os) {
  *os << "{" << c.field << " | " << c.message << " | " << c.type << "}";
}
}  // namespace gantry

namespace gantry::model {
namespace {

namespace json = boost::json;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

const KindInfo& Kind(std::string_view name) {
  const KindInfo* k = FindKindByName(name);
  EXPECT_NE(k, nullptr) << name;
  return *k;
}

// The causes CheckSchema reports for `text`, a whole object of kind `kind`.
std::vector<FieldCause> Check(std::string_view kind, std::string_view text) {
  std::vector<FieldCause> causes;
  CheckSchema(Kind(kind), json::parse(text).as_object(), &causes);
  return causes;
}

FieldCause Unknown(std::string field, std::string key) {
  return {std::move(field), "unknown field \"" + key + "\"", "FieldValueNotSupported"};
}
FieldCause WrongType(std::string field, std::string message) {
  return {std::move(field), std::move(message), "FieldValueTypeInvalid"};
}
FieldCause Required(std::string field) {
  return {std::move(field), "Required value", "FieldValueRequired"};
}

constexpr char kValidInstance[] = R"json({
  "apiVersion": "paas.gantry.dev/v1", "kind": "ComputeInstance",
  "metadata": {"name": "gpu-instance-prod", "namespace": "ml-research",
               "labels": {"env": "prod"}, "annotations": {"owner-notes": "free text"}},
  "spec": {"displayName": "GPU instance (prod)", "description": "LLM pre-training.",
           "profileRef": {"name": "h100-x8", "namespace": "platform"},
           "variables": {"nodes": "12", "replicas": 3, "debug": true, "ratio": 0.5},
           "sharing": {"mode": "Selected", "projects": ["ml-research", "vision"]}}
})json";

constexpr char kValidTemplate[] = R"json({
  "apiVersion": "paas.gantry.dev/v1", "kind": "EnvironmentTemplate",
  "metadata": {"name": "train-exec"},
  "spec": {"displayName": "Training job (script)", "driver": "exec",
           "exec": {"command": ["./deploy.sh"], "workingDir": "/srv/templates/train",
                    "env": {"LOG_LEVEL": "info"}, "timeoutSeconds": 600},
           "variables": [{"name": "nodes", "type": "number", "default": "1",
                          "description": "Nodes to allocate", "required": false,
                          "sensitive": false},
                         {"name": "size", "type": "enum", "allowedValues": ["s", "m"]}],
           "outputs": ["endpoint"], "sharing": {"mode": "None"}}
})json";

constexpr char kValidProfile[] = R"json({
  "apiVersion": "paas.gantry.dev/v1", "kind": "ComputeProfile",
  "metadata": {"name": "h100-x8"},
  "spec": {"displayName": "8x H100 node", "description": "One node.",
           "templateRef": {"name": "train-exec"},
           "resources": {"gpu": {"type": "h100", "count": 8}, "cpu": 64, "memoryGiB": 512.5},
           "variables": [{"name": "nodes", "default": "1", "override": "allowed"},
                         {"name": "image", "default": "pytorch:24.05", "override": "restricted",
                          "allowedValues": ["pytorch:24.05", "jax:0.4"]}],
           "sharing": {"mode": "All"}}
})json";

// ------------------------------------------------------------------------------------------
// The kind table.

TEST(KindTable, FindKindByPluralKnowsEveryServedKind) {
  const KindInfo* ci = FindKindByPlural("computeinstances");
  ASSERT_NE(ci, nullptr);
  EXPECT_EQ(ci->kind, "ComputeInstance");
  EXPECT_EQ(ci->singular, "computeinstance");
  EXPECT_TRUE(ci->namespaced);
  EXPECT_FALSE(ci->versioned);
  EXPECT_EQ(ci->ListKind(), "ComputeInstanceList");
  EXPECT_THAT(ci->field_selectors,
              ElementsAre("status.phase", "spec.profileRef.name", "status.createdBy"));

  const KindInfo* projects = FindKindByPlural("projects");
  ASSERT_NE(projects, nullptr);
  EXPECT_EQ(projects->kind, "Project");
  EXPECT_FALSE(projects->namespaced);

  const KindInfo* templates = FindKindByPlural("environmenttemplates");
  ASSERT_NE(templates, nullptr);
  EXPECT_EQ(templates->kind, "EnvironmentTemplate");
  EXPECT_TRUE(templates->versioned);

  const KindInfo* profiles = FindKindByPlural("computeprofiles");
  ASSERT_NE(profiles, nullptr);
  EXPECT_EQ(profiles->kind, "ComputeProfile");
  EXPECT_TRUE(profiles->versioned);
  EXPECT_THAT(profiles->field_selectors, ElementsAre("spec.templateRef.name"));
}

TEST(KindTable, LookupsAreExactAndCaseSensitive) {
  EXPECT_EQ(FindKindByPlural("ComputeInstances"), nullptr);
  EXPECT_EQ(FindKindByPlural("computeinstance"), nullptr);  // singular, not plural
  EXPECT_EQ(FindKindByPlural("ci"), nullptr);               // short name, not plural
  EXPECT_EQ(FindKindByPlural(""), nullptr);
  EXPECT_EQ(FindKindByPlural("pods"), nullptr);
  EXPECT_EQ(FindKindByName("computeinstance"), nullptr);
  EXPECT_EQ(FindKindByName("ComputeInstances"), nullptr);
  EXPECT_EQ(FindKindByName(""), nullptr);
  EXPECT_EQ(FindKindByName("Pod"), nullptr);
}

TEST(KindTable, ByNameAndByPluralAgreeForEveryKind) {
  ASSERT_FALSE(AllKinds().empty());
  EXPECT_EQ(AllKinds().front().kind, "Project");  // applied first
  for (const KindInfo& k : AllKinds()) {
    EXPECT_EQ(FindKindByName(k.kind), &k) << k.kind;
    EXPECT_EQ(FindKindByPlural(k.plural), &k) << k.plural;
    EXPECT_EQ(k.spec.name, "spec") << k.kind;
    EXPECT_EQ(k.spec.type, FieldType::kObject) << k.kind;
  }
}

TEST(KindTable, ApiVersionConstants) {
  EXPECT_STREQ(kApiVersion, "paas.gantry.dev/v1");
  EXPECT_EQ(std::string(kGroup) + "/" + kVersion, kApiVersion);
}

// ------------------------------------------------------------------------------------------
// Valid objects.

TEST(CheckSchema, ValidObjectsHaveNoCauses) {
  EXPECT_THAT(Check("ComputeInstance", kValidInstance), IsEmpty());
  EXPECT_THAT(Check("EnvironmentTemplate", kValidTemplate), IsEmpty());
  EXPECT_THAT(Check("ComputeProfile", kValidProfile), IsEmpty());
  EXPECT_THAT(Check("Project", R"({"apiVersion": "paas.gantry.dev/v1", "kind": "Project",
      "metadata": {"name": "ml-research"},
      "spec": {"displayName": "ML", "quota": {"gpus": {"h100": 16, "a100": "4"},
                                              "instances": 10, "instancesPerUser": 2}}})"),
              IsEmpty());
}

TEST(CheckSchema, ServerSetMetadataFieldsAreAccepted) {
  EXPECT_THAT(Check("ComputeInstance", R"({"metadata": {"name": "x", "uid": "6f1c",
      "resourceVersion": "4182", "generation": 3, "creationTimestamp": "2026-11-30T14:00:00Z",
      "deletionTimestamp": "2026-12-01T00:00:00Z", "finalizers": ["a"], "generateName": "x-"},
      "spec": {"profileRef": {"name": "p"}}})"),
              IsEmpty());
}

TEST(CheckSchema, SpecAbsentOrNullIsNotCheckedHere) {
  EXPECT_THAT(Check("ComputeInstance", R"({"metadata": {"name": "x"}})"), IsEmpty());
  EXPECT_THAT(Check("ComputeInstance", R"({"metadata": {"name": "x"}, "spec": null})"), IsEmpty());
}

// ------------------------------------------------------------------------------------------
// Unknown fields, at every level, with the exact path.

TEST(CheckSchema, UnknownTopLevelField) {
  EXPECT_THAT(Check("ComputeInstance",
                    R"({"metadata": {"name": "x"}, "spec": {"profileRef": {"name": "p"}},
                        "extra": 1})"),
              ElementsAre(Unknown("extra", "extra")));
}

TEST(CheckSchema, UnknownSpecField) {
  EXPECT_THAT(Check("ComputeInstance", R"({"spec": {"profileRef": {"name": "p"}, "foo": 1}})"),
              ElementsAre(Unknown("spec.foo", "foo")));
}

TEST(CheckSchema, UnknownNestedObjectField) {
  EXPECT_THAT(Check("EnvironmentTemplate",
                    R"({"spec": {"driver": "exec", "exec": {"command": ["a"], "bogus": true}}})"),
              ElementsAre(Unknown("spec.exec.bogus", "bogus")));
  EXPECT_THAT(Check("ComputeInstance",
                    R"({"spec": {"profileRef": {"name": "p", "kind": "ComputeProfile"}}})"),
              ElementsAre(Unknown("spec.profileRef.kind", "kind")));
  EXPECT_THAT(Check("ComputeProfile", R"({"spec": {"templateRef": {"name": "t"},
                        "resources": {"gpu": {"type": "h100", "model": "sxm"}}}})"),
              ElementsAre(Unknown("spec.resources.gpu.model", "model")));
}

TEST(CheckSchema, UnknownFieldInArrayElementNamesTheIndex) {
  EXPECT_THAT(Check("EnvironmentTemplate", R"({"spec": {"driver": "local", "local": {},
                        "variables": [{"name": "a"}, {"name": "b", "x": 1}]}})"),
              ElementsAre(Unknown("spec.variables[1].x", "x")));
  EXPECT_THAT(Check("ComputeProfile", R"({"spec": {"templateRef": {"name": "t"},
                        "variables": [{"name": "a", "overide": "allowed"}]}})"),
              ElementsAre(Unknown("spec.variables[0].overide", "overide")));
}

TEST(CheckSchema, UnknownMetadataField) {
  EXPECT_THAT(Check("ComputeInstance", R"({"metadata": {"name": "x", "lables": {}}})"),
              ElementsAre(Unknown("metadata.lables", "lables")));
}

TEST(CheckSchema, UnknownSharingField) {
  EXPECT_THAT(Check("ComputeInstance", R"({"spec": {"profileRef": {"name": "p"},
                        "sharing": {"mode": "All", "with": []}}})"),
              ElementsAre(Unknown("spec.sharing.with", "with")));
}

TEST(CheckSchema, FreeObjectsAcceptAnyKeys) {
  EXPECT_THAT(Check("EnvironmentTemplate", R"({"spec": {"driver": "local",
                        "local": {"command": ["x"], "anything": {"nested": [1, 2]}}}})"),
              IsEmpty());
}

TEST(CheckSchema, SlurmFieldsAreDeclared) {
  EXPECT_THAT(Check("EnvironmentTemplate", R"({"spec": {"driver": "slurm",
                        "slurm": {"slurmConf": "/etc/slurm/slurm.conf", "partition": "gpu",
                                  "account": "a", "qos": "q", "timeLimit": "1:00:00", "nodes": 2,
                                  "command": ["x"], "env": {"A": "b"}, "workingDir": "/w",
                                  "timeoutSeconds": 60}}})"),
              IsEmpty());
  EXPECT_THAT(Check("EnvironmentTemplate", R"({"spec": {"driver": "slurm",
                        "slurm": {"partiton": "gpu", "nodes": "2"}}})"),
              ElementsAre(Unknown("spec.slurm.partiton", "partiton"),
                          WrongType("spec.slurm.nodes", "must be of type integer, not string")));
}

TEST(CheckSchema, EveryProblemIsReportedNotOnlyTheFirst) {
  EXPECT_THAT(Check("ComputeInstance", R"({"bogus": 1, "metadata": {"name": 5},
                        "spec": {"profileRef": {"name": "p"}, "foo": 1, "bar": 2}})"),
              ElementsAre(Unknown("bogus", "bogus"),
                          WrongType("metadata.name", "must be of type string, not number"),
                          Unknown("spec.foo", "foo"), Unknown("spec.bar", "bar")));
}

// ------------------------------------------------------------------------------------------
// Types.

TEST(CheckSchema, IntegerFieldRefusesString) {
  EXPECT_THAT(
      Check("EnvironmentTemplate", R"({"spec": {"driver": "exec",
                        "exec": {"command": ["a"], "timeoutSeconds": "600"}}})"),
      ElementsAre(WrongType("spec.exec.timeoutSeconds", "must be of type integer, not string")));
}

TEST(CheckSchema, IntegerFieldRefusesFractionsAndAcceptsIntegralNumbers) {
  EXPECT_THAT(
      Check("EnvironmentTemplate", R"({"spec": {"driver": "exec",
                        "exec": {"command": ["a"], "timeoutSeconds": 1.5}}})"),
      ElementsAre(WrongType("spec.exec.timeoutSeconds", "must be of type integer, not number")));
  // 600.0 and unsigned 64-bit values are integers.
  EXPECT_THAT(Check("EnvironmentTemplate", R"({"spec": {"driver": "exec",
                        "exec": {"command": ["a"], "timeoutSeconds": 600.0}}})"),
              IsEmpty());
  EXPECT_THAT(Check("EnvironmentTemplate", R"({"spec": {"driver": "exec",
                        "exec": {"command": ["a"], "timeoutSeconds": 18446744073709551615}}})"),
              IsEmpty());
  EXPECT_THAT(
      Check("ComputeInstance", R"({"metadata": {"generation": true}})"),
      ElementsAre(WrongType("metadata.generation", "must be of type integer, not boolean")));
}

TEST(CheckSchema, NumberFieldRefusesString) {
  EXPECT_THAT(Check("ComputeProfile", R"({"spec": {"templateRef": {"name": "t"},
                        "resources": {"cpu": "64", "memoryGiB": 1.5}}})"),
              ElementsAre(WrongType("spec.resources.cpu", "must be of type number, not string")));
}

TEST(CheckSchema, BooleanFieldRefusesString) {
  EXPECT_THAT(
      Check("EnvironmentTemplate", R"({"spec": {"driver": "local", "local": {},
                        "variables": [{"name": "a", "required": "yes"}]}})"),
      ElementsAre(WrongType("spec.variables[0].required", "must be of type boolean, not string")));
}

TEST(CheckSchema, StringFieldRefusesEveryOtherType) {
  EXPECT_THAT(Check("ComputeInstance", R"({"spec": {"profileRef": {"name": "p"},
                        "displayName": 1, "description": ["a"]}})"),
              ElementsAre(WrongType("spec.displayName", "must be of type string, not number"),
                          WrongType("spec.description", "must be of type string, not array")));
  EXPECT_THAT(Check("ComputeInstance", R"({"spec": {"profileRef": {"name": "p"},
                        "displayName": {"a": 1}}})"),
              ElementsAre(WrongType("spec.displayName", "must be of type string, not object")));
}

TEST(CheckSchema, ObjectAndArrayFieldsRefuseScalars) {
  EXPECT_THAT(Check("ComputeInstance", R"({"spec": "gpu"})"),
              ElementsAre(WrongType("spec", "must be of type object, not string")));
  EXPECT_THAT(Check("ComputeInstance", R"({"metadata": []})"),
              ElementsAre(WrongType("metadata", "must be of type object, not array")));
  EXPECT_THAT(Check("EnvironmentTemplate", R"({"spec": {"driver": "exec",
                        "exec": {"command": "./deploy.sh"}}})"),
              ElementsAre(WrongType("spec.exec.command", "must be of type array, not string")));
  EXPECT_THAT(Check("EnvironmentTemplate", R"({"spec": {"driver": "local", "local": "yes"}})"),
              ElementsAre(WrongType("spec.local", "must be of type object, not string")));
}

TEST(CheckSchema, ArrayElementsAreCheckedWithTheirIndex) {
  EXPECT_THAT(Check("EnvironmentTemplate", R"({"spec": {"driver": "local", "local": {},
                        "outputs": ["endpoint", 7, "x", false]}})"),
              ElementsAre(WrongType("spec.outputs[1]", "must be of type string, not number"),
                          WrongType("spec.outputs[3]", "must be of type string, not boolean")));
}

TEST(CheckSchema, StringMapValuesMustBeStrings) {
  EXPECT_THAT(Check("ComputeInstance", R"({"metadata": {"name": "x",
                        "labels": {"env": "prod", "replicas": 3, "on": true}}})"),
              ElementsAre(WrongType("metadata.labels.replicas", "must be a string"),
                          WrongType("metadata.labels.on", "must be a string")));
  EXPECT_THAT(Check("EnvironmentTemplate", R"({"spec": {"driver": "exec",
                        "exec": {"command": ["a"], "env": {"LOG_LEVEL": 1}}}})"),
              ElementsAre(WrongType("spec.exec.env.LOG_LEVEL", "must be a string")));
  EXPECT_THAT(Check("ComputeInstance", R"({"metadata": {"labels": ["env=prod"]}})"),
              ElementsAre(WrongType("metadata.labels", "must be of type object, not array")));
}

TEST(CheckSchema, ScalarMapAcceptsStringsNumbersAndBooleansOnly) {
  EXPECT_THAT(Check("ComputeInstance", R"({"spec": {"profileRef": {"name": "p"},
                        "variables": {"a": "x", "b": 1, "c": 1.5, "d": false,
                                      "e": [1], "f": {"g": 1}, "h": null}}})"),
              ElementsAre(WrongType("spec.variables.e", "must be a string, number or boolean"),
                          WrongType("spec.variables.f", "must be a string, number or boolean"),
                          WrongType("spec.variables.h", "must be a string, number or boolean")));
}

TEST(CheckSchema, ApiVersionAndKindMustBeStrings) {
  EXPECT_THAT(Check("ComputeInstance", R"({"apiVersion": 1, "kind": null})"),
              ElementsAre(WrongType("apiVersion", "must be of type string"),
                          WrongType("kind", "must be of type string")));
}

// ------------------------------------------------------------------------------------------
// Enums.

TEST(CheckSchema, EnumRefusesUnsupportedValueAndListsTheSupportedOnes) {
  EXPECT_THAT(Check("EnvironmentTemplate", R"({"spec": {"driver": "docker"}})"),
              ElementsAre(FieldCause{"spec.driver",
                                     "unsupported value \"docker\": supported values: \"exec\", "
                                     "\"local\", \"slurm\", \"container\"",
                                     "FieldValueNotSupported"}));
  EXPECT_THAT(Check("ComputeInstance", R"({"spec": {"profileRef": {"name": "p"},
                        "sharing": {"mode": "none"}}})"),
              ElementsAre(FieldCause{"spec.sharing.mode",
                                     "unsupported value \"none\": supported values: \"None\", "
                                     "\"All\", \"Selected\"",
                                     "FieldValueNotSupported"}));
  EXPECT_THAT(Check("ComputeProfile", R"({"spec": {"templateRef": {"name": "t"},
                        "variables": [{"name": "a", "override": "sometimes"}]}})"),
              ElementsAre(FieldCause{"spec.variables[0].override",
                                     "unsupported value \"sometimes\": supported values: "
                                     "\"allowed\", \"notallowed\", \"restricted\"",
                                     "FieldValueNotSupported"}));
  EXPECT_THAT(Check("EnvironmentTemplate", R"({"spec": {"driver": "local", "local": {},
                        "variables": [{"name": "a", "type": "int"}]}})"),
              ElementsAre(FieldCause{"spec.variables[0].type",
                                     "unsupported value \"int\": supported values: \"string\", "
                                     "\"number\", \"bool\", \"enum\"",
                                     "FieldValueNotSupported"}));
}

TEST(CheckSchema, EnumOfWrongTypeIsATypeError) {
  EXPECT_THAT(Check("EnvironmentTemplate", R"({"spec": {"driver": 1}})"),
              ElementsAre(WrongType("spec.driver", "must be of type string, not number")));
}

// ------------------------------------------------------------------------------------------
// Required fields and null.

TEST(CheckSchema, RequiredFieldsMissing) {
  EXPECT_THAT(Check("EnvironmentTemplate", R"({"spec": {"displayName": "x"}})"),
              ElementsAre(Required("spec.driver")));
  EXPECT_THAT(Check("ComputeInstance", R"({"spec": {}})"),
              ElementsAre(Required("spec.profileRef")));
  EXPECT_THAT(Check("ComputeInstance", R"({"spec": {"profileRef": {}}})"),
              ElementsAre(Required("spec.profileRef.name")));
  EXPECT_THAT(Check("ComputeProfile", R"({"spec": {}})"),
              ElementsAre(Required("spec.templateRef")));
  EXPECT_THAT(Check("EnvironmentTemplate", R"({"spec": {"driver": "local", "local": {},
                        "variables": [{"type": "string"}]}})"),
              ElementsAre(Required("spec.variables[0].name")));
}

TEST(CheckSchema, RequiredStringThatIsEmptyIsMissing) {
  EXPECT_THAT(Check("ComputeInstance", R"({"spec": {"profileRef": {"name": ""}}})"),
              ElementsAre(Required("spec.profileRef.name")));
}

TEST(CheckSchema, RequiredFieldSentAsNullIsReportedAsRequired) {
  // The schema also reports the null as a type error; the Required cause is what matters.
  EXPECT_THAT(Check("ComputeInstance", R"({"spec": {"profileRef": null}})"),
              Contains(Required("spec.profileRef")));
  EXPECT_THAT(Check("ComputeInstance", R"({"spec": {"profileRef": {"name": null}}})"),
              Contains(Required("spec.profileRef.name")));
}

// Regression (fixed; was: src/model/schema.cc, CheckField, kObject case): a required field sent as
// null is reported twice: once as "must be of type object, not null" (FieldValueTypeInvalid)
// because the null skip applies only to optional fields, and once as "Required value". Kubernetes
// reports one "Required value". Fix: `if (kv.value().is_null()) continue;` for every child and
// let the required loop below report it.
TEST(CheckSchema, RequiredFieldSentAsNullIsOneCause) {
  EXPECT_THAT(Check("ComputeInstance", R"({"spec": {"profileRef": null}})"),
              ElementsAre(Required("spec.profileRef")));
  EXPECT_THAT(Check("EnvironmentTemplate", R"({"spec": {"driver": null}})"),
              ElementsAre(Required("spec.driver")));
}

TEST(CheckSchema, EmptyRequiredEnumIsRequiredAndUnsupported) {
  EXPECT_THAT(Check("EnvironmentTemplate", R"({"spec": {"driver": ""}})"),
              Contains(Required("spec.driver")));
}

TEST(CheckSchema, NullForOptionalFieldsMeansNotSet) {
  EXPECT_THAT(Check("ComputeInstance", R"({"metadata": {"name": "x", "labels": null,
                        "annotations": null, "generation": null},
                        "spec": {"profileRef": {"name": "p", "namespace": null},
                                 "displayName": null, "description": null,
                                 "variables": null, "sharing": null}})"),
              IsEmpty());
  EXPECT_THAT(Check("EnvironmentTemplate", R"({"spec": {"driver": "exec",
                        "exec": {"command": ["a"], "timeoutSeconds": null, "env": null},
                        "variables": [{"name": "a", "default": null, "allowedValues": null}],
                        "outputs": null}})"),
              IsEmpty());
}

// ------------------------------------------------------------------------------------------
// Status.

TEST(CheckSchema, StatusIsIgnoredInAnyShape) {
  EXPECT_THAT(Check("ComputeInstance", R"({"spec": {"profileRef": {"name": "p"}},
                        "status": {"phase": 5, "bogus": [1], "outputs": 3}})"),
              IsEmpty());
  EXPECT_THAT(Check("ComputeInstance", R"({"spec": {"profileRef": {"name": "p"}},
                        "status": "garbage"})"),
              IsEmpty());
  EXPECT_THAT(Check("ComputeInstance", R"({"spec": {"profileRef": {"name": "p"}},
                        "status": null})"),
              IsEmpty());
}

// ------------------------------------------------------------------------------------------
// CheckField directly.

TEST(CheckField, EmptyPathNamesChildrenWithoutADot) {
  Field name{"name", FieldType::kString, "", true, {}, {}};
  Field f{"", FieldType::kObject, "", false, {}, {name}};
  std::vector<FieldCause> causes;
  CheckField(f, json::parse(R"({"other": 1})"), "", &causes);
  EXPECT_THAT(causes, ElementsAre(Unknown("other", "other"), Required("name")));
}

TEST(CheckField, NullForAFieldIsAWrongTypeWhenCheckedDirectly) {
  Field f{"n", FieldType::kInteger, "", false, {}, {}};
  std::vector<FieldCause> causes;
  CheckField(f, json::value(nullptr), "spec.n", &causes);
  EXPECT_THAT(causes, ElementsAre(WrongType("spec.n", "must be of type integer, not null")));
}

}  // namespace
}  // namespace gantry::model
