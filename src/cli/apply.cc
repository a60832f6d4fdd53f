#include "cli/apply.h"

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <istream>
#include <iterator>
#include <ostream>

#include "absl/strings/str_cat.h"
#include "cli/kinds.h"
#include "cli/table.h"
#include "client/kube_status.h"
#include "client/yaml_json.h"
#include "common/status_macros.h"

namespace gantry::cli {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;

bool IsManifestFile(const fs::path& p) {
  std::string ext = p.extension().string();
  return ext == ".yaml" || ext == ".yml" || ext == ".json";
}

absl::Status ExpandPath(const std::string& path, bool recursive, std::vector<std::string>& out) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    out.push_back(path);  // a file, or nothing: reading it says which
    return absl::OkStatus();
  }
  std::vector<fs::path> files, dirs;
  for (const fs::directory_entry& e : fs::directory_iterator(path, ec)) {
    if (e.is_directory(ec)) {
      dirs.push_back(e.path());
    } else if (IsManifestFile(e.path())) {
      files.push_back(e.path());
    }
  }
  if (ec) return absl::UnavailableError(absl::StrCat(path, ": ", ec.message()));
  std::sort(files.begin(), files.end());
  std::sort(dirs.begin(), dirs.end());
  for (const fs::path& f : files) out.push_back(f.string());
  if (recursive) {
    for (const fs::path& d : dirs) RETURN_IF_ERROR(ExpandPath(d.string(), true, out));
  }
  return absl::OkStatus();
}

// Drops nulls and empty objects so that "labels: {}" equals no labels at all.
json::value Normalize(const json::value& v) {
  if (v.is_object()) {
    json::object o;
    for (const auto& kv : v.get_object()) {
      json::value n = Normalize(kv.value());
      if (n.is_null() || (n.is_object() && n.get_object().empty())) continue;
      o.emplace(kv.key(), std::move(n));
    }
    return o;
  }
  if (v.is_array()) {
    json::array a;
    for (const json::value& e : v.get_array()) a.push_back(Normalize(e));
    return a;
  }
  return v;  // numbers compare by value in SameValue
}

bool SameValue(const json::value& a, const json::value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind() == b.kind()) return a == b;
    return a.to_number<double>() == b.to_number<double>();
  }
  if (a.kind() != b.kind()) return false;
  if (a.is_object()) {
    const json::object& ao = a.get_object();
    const json::object& bo = b.get_object();
    if (ao.size() != bo.size()) return false;
    for (const auto& kv : ao) {
      const json::value* other = bo.if_contains(kv.key());
      if (other == nullptr || !SameValue(kv.value(), *other)) return false;
    }
    return true;
  }
  if (a.is_array()) {
    const json::array& aa = a.get_array();
    const json::array& ba = b.get_array();
    if (aa.size() != ba.size()) return false;
    for (size_t i = 0; i < aa.size(); ++i) {
      if (!SameValue(aa[i], ba[i])) return false;
    }
    return true;
  }
  return a == b;
}

json::value At(const json::object& o, std::string_view path) {
  const json::value* v = Lookup(o, path);
  if (v == nullptr) return nullptr;
  json::value n = Normalize(*v);
  if (n.is_object() && n.get_object().empty()) return nullptr;
  return n;
}

// Kind, plural and target project of a manifest, or why it cannot be sent.
struct Target {
  KindInfo kind;
  std::string name;
  std::string project;
};

