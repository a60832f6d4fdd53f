#include "api/strategy_support.h"

#include "absl/strings/ascii.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "model/codec.h"
#include "model/objects.h"
#include "model/projects.h"
#include "model/sealed_fields.h"
#include "model/validation.h"

namespace gantry::api {

namespace json = boost::json;

const json::object& ObjectAt(const json::object& obj, std::string_view path) {
  static const json::object kEmpty;
  const json::value* v = model::FindPath(obj, path);
  return v && v->is_object() ? v->get_object() : kEmpty;
}

absl::Status ProjectNotFound(const std::string& ns) {
  return NotFoundError("project \"" + ns + "\" not found");
}

absl::StatusOr<json::object> GetProject(const StrategyContext& ctx, const std::string& ns) {
  auto project = ctx.store.Get(kProjectKind, "", ns);
  if (absl::IsNotFound(project.status())) return ProjectNotFound(ns);
  return project;
}

absl::StatusOr<json::object> ResolveRef(const StrategyContext& ctx, const Target& t,
                                        const std::string& owner_kind,
                                        const std::string& owner_name, const std::string& ref,
                                        const std::string& ref_kind, const std::string& ref_ns,
                                        const std::string& ref_name) {
  auto obj = ctx.store.Get(ref_kind, ref_ns, ref_name);
  if (!obj.ok()) {
    if (!absl::IsNotFound(obj.status())) return obj.status();
    return InvalidError(
        owner_kind, owner_name,
        {{"spec." + ref + ".name",
          absl::AsciiStrToLower(ref_kind) + " \"" + ref_name + "\" not found in project " + ref_ns,
          "FieldValueNotFound"}});
  }
  if (ref_ns != t.ns && !model::SharedWith(*obj, t.ns))
    return InvalidError(owner_kind, owner_name,
                        {{"spec." + ref,
                          absl::AsciiStrToLower(ref_kind) + " \"" + ref_name + "\" of project " +
                              ref_ns + " is not shared with project " + t.ns,
                          "FieldValueForbidden"}});
  return obj;
}

absl::Status SealDefaults(const StrategyContext& ctx, const Target& t,
                          const std::set<std::string>& sensitive, const json::object* current,
                          json::object& next) {
  ASSIGN_OR_RETURN(const model::ObjectMeta meta, model::DecodeObjectMeta(next));
  const std::string& name = meta.name;
  std::vector<FieldCause> causes;
  model::SealDefaults(ctx.secrets, t.kind->kind, t.ns, name, sensitive, current, next, &causes);
  if (!causes.empty()) return InvalidError(t.kind->kind, name, std::move(causes));
  model::RedactLastApplied(next, /*is_instance=*/false, sensitive);
  return absl::OkStatus();
}

void KeepSealedDefaults(const StrategyContext& ctx, const Target& t, const json::object& current,
                        json::object& next) {
  std::set<std::string> sealed = model::SealedDefaultNames(ObjectAt(current, "spec"));
  std::vector<FieldCause> ignored;  // the full check runs in Admit
  model::SealDefaults(ctx.secrets, t.kind->kind, t.ns, t.name, sealed, &current, next, &ignored);
  model::RedactLastApplied(next, /*is_instance=*/false, sealed);
}

bool RecordRevision(const StrategyContext& ctx, const Target& t, const json::object* current,
                    json::object& next, std::vector<store::Write>* writes) {
  const json::object& spec = ObjectAt(next, "spec");  // with its defaults sealed
  bool spec_changed = !current || ObjectAt(*current, "spec") != spec;
  // status.revision of a template or profile (model::Template, model::Profile).
  int64_t revision = current ? model::GetInt(*current, "status.revision", 1) : 0;
  if (spec_changed) {
    ++revision;
    writes->push_back(
        store::Write{store::Write::Op::kPutRevision, t.kind->kind, next, 0, revision});
    json::object& rev_meta = writes->back().object["metadata"].as_object();
    rev_meta["creationTimestamp"] = ctx.Now();
  }
  model::EnsureObject(next, "status")["revision"] = revision;
  return spec_changed;
}

std::set<std::string> SensitiveNames(const json::object& variables) {
  std::set<std::string> out;
  for (const auto& kv : variables)
    if (kv.value().is_string() && SecretBox::IsSealed(kv.value().get_string()))
      out.insert(std::string(kv.key()));
  return out;
}

namespace {

// The stored secret a value sent for `path` stands for, unsealed into `value`; a cause
// when it cannot be (redacted without a stored one, ciphertext moved, undecryptable).
void UnsealSent(const StrategyContext& ctx, const json::object& next, const std::string& key,
                const std::string& stored, json::value& sent, json::value& plain,
                std::vector<FieldCause>* causes) {
  std::string v(plain.get_string());
  std::string path = "spec.variables." + key;
  if (v == kRedacted) {
    // The client sent back what the API showed: keep the stored secret.
    if (!SecretBox::IsSealed(stored)) {
      causes->push_back({path,
                         "Required value: give the value itself, not " + std::string(kRedacted),
                         "FieldValueRequired"});
      return;
    }
    sent = stored;
    v = stored;
  }
  if (!SecretBox::IsSealed(v)) return;
  // Ciphertext is only ever kept where it was sealed: a patch that copies or moves it into
  // another variable is refused before anything is decrypted.
  if (v != stored) {
    causes->push_back({path,
                       "Invalid value: a sealed value is only valid in the variable it "
                       "was sealed for; give the value itself"});
    return;
  }
  auto unsealed = ctx.secrets.Unseal(v, model::VariableContext(next, key));
  if (!unsealed.ok()) {
    causes->push_back({path, "Invalid value: the stored secret cannot be decrypted (" +
                                 std::string(unsealed.status().message()) + ")"});
    return;
  }
  plain = *unsealed;
}

}  // namespace

absl::Status CheckAndSealVariables(const StrategyContext& ctx, const json::object& next,
                                   const json::object& template_spec,
                                   const json::object& profile_spec, const json::object* current,
                                   json::object& variables) {
  // For messages only: `next` was decoded (and checked) by the caller.
  const std::string kind = model::GetString(next, "kind");
  const std::string name = model::GetString(next, "metadata.name");
  static const json::object kNone;
  const json::object& stored_vars = current ? ObjectAt(*current, "spec.variables") : kNone;
  std::vector<FieldCause> causes;
  json::object plain = variables;
  for (auto& kv : plain) {
    if (!kv.value().is_string()) continue;
    std::string key(kv.key());
    const json::value* stored = stored_vars.if_contains(key);
    UnsealSent(ctx, next, key,
               stored && stored->is_string() ? std::string(stored->get_string()) : "",
               variables[kv.key()], kv.value(), &causes);
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
    kv.value() = ctx.secrets.Seal(it->second.value, model::VariableContext(next, kv.key()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> UsersOf(const StrategyContext& ctx, const Target& t,
                                                 const std::string& user_kind,
                                                 const std::string& ref_field) {
  store::ListOptions o;
  o.kind = user_kind;
  o.ns = std::nullopt;
  o.fields = {{ref_field, true, t.name}};
  ASSIGN_OR_RETURN(auto page, ctx.store.List(o));
  std::vector<std::string> names;
  std::string ref_ns_field = ref_field.substr(0, ref_field.rfind('.')) + ".namespace";
  for (const auto& item : page.items) {
    ASSIGN_OR_RETURN(const model::ObjectMeta meta, model::DecodeObjectMeta(item));
    // ref_field names a reference (model::ObjectRef): its namespace defaults to the item's.
    if (model::GetString(item, ref_ns_field, meta.ns) == t.ns)
      names.push_back(meta.ns == t.ns ? meta.name : meta.ns + "/" + meta.name);
  }
  return names;
}

std::string ListNames(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < 5; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > 5) out += ", and " + std::to_string(names.size() - 5) + " more";
  return out;
}

std::string Counted(const std::vector<std::string>& names, const std::string& what) {
  return std::to_string(names.size()) + " " + what + (names.size() == 1 ? "" : "s") + " (" +
         ListNames(names) + ")";
}

absl::StatusOr<int64_t> EnabledOrgAdmins(const StrategyContext& ctx) {
  store::ListOptions o;
  o.kind = kUserKind;
  o.ns = "";
  o.fields = {{"spec.orgRole", true, "org-admin"}};
  ASSIGN_OR_RETURN(auto page, ctx.store.List(o));
  int64_t admins = 0;
  for (const auto& item : page.items) {
    ASSIGN_OR_RETURN(const model::User u, model::DecodeUser(item));
    if (u.EnabledOrgAdmin()) ++admins;
  }
  return admins;
}

}  // namespace gantry::api
