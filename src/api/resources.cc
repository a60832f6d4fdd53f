#include "api/resources.h"

#include <sodium.h>

#include <set>

#include "api/instance_strategy.h"
#include "api/strategy_support.h"
#include "client/yaml_json.h"
#include "common/errors.h"
#include "common/ids.h"
#include "common/status_macros.h"
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

// Continue tokens of a project's list: the store's own for the project's objects, then
// "s1.OFFSET" into the objects shared into it.
constexpr char kSharedContinue[] = "s1.";

std::string Resource(const model::KindInfo& k) { return k.plural + "." + model::kGroup; }

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

std::string QueryValue(const Query& q, const std::string& key) {
  auto it = q.find(key);
  return it == q.end() ? "" : it->second;
}

}  // namespace

ResourceService::ResourceService(store::Store& store, WatchHub& hub, const Clock& clock,
                                 const SecretBox& secrets, const drivers::DriverRegistry& drivers)
    : store_(store), hub_(hub), context_{store, secrets, clock, drivers}, strategies_(context_) {}

const KindStrategy& ResourceService::StrategyOf(const Target& t) const {
  return strategies_.For(*t.kind);
}

absl::Status ResourceService::CheckProjectExists(const std::string& ns) {
  // Only whether it is there: its text, not parsed (every create and list asks).
  auto p = store_.GetText(kProjectKind, "", ns);
  if (p.ok()) return absl::OkStatus();
  if (absl::IsNotFound(p.status())) return ProjectNotFound(ns);
  return p.status();
}

absl::Status ResourceService::ValidateIncoming(const Target& t, json::object& obj,
                                               bool for_create) {
  const model::KindInfo& kind = *t.kind;
  // apiVersion and kind may be omitted; when present they must name this resource.
  if (const json::value* v = obj.if_contains("apiVersion");
      v && v->is_string() && v->get_string() != model::kApiVersion)
    return BadRequestError("apiVersion \"" + std::string(v->get_string()) +
                           "\" is not served here; use \"" + model::kApiVersion + "\"");
  if (const json::value* v = obj.if_contains("kind");
      v && v->is_string() && v->get_string() != kind.kind)
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
  const KindTraits traits = StrategyOf(t).Traits();
  const bool instance_variables = traits.instance_variables;
  model::FindMisplacedSealed(obj, instance_variables, traits.sealed_field, &causes);
  if (!causes.empty()) return InvalidError(kind.kind, GetString(meta, "name"), std::move(causes));
  model::ValidateMetadata(meta, &causes);
  if (const json::value* spec = obj.if_contains("spec"); spec && spec->is_object())
    model::ValidateSpec(kind, spec->get_object(), &causes);
  else if (kind.spec.children.end() !=
           std::find_if(kind.spec.children.begin(), kind.spec.children.end(),
                        [](const model::Field& f) { return f.required; }))
    causes.push_back({"spec", "Required value", "FieldValueRequired"});
  if (!causes.empty()) return InvalidError(kind.kind, GetString(meta, "name"), std::move(causes));
  if (json::value* vars =
          obj.contains("spec") ? obj["spec"].get_object().if_contains("variables") : nullptr;
      vars && vars->is_object() && instance_variables)
    model::NormalizeVariableValues(vars->get_object());
  return absl::OkStatus();
}

absl::StatusOr<json::object> ResourceService::Create(const Target& t, std::string_view body,
                                                     store::AlsoCommit* also) {
  if (t.kind->read_only)
    return MethodNotAllowedError(t.kind->plural + " are read-only: they are made by the server");
  ASSIGN_OR_RETURN(json::object incoming, model::ParseObjectJson(body));
  return CreateObject(t, std::move(incoming), nullptr, also);
}

