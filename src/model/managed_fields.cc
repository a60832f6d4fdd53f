#include "model/managed_fields.h"

#include <algorithm>
#include <tuple>

#include "common/errors.h"

namespace gantry::model {
namespace {

namespace json = boost::json;

void CollectLeaves(const json::object& obj, FieldPath& prefix,
                   std::map<FieldPath, const json::value*>& out) {
  for (const auto& kv : obj) {
    const json::value& v = kv.value();
    if (v.is_null()) continue;
    prefix.emplace_back(kv.key());
    if (v.is_object() && !v.get_object().empty()) {
      CollectLeaves(v.get_object(), prefix, out);
    } else {
      out.emplace(prefix, &v);
    }
    prefix.pop_back();
  }
}

// True when `a` is a strict prefix of `b`.
bool StrictPrefix(const FieldPath& a, const FieldPath& b) {
  return a.size() < b.size() && std::equal(a.begin(), a.end(), b.begin());
}

// True when `p` equals a member of `set` or one lies under the other.
bool Overlaps(const FieldPath& p, const FieldSet& set) {
  // Members under p sort right after it; members above p are its prefixes.
  auto it = set.lower_bound(p);
  if (it != set.end() && (*it == p || StrictPrefix(p, *it))) return true;
  FieldPath prefix;
  for (size_t i = 0; i + 1 < p.size(); ++i) {
    prefix.push_back(p[i]);
    if (set.count(prefix)) return true;
  }
  return false;
}

// True when a member of `set` is a strict prefix of `p`.
bool UnderMember(const FieldPath& p, const FieldSet& set) {
  FieldPath prefix;
  for (size_t i = 0; i + 1 < p.size(); ++i) {
    prefix.push_back(p[i]);
    if (set.count(prefix)) return true;
  }
  return false;
}

void EncodeInto(json::object& node, FieldSet::const_iterator& it, FieldSet::const_iterator end,
                size_t depth) {
  // All members in [it, end) share the first `depth` elements; group by element `depth`.
  while (it != end) {
    const FieldPath& p = *it;
    json::object& child = node["f:" + p[depth]].emplace_object();
    // Members below this child: those sharing p[0..depth].
    FieldPath head(p.begin(), p.begin() + static_cast<long>(depth) + 1);
    if (p.size() == depth + 1) ++it;  // the child itself is a member
    bool self_member = p.size() == depth + 1;
    auto sub_end = it;
    while (sub_end != end && StrictPrefix(head, *sub_end)) ++sub_end;
    if (it != sub_end) {
      if (self_member) child["."] = json::object();
      EncodeInto(child, it, sub_end, depth + 1);
    }
    it = sub_end;
  }
}

absl::Status DecodeInto(const json::object& node, FieldPath& prefix, FieldSet& out, int depth) {
  if (depth > 64) return absl::InvalidArgumentError("nested too deeply");
  if (node.empty() && !prefix.empty()) {
    out.insert(prefix);
    return absl::OkStatus();
  }
  for (const auto& kv : node) {
    std::string_view key = kv.key();
    if (!kv.value().is_object())
      return absl::InvalidArgumentError("the value of \"" + std::string(key) +
                                        "\" must be an object");
    if (key == ".") {
      if (prefix.empty()) return absl::InvalidArgumentError("\".\" cannot be at the top");
      out.insert(prefix);
      continue;
    }
    if (key.substr(0, 2) != "f:")
      return absl::InvalidArgumentError(
          "unsupported key \"" + std::string(key) +
          "\": only \"f:NAME\" and \".\" (lists are atomic on this server)");
    prefix.emplace_back(key.substr(2));
    absl::Status s = DecodeInto(kv.value().get_object(), prefix, out, depth + 1);
    prefix.pop_back();
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

// Kubernetes' printManager: Update entries name their API version.
std::string DescribeManager(const ManagerEntry& e) {
  std::string quoted = "\"";
  for (char c : e.manager) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  quoted += '"';
  if (e.operation == kOperationUpdate) return quoted + " using " + e.api_version;
  return quoted;
}

ManagerEntry* FindEntry(Managers& managers, const std::string& manager,
                        const std::string& operation) {
  for (auto& e : managers)
    if (e.manager == manager && e.operation == operation) return &e;
  return nullptr;
}

void DropEmpty(Managers& managers) {
  managers.erase(std::remove_if(managers.begin(), managers.end(),
                                [](const ManagerEntry& e) { return e.fields.empty(); }),
                 managers.end());
}

FieldSet Intersect(const FieldSet& a, const FieldSet& b) {
  FieldSet out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::inserter(out, out.end()));
  return out;
}

void MergeInto(json::object& live, const json::object& config) {
  for (const auto& kv : config) {
    if (kv.value().is_null()) continue;
    json::value* existing = live.if_contains(kv.key());
    if (existing && existing->is_object() && kv.value().is_object()) {
      MergeInto(existing->get_object(), kv.value().get_object());
    } else if (kv.value().is_object()) {
      json::object fresh;
      MergeInto(fresh, kv.value().get_object());
      live[kv.key()] = std::move(fresh);
    } else {
      live[kv.key()] = kv.value();
    }
  }
}

// Removes `path` from `obj`; erases the objects left empty on the way back up, below `keep`
// levels.
void RemovePath(json::object& obj, const FieldPath& path, size_t i, size_t keep) {
  auto it = obj.find(path[i]);
  if (it == obj.end()) return;
  if (i + 1 == path.size()) {
    obj.erase(it);
    return;
  }
  json::value& child = it->value();
  if (!child.is_object()) return;
  RemovePath(child.get_object(), path, i + 1, keep);
  if (child.get_object().empty() && i + 1 > keep) obj.erase(path[i]);
}

}  // namespace

std::string PathString(const FieldPath& path) {
  std::string out;
  for (const auto& p : path) out += "." + p;
  return out;
}

json::object TrackedFields(const json::object& obj) {
  json::object out;
  json::object meta;
  if (const json::value* m = obj.if_contains("metadata"); m && m->is_object())
    for (const char* key : {"labels", "annotations"})
      if (const json::value* v = m->get_object().if_contains(key);
          v && v->is_object() && !v->get_object().empty())
        meta[key] = *v;
  if (!meta.empty()) out["metadata"] = std::move(meta);
  if (const json::value* s = obj.if_contains("spec");
      s && s->is_object() && !s->get_object().empty())
    out["spec"] = *s;
  return out;
}

std::map<FieldPath, const json::value*> Leaves(const json::object& obj) {
  std::map<FieldPath, const json::value*> out;
  FieldPath prefix;
  CollectLeaves(obj, prefix, out);
  return out;
}

FieldSet LeafSet(const json::object& obj) {
  FieldSet out;
  for (const auto& [p, v] : Leaves(obj)) out.insert(p);
  return out;
}

json::object EncodeFieldsV1(const FieldSet& set) {
  json::object out;
  auto it = set.begin();
  // The empty path (the whole object) is never a member here.
  while (it != set.end() && it->empty()) ++it;
  EncodeInto(out, it, set.end(), 0);
  return out;
}

absl::StatusOr<FieldSet> DecodeFieldsV1(const json::value& v) {
  if (!v.is_object()) return absl::InvalidArgumentError("must be an object");
  FieldSet out;
  FieldPath prefix;
  absl::Status s = DecodeInto(v.get_object(), prefix, out, 0);
  if (!s.ok()) return s;
  return out;
}

absl::StatusOr<Managers> DecodeManagedFields(const json::value& v) {
  Managers out;
  if (v.is_null()) return out;
  if (!v.is_array()) return absl::InvalidArgumentError("managedFields: must be a list");
  const json::array& arr = v.get_array();
  for (size_t i = 0; i < arr.size(); ++i) {
    std::string at = "managedFields[" + std::to_string(i) + "]";
    if (!arr[i].is_object()) return absl::InvalidArgumentError(at + ": must be an object");
    const json::object& o = arr[i].get_object();
    auto str = [&](const char* key) {
      const json::value* s = o.if_contains(key);
      return s && s->is_string() ? std::string(s->get_string()) : std::string();
    };
    ManagerEntry e{str("manager"), str("operation"), str("apiVersion"), str("time"), {}};
    const json::value* fields = o.if_contains("fieldsV1");
    if (e.manager.empty() &&
        (!fields || fields->is_null() || (fields->is_object() && fields->get_object().empty())))
      continue;  // [{}]: reset
    if (e.manager.empty()) return absl::InvalidArgumentError(at + ".manager: Required value");
    if (e.operation != kOperationApply && e.operation != kOperationUpdate)
      return absl::InvalidArgumentError(at + ".operation: must be Apply or Update, not \"" +
                                        e.operation + "\"");
    if (std::string type = str("fieldsType"); !type.empty() && type != "FieldsV1")
      return absl::InvalidArgumentError(at + ".fieldsType: must be FieldsV1, not \"" + type + "\"");
    if (fields && !fields->is_null()) {
      auto set = DecodeFieldsV1(*fields);
      if (!set.ok())
        return absl::InvalidArgumentError(at + ".fieldsV1: " + std::string(set.status().message()));
      e.fields = *std::move(set);
    }
    for (const auto& other : out)
      if (other.manager == e.manager && other.operation == e.operation)
        return absl::InvalidArgumentError(at + ": manager \"" + e.manager + "\" with operation " +
                                          e.operation + " is listed twice");
    out.push_back(std::move(e));
  }
  return out;
}

json::array EncodeManagedFields(const Managers& managers) {
  std::vector<const ManagerEntry*> sorted;
  for (const auto& e : managers)
    if (!e.fields.empty()) sorted.push_back(&e);
  std::stable_sort(sorted.begin(), sorted.end(), [](const ManagerEntry* a, const ManagerEntry* b) {
    return std::tie(a->operation, a->time, a->manager) <
           std::tie(b->operation, b->time, b->manager);
  });
  json::array out;
  for (const ManagerEntry* e : sorted)
    out.push_back(json::object{{"manager", e->manager},
                               {"operation", e->operation},
                               {"apiVersion", e->api_version},
                               {"time", e->time},
                               {"fieldsType", "FieldsV1"},
                               {"fieldsV1", EncodeFieldsV1(e->fields)}});
  return out;
}

absl::StatusOr<Managers> ManagersOf(const json::object& obj) {
  const json::value* meta = obj.if_contains("metadata");
  if (!meta || !meta->is_object()) return Managers{};
  const json::value* mf = meta->get_object().if_contains("managedFields");
  if (!mf) return Managers{};
  return DecodeManagedFields(*mf);
}

absl::Status ForgetAbsentFields(json::object& obj) {
  json::value* meta = obj.if_contains("metadata");
  if (!meta || !meta->is_object() || !meta->get_object().contains("managedFields"))
    return absl::OkStatus();
  auto managers = ManagersOf(obj);
  if (!managers.ok()) return managers.status();
  FieldSet present = LeafSet(TrackedFields(obj));
  bool changed = false;
  for (auto& e : *managers) {
    FieldSet kept = Intersect(e.fields, present);
    changed = changed || kept != e.fields;
    e.fields = std::move(kept);
  }
  if (!changed) return absl::OkStatus();
  json::array encoded = EncodeManagedFields(*managers);
  if (encoded.empty())
    meta->get_object().erase("managedFields");
  else
    meta->get_object()["managedFields"] = std::move(encoded);
  return absl::OkStatus();
}

FieldChange CompareFields(const json::object& old_obj, const json::object& new_obj) {
  FieldChange c;
  auto before = Leaves(old_obj);
  auto after = Leaves(new_obj);
  for (const auto& [p, v] : after) {
    c.present.insert(p);
    auto it = before.find(p);
    if (it == before.end())
      c.added.insert(p);
    else if (*it->second != *v)
      c.modified.insert(p);
  }
  for (const auto& [p, v] : before)
    if (!after.count(p)) c.removed.insert(p);
  return c;
}

void RecordUpdate(Managers& managers, const FieldChange& change, const std::string& manager,
                  const std::string& api_version, const std::string& now) {
  FieldSet changed = change.added;
  changed.insert(change.modified.begin(), change.modified.end());
  for (auto& e : managers) {
    if (e.manager == manager && e.operation == kOperationUpdate) continue;
    FieldSet kept;
    for (const auto& p : Intersect(e.fields, change.present))
      if (!changed.count(p)) kept.insert(p);
    e.fields = std::move(kept);
  }
  ManagerEntry* mine = FindEntry(managers, manager, kOperationUpdate);
  if (!mine && changed.empty()) {
    DropEmpty(managers);
    return;
  }
  if (!mine) {
    managers.push_back({manager, kOperationUpdate, api_version, now, {}});
    mine = &managers.back();
  }
  FieldSet fields = mine->fields;
  fields.insert(changed.begin(), changed.end());
  fields = Intersect(fields, change.present);
  if (fields != mine->fields || !changed.empty()) {
    mine->time = now;
    mine->api_version = api_version;
  }
  mine->fields = std::move(fields);
  DropEmpty(managers);
}

absl::Status RecordApply(Managers& managers, const FieldChange& change, const FieldSet& applied,
                         const std::string& manager, const std::string& api_version,
                         const std::string& now, bool force) {
  FieldSet changed = change.added;
  changed.insert(change.modified.begin(), change.modified.end());
  // Conflicts: another manager's field that this apply adds or modifies, or that lies under
  // a field the apply replaces with a value of another shape.
  struct Conflict {
    size_t entry;
    FieldPath path;
  };
  std::vector<Conflict> conflicts;
  for (size_t i = 0; i < managers.size(); ++i) {
    const ManagerEntry& e = managers[i];
    if (e.manager == manager && e.operation == kOperationApply) continue;
    for (const auto& p : e.fields)
      if (changed.count(p) || UnderMember(p, changed)) conflicts.push_back({i, p});
  }
  if (!conflicts.empty() && !force) {
    std::vector<FieldCause> causes;
    for (const auto& c : conflicts)
      causes.push_back({PathString(c.path), "conflict with " + DescribeManager(managers[c.entry]),
                        "FieldManagerConflict"});
    std::string message;
    if (conflicts.size() == 1) {
      message = "Apply failed with 1 conflict: conflict with " +
                DescribeManager(managers[conflicts[0].entry]) + ": " +
                PathString(conflicts[0].path);
    } else {
      // Grouped by manager, managers in the order of their descriptions.
      std::map<std::string, std::vector<std::string>> by_manager;
      for (const auto& c : conflicts)
        by_manager[DescribeManager(managers[c.entry])].push_back(PathString(c.path));
      message = "Apply failed with " + std::to_string(conflicts.size()) + " conflicts: ";
      bool first = true;
      for (const auto& [who, paths] : by_manager) {
        message += (first ? "" : "\n") + std::string("conflicts with ") + who + ":";
        first = false;
        for (const auto& p : paths) message += "\n- " + p;
      }
    }
    return ApplyConflictError(message, std::move(causes));
  }
  for (size_t i = 0; i < managers.size(); ++i) {
    ManagerEntry& e = managers[i];
    if (e.manager == manager && e.operation == kOperationApply) continue;
    FieldSet kept = Intersect(e.fields, change.present);
    for (const auto& c : conflicts)
      if (c.entry == i) kept.erase(c.path);
    e.fields = std::move(kept);
  }
  FieldSet fields = Intersect(applied, change.present);
  ManagerEntry* mine = FindEntry(managers, manager, kOperationApply);
  if (!mine) {
    managers.push_back({manager, kOperationApply, api_version, now, {}});
    mine = &managers.back();
  }
  if (fields != mine->fields || !changed.empty()) {
    mine->time = now;
    mine->api_version = api_version;
  }
  mine->fields = std::move(fields);
  DropEmpty(managers);
  return absl::OkStatus();
}

json::object MergeApplied(const json::object& live, const json::object& config) {
  json::object out = live;
  out.erase("status");
  json::object tracked = TrackedFields(config);
  MergeInto(out, tracked);
  return out;
}

FieldSet FieldsToPrune(const Managers& managers, const std::string& manager,
                       const FieldSet& applied) {
  FieldSet last, others;
  for (const auto& e : managers) {
    if (e.manager == manager && e.operation == kOperationApply)
      last = e.fields;
    else
      others.insert(e.fields.begin(), e.fields.end());
  }
  FieldSet out;
  for (const auto& p : last)
    if (!Overlaps(p, applied) && !Overlaps(p, others)) out.insert(p);
  return out;
}

void RemoveFields(json::object& obj, const FieldSet& paths) {
  for (const auto& p : paths)
    if (!p.empty()) RemovePath(obj, p, 0, 1);
}

}  // namespace gantry::model