absl::StatusOr<Target> TargetOf(CommandContext& ctx, Manifest& m) {
  std::string kind = FieldText(m.object, "kind");
  std::string name = FieldText(m.object, "metadata.name");
  if (kind.empty())
    return absl::InvalidArgumentError(absl::StrCat(m.source, ": an object has no kind"));
  if (name.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(m.source, ": a ", kind, " has no metadata.name"));
  }
  Target t{KindFromObjectKind(kind), name, ""};
  if (t.kind.namespaced) {
    std::string ns = FieldText(m.object, "metadata.namespace");
    if (!ns.empty() && ctx.settings.project_explicit && ns != ctx.settings.project) {
      return absl::InvalidArgumentError(
          absl::StrCat(t.kind.singular, "/", name, ": the object's project \"", ns,
                       "\" does not match --project \"", ctx.settings.project, "\""));
    }
    t.project = ns.empty() ? ctx.settings.project : ns;
    json::value& md = m.object["metadata"];
    if (md.is_object()) md.get_object()["namespace"] = t.project;
  }
  return t;
}

// One object: GET, then POST / PUT / nothing. Returns the word to print.
absl::StatusOr<std::string> ApplyOne(CommandContext& ctx, const Target& t, json::object object) {
  const std::string path = ObjectPath(t.kind, t.project, t.name);
  ASSIGN_OR_RETURN(client::HttpResponse got, ctx.api->Send("GET", path));
  if (got.status == 404) {
    ASSIGN_OR_RETURN(
        client::HttpResponse res,
        ctx.api->Send("POST", CollectionPath(t.kind, t.project, false), json::serialize(object)));
    RETURN_IF_ERROR(client::StatusFromResponse(res));
    return std::string("created");
  }
  RETURN_IF_ERROR(client::StatusFromResponse(got));
  ASSIGN_OR_RETURN(json::object live, ParseObject(got));
  if (SameDesiredState(object, live)) return std::string("unchanged");
  json::value& md = object["metadata"];
  if (!md.is_object()) md = json::object();
  if (const json::value* rv = Lookup(live, "metadata.resourceVersion")) {
    md.get_object()["resourceVersion"] = *rv;
  }
  ASSIGN_OR_RETURN(client::HttpResponse res, ctx.api->Send("PUT", path, json::serialize(object)));
  RETURN_IF_ERROR(client::StatusFromResponse(res));
  // The server normalises what it stores (numbers in variables become strings, secrets are
  // sealed): when it made no change it keeps the resourceVersion, and that is the answer.
  boost::system::error_code ec;
  json::value stored = json::parse(res.body, ec);
  const json::value* before = Lookup(live, "metadata.resourceVersion");
  if (!ec && stored.is_object() && before) {
    const json::value* after = Lookup(stored.get_object(), "metadata.resourceVersion");
    if (after && *after == *before) return std::string("unchanged");
  }
  return std::string("configured");
}

}  // namespace

absl::StatusOr<std::vector<Manifest>> LoadManifests(CommandContext& ctx,
                                                    const std::vector<std::string>& paths,
                                                    bool recursive) {
  std::vector<std::string> files;
  for (const std::string& p : paths) {
    if (p == "-") {
      files.push_back(p);
    } else {
      RETURN_IF_ERROR(ExpandPath(p, recursive, files));
    }
  }
  std::vector<Manifest> out;
  for (const std::string& f : files) {
    std::string text;
    if (f == "-") {
      if (ctx.in == nullptr) return absl::InvalidArgumentError("no standard input");
      text.assign(std::istreambuf_iterator<char>(*ctx.in), std::istreambuf_iterator<char>());
    } else {
      absl::StatusOr<std::string> read = ctx.read_file(f);
      if (!read.ok()) return read.status();
      text = *std::move(read);
    }
    auto docs = client::YamlToJsonObjects(text);
    if (!docs.ok()) {
      return absl::Status(docs.status().code(),
                          absl::StrCat(f == "-" ? "stdin" : f, ": ", docs.status().message()));
    }
    for (json::object& o : *docs) out.push_back(Manifest{std::move(o), f});
  }
  return out;
}

void OrderForApply(std::vector<Manifest>& manifests) {
  std::stable_sort(manifests.begin(), manifests.end(), [](const Manifest& a, const Manifest& b) {
    return ApplyRank(FieldText(a.object, "kind")) < ApplyRank(FieldText(b.object, "kind"));
  });
}