absl::StatusOr<json::object> ResourceService::CreateObject(const Target& t, json::object incoming,
                                                           const ApplyInfo* apply,
                                                           store::AlsoCommit* also) {
  Target target = t;
  target.name.clear();
  RETURN_IF_ERROR(ValidateIncoming(target, incoming, /*for_create=*/true));
  const KindStrategy& strategy = StrategyOf(t);
  if (t.kind->namespaced && !strategy.Traits().create_reads_project)
    RETURN_IF_ERROR(CheckProjectExists(t.ns));

  json::object meta = ClientMetadata(incoming);
  meta["name"] = GetString(incoming, "metadata.name");
  if (t.kind->namespaced) meta["namespace"] = t.ns;
  meta["uid"] = NewUid();
  meta["generation"] = 1;
  meta["creationTimestamp"] = context_.Now();
  json::object obj{
      {"apiVersion", model::kApiVersion}, {"kind", t.kind->kind}, {"metadata", std::move(meta)}};
  if (const json::value* spec = incoming.if_contains("spec"); spec && spec->is_object())
    obj["spec"] = *spec;
  else
    obj["spec"] = json::object();
  json::object status;
  strategy.PrepareForCreate(t, status);
  obj["status"] = std::move(status);
  RETURN_IF_ERROR(RecordManagers(t, nullptr, incoming, obj, apply));

  for (int attempt = 0;; ++attempt) {
    std::vector<store::Write> writes;
    writes.push_back(store::Write{store::Write::Op::kCreate, t.kind->kind, {}, 0, 0});
    json::object next = obj;
    RETURN_IF_ERROR(strategy.BeforeCreate(t, &writes));
    RETURN_IF_ERROR(strategy.Admit(t, nullptr, next, &writes));
    RETURN_IF_ERROR(model::ForgetAbsentFields(next));  // e.g. spec.password, now a credential
    if (t.dry_run) return next;  // as Kubernetes: no resourceVersion, nothing stored
    if (also) writes.push_back(also->make(next));
    writes[0].object = std::move(next);
    auto stored = store_.Commit(std::move(writes));
    if (stored.ok()) {
      if (also) also->committed = true;
      return std::move((*stored)[0]);
    }
    // Another create in a project with a per-user quota won the race for the project's
    // resourceVersion (the instancesPerUser guard of BeforeCreate): count again.
    if (absl::IsAborted(stored.status()) && attempt < kMaxRetries) continue;
    return stored.status();
  }
}

absl::StatusOr<json::object> ResourceService::Get(const Target& t) {
  auto obj = store_.Get(t.kind->kind, t.ns, t.name);
  if (!obj.ok()) return NotFoundIn(t, obj.status());
  return obj;
}

absl::StatusOr<std::string> ResourceService::GetText(const Target& t) {
  auto text = store_.GetText(t.kind->kind, t.ns, t.name);
  if (!text.ok()) return NotFoundIn(t, text.status());
  return text;
}

absl::Status ResourceService::NotFoundIn(const Target& t, absl::Status read) {
  if (absl::IsNotFound(read) && t.kind->namespaced) RETURN_IF_ERROR(CheckProjectExists(t.ns));
  return read;
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
  ASSIGN_OR_RETURN(auto fields,
                   model::ParseFieldSelector(QueryValue(q, "fieldSelector"), supported));
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
      return ExpiredError(
          "The provided continue parameter is too old to display a consistent "
          "list result. You can start a new list without the continue "
          "parameter.");
  }
  const bool with_shared =
      t.kind->namespaced && !t.all_namespaces && StrategyOf(t).Traits().sharable;
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
    meta["continue"] =
        EncodeContinue(token.first_rv ? token.first_rv : result.resource_version, next_token);
  return json::object{{"apiVersion", model::kApiVersion},
                      {"kind", t.kind->ListKind()},
                      {"metadata", std::move(meta)},
                      {"items", std::move(items)}};
}

