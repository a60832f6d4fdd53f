#include "api/resources.h"

#include <sodium.h>

#include <set>

#include "common/errors.h"
#include "common/ids.h"
#include "common/status_macros.h"
#include "client/yaml_json.h"
#include "model/codec.h"
#include "model/json_patch.h"
#include "model/label_selector.h"
#include "model/lifecycle.h"
#include "model/sealed_fields.h"
#include "model/validation.h"
#include "store/store_common.h"

namespace gantry::api {
namespace {

namespace json = boost::json;
using model::FindPath;
using model::GetInt;
using model::GetString;
using model::SharedWith;

constexpr int kMaxRetries = 8;
constexpr char kInstance[] = "ComputeInstance";
constexpr char kProfile[] = "ComputeProfile";
constexpr char kService[] = "ServiceInstance";
constexpr char kServiceProfile[] = "ServiceProfile";
// Labels an auto-created compute instance with the service it was created for.
constexpr char kCreatedForLabel[] = "paas.gantry.dev/service";
constexpr char kTemplate[] = "EnvironmentTemplate";
constexpr char kProject[] = "Project";
constexpr char kUser[] = "User";
constexpr char kRoleBinding[] = "RoleBinding";

bool Sharable(const std::string& kind) {
  return kind == kInstance || kind == kProfile || kind == kTemplate || kind == kServiceProfile ||
         kind == kService;
}

bool IsInstance(const std::string& kind) { return kind == kInstance || kind == kService; }

// The profile kind of an instance kind, and how messages name it.
const char* ProfileOf(const std::string& instance_kind) {
  return instance_kind == kService ? kServiceProfile : kProfile;
}
std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Continue tokens of a project's list: the store's own for the project's objects, then
// "s1.OFFSET" into the objects shared into it.
constexpr char kSharedContinue[] = "s1.";


std::string Resource(const model::KindInfo& k) { return k.plural + "." + model::kGroup; }

const json::object& ObjectAt(const json::object& obj, std::string_view path) {
  static const json::object kEmpty;
  const json::value* v = FindPath(obj, path);
  return v && v->is_object() ? v->get_object() : kEmpty;
}

// Metadata a client may set; everything else in metadata is server-owned.
json::object ClientMetadata(const json::object& incoming) {
  json::object out;
  for (const char* key : {"labels", "annotations"})
    if (const json::value* v = FindPath(incoming, std::string("metadata.") + key);
        v && v->is_object() && !v->get_object().empty())
      out[key] = *v;
  return out;
}

// Continue tokens as clients see them: "r<RV>.<position>", where the position is the store's
// token (or kSharedContinue's) and RV the resourceVersion of the list's first page. Gantry's
// pages are not a snapshot, but like Kubernetes a token expires with the history of its RV
// (410 Expired), so that a client that paged slower than --event-retention lists again.
struct ContinueToken {
  int64_t first_rv = 0;  // 0: a token without one (from an older gantryd)
  std::string position;
};

std::string EncodeContinue(int64_t first_rv, const std::string& position) {
  return position.empty() ? "" : "r" + std::to_string(first_rv) + "." + position;
}

absl::StatusOr<ContinueToken> DecodeContinue(const std::string& token) {
  if (token.empty() || token[0] != 'r') return ContinueToken{0, token};
  size_t dot = token.find('.');
  std::string rv = token.substr(1, dot == std::string::npos ? 0 : dot - 1);
  if (rv.empty() || rv.size() > 18 || rv.find_first_not_of("0123456789") != std::string::npos ||
      dot + 1 >= token.size())
    return BadRequestError("continue token \"" + token.substr(0, 64) +
                           "\" is not valid; start the list again");
  return ContinueToken{std::stoll(rv), token.substr(dot + 1)};
}

// The variables of an instance whose values are sealed (or about to be: all sensitive).
std::set<std::string> SensitiveNames(const json::object& variables) {
  std::set<std::string> out;
  for (const auto& kv : variables)
    if (kv.value().is_string() && SecretBox::IsSealed(kv.value().get_string()))
      out.insert(std::string(kv.key()));
  return out;
}

// Drivers whose templates name commands that gantryd runs on its own host: writing such a
// template is running code on the control plane, an org-admin right.
bool RunsOnHost(const std::string& driver) { return driver == "local" || driver == "exec"; }

// Kinds whose variables may declare sensitive defaults (sealed in spec.variables[i].default).
bool HasSealedDefaults(const std::string& kind) {
  return kind == kTemplate || kind == kProfile || kind == kServiceProfile;
}

std::string QueryValue(const Query& q, const std::string& key) {
  auto it = q.find(key);
  return it == q.end() ? "" : it->second;
}

}  // namespace

ResourceService::ResourceService(store::Store& store, WatchHub& hub, const Clock& clock,
                                 const SecretBox& secrets)
    : store_(store), hub_(hub), clock_(clock), secrets_(secrets) {}

absl::Status ResourceService::CheckAndSealVariables(const json::object& next,
                                                    const json::object& template_spec,
                                                    const json::object& profile_spec,
                                                    const json::object* current,
                                                    json::object& variables) {
  const std::string kind = GetString(next, "kind");
  const std::string name = GetString(next, "metadata.name");
  static const json::object kNone;
  const json::object& stored_vars = current ? ObjectAt(*current, "spec.variables") : kNone;
  std::vector<FieldCause> causes;
  json::object plain = variables;
  for (auto& kv : plain) {
    if (!kv.value().is_string()) continue;
    std::string v(kv.value().get_string());
    std::string path = "spec.variables." + std::string(kv.key());
    std::string stored = GetString(stored_vars, std::string(kv.key()));
    if (v == kRedacted) {
      // The client sent back what the API showed: keep the stored secret.
      if (!SecretBox::IsSealed(stored)) {
        causes.push_back({path, "Required value: give the value itself, not " +
                                    std::string(kRedacted), "FieldValueRequired"});
        continue;
      }
      variables[kv.key()] = stored;
      v = stored;
    }
    if (!SecretBox::IsSealed(v)) continue;
    // Ciphertext is only ever kept where it was sealed: a patch that copies or moves it into
    // another variable is refused before anything is decrypted.
    if (v != stored) {
      causes.push_back({path, "Invalid value: a sealed value is only valid in the variable it "
                              "was sealed for; give the value itself"});
      continue;
    }
    auto unsealed = secrets_.Unseal(v, model::VariableContext(next, kv.key()));
    if (!unsealed.ok()) {
      causes.push_back({path, "Invalid value: the stored secret cannot be decrypted (" +
                                  std::string(unsealed.status().message()) + ")"});
      continue;
    }
    kv.value() = *unsealed;
  }
  if (!causes.empty()) return InvalidError(kind, name, std::move(causes));
  auto resolved = model::ResolveVariables(template_spec, profile_spec, plain, &causes);
  if (!causes.empty()) return InvalidError(kind, name, std::move(causes));
  for (auto& kv : variables) {
    auto it = resolved.find(std::string(kv.key()));
    if (it == resolved.end() || !it->second.sensitive) continue;
    if (kv.value().is_string() && SecretBox::IsSealed(kv.value().get_string()) &&
        !SecretBox::IsLegacy(kv.value().get_string()))
      continue;
    // New plaintext, or a v1 value from before contexts: sealed for this variable.
    kv.value() = secrets_.Seal(it->second.value, model::VariableContext(next, kv.key()));
  }
  return absl::OkStatus();
}

std::string ResourceService::Now() const { return FormatRfc3339(clock_.Now()); }

absl::Status ResourceService::CheckProjectExists(const std::string& ns) {
  auto p = store_.Get(kProject, "", ns);
  if (p.ok()) return absl::OkStatus();
  if (absl::IsNotFound(p.status()))
    return NotFoundError("project \"" + ns + "\" not found");
  return p.status();
}

absl::Status ResourceService::ValidateIncoming(const Target& t, json::object& obj,
                                               bool for_create) {
  const model::KindInfo& kind = *t.kind;
  // apiVersion and kind may be omitted; when present they must name this resource.
  if (const json::value* v = obj.if_contains("apiVersion"); v && v->is_string() &&
                                                            v->get_string() != model::kApiVersion)
    return BadRequestError("apiVersion \"" + std::string(v->get_string()) +
                           "\" is not served here; use \"" + model::kApiVersion + "\"");
  if (const json::value* v = obj.if_contains("kind"); v && v->is_string() &&
                                                      v->get_string() != kind.kind)
    return BadRequestError("the object is of kind \"" + std::string(v->get_string()) +
                           "\" but was sent to the " + kind.plural + " resource");
  std::vector<FieldCause> causes;
  model::CheckSchema(kind, obj, &causes);
  if (!causes.empty())
    return InvalidError(kind.kind, GetString(obj, "metadata.name", t.name), std::move(causes));
  // null means "not set" (Kubernetes JSON decoding): drop such top-level fields here so no
  // code below meets a null where it expects an object.
  for (const char* key : {"metadata", "spec", "status"})
    if (const json::value* v = obj.if_contains(key); v && v->is_null()) obj.erase(key);

  json::object& meta = model::EnsureObject(obj, "metadata");
  if (for_create && GetString(meta, "name").empty() && !GetString(meta, "generateName").empty()) {
    static const char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    std::string name = GetString(meta, "generateName");
    for (int i = 0; i < 5; ++i) name += kAlphabet[randombytes_uniform(sizeof kAlphabet - 1)];
    meta["name"] = name;
  }
  std::string name = GetString(meta, "name");
  if (!t.name.empty()) {
    if (name.empty()) {
      meta["name"] = t.name;
    } else if (name != t.name) {
      return BadRequestError("the name of the object (" + name +
                             ") does not match the name on the URL (" + t.name + ")");
    }
  }
  std::string obj_ns = GetString(meta, "namespace");
  if (kind.namespaced && !obj_ns.empty() && obj_ns != t.ns)
    return BadRequestError("the namespace of the provided object (" + obj_ns +
                           ") does not match the project sent on the request (" + t.ns + ")");
  // Ciphertext outside the fields sealed values live in is refused first, so that no other
  // check quotes it back.
  model::FindMisplacedSealed(obj, IsInstance(kind.kind), &causes);
  if (!causes.empty()) return InvalidError(kind.kind, GetString(meta, "name"), std::move(causes));
  model::ValidateMetadata(meta, &causes);
  if (const json::value* spec = obj.if_contains("spec"); spec && spec->is_object())
    model::ValidateSpec(kind, spec->get_object(), &causes);
  else if (kind.spec.children.end() !=
           std::find_if(kind.spec.children.begin(), kind.spec.children.end(),
                        [](const model::Field& f) { return f.required; }))
    causes.push_back({"spec", "Required value", "FieldValueRequired"});
  if (!causes.empty())
    return InvalidError(kind.kind, GetString(meta, "name"), std::move(causes));
  if (json::value* vars = obj.contains("spec") ? obj["spec"].get_object().if_contains("variables")
                                                : nullptr;
      vars && vars->is_object() && IsInstance(kind.kind))
    model::NormalizeVariableValues(vars->get_object());
  return absl::OkStatus();
}

absl::Status ResourceService::CheckReferences(const Target& t, const json::object* current,
                                              json::object& next,
                                              std::vector<store::Write>* writes) {
  const std::string& kind = t.kind->kind;
  if (kind == kUser) return CheckUserWrite(t, current, next, writes);
  // A copy: the checks below write into `next` (sealed defaults, status), which may move its
  // members; `spec` is read again after they did.
  json::object spec = ObjectAt(next, "spec");
  std::string name = GetString(next, "metadata.name");

  if (kind == kRoleBinding) {
    std::string user = GetString(spec, "user");
    auto u = store_.Get(kUser, "", user);
    if (!u.ok()) {
      if (!absl::IsNotFound(u.status())) return u.status();
      return InvalidError(kind, name,
                          {{"spec.user", "user \"" + user + "\" not found", "FieldValueNotFound"}});
    }
    return absl::OkStatus();
  }

  if (kind == kProfile || kind == kServiceProfile) {
    std::string tns = GetString(spec, "templateRef.namespace", t.ns);
    std::string tname = GetString(spec, "templateRef.name");
    ASSIGN_OR_RETURN(json::object tmpl,
                     ResolveRef(t, kind, name, "templateRef", kTemplate, tns, tname));
    ASSIGN_OR_RETURN(json::object plain_template,
                     model::UnsealDefaults(secrets_, kTemplate, tns, tname, ObjectAt(tmpl, "spec")));
    std::set<std::string> sensitive = model::SensitiveDeclared(plain_template);
    sensitive.merge(model::SensitiveDeclared(spec));
    RETURN_IF_ERROR(SealDefaults(t, sensitive, current, next));
    ASSIGN_OR_RETURN(json::object plain_profile,
                     model::UnsealDefaults(secrets_, kind, t.ns, name, spec));
    std::vector<FieldCause> causes;
    model::ValidateProfileAgainstTemplate(plain_profile, plain_template, &causes);
    if (!causes.empty()) return InvalidError(kind, name, std::move(causes));
    if (kind == kServiceProfile) RETURN_IF_ERROR(CheckAutoCreateCompute(t, next));
  }
  if (kind == kTemplate) {
    RETURN_IF_ERROR(CheckHostDriverWrite(t, current, next));
    RETURN_IF_ERROR(SealDefaults(t, model::SensitiveDeclared(spec), current, next));
  }

  if (kind == kProfile || kind == kTemplate || kind == kServiceProfile) {
    spec = ObjectAt(next, "spec");  // with its defaults sealed
    bool spec_changed = !current || ObjectAt(*current, "spec") != spec;
    std::string tns = GetString(spec, "templateRef.namespace", t.ns);
    std::string tname = GetString(spec, "templateRef.name");
    int64_t revision = current ? GetInt(*current, "status.revision", 1) : 0;
    if (spec_changed) {
      ++revision;
      writes->push_back(store::Write{store::Write::Op::kPutRevision, kind, next, 0, revision});
      json::object& rev_meta = writes->back().object["metadata"].as_object();
      rev_meta["creationTimestamp"] = Now();
    }
    model::EnsureObject(next, "status")["revision"] = revision;
    if (kind != kTemplate) {
      auto tmpl = store_.Get(kTemplate, tns, tname);
      if (tmpl.ok() && spec_changed)
        next["status"].as_object()["templateRevision"] = GetInt(*tmpl, "status.revision", 1);
    }
    return absl::OkStatus();
  }

  if (!IsInstance(kind)) return absl::OkStatus();

  // An instance pins the revision of its profile (and of the profile's template) when it is
  // created or re-pointed; later edits of the profile never move it.
  const std::string profile_kind = ProfileOf(kind);
  std::string pns = GetString(spec, "profileRef.namespace", t.ns);
  std::string pname = GetString(spec, "profileRef.name");
  bool ref_changed = !current || GetString(*current, "spec.profileRef.name") != pname ||
                     GetString(*current, "spec.profileRef.namespace", t.ns) != pns;
  if (current && ref_changed && model::WasEverDeployed(*current))
    return InvalidError(kind, name,
                        {{"spec.profileRef",
                          "Forbidden: the " + std::string(kind == kService ? "service" : "compute") +
                              " profile can only be changed before the instance is first "
                              "deployed",
                          "FieldValueForbidden"}});
  json::object& status = model::EnsureObject(next, "status");
  json::object profile_spec, template_spec;
  if (ref_changed) {
    ASSIGN_OR_RETURN(json::object profile,
                     ResolveRef(t, kind, name, "profileRef", profile_kind, pns, pname));
    profile_spec = ObjectAt(profile, "spec");
    status["profileRevision"] = GetInt(profile, "status.revision", 1);
    status["templateRevision"] = GetInt(profile, "status.templateRevision", 1);
  }
  int64_t prev = GetInt(status, "profileRevision", 1);
  int64_t trev = GetInt(status, "templateRevision", 1);
  if (profile_spec.empty()) {
    auto rev = store_.GetRevision(profile_kind, pns, pname, prev);
    if (!rev.ok()) return rev.status();
    profile_spec = rev->spec;
  }
  std::string tns = GetString(profile_spec, "templateRef.namespace", pns);
  auto trevision = store_.GetRevision(kTemplate, tns, GetString(profile_spec, "templateRef.name"),
                                      trev);
  if (!trevision.ok()) return trevision.status();
  template_spec = trevision->spec;
  json::object& next_spec = model::EnsureObject(next, "spec");
  json::object variables = ObjectAt(next_spec, "variables");
  ASSIGN_OR_RETURN(profile_spec, model::UnsealDefaults(secrets_, profile_kind, pns, pname,
                                                       profile_spec));
  ASSIGN_OR_RETURN(template_spec,
                   model::UnsealDefaults(secrets_, kTemplate, tns,
                                         GetString(profile_spec, "templateRef.name"),
                                         template_spec));
  RETURN_IF_ERROR(CheckAndSealVariables(next, template_spec, profile_spec, current, variables));
  model::RedactLastApplied(next, /*is_instance=*/true, SensitiveNames(variables));
  if (!variables.empty()) next_spec["variables"] = std::move(variables);
  if (kind == kService) return CheckComputeRef(t, current, profile_spec, next, writes);
  return absl::OkStatus();
}

absl::Status ResourceService::CheckHostDriverWrite(const Target& t, const json::object* current,
                                                   const json::object& next) {
  if (t.caller_is_org_admin) return absl::OkStatus();
  std::string driver = GetString(next, "spec.driver");
  std::string was = current ? GetString(*current, "spec.driver") : "";
  if (!RunsOnHost(driver) && !RunsOnHost(was)) return absl::OkStatus();
  std::string verb = current ? "update" : "create";
  return ForbiddenError(
      "environmenttemplates.paas.gantry.dev \"" + GetString(next, "metadata.name") +
      "\" is forbidden: User \"" + t.caller + "\" cannot " + verb + " a template with driver \"" +
      (RunsOnHost(driver) ? driver : was) +
      "\": its commands run on the control-plane host as gantryd's workload user, so templates "
      "of the local and exec drivers need the org-admin role");
}

absl::Status ResourceService::SealDefaults(const Target& t, const std::set<std::string>& sensitive,
                                           const json::object* current, json::object& next) {
  std::string name = GetString(next, "metadata.name");
  std::vector<FieldCause> causes;
  model::SealDefaults(secrets_, t.kind->kind, t.ns, name, sensitive, current, next, &causes);
  if (!causes.empty()) return InvalidError(t.kind->kind, name, std::move(causes));
  model::RedactLastApplied(next, /*is_instance=*/false, sensitive);
  return absl::OkStatus();
}

absl::StatusOr<json::object> ResourceService::ResolveRef(const Target& t,
                                                         const std::string& owner_kind,
                                                         const std::string& owner_name,
                                                         const std::string& ref,
                                                         const std::string& ref_kind,
                                                         const std::string& ref_ns,
                                                         const std::string& ref_name) {
  auto obj = store_.Get(ref_kind, ref_ns, ref_name);
  if (!obj.ok()) {
    if (!absl::IsNotFound(obj.status())) return obj.status();
    return InvalidError(owner_kind, owner_name,
                        {{"spec." + ref + ".name",
                          Lower(ref_kind) + " \"" + ref_name + "\" not found in project " + ref_ns,
                          "FieldValueNotFound"}});
  }
  if (ref_ns != t.ns && !SharedWith(*obj, t.ns))
    return InvalidError(owner_kind, owner_name,
                        {{"spec." + ref,
                          Lower(ref_kind) + " \"" + ref_name + "\" of project " + ref_ns +
                              " is not shared with project " + t.ns,
                          "FieldValueForbidden"}});
  return obj;
}

absl::Status ResourceService::CheckAutoCreateCompute(const Target& t, const json::object& next) {
  const json::object& spec = ObjectAt(next, "spec");
  if (!spec.contains("autoCreateCompute")) return absl::OkStatus();
  std::string name = GetString(next, "metadata.name");
  std::string cns = GetString(spec, "autoCreateCompute.profileRef.namespace", t.ns);
  std::string cname = GetString(spec, "autoCreateCompute.profileRef.name");
  ASSIGN_OR_RETURN(json::object profile,
                   ResolveRef(t, kServiceProfile, name, "autoCreateCompute.profileRef", kProfile,
                              cns, cname));
  // The compute profile must be one the service can run on.
  model::LabelSelector selector = model::ComputeSelector(spec);
  if (!selector.Matches(model::LabelsOf(profile)))
    return InvalidError(kServiceProfile, name,
                        {{"spec.autoCreateCompute.profileRef",
                          "computeprofile \"" + cname + "\" does not match spec.computeSelector (" +
                              model::DescribeSelector(selector) + ")",
                          "FieldValueInvalid"}});
  // Its variables must be ones that compute profile accepts.
  std::string tns = GetString(profile, "spec.templateRef.namespace", cns);
  std::string tname = GetString(profile, "spec.templateRef.name");
  auto tmpl = store_.Get(kTemplate, tns, tname);
  if (!tmpl.ok()) return absl::OkStatus();  // the compute profile's own problem
  json::object vars = ObjectAt(spec, "autoCreateCompute.variables");
  model::NormalizeVariableValues(vars);
  ASSIGN_OR_RETURN(json::object plain_template,
                   model::UnsealDefaults(secrets_, kTemplate, tns, tname, ObjectAt(*tmpl, "spec")));
  ASSIGN_OR_RETURN(json::object plain_profile,
                   model::UnsealDefaults(secrets_, kProfile, cns, cname, ObjectAt(profile, "spec")));
  std::vector<FieldCause> causes;
  auto resolved = model::ResolveVariables(plain_template, plain_profile, vars, &causes);
  // A service profile is read by every project it is shared with: no secrets in it.
  for (const auto& kv : vars)
    if (auto it = resolved.find(std::string(kv.key())); it != resolved.end() && it->second.sensitive)
      causes.push_back({"spec.variables." + std::string(kv.key()),
                        "Forbidden: variable \"" + std::string(kv.key()) +
                            "\" is sensitive and a service profile is readable by every project "
                            "it is shared with; give it a default in compute profile " + cname +
                            " (sealed there) instead",
                        "FieldValueForbidden"});
  for (auto& c : causes)
    if (c.field.rfind("spec.variables", 0) == 0)
      c.field = "spec.autoCreateCompute.variables" + c.field.substr(sizeof "spec.variables" - 1);
  if (!causes.empty()) return InvalidError(kServiceProfile, name, std::move(causes));
  return absl::OkStatus();
}

absl::Status ResourceService::CheckComputeRef(const Target& t, const json::object* current,
                                              const json::object& profile_spec, json::object& next,
                                              std::vector<store::Write>* writes) {
  std::string name = GetString(next, "metadata.name");
  json::object& spec = model::EnsureObject(next, "spec");
  json::object& status = model::EnsureObject(next, "status");
  if (GetString(spec, "computeRef.name").empty()) {
    if (current && !GetString(*current, "spec.computeRef.name").empty()) {
      // Set by the server (auto-create) or before: a client leaving it out keeps it, as
      // Kubernetes keeps defaulted fields.
      spec["computeRef"] = ObjectAt(*current, "spec.computeRef");
      return absl::OkStatus();
    }
    if (!profile_spec.contains("autoCreateCompute"))
      return InvalidError(kService, name,
                          {{"spec.computeRef.name",
                            "Required value: name the compute instance the service runs on (the "
                            "service profile does not create one)",
                            "FieldValueRequired"}});
    return CreateComputeFor(t, profile_spec, next, writes);
  }
  std::string cname = GetString(spec, "computeRef.name");
  std::string cns = GetString(spec, "computeRef.namespace", t.ns);
  bool changed = !current || GetString(*current, "spec.computeRef.name") != cname ||
                 GetString(*current, "spec.computeRef.namespace", t.ns) != cns;
  if (!changed) return absl::OkStatus();
  if (current && model::WasEverDeployed(*current))
    return InvalidError(kService, name,
                        {{"spec.computeRef",
                          "Forbidden: the compute instance can only be changed before the service "
                          "is first deployed",
                          "FieldValueForbidden"}});
  if (current) status.erase("computeCreated");
  ASSIGN_OR_RETURN(json::object compute,
                   ResolveRef(t, kService, name, "computeRef", kInstance, cns, cname));
  // The service runs only on compute whose profile its computeSelector selects.
  model::LabelSelector selector = model::ComputeSelector(profile_spec);
  if (!selector.Empty()) {
    std::string cpns = GetString(compute, "spec.profileRef.namespace", cns);
    std::string cpname = GetString(compute, "spec.profileRef.name");
    auto cprofile = store_.Get(kProfile, cpns, cpname);
    std::map<std::string, std::string> labels;
    if (cprofile.ok()) labels = model::LabelsOf(*cprofile);
    if (!selector.Matches(labels))
      return InvalidError(kService, name,
                          {{"spec.computeRef",
                            "compute instance " + cname + " runs compute profile " + cpname +
                                ", which the service profile's computeSelector (" +
                                model::DescribeSelector(selector) + ") does not select",
                            "FieldValueInvalid"}});
  }
  return absl::OkStatus();
}

absl::Status ResourceService::CreateComputeFor(const Target& t, const json::object& profile_spec,
                                               json::object& next,
                                               std::vector<store::Write>* writes) {
  std::string name = GetString(next, "metadata.name");
  const std::string suffix = "-compute";
  if (name.size() + suffix.size() > 63)
    return InvalidError(kService, name,
                        {{"metadata.name",
                          "Too long: the service profile creates a compute instance named "
                          "NAME-compute, so the name may have at most 55 characters",
                          "FieldValueTooLong"}});
  std::string cname = name + suffix;
  if (store_.Get(kInstance, t.ns, cname).ok())
    return ConflictError("service instance " + name + " would create compute instance " + cname +
                             ", which already exists; name a compute instance in "
                             "spec.computeRef or choose another name",
                         "AlreadyExists");
  json::object& spec = model::EnsureObject(next, "spec");
  std::string display = GetString(spec, "displayName", name);
  json::object compute_spec{
      {"displayName", display + " (compute)"},
      {"description", "Created for service instance " + name + "; deleted with it."},
      {"profileRef", ObjectAt(profile_spec, "autoCreateCompute.profileRef")}};
  json::object vars = ObjectAt(profile_spec, "autoCreateCompute.variables");
  model::NormalizeVariableValues(vars);
  if (!vars.empty()) compute_spec["variables"] = std::move(vars);
  json::object compute{
      {"apiVersion", model::kApiVersion},
      {"kind", kInstance},
      {"metadata", json::object{{"name", cname}, {"namespace", t.ns}, {"uid", NewUid()},
                                {"generation", 1}, {"creationTimestamp", Now()},
                                {"labels", json::object{{kCreatedForLabel, name}}}}},
      {"spec", std::move(compute_spec)},
      {"status", json::object{{"phase", "NotDeployed"}, {"conditions", json::array()}}}};
  if (!t.caller.empty()) compute["status"].as_object()["createdBy"] = t.caller;
  Target ct = t;
  ct.kind = model::FindKindByName(kInstance);
  ct.name = cname;
  // The compute instance counts against instancesPerUser like one created directly.
  RETURN_IF_ERROR(CheckInstanceQuota(ct, writes));
  absl::Status checked = CheckReferences(ct, nullptr, compute, writes);
  if (!checked.ok()) {
    // Say that it is about the compute instance the profile would create.
    return InvalidError(kService, name,
                        {{"spec.profileRef",
                          "the service profile's autoCreateCompute cannot create compute "
                          "instance " + cname + ": " + std::string(checked.message())}});
  }
  writes->push_back({store::Write::Op::kCreate, kInstance, std::move(compute), 0, 0});
  spec["computeRef"] = json::object{{"name", cname}};
  model::EnsureObject(next, "status")["computeCreated"] = true;
  return absl::OkStatus();
}

absl::StatusOr<json::object> ResourceService::Create(const Target& t, std::string_view body) {
  if (t.kind->read_only)
    return MethodNotAllowedError(t.kind->plural + " are read-only: they are made by the server");
  ASSIGN_OR_RETURN(json::object incoming, model::ParseObjectJson(body));
  return CreateObject(t, std::move(incoming), nullptr);
}

absl::StatusOr<json::object> ResourceService::CreateObject(const Target& t, json::object incoming,
                                                           const ApplyInfo* apply) {
  Target target = t;
  target.name.clear();
  RETURN_IF_ERROR(ValidateIncoming(target, incoming, /*for_create=*/true));
  if (t.kind->namespaced) RETURN_IF_ERROR(CheckProjectExists(t.ns));

  json::object meta = ClientMetadata(incoming);
  meta["name"] = GetString(incoming, "metadata.name");
  if (t.kind->namespaced) meta["namespace"] = t.ns;
  meta["uid"] = NewUid();
  meta["generation"] = 1;
  meta["creationTimestamp"] = Now();
  json::object obj{{"apiVersion", model::kApiVersion}, {"kind", t.kind->kind},
                   {"metadata", std::move(meta)}};
  if (const json::value* spec = incoming.if_contains("spec"); spec && spec->is_object())
    obj["spec"] = *spec;
  else
    obj["spec"] = json::object();
  json::object status;
  if (t.kind->kind == kService) {
    status["phase"] = "NotDeployed";
    status["conditions"] = json::array();
    if (!t.caller.empty()) status["createdBy"] = t.caller;
  } else if (t.kind->kind == kInstance) {
    status["phase"] = "NotDeployed";
    status["conditions"] = json::array();
    if (!t.caller.empty()) status["createdBy"] = t.caller;
  } else if (t.kind->kind == kProject) {
    status["phase"] = "Active";
  }
  obj["status"] = std::move(status);
  RETURN_IF_ERROR(RecordManagers(t, nullptr, incoming, obj, apply));

  for (int attempt = 0;; ++attempt) {
    std::vector<store::Write> writes;
    writes.push_back(store::Write{store::Write::Op::kCreate, t.kind->kind, {}, 0, 0});
    json::object next = obj;
    if (t.kind->kind == kInstance) RETURN_IF_ERROR(CheckInstanceQuota(t, &writes));
    RETURN_IF_ERROR(CheckReferences(t, nullptr, next, &writes));
    RETURN_IF_ERROR(model::ForgetAbsentFields(next));  // e.g. spec.password, now a credential
    if (t.dry_run) return next;  // as Kubernetes: no resourceVersion, nothing stored
    writes[0].object = std::move(next);
    auto stored = store_.Commit(std::move(writes));
    if (stored.ok()) return std::move((*stored)[0]);
    // Another create in a project with a per-user quota won the race for the project's
    // resourceVersion (CheckInstanceQuota): count again.
    if (absl::IsAborted(stored.status()) && attempt < kMaxRetries) continue;
    return stored.status();
  }
}

absl::Status ResourceService::CheckInstanceQuota(const Target& t,
                                                 std::vector<store::Write>* writes) {
  if (t.caller.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(json::object project, store_.Get(kProject, "", t.ns));
  const json::value* q = FindPath(project, "spec.quota.instancesPerUser");
  if (!q || !q->is_int64()) return absl::OkStatus();
  ASSIGN_OR_RETURN(int64_t owned,
                   store_.Count(kInstance, t.ns, {{"status.createdBy", true, t.caller}}));
  if (owned >= q->get_int64())
    return ForbiddenError("exceeded quota: project " + t.ns + " allows " +
                          std::to_string(q->get_int64()) + " compute instances per user and " +
                          t.caller + " already has " + std::to_string(owned) +
                          "; delete one first");
  // The count holds only while nobody else creates one: the same commit rewrites the project
  // at the resourceVersion read here, so of two racing creates one gets a conflict and
  // counts again (the project's content does not change).
  int64_t rv = std::stoll(GetString(project, "metadata.resourceVersion", "0"));
  writes->push_back(store::Write{store::Write::Op::kUpdate, kProject, std::move(project), rv, 0});
  return absl::OkStatus();
}

absl::StatusOr<json::object> ResourceService::Get(const Target& t) {
  auto obj = store_.Get(t.kind->kind, t.ns, t.name);
  if (!obj.ok() && absl::IsNotFound(obj.status()) && t.kind->namespaced)
    RETURN_IF_ERROR(CheckProjectExists(t.ns));
  return obj;
}

absl::StatusOr<store::ListOptions> ResourceService::ListOptionsFor(const Target& t,
                                                                   const Query& q) {
  store::ListOptions opts;
  opts.kind = t.kind->kind;
  if (t.kind->namespaced && !t.all_namespaces) opts.ns = t.ns;
  if (!t.kind->namespaced) opts.ns = "";
  ASSIGN_OR_RETURN(opts.labels, model::ParseLabelSelector(QueryValue(q, "labelSelector")));
  std::vector<std::string> supported = {"metadata.name", "metadata.namespace"};
  for (const auto& f : t.kind->field_selectors) supported.push_back(f);
  ASSIGN_OR_RETURN(auto fields, model::ParseFieldSelector(QueryValue(q, "fieldSelector"), supported));
  for (auto& f : fields) opts.fields.push_back({f.field, f.equals, f.value});
  opts.search = QueryValue(q, "search");
  if (opts.search.size() > 256) return BadRequestError("search text is longer than 256 characters");
  ASSIGN_OR_RETURN(opts.limit, QueryNonNegative(q, "limit"));
  opts.continue_token = QueryValue(q, "continue");
  return opts;
}

absl::StatusOr<std::vector<json::object>> ResourceService::SharedInto(
    const Target& t, const store::ListOptions& opts) {
  std::vector<json::object> out;
  for (const char* mode : {"All", "Selected"}) {
    store::ListOptions o = opts;
    o.ns = std::nullopt;
    o.limit = 0;
    o.continue_token.clear();
    o.fields.push_back({"spec.sharing.mode", true, mode});
    ASSIGN_OR_RETURN(auto page, store_.List(o));
    for (auto& obj : page.items) {
      std::string owner = GetString(obj, "metadata.namespace");
      if (owner == t.ns || !SharedWith(obj, t.ns)) continue;
      model::EnsureObject(obj, "status")["sharedFrom"] = json::object{{"namespace", owner}};
      out.push_back(std::move(obj));
    }
  }
  // One order for every page: by project, then name.
  std::sort(out.begin(), out.end(), [](const json::object& a, const json::object& b) {
    return std::pair(GetString(a, "metadata.namespace"), GetString(a, "metadata.name")) <
           std::pair(GetString(b, "metadata.namespace"), GetString(b, "metadata.name"));
  });
  return out;
}

absl::StatusOr<json::object> ResourceService::List(const Target& t, const Query& q) {
  ASSIGN_OR_RETURN(store::ListOptions opts, ListOptionsFor(t, q));
  ASSIGN_OR_RETURN(VersionOptions version, ParseVersionOptions(q, /*watch=*/false));
  ASSIGN_OR_RETURN(ContinueToken token, DecodeContinue(opts.continue_token));
  opts.continue_token = token.position;
  if (t.kind->namespaced && !t.all_namespaces) RETURN_IF_ERROR(CheckProjectExists(t.ns));
  if (token.first_rv > 0) {
    // The events after the first page's resourceVersion must still be kept.
    if (auto kept = store_.EventsSince(token.first_rv, 1); absl::IsOutOfRange(kept.status()))
      return ExpiredError("The provided continue parameter is too old to display a consistent "
                          "list result. You can start a new list without the continue "
                          "parameter.");
  }
  const bool with_shared = t.kind->namespaced && !t.all_namespaces && Sharable(t.kind->kind);
  size_t shared_offset = 0;
  bool own_done = false;
  if (with_shared && opts.continue_token.rfind(kSharedContinue, 0) == 0) {
    std::string off = opts.continue_token.substr(sizeof kSharedContinue - 1);
    if (off.empty() || off.size() > 9 || off.find_first_not_of("0123456789") != std::string::npos)
      return BadRequestError("the continue token is not valid");
    shared_offset = std::stoul(off);
    own_done = true;
  }
  store::ListResult result;
  if (own_done) {
    result.resource_version = store_.CurrentResourceVersion();
  } else {
    ASSIGN_OR_RETURN(result, store_.List(opts));
  }
  json::array items;
  items.reserve(result.items.size());
  for (auto& o : result.items) items.push_back(std::move(o));
  std::string next_token = result.continue_token;
  if (with_shared && next_token.empty() &&
      (opts.limit == 0 || static_cast<int64_t>(items.size()) < opts.limit)) {
    ASSIGN_OR_RETURN(auto shared, SharedInto(t, opts));
    size_t room = opts.limit == 0 ? shared.size() : static_cast<size_t>(opts.limit) - items.size();
    size_t i = shared_offset;
    for (; i < shared.size() && room > 0; ++i, --room) items.push_back(std::move(shared[i]));
    if (i < shared.size()) next_token = kSharedContinue + std::to_string(i);
  }
  RETURN_IF_ERROR(CheckListVersion(version, result.resource_version));
  json::object meta{{"resourceVersion", std::to_string(result.resource_version)}};
  if (!next_token.empty())
    meta["continue"] = EncodeContinue(token.first_rv ? token.first_rv : result.resource_version,
                                      next_token);
  return json::object{{"apiVersion", model::kApiVersion},
                      {"kind", t.kind->ListKind()},
                      {"metadata", std::move(meta)},
                      {"items", std::move(items)}};
}

absl::StatusOr<json::object> ResourceService::UpdateFrom(const Target& t, json::object incoming,
                                                         int64_t expected_rv,
                                                         const ApplyInfo* apply) {
  RETURN_IF_ERROR(ValidateIncoming(t, incoming, /*for_create=*/false));
  std::string want_uid = GetString(incoming, "metadata.uid");
  for (int attempt = 0;; ++attempt) {
    ASSIGN_OR_RETURN(json::object current, Get(t));
    int64_t current_rv = std::stoll(GetString(current, "metadata.resourceVersion", "0"));
    if (!want_uid.empty() && want_uid != GetString(current, "metadata.uid"))
      return ConflictError("Precondition failed: UID in precondition: " + want_uid +
                           ", UID in object meta: " + GetString(current, "metadata.uid"));
    if (t.kind->read_only)
      return MethodNotAllowedError(t.kind->plural + " are read-only: they are made by the server");
    json::object next = current;
    json::object& meta = next["metadata"].as_object();
    json::object client_meta = ClientMetadata(incoming);
    for (const char* key : {"labels", "annotations"}) {
      if (client_meta.contains(key)) meta[key] = client_meta[key];
      else meta.erase(key);
    }
    const json::value* spec = incoming.if_contains("spec");
    next["spec"] = spec && spec->is_object() ? *spec : json::value(json::object());
    if (IsInstance(t.kind->kind)) {
      // A secret sent again in plaintext (or as shown, redacted) is the stored one: keep
      // the sealed value so that re-applying the same manifest changes nothing.
      const json::object& old_vars = ObjectAt(current, "spec.variables");
      json::value* new_vars = next["spec"].as_object().if_contains("variables");
      if (new_vars && new_vars->is_object()) {
        for (auto& kv : new_vars->get_object()) {
          auto old = old_vars.find(kv.key());
          if (old == old_vars.end() || !old->value().is_string() || !kv.value().is_string() ||
              !SecretBox::IsSealed(old->value().get_string()))
            continue;
          if (kv.value().get_string() == kRedacted) {
            kv.value() = old->value();
          } else if (auto plain = secrets_.Unseal(old->value().get_string(),
                                                  model::VariableContext(current, kv.key()));
                     plain.ok() && *plain == kv.value().get_string()) {
            kv.value() = old->value();
          }
        }
      }
      model::RedactLastApplied(next, /*is_instance=*/true, SensitiveNames(old_vars));
    } else if (HasSealedDefaults(t.kind->kind)) {
      // The same for sealed defaults, so that re-applying a template or profile is no change.
      std::set<std::string> sealed = model::SealedDefaultNames(ObjectAt(current, "spec"));
      std::vector<FieldCause> ignored;  // the full check runs in CheckReferences
      model::SealDefaults(secrets_, t.kind->kind, t.ns, t.name, sealed, &current, next, &ignored);
      model::RedactLastApplied(next, /*is_instance=*/false, sealed);
    }
    if (t.kind->kind == kService && !FindPath(next, "spec.computeRef") &&
        FindPath(current, "spec.computeRef")) {
      // Defaulted by the server (auto-create compute): a manifest without it changes nothing.
      next["spec"].as_object()["computeRef"] = ObjectAt(current, "spec.computeRef");
    }
    RETURN_IF_ERROR(RecordManagers(t, &current, incoming, next, apply));
    bool spec_changed = ObjectAt(current, "spec") != ObjectAt(next, "spec");
    // The client's precondition holds for no-op writes too (as in Kubernetes, where the
    // resourceVersion is checked before the no-op shortcut).
    if (expected_rv != 0 && expected_rv != current_rv)
      return store::ObjectModified(t.kind->kind, t.name);
    if (next == current) return current;  // nothing to change: no new resourceVersion
    if (IsInstance(t.kind->kind))
      RETURN_IF_ERROR(model::Decide(model::Action::kUpdate, current).status());
    if (spec_changed) meta["generation"] = GetInt(current, "metadata.generation", 1) + 1;

    std::vector<store::Write> writes;
    writes.push_back(store::Write{store::Write::Op::kUpdate, t.kind->kind, {},
                                  expected_rv ? expected_rv : current_rv, 0});
    RETURN_IF_ERROR(CheckReferences(t, &current, next, &writes));
    RETURN_IF_ERROR(model::ForgetAbsentFields(next));  // e.g. spec.password, now a credential
    writes[0].object = std::move(next);
    if (t.dry_run) return std::move(writes[0].object);  // resourceVersion stays the current one
    auto stored = store_.Commit(std::move(writes));
    if (stored.ok()) return std::move((*stored)[0]);
    // A write between our read and commit: retry from the new state unless the client
    // asked for a precondition (then the conflict is its answer), as Kubernetes does.
    if (expected_rv == 0 && absl::IsAborted(stored.status()) && attempt < kMaxRetries)
      continue;
    return stored.status();
  }
}

absl::StatusOr<json::object> ResourceService::Replace(const Target& t, std::string_view body) {
  ASSIGN_OR_RETURN(json::object incoming, model::ParseObjectJson(body));
  std::string rv = GetString(incoming, "metadata.resourceVersion");
  int64_t expected = 0;
  if (!rv.empty()) {
    if (rv.size() > 18 || rv.find_first_not_of("0123456789") != std::string::npos)
      return InvalidError(t.kind->kind, t.name,
                          {{"metadata.resourceVersion", "Invalid value: \"" + rv +
                                                            "\": must be a resourceVersion "
                                                            "returned by the server"}});
    expected = std::stoll(rv);
  }
  return UpdateFrom(t, std::move(incoming), expected);
}

absl::StatusOr<json::object> ResourceService::MergePatch(const Target& t, std::string_view body) {
  ASSIGN_OR_RETURN(json::object patch, model::ParseObjectJson(body));
  std::string rv = GetString(patch, "metadata.resourceVersion");
  for (int attempt = 0;; ++attempt) {
    ASSIGN_OR_RETURN(json::object current, Get(t));
    json::value merged = current;
    merged.as_object().erase("status");
    model::ApplyMergePatch(merged, patch);
    if (!merged.is_object()) return BadRequestError("the patch must be a JSON object");
    {
      // Check the result's shape before touching its metadata: a patch that makes metadata
      // a number must be refused, not "repaired" into an empty object.
      std::vector<FieldCause> causes;
      model::CheckSchema(*t.kind, merged.as_object(), &causes);
      if (!causes.empty()) return InvalidError(t.kind->kind, t.name, std::move(causes));
    }
    // Server-owned metadata in the result must not be taken as the client's precondition
    // unless the patch itself set it.
    json::object& meta = model::EnsureObject(merged.as_object(), "metadata");
    int64_t expected = std::stoll(GetString(current, "metadata.resourceVersion", "0"));
    if (!rv.empty()) {
      if (rv.size() > 18 || rv.find_first_not_of("0123456789") != std::string::npos)
        return BadRequestError("metadata.resourceVersion \"" + rv + "\" is not valid");
      expected = std::stoll(rv);
    }
    meta.erase("resourceVersion");
    auto out = UpdateFrom(t, std::move(merged.as_object()), expected);
    if (out.ok() || !rv.empty() || !absl::IsAborted(out.status()) || attempt >= kMaxRetries)
      return out;
  }
}

absl::Status ResourceService::RecordManagers(const Target& t, const json::object* current,
                                             const json::object& incoming, json::object& next,
                                             const ApplyInfo* apply) {
  // The managers to start from: those the client sent, when it sent others than the stored
  // ones (Kubernetes lets a write replace them; [{}] resets them), else the stored ones.
  const json::value* live = current ? FindPath(*current, "metadata.managedFields") : nullptr;
  const json::value* sent = FindPath(incoming, "metadata.managedFields");
  bool use_sent = !apply && sent && sent->is_array() && !sent->get_array().empty() &&
                  (!live || *sent != *live);
  model::Managers managers;
  if (use_sent || live) {
    auto decoded = model::DecodeManagedFields(use_sent ? *sent : *live);
    if (!decoded.ok()) {
      // "managedFields[1].fieldsV1: what is wrong" -> a cause on that field.
      std::string msg(decoded.status().message());
      size_t colon = msg.find(": ");
      return InvalidError(t.kind->kind, GetString(next, "metadata.name"),
                          {{"metadata." + msg.substr(0, colon),
                            colon == std::string::npos ? msg : msg.substr(colon + 2)}});
    }
    managers = *std::move(decoded);
  }
  json::object before = current ? model::TrackedFields(*current) : json::object();
  if (apply && current && !live && !before.empty())
    // An object written before field tracking: its fields belong to a stand-in manager.
    managers.push_back({model::kBeforeFirstApply, model::kOperationUpdate, model::kApiVersion,
                        GetString(*current, "metadata.creationTimestamp"),
                        model::LeafSet(before)});
  model::FieldChange change = model::CompareFields(before, model::TrackedFields(next));
  if (apply) {
    RETURN_IF_ERROR(model::RecordApply(managers, change, apply->fields, t.field_manager,
                                       model::kApiVersion, Now(), apply->force));
  } else {
    model::RecordUpdate(managers, change, t.field_manager, model::kApiVersion, Now());
  }
  json::object& meta = model::EnsureObject(next, "metadata");
  json::array encoded = model::EncodeManagedFields(managers);
  if (encoded.empty()) meta.erase("managedFields");
  else meta["managedFields"] = std::move(encoded);
  return absl::OkStatus();
}

absl::StatusOr<json::object> ResourceService::JsonPatch(const Target& t, std::string_view body) {
  ASSIGN_OR_RETURN(json::value patch, model::ParseJsonValue(body));
  for (int attempt = 0;; ++attempt) {
    ASSIGN_OR_RETURN(json::object current, Get(t));
    json::value patched = current;
    RETURN_IF_ERROR(model::ApplyJsonPatch(patched, patch));
    if (!patched.is_object()) return UnprocessableError("the JSON patch must leave an object");
    json::object& obj = patched.as_object();
    obj.erase("status");  // server-owned: what a patch does to it is ignored
    {
      std::vector<FieldCause> causes;
      model::CheckSchema(*t.kind, obj, &causes);
      if (!causes.empty()) return InvalidError(t.kind->kind, t.name, std::move(causes));
    }
    // A resourceVersion the patch changed (after a test of the old one, say) is the
    // client's precondition; otherwise the one read here, retried on a conflict.
    std::string current_rv = GetString(current, "metadata.resourceVersion", "0");
    std::string rv = GetString(obj, "metadata.resourceVersion");
    bool precondition = !rv.empty() && rv != current_rv;
    if (precondition && (rv.size() > 18 || rv.find_first_not_of("0123456789") != std::string::npos))
      return BadRequestError("metadata.resourceVersion \"" + rv + "\" is not valid");
    int64_t expected = std::stoll(precondition ? rv : current_rv);
    model::EnsureObject(obj, "metadata").erase("resourceVersion");
    auto out = UpdateFrom(t, std::move(obj), expected);
    if (out.ok() || precondition || !absl::IsAborted(out.status()) ||
        !CausesOf(out.status()).empty() || attempt >= kMaxRetries)
      return out;
  }
}

absl::StatusOr<json::object> ResourceService::Apply(const Target& t, std::string_view body,
                                                    bool force, bool* created) {
  *created = false;
  if (t.kind->read_only)
    return MethodNotAllowedError(t.kind->plural + " are read-only: they are made by the server");
  json::object config;
  size_t first = body.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && body[first] == '{') {
    ASSIGN_OR_RETURN(config, model::ParseObjectJson(body));
  } else {
    auto docs = client::YamlToJsonObjects(body);
    if (!docs.ok())
      return BadRequestError("the apply configuration is not valid YAML or JSON: " +
                             std::string(docs.status().message()));
    if (docs->size() != 1)
      return BadRequestError("an apply request takes one object, not " +
                             std::to_string(docs->size()));
    config = std::move((*docs)[0]);
  }
  // Kubernetes requires both, so that the configuration says what it is.
  if (GetString(config, "apiVersion").empty() || GetString(config, "kind").empty())
    return BadRequestError("an apply configuration must set apiVersion and kind");
  if (FindPath(config, "metadata.managedFields"))
    return BadRequestError("metadata.managedFields must be nil in an apply configuration");
  config.erase("status");  // server-owned: never applied
  // The name on the URL is the object's (also when the apply creates it).
  if (std::string name = GetString(config, "metadata.name"); name.empty()) {
    model::EnsureObject(config, "metadata")["name"] = t.name;
  } else if (name != t.name) {
    return BadRequestError("the name of the object (" + name +
                           ") does not match the name on the URL (" + t.name + ")");
  }
  ApplyInfo info{model::LeafSet(model::TrackedFields(config)), force};
  for (int attempt = 0;; ++attempt) {
    auto current = Get(t);
    if (!current.ok() && absl::IsNotFound(current.status())) {
      *created = true;
      auto out = CreateObject(t, config, &info);
      // Created by someone else meanwhile: apply to theirs.
      if (!out.ok() && absl::IsAlreadyExists(out.status()) && attempt < kMaxRetries) continue;
      return out;
    }
    if (!current.ok()) return current.status();
    *created = false;
    json::object merged = model::MergeApplied(*current, config);
    // The names the configuration gives are checked against the URL like any write's.
    json::object& meta = model::EnsureObject(merged, "metadata");
    for (const char* key : {"name", "namespace"})
      if (const json::value* v = FindPath(config, std::string("metadata.") + key))
        meta[key] = *v;
    for (const char* key : {"apiVersion", "kind"}) merged[key] = config[key];
    ASSIGN_OR_RETURN(model::Managers managers, model::ManagersOf(*current));
    model::RemoveFields(merged, model::FieldsToPrune(managers, t.field_manager, info.fields));
    int64_t expected = std::stoll(GetString(*current, "metadata.resourceVersion", "0"));
    meta.erase("resourceVersion");
    auto out = UpdateFrom(t, std::move(merged), expected, &info);
    // A write between our read and the commit: apply again to the new state. Conflicts
    // with other managers carry causes and are the answer.
    if (out.ok() || !absl::IsAborted(out.status()) || !CausesOf(out.status()).empty() ||
        attempt >= kMaxRetries)
      return out;
  }
}

absl::StatusOr<json::object> ResourceService::Delete(const Target& t, std::string_view body,
                                                     const Query& query, bool* accepted) {
  *accepted = false;
  if (t.kind->read_only)
    return MethodNotAllowedError(t.kind->plural + " are read-only: they are made by the server");
  int64_t expected_rv = 0;
  std::string want_uid;
  bool dry_run = t.dry_run;
  // propagationPolicy (DeleteOptions or query, as Kubernetes takes it): Foreground deletes a
  // compute instance's services first; Background and Orphan leave them, so a compute
  // instance with services is refused.
  std::string propagation = QueryValue(query, "propagationPolicy");
  if (!body.empty()) {
    // DeleteOptions: preconditions and propagationPolicy matter here.
    ASSIGN_OR_RETURN(json::object opts, model::ParseObjectJson(body));
    if (std::string p = GetString(opts, "propagationPolicy"); !p.empty()) propagation = p;
    // kubectl sends a delete's dry run in the DeleteOptions body, not the query.
    if (const json::value* d = opts.if_contains("dryRun"); d && d->is_array())
      for (const auto& v : d->get_array()) {
        if (!v.is_string() || v.get_string() != "All")
          return BadRequestError("dryRun must be [\"All\"]");
        dry_run = true;
      }
    want_uid = GetString(opts, "preconditions.uid");
    std::string rv = GetString(opts, "preconditions.resourceVersion");
    if (!rv.empty()) {
      if (rv.size() > 18 || rv.find_first_not_of("0123456789") != std::string::npos)
        return BadRequestError("preconditions.resourceVersion \"" + rv + "\" is not valid");
      expected_rv = std::stoll(rv);
    }
  }
  if (!propagation.empty() && propagation != "Foreground" && propagation != "Background" &&
      propagation != "Orphan")
    return BadRequestError("propagationPolicy must be Foreground, Background or Orphan, not \"" +
                           propagation.substr(0, 32) + "\"");
  ASSIGN_OR_RETURN(json::object current, Get(t));
  if (!want_uid.empty() && want_uid != GetString(current, "metadata.uid"))
    return ConflictError("Precondition failed: UID in precondition: " + want_uid +
                         ", UID in object meta: " + GetString(current, "metadata.uid"));
  const std::string& kind = t.kind->kind;
  auto users = [&](const std::string& user_kind, const std::string& ref_field,
                   std::optional<std::string> ns) -> absl::StatusOr<std::vector<std::string>> {
    store::ListOptions o;
    o.kind = user_kind;
    o.ns = ns;
    o.fields = {{ref_field, true, t.name}};
    ASSIGN_OR_RETURN(auto page, store_.List(o));
    std::vector<std::string> names;
    std::string ref_ns_field = ref_field.substr(0, ref_field.rfind('.')) + ".namespace";
    for (const auto& o2 : page.items) {
      std::string item_ns = GetString(o2, "metadata.namespace");
      if (GetString(o2, ref_ns_field, item_ns) == t.ns)
        names.push_back(item_ns == t.ns ? GetString(o2, "metadata.name")
                                        : item_ns + "/" + GetString(o2, "metadata.name"));
    }
    return names;
  };
  auto list_names = [](const std::vector<std::string>& names) {
    std::string out;
    for (size_t i = 0; i < names.size() && i < 5; ++i) out += (i ? ", " : "") + names[i];
    if (names.size() > 5) out += ", and " + std::to_string(names.size() - 5) + " more";
    return out;
  };
  if (kind == kInstance || kind == kService) {
    if (expected_rv && expected_rv != std::stoll(GetString(current, "metadata.resourceVersion", "0")))
      return ConflictError("Precondition failed: resourceVersion in precondition: " +
                           std::to_string(expected_rv) + ", resourceVersion in object meta: " +
                           GetString(current, "metadata.resourceVersion"));
    if (dry_run) {
      // The lifecycle rule only: what a teardown or cascade would do is not simulated.
      RETURN_IF_ERROR(model::Decide(model::Action::kDelete, current).status());
      return current;
    }
    if (!delete_instance_)
      return ConflictError("instance " + t.name + " cannot be deleted: no deploy engine is "
                           "running",
                           "EngineUnavailable");
    return delete_instance_(t, propagation == "Foreground", accepted);
  } else if (kind == kProfile || kind == kServiceProfile) {
    bool service = kind == kServiceProfile;
    ASSIGN_OR_RETURN(auto names, users(service ? kService : kInstance, "spec.profileRef.name",
                                       std::nullopt));
    if (!names.empty())
      return ConflictError(Lower(kind) + " " + t.name + " is used by " +
                               std::to_string(names.size()) +
                               (service ? " service instance" : " compute instance") +
                               (names.size() == 1 ? "" : "s") + " (" + list_names(names) +
                               "); delete them first",
                           "InUse");
    if (!service) {
      ASSIGN_OR_RETURN(auto profiles, users(kServiceProfile, "spec.autoCreateCompute.profileRef.name",
                                            std::nullopt));
      if (!profiles.empty())
        return ConflictError("computeprofile " + t.name + " is created by " +
                                 std::to_string(profiles.size()) + " service profile" +
                                 (profiles.size() == 1 ? "" : "s") + " (" +
                                 list_names(profiles) + ", autoCreateCompute); change them first",
                             "InUse");
    }
  } else if (kind == kTemplate) {
    ASSIGN_OR_RETURN(auto names, users(kProfile, "spec.templateRef.name", std::nullopt));
    ASSIGN_OR_RETURN(auto services, users(kServiceProfile, "spec.templateRef.name", std::nullopt));
    auto counted = [&](const std::vector<std::string>& n, const std::string& what) {
      return std::to_string(n.size()) + " " + what + (n.size() == 1 ? "" : "s") + " (" +
             list_names(n) + ")";
    };
    std::string used;
    if (!names.empty()) used = counted(names, "compute profile");
    if (!services.empty()) used += (used.empty() ? "" : " and ") + counted(services, "service profile");
    if (!used.empty())
      return ConflictError("environmenttemplate " + t.name + " is used by " + used +
                               "; delete them first",
                           "InUse");
  } else if (kind == kUser) {
    if (GetString(current, "spec.orgRole") == "org-admin" &&
        !model::GetBool(current, "spec.disabled")) {
      ASSIGN_OR_RETURN(int64_t admins, EnabledOrgAdmins());
      if (admins <= 1)
        return ConflictError("user " + t.name + " is the last enabled org-admin; make another "
                             "user org-admin first",
                             "LastOrgAdmin");
    }
    std::vector<store::Write> writes;
    writes.push_back({store::Write::Op::kDelete, kind, current,
                      expected_rv ? expected_rv
                                  : std::stoll(GetString(current, "metadata.resourceVersion", "0")),
                      0});
    if (credentials_) {
      ASSIGN_OR_RETURN(auto forget, credentials_->ForgetWrites(t.name));
      for (auto& w : forget) writes.push_back(std::move(w));
    }
    if (dry_run) return current;
    ASSIGN_OR_RETURN(auto stored, store_.Commit(std::move(writes)));
    return std::move(stored[0]);
  } else if (kind == kProject) {
    std::string contents;
    for (const auto& k : model::AllKinds()) {
      if (!k.namespaced) continue;
      ASSIGN_OR_RETURN(int64_t n, store_.Count(k.kind, t.name, {}));
      if (n > 0) contents += (contents.empty() ? "" : ", ") + std::to_string(n) + " " + k.plural;
    }
    if (!contents.empty())
      return ConflictError("project " + t.name + " is not empty (" + contents +
                               "); delete what is in it first",
                           "ProjectNotEmpty");
  }
  json::object key{{"metadata", json::object{{"name", t.name}, {"namespace", t.kind->namespaced ? t.ns : ""}}}};
  std::vector<store::Write> writes;
  writes.push_back(store::Write{store::Write::Op::kDelete, kind, std::move(key),
                                expected_rv ? expected_rv
                                            : std::stoll(GetString(current,
                                                                   "metadata.resourceVersion", "0")),
                                0});
  if (dry_run) return current;
  ASSIGN_OR_RETURN(auto stored, store_.Commit(std::move(writes)));
  return std::move(stored[0]);
}

absl::StatusOr<json::object> ResourceService::ListRevisions(const Target& t) {
  if (!t.kind->versioned)
    return NotFoundError(t.kind->plural + " have no revisions");
  RETURN_IF_ERROR(Get(t).status());
  ASSIGN_OR_RETURN(auto revs, store_.ListRevisions(t.kind->kind, t.ns, t.name));
  json::array items;
  for (auto& r : revs)
    items.push_back(json::object{
        {"apiVersion", model::kApiVersion},
        {"kind", t.kind->kind + "Revision"},
        {"metadata", json::object{{"name", t.name + "-" + std::to_string(r.revision)},
                                  {"namespace", t.ns},
                                  {"creationTimestamp", r.created}}},
        {"revision", r.revision},
        {"spec", std::move(r.spec)}});
  return json::object{{"apiVersion", model::kApiVersion},
                      {"kind", t.kind->kind + "RevisionList"},
                      {"metadata", json::object{{"resourceVersion",
                                                 std::to_string(store_.CurrentResourceVersion())}}},
                      {"items", std::move(items)}};
}

absl::StatusOr<json::object> ResourceService::GetRevision(const Target& t,
                                                          std::string_view revision) {
  if (!t.kind->versioned) return NotFoundError(t.kind->plural + " have no revisions");
  std::string rev(revision);
  if (rev.empty() || rev.size() > 18 || rev.find_first_not_of("0123456789") != std::string::npos)
    return NotFoundError("revision \"" + rev + "\" of " + Resource(*t.kind) + " \"" + t.name +
                         "\" not found");
  RETURN_IF_ERROR(Get(t).status());
  ASSIGN_OR_RETURN(auto r, store_.GetRevision(t.kind->kind, t.ns, t.name, std::stoll(rev)));
  return json::object{{"apiVersion", model::kApiVersion},
                      {"kind", t.kind->kind + "Revision"},
                      {"metadata", json::object{{"name", t.name + "-" + rev},
                                                {"namespace", t.ns},
                                                {"creationTimestamp", r.created}}},
                      {"revision", r.revision},
                      {"spec", std::move(r.spec)}};
}

absl::StatusOr<std::shared_ptr<LineStream>> ResourceService::Watch(const Target& t,
                                                                   const Query& q,
                                                                   Visibility visible) {
  ASSIGN_OR_RETURN(store::ListOptions opts, ListOptionsFor(t, q));
  if (t.kind->namespaced && !t.all_namespaces) RETURN_IF_ERROR(CheckProjectExists(t.ns));
  ASSIGN_OR_RETURN(int64_t timeout, QueryNonNegative(q, "timeoutSeconds"));
  ASSIGN_OR_RETURN(VersionOptions version, ParseVersionOptions(q, /*watch=*/true));
  const int64_t rv = version.resource_version.value_or(0);
  // Kubernetes' rule: without a resourceVersion (or with 0) the current objects come first,
  // unless sendInitialEvents=false; sendInitialEvents=true sends them whatever the version.
  const bool initial = version.send_initial_events.value_or(rv == 0);

  WatchFilter filter{opts.kind, opts.ns, opts.labels, opts.fields, opts.search, visible};
  if (!t.name.empty()) filter.fields.push_back({"metadata.name", true, t.name});
  auto stream = std::make_shared<LineStream>();
  if (timeout > 0) stream->timeout = std::chrono::seconds(std::min<int64_t>(timeout, 86400));
  auto sub = hub_.Subscribe(filter, stream, version.allow_bookmarks);
  // The subscription owns the stream; the stream must not own the subscription back.
  std::weak_ptr<WatchHub::Subscription> weak_sub = sub;
  stream->SetOnCancel([this, weak_sub] {
    if (auto s = weak_sub.lock()) hub_.Unsubscribe(s);
  });

  int64_t after = 0;
  if (initial) {
    // Current state first, as ADDED events, then changes after the list's resourceVersion.
    store::ListOptions all = opts;
    all.limit = 0;
    all.continue_token.clear();
    if (!t.name.empty()) all.fields.push_back({"metadata.name", true, t.name});
    auto list = store_.List(all);
    if (!list.ok()) {
      hub_.Unsubscribe(sub);
      return list.status();
    }
    for (auto it = list->items.rbegin(); it != list->items.rend(); ++it)
      if (!visible || visible(*it)) stream->Push(WatchLine("ADDED", *it));
    after = list->resource_version;
    if (version.send_initial_events.value_or(false))
      stream->Push(BookmarkLine(t.kind->kind, after, /*initial_events_end=*/true));
  } else if (rv == 0) {
    after = store_.CurrentResourceVersion();  // sendInitialEvents=false: changes from now on
  } else {
    after = rv;
    while (true) {
      auto events = store_.EventsSince(after, 1000);
      if (!events.ok()) {
        if (absl::IsOutOfRange(events.status())) {
          // Kubernetes answers an expired watch with 200 and an ERROR event carrying 410.
          json::object status{{"kind", "Status"}, {"apiVersion", "v1"},
                              {"status", "Failure"}, {"reason", "Expired"}, {"code", 410},
                              {"message", std::string(events.status().message())},
                              {"metadata", json::object()}};
          stream->Push(json::serialize(json::object{{"type", "ERROR"}, {"object", status}}));
          stream->Close();
          hub_.Unsubscribe(sub);
          return stream;
        }
        hub_.Unsubscribe(sub);
        return events.status();
      }
      for (const auto& e : *events) {
        if (filter.Matches(e)) stream->Push(WatchLine(e.type, e.object));
        after = e.resource_version;
      }
      if (events->size() < 1000) break;
    }
  }
  hub_.Start(sub, after);
  return stream;
}

absl::StatusOr<json::object> ResourceService::Upgrade(const Target& t) {
  for (int attempt = 0;; ++attempt) {
    ASSIGN_OR_RETURN(json::object current, Get(t));
    ASSIGN_OR_RETURN(model::Effect effect, model::Decide(model::Action::kUpgrade, current));
    (void)effect;
    std::string pns = GetString(current, "spec.profileRef.namespace", t.ns);
    std::string pname = GetString(current, "spec.profileRef.name");
    const std::string kind = t.kind->kind;
    auto profile = store_.Get(ProfileOf(kind), pns, pname);
    if (!profile.ok()) {
      if (absl::IsNotFound(profile.status()))
        return ConflictError(std::string(kind == kService ? "service" : "compute") + " profile " +
                                 pname + " of instance " + t.name +
                                 " no longer exists; there is nothing to upgrade to",
                             "ProfileGone");
      return profile.status();
    }
    int64_t latest = GetInt(*profile, "status.revision", 1);
    int64_t latest_t = GetInt(*profile, "status.templateRevision", 1);
    if (latest == GetInt(current, "status.profileRevision", 1) &&
        latest_t == GetInt(current, "status.templateRevision", 1))
      return current;  // already on the latest revision
    const json::object& profile_spec = ObjectAt(*profile, "spec");
    std::string tns = GetString(profile_spec, "templateRef.namespace", pns);
    ASSIGN_OR_RETURN(auto trev, store_.GetRevision(kTemplate, tns,
                                                   GetString(profile_spec, "templateRef.name"),
                                                   latest_t));
    json::object next = current;
    json::object& spec = model::EnsureObject(next, "spec");
    json::object variables = ObjectAt(spec, "variables");
    ASSIGN_OR_RETURN(json::object plain_profile,
                     model::UnsealDefaults(secrets_, ProfileOf(kind), pns, pname, profile_spec));
    ASSIGN_OR_RETURN(json::object plain_template,
                     model::UnsealDefaults(secrets_, kTemplate, tns,
                                           GetString(profile_spec, "templateRef.name"),
                                           trev.spec));
    RETURN_IF_ERROR(
        CheckAndSealVariables(next, plain_template, plain_profile, &current, variables));
    if (!variables.empty()) spec["variables"] = std::move(variables);
    json::object& status = model::EnsureObject(next, "status");
    status["profileRevision"] = latest;
    status["templateRevision"] = latest_t;
    // The desired state changed: what is deployed is now behind (deployedGeneration).
    model::EnsureObject(next, "metadata")["generation"] = GetInt(current, "metadata.generation", 1) + 1;
    std::vector<store::Write> writes;
    writes.push_back({store::Write::Op::kUpdate, kind, std::move(next),
                      std::stoll(GetString(current, "metadata.resourceVersion", "0")), 0});
    auto stored = store_.Commit(std::move(writes));
    if (stored.ok()) return std::move((*stored)[0]);
    if (absl::IsAborted(stored.status()) && attempt < kMaxRetries) continue;
    return stored.status();
  }
}

absl::StatusOr<int64_t> ResourceService::EnabledOrgAdmins() {
  store::ListOptions o;
  o.kind = kUser;
  o.ns = "";
  o.fields = {{"spec.orgRole", true, "org-admin"}};
  ASSIGN_OR_RETURN(auto page, store_.List(o));
  int64_t admins = 0;
  for (const auto& u : page.items)
    if (!model::GetBool(u, "spec.disabled")) ++admins;
  return admins;
}

absl::Status ResourceService::CheckUserWrite(const Target& t, const json::object* current,
                                             json::object& next,
                                             std::vector<store::Write>* writes) {
  std::string name = GetString(next, "metadata.name");
  json::object& spec = model::EnsureObject(next, "spec");
  // The password goes to the credential store, hashed; it never stays in the User, and
  // neither does the current password that a change of one's own password needs.
  std::string current_password = GetString(spec, "currentPassword");
  bool has_current = spec.erase("currentPassword") > 0;
  if (const json::value* pw = spec.if_contains("password")) {
    std::string password = pw->is_string() ? std::string(pw->get_string()) : "";
    spec.erase("password");
    if (!credentials_) return BadRequestError("this server does not keep passwords");
    if (current) {
      ASSIGN_OR_RETURN(auto change, credentials_->PasswordChangeWrites(
                                        {name, password, current_password, t.caller,
                                         t.caller_session, t.caller_source}));
      for (auto& w : change) writes->push_back(std::move(w));
    } else {
      auto write = credentials_->PasswordWrite(name, password);
      if (!write.ok())
        return InvalidError(kUser, name,
                            {{"spec.password", std::string(write.status().message())}});
      writes->push_back(*std::move(write));
    }
  } else if (has_current) {
    return InvalidError(kUser, name, {{"spec.currentPassword",
                                       "Forbidden: only with spec.password, to change it",
                                       "FieldValueForbidden"}});
  }
  std::string old_role = current ? GetString(*current, "spec.orgRole") : "";
  std::string new_role = GetString(spec, "orgRole");
  bool old_disabled = current && model::GetBool(*current, "spec.disabled");
  bool new_disabled = model::GetBool(next, "spec.disabled");
  if ((old_role != new_role || old_disabled != new_disabled) && !t.caller_is_org_admin)
    return ForbiddenError("users.paas.gantry.dev is forbidden: only an org-admin may change "
                          "spec.orgRole or spec.disabled");
  if (current && old_role == "org-admin" && !old_disabled &&
      (new_role != "org-admin" || new_disabled)) {
    ASSIGN_OR_RETURN(int64_t admins, EnabledOrgAdmins());
    if (admins <= 1)
      return ConflictError("user " + name + " is the last enabled org-admin; make another user "
                           "org-admin first",
                           "LastOrgAdmin");
  }
  return absl::OkStatus();
}

absl::Status ResourceService::EnsureProject(const std::string& name,
                                            const std::string& display_name) {
  auto existing = store_.Get(kProject, "", name);
  if (existing.ok()) return absl::OkStatus();
  if (!absl::IsNotFound(existing.status())) return existing.status();
  Target t;  // cluster-scoped, no caller: the server itself creates the project
  t.kind = model::FindKindByName(kProject);
  json::object obj{{"metadata", json::object{{"name", name}}},
                   {"spec", json::object{{"displayName", display_name}}}};
  auto created = Create(t, json::serialize(obj));
  if (!created.ok() && !absl::IsAlreadyExists(created.status())) return created.status();
  return absl::OkStatus();
}

}  // namespace gantry::api