bool SameDesiredState(const json::object& applied, const json::object& live) {
  for (std::string_view path : {"spec", "metadata.labels", "metadata.annotations"}) {
    if (!SameValue(At(applied, path), At(live, path))) return false;
  }
  return true;
}

int RunApply(CommandContext& ctx, const ApplyOptions& options) {
  if (options.files.empty()) {
    PrintError(ctx, "apply needs -f FILE, -f DIR or -f -");
    return kExitUsage;
  }
  absl::StatusOr<std::vector<Manifest>> manifests =
      LoadManifests(ctx, options.files, options.recursive);
  if (!manifests.ok()) {
    PrintError(ctx, manifests.status());
    return kExitError;
  }
  if (manifests->empty()) {
    PrintError(ctx, "no objects passed to apply");
    return kExitError;
  }
  OrderForApply(*manifests);
  int failures = 0;
  for (Manifest& m : *manifests) {
    absl::StatusOr<Target> t = TargetOf(ctx, m);
    if (!t.ok()) {
      PrintError(ctx, t.status());
      ++failures;
      continue;
    }
    absl::StatusOr<std::string> done = ApplyOne(ctx, *t, m.object);
    if (!done.ok()) {
      PrintError(ctx, done.status());
      ++failures;
      // Without a server nothing else can succeed: say it once.
      if (done.status().code() == absl::StatusCode::kUnavailable) break;
      continue;
    }
    *ctx.out << t->kind.singular << "/" << t->name << " " << *done << "\n";
  }
  return failures == 0 ? kExitOk : kExitError;
}

int RunDelete(CommandContext& ctx, const DeleteOptions& options) {
  static constexpr std::string_view kForegroundDelete =
      R"({"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Foreground"})";
  struct One {
    KindInfo kind;
    std::string project;
    std::string name;
  };
  std::vector<One> targets;
  if (!options.files.empty()) {
    if (!options.kind.empty() || !options.names.empty()) {
      PrintError(ctx, "give either KIND NAME... or -f FILE, not both");
      return kExitUsage;
    }
    absl::StatusOr<std::vector<Manifest>> manifests =
        LoadManifests(ctx, options.files, options.recursive);
    if (!manifests.ok()) {
      PrintError(ctx, manifests.status());
      return kExitError;
    }
    // Contents before containers: the reverse of the apply order.
    OrderForApply(*manifests);
    std::reverse(manifests->begin(), manifests->end());
    for (Manifest& m : *manifests) {
      absl::StatusOr<Target> t = TargetOf(ctx, m);
      if (!t.ok()) {
        PrintError(ctx, t.status());
        return kExitError;
      }
      targets.push_back({t->kind, t->project, t->name});
    }
  } else {
    if (options.kind.empty() || options.names.empty()) {
      PrintError(ctx, "delete needs KIND NAME... or -f FILE");
      return kExitUsage;
    }
    absl::StatusOr<KindInfo> kind = ResolveKind(options.kind);
    if (!kind.ok()) {
      PrintError(ctx, kind.status());
      return kExitUsage;
    }
    for (const std::string& n : options.names) targets.push_back({*kind, ctx.settings.project, n});
  }
  int failures = 0;
  for (const One& t : targets) {
    absl::StatusOr<client::HttpResponse> res =
        options.cascade ? ctx.api->Send("DELETE", ObjectPath(t.kind, t.project, t.name),
                                        kForegroundDelete, "application/json")
                        : ctx.api->Send("DELETE", ObjectPath(t.kind, t.project, t.name));
    absl::Status s = res.ok() ? client::StatusFromResponse(*res) : res.status();
    if (!s.ok()) {
      PrintError(ctx, s);
      ++failures;
      if (s.code() == absl::StatusCode::kUnavailable) break;
      continue;
    }
    *ctx.out << t.kind.singular << "/" << t.name << " deleted\n";
  }
  return failures == 0 ? kExitOk : kExitError;
}

}  // namespace gantry::cli