absl::StatusOr<json::object> ResourceService::UpdateFrom(const Target& t, json::object incoming,
                                                         int64_t expected_rv,
                                                         const ApplyInfo* apply,
                                                         store::AlsoCommit* also) {
  RETURN_IF_ERROR(ValidateIncoming(t, incoming, /*for_create=*/false));
  const KindStrategy& strategy = StrategyOf(t);
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
      if (client_meta.contains(key))
        meta[key] = client_meta[key];
      else
        meta.erase(key);
    }
    const json::value* spec = incoming.if_contains("spec");
    next["spec"] = spec && spec->is_object() ? *spec : json::value(json::object());
    strategy.PrepareForUpdate(t, current, next);
    RETURN_IF_ERROR(RecordManagers(t, &current, incoming, next, apply));
    bool spec_changed = ObjectAt(current, "spec") != ObjectAt(next, "spec");
    // The client's precondition holds for no-op writes too (as in Kubernetes, where the
    // resourceVersion is checked before the no-op shortcut).
    if (expected_rv != 0 && expected_rv != current_rv)
      return store::ObjectModified(t.kind->kind, t.name);
    if (next == current) return current;  // nothing to change: no new resourceVersion
    RETURN_IF_ERROR(strategy.ValidateUpdate(current));
    if (spec_changed) meta["generation"] = GetInt(current, "metadata.generation", 1) + 1;

    std::vector<store::Write> writes;
    writes.push_back(store::Write{
        store::Write::Op::kUpdate, t.kind->kind, {}, expected_rv ? expected_rv : current_rv, 0});
    RETURN_IF_ERROR(strategy.Admit(t, &current, next, &writes));
    RETURN_IF_ERROR(model::ForgetAbsentFields(next));  // e.g. spec.password, now a credential
    if (t.dry_run) return next;                        // resourceVersion stays the current one
    if (also) writes.push_back(also->make(next));
    writes[0].object = std::move(next);
    auto stored = store_.Commit(std::move(writes));
    if (stored.ok()) {
      if (also) also->committed = true;
      return std::move((*stored)[0]);
    }
    // A write between our read and commit: retry from the new state unless the client
    // asked for a precondition (then the conflict is its answer), as Kubernetes does.
    if (expected_rv == 0 && absl::IsAborted(stored.status()) && attempt < kMaxRetries) continue;
    return stored.status();
  }
}

absl::StatusOr<json::object> ResourceService::Replace(const Target& t, std::string_view body,
                                                      store::AlsoCommit* also) {
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
  return UpdateFrom(t, std::move(incoming), expected, nullptr, also);
}

absl::StatusOr<json::object> ResourceService::MergePatch(const Target& t, std::string_view body,
                                                         store::AlsoCommit* also) {
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
    auto out = UpdateFrom(t, std::move(merged.as_object()), expected, nullptr, also);
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
  bool use_sent =
      !apply && sent && sent->is_array() && !sent->get_array().empty() && (!live || *sent != *live);
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
                        GetString(*current, "metadata.creationTimestamp"), model::LeafSet(before)});
  model::FieldChange change = model::CompareFields(before, model::TrackedFields(next));
  if (apply) {
    RETURN_IF_ERROR(model::RecordApply(managers, change, apply->fields, t.field_manager,
                                       model::kApiVersion, context_.Now(), apply->force));
  } else {
    model::RecordUpdate(managers, change, t.field_manager, model::kApiVersion, context_.Now());
  }
  json::object& meta = model::EnsureObject(next, "metadata");
  json::array encoded = model::EncodeManagedFields(managers);
  if (encoded.empty())
    meta.erase("managedFields");
  else
    meta["managedFields"] = std::move(encoded);
  return absl::OkStatus();
}

absl::StatusOr<json::object> ResourceService::JsonPatch(const Target& t, std::string_view body,
                                                        store::AlsoCommit* also) {
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
    auto out = UpdateFrom(t, std::move(obj), expected, nullptr, also);
    if (out.ok() || precondition || !absl::IsAborted(out.status()) ||
        !CausesOf(out.status()).empty() || attempt >= kMaxRetries)
      return out;
  }
}

absl::StatusOr<json::object> ResourceService::Apply(const Target& t, std::string_view body,
                                                    bool force, bool* created,
                                                    store::AlsoCommit* also) {
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
      auto out = CreateObject(t, config, &info, also);
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
      if (const json::value* v = FindPath(config, std::string("metadata.") + key)) meta[key] = *v;
    for (const char* key : {"apiVersion", "kind"}) merged[key] = config[key];
    ASSIGN_OR_RETURN(model::Managers managers, model::ManagersOf(*current));
    model::RemoveFields(merged, model::FieldsToPrune(managers, t.field_manager, info.fields));
    int64_t expected = std::stoll(GetString(*current, "metadata.resourceVersion", "0"));
    meta.erase("resourceVersion");
    auto out = UpdateFrom(t, std::move(merged), expected, &info, also);
    // A write between our read and the commit: apply again to the new state. Conflicts
    // with other managers carry causes and are the answer.
    if (out.ok() || !absl::IsAborted(out.status()) || !CausesOf(out.status()).empty() ||
        attempt >= kMaxRetries)
      return out;
  }
}

namespace {

// What a DELETE asks for beyond the target: DeleteOptions (body) and query parameters.
struct DeleteOptions {
  int64_t expected_rv = 0;
  std::string want_uid;
  bool dry_run = false;
  // propagationPolicy (DeleteOptions or query, as Kubernetes takes it): Foreground deletes a
  // compute instance's services first; Background and Orphan leave them, so a compute
  // instance with services is refused.
  std::string propagation;
};

absl::StatusOr<DeleteOptions> ParseDeleteOptions(const Target& t, std::string_view body,
                                                 const Query& query) {
  DeleteOptions out;
  out.dry_run = t.dry_run;
  out.propagation = QueryValue(query, "propagationPolicy");
  if (!body.empty()) {
    // DeleteOptions: preconditions and propagationPolicy matter here.
    ASSIGN_OR_RETURN(json::object opts, model::ParseObjectJson(body));
    if (std::string p = GetString(opts, "propagationPolicy"); !p.empty()) out.propagation = p;
    // kubectl sends a delete's dry run in the DeleteOptions body, not the query.
    if (const json::value* d = opts.if_contains("dryRun"); d && d->is_array())
      for (const auto& v : d->get_array()) {
        if (!v.is_string() || v.get_string() != "All")
          return BadRequestError("dryRun must be [\"All\"]");
        out.dry_run = true;
      }
    out.want_uid = GetString(opts, "preconditions.uid");
    std::string rv = GetString(opts, "preconditions.resourceVersion");
    if (!rv.empty()) {
      if (rv.size() > 18 || rv.find_first_not_of("0123456789") != std::string::npos)
        return BadRequestError("preconditions.resourceVersion \"" + rv + "\" is not valid");
      out.expected_rv = std::stoll(rv);
    }
  }
  const std::string& p = out.propagation;
  if (!p.empty() && p != "Foreground" && p != "Background" && p != "Orphan")
    return BadRequestError("propagationPolicy must be Foreground, Background or Orphan, not \"" +
                           p.substr(0, 32) + "\"");
  return out;
}

}  // namespace

absl::StatusOr<json::object> ResourceService::Delete(const Target& t, std::string_view body,
                                                     const Query& query, bool* accepted,
                                                     store::AlsoCommit* also) {
  *accepted = false;
  if (t.kind->read_only)
    return MethodNotAllowedError(t.kind->plural + " are read-only: they are made by the server");
  ASSIGN_OR_RETURN(DeleteOptions opts, ParseDeleteOptions(t, body, query));
  ASSIGN_OR_RETURN(json::object current, Get(t));
  if (!opts.want_uid.empty() && opts.want_uid != GetString(current, "metadata.uid"))
    return ConflictError("Precondition failed: UID in precondition: " + opts.want_uid +
                         ", UID in object meta: " + GetString(current, "metadata.uid"));
  const KindStrategy& strategy = StrategyOf(t);
  if (strategy.Traits().engine_deletes) {
    if (opts.expected_rv &&
        opts.expected_rv != std::stoll(GetString(current, "metadata.resourceVersion", "0")))
      return ConflictError("Precondition failed: resourceVersion in precondition: " +
                           std::to_string(opts.expected_rv) + ", resourceVersion in object meta: " +
                           GetString(current, "metadata.resourceVersion"));
    if (opts.dry_run) {
      // The lifecycle rule only: what a teardown or cascade would do is not simulated.
      RETURN_IF_ERROR(model::Decide(model::Action::kDelete, current).status());
      return current;
    }
    if (!delete_instance_)
      return ConflictError("instance " + t.name +
                               " cannot be deleted: no deploy engine is "
                               "running",
                           "EngineUnavailable");
    return delete_instance_(t, opts.propagation == "Foreground", accepted);
  }
  json::object key{
      {"metadata", json::object{{"name", t.name}, {"namespace", t.kind->namespaced ? t.ns : ""}}}};
  std::vector<store::Write> writes;
  int64_t rv = opts.expected_rv ? opts.expected_rv
                                : std::stoll(GetString(current, "metadata.resourceVersion", "0"));
  writes.push_back(store::Write{store::Write::Op::kDelete, t.kind->kind, std::move(key), rv, 0});
  RETURN_IF_ERROR(strategy.ValidateDelete(t, current, &writes));
  if (opts.dry_run) return current;
  if (also) writes.push_back(also->make(current));
  ASSIGN_OR_RETURN(auto stored, store_.Commit(std::move(writes)));
  if (also) also->committed = true;
  return std::move(stored[0]);
}

absl::StatusOr<json::object> ResourceService::ListRevisions(const Target& t) {
  if (!t.kind->versioned) return NotFoundError(t.kind->plural + " have no revisions");
  RETURN_IF_ERROR(Get(t).status());
  ASSIGN_OR_RETURN(auto revs, store_.ListRevisions(t.kind->kind, t.ns, t.name));
  json::array items;
  for (auto& r : revs)
    items.push_back(
        json::object{{"apiVersion", model::kApiVersion},
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

absl::StatusOr<json::object> ResourceService::Upgrade(const Target& t) {
  for (int attempt = 0;; ++attempt) {
    ASSIGN_OR_RETURN(json::object current, Get(t));
    ASSIGN_OR_RETURN(json::object next, UpgradedInstance(context_, t, current));
    if (next == current) return current;  // already on the latest revision
    std::vector<store::Write> writes;
    writes.push_back({store::Write::Op::kUpdate, t.kind->kind, std::move(next),
                      std::stoll(GetString(current, "metadata.resourceVersion", "0")), 0});
    auto stored = store_.Commit(std::move(writes));
    if (stored.ok()) return std::move((*stored)[0]);
    if (absl::IsAborted(stored.status()) && attempt < kMaxRetries) continue;
    return stored.status();
  }
}

absl::Status ResourceService::EnsureProject(const std::string& name,
                                            const std::string& display_name) {
  auto existing = store_.Get(kProjectKind, "", name);
  if (existing.ok()) return absl::OkStatus();
  if (!absl::IsNotFound(existing.status())) return existing.status();
  Target t;  // cluster-scoped, no caller: the server itself creates the project
  t.kind = model::FindKindByName(kProjectKind);
  json::object obj{{"metadata", json::object{{"name", name}}},
                   {"spec", json::object{{"displayName", display_name}}}};
  auto created = Create(t, json::serialize(obj));
  if (!created.ok() && !absl::IsAlreadyExists(created.status())) return created.status();
  return absl::OkStatus();
}

}  // namespace gantry::api
