#include "cli/printers.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cli/table.h"
#include "client/absl_compat.h"
#include "client/yaml_json.h"
#include "model/budget.h"

namespace gantry::cli {
namespace {

namespace json = boost::json;

std::string OrNone(std::string s) { return s.empty() ? "<none>" : s; }

std::string Name(const json::object& o) { return FieldText(o, "metadata.name"); }

std::string Age(const json::object& o, absl::Time now) {
  return FormatAge(FieldText(o, "metadata.creationTimestamp"), now);
}

// A reference (spec.profileRef, spec.computeRef…) as NAME, or PROJECT/NAME when it points
// into another project.
std::string RefText(const json::object& o, std::string_view ref) {
  std::string name = FieldText(o, absl::StrCat(Sv(ref), ".name"));
  std::string ns = FieldText(o, absl::StrCat(Sv(ref), ".namespace"));
  std::string own = FieldText(o, "metadata.namespace");
  if (name.empty()) return "<none>";
  if (!ns.empty() && ns != own) return absl::StrCat(ns, "/", name);
  return name;
}

std::string ProfileColumn(const json::object& o) { return RefText(o, "spec.profileRef"); }

// "k=v,..." of a string map (outputs), "<none>" when empty.
std::string MapText(const json::object& o, std::string_view path) {
  const json::value* v = Lookup(o, path);
  if (v == nullptr || !v->is_object() || v->get_object().empty()) return "<none>";
  std::string out;
  for (const auto& kv : v->get_object())
    absl::StrAppend(&out, out.empty() ? "" : ",", std::string(kv.key()), "=",
                    ScalarText(kv.value()));
  return out;
}

// GPUs in use per type of a Node: "h100 1/8,a100 0/2" (allocated/capacity), "<none>".
std::string GpuUsageText(const json::object& o) {
  const json::value* cap = Lookup(o, "status.capacity");
  if (cap == nullptr || !cap->is_object() || cap->get_object().empty()) return "<none>";
  std::string out;
  for (const auto& kv : cap->get_object()) {
    std::string used = FieldText(o, absl::StrCat("status.allocated.", std::string(kv.key())));
    absl::StrAppend(&out, out.empty() ? "" : ",", std::string(kv.key()), " ",
                    used.empty() ? "0" : used, "/", ScalarText(kv.value()));
  }
  return out;
}

// A label selector as kubectl prints one: "tier=gpu,zone in (a,b),!spot,gpu"; "<any>" when
// it selects everything.
std::string SelectorText(const json::object& o, std::string_view path) {
  const json::value* sel = Lookup(o, path);
  std::string out;
  auto add = [&out](const std::string& part) {
    absl::StrAppend(&out, out.empty() ? "" : ",", part);
  };
  if (sel != nullptr && sel->is_object()) {
    if (const json::value* ml = sel->get_object().if_contains("matchLabels"); ml && ml->is_object())
      for (const auto& kv : ml->get_object())
        add(absl::StrCat(std::string(kv.key()), "=", ScalarText(kv.value())));
    if (const json::value* me = sel->get_object().if_contains("matchExpressions");
        me && me->is_array()) {
      for (const json::value& e : me->get_array()) {
        if (!e.is_object()) continue;
        std::string key = FieldText(e.get_object(), "key");
        std::string op = FieldText(e.get_object(), "operator");
        std::string values;
        if (const json::value* vs = e.get_object().if_contains("values"); vs && vs->is_array())
          for (const json::value& x : vs->get_array())
            absl::StrAppend(&values, values.empty() ? "" : ",", ScalarText(x));
        if (op == "Exists")
          add(key);
        else if (op == "DoesNotExist")
          add(absl::StrCat("!", key));
        else
          add(absl::StrCat(key, op == "NotIn" ? " notin (" : " in (", values, ")"));
      }
    }
  }
  return out.empty() ? "<any>" : out;
}

std::string GpuColumn(const json::object& o) {
  std::string type = FieldText(o, "spec.resources.gpu.type");
  std::string count = FieldText(o, "spec.resources.gpu.count");
  if (type.empty() && count.empty()) return "<none>";
  if (count.empty()) return type;
  return absl::StrCat(type.empty() ? "gpu" : type, " x ", count);
}

// From status.startTime to status.completionTime, or to `now` while the run goes on;
// "<none>" for a run that never started (queued, or canceled before it started).
std::string RunDuration(const json::object& o, absl::Time now) {
  std::optional<absl::Time> start = ParseTimestamp(FieldText(o, "status.startTime"));
  if (!start) return "<none>";
  std::string end_text = FieldText(o, "status.completionTime");
  if (end_text.empty()) return HumanDuration(now - *start);
  std::optional<absl::Time> end = ParseTimestamp(end_text);
  return end ? HumanDuration(*end - *start) : "<unknown>";
}

}  // namespace

namespace {

// Each column: header and how to compute the cell.
using Cell = std::function<std::string(const json::object&)>;
using Columns = std::vector<std::pair<std::string, Cell>>;

std::string Display(const json::object& o) { return OrNone(FieldText(o, "spec.displayName")); }
std::string Revision(const json::object& o) { return OrNone(FieldText(o, "status.revision")); }
std::string Status(const json::object& o) { return PhaseWords(FieldText(o, "status.phase")); }
std::string Reason(const json::object& o) { return OrNone(FieldText(o, "status.reason")); }
std::string ProfileRevision(const json::object& o) {
  return OrNone(FieldText(o, "status.profileRevision"));
}
std::string TemplateName(const json::object& o) {
  return OrNone(FieldText(o, "spec.templateRef.name"));
}

// NAME DISPLAY NAME PROFILE EXPIRES GPU% CREATED STATUS SHARING (the server's Table order);
// -o wide: PROFILE REVISION REASON ADMISSION POSITION (fair share: Guaranteed/Borrowed, and
// the place in the queue for its GPUs while Waiting).
void ComputeInstanceColumns(const TableOptions& options, const Cell& age, Columns& cols) {
  absl::Time now = options.now;
  cols.push_back({"DISPLAY NAME", Display});
  cols.push_back({"PROFILE", ProfileColumn});
  cols.push_back({"EXPIRES", [now](const json::object& o) { return ExpiresText(o, now); }});
  cols.push_back({"GPU%", GpuPercentText});
  cols.push_back({"CREATED", age});
  cols.push_back({"STATUS", Status});
  cols.push_back({"SHARING", SharingSummary});
  if (options.wide) {
    cols.push_back({"PROFILE REVISION", ProfileRevision});
    cols.push_back({"REASON", Reason});
    cols.push_back({"ADMISSION", [](const json::object& o) {
                      return OrNone(FieldText(o, "status.admission"));
                    }});
    cols.push_back({"POSITION", [](const json::object& o) {
                      return OrNone(FieldText(o, "status.queuePosition"));
                    }});
  }
}

// NAME DISPLAY NAME PROFILE COMPUTE STATUS EXPIRES GPU% AGE; -o wide: PROFILE REVISION
// REASON OUTPUTS SHARING.
void ServiceInstanceColumns(const TableOptions& options, const Cell& age, Columns& cols) {
  absl::Time now = options.now;
  cols.push_back({"DISPLAY NAME", Display});
  cols.push_back({"PROFILE", ProfileColumn});
  cols.push_back({"COMPUTE", [](const json::object& o) { return RefText(o, "spec.computeRef"); }});
  cols.push_back({"STATUS", Status});
  cols.push_back({"EXPIRES", [now](const json::object& o) { return ExpiresText(o, now); }});
  cols.push_back({"GPU%", GpuPercentText});
  cols.push_back({"AGE", age});
  if (options.wide) {
    cols.push_back({"PROFILE REVISION", ProfileRevision});
    cols.push_back({"REASON", Reason});
    cols.push_back({"OUTPUTS", [](const json::object& o) { return MapText(o, "status.outputs"); }});
    cols.push_back({"SHARING", SharingSummary});
  }
}

void ServiceProfileColumns(const TableOptions& options, const Cell& age, Columns& cols) {
  cols.push_back({"DISPLAY NAME", Display});
  cols.push_back(
      {"TYPE", [](const json::object& o) { return OrNone(FieldText(o, "spec.serviceType")); }});
  cols.push_back({"TEMPLATE", TemplateName});
  cols.push_back({"REVISION", Revision});
  cols.push_back({"AGE", age});
  if (options.wide) {
    cols.push_back({"COMPUTE SELECTOR",
                    [](const json::object& o) { return SelectorText(o, "spec.computeSelector"); }});
    cols.push_back({"AUTO-CREATE COMPUTE", [](const json::object& o) {
                      return RefText(o, "spec.autoCreateCompute.profileRef");
                    }});
    cols.push_back({"SHARING", SharingSummary});
  }
}

void RunColumns(absl::Time now, Columns& cols) {
  cols.push_back({"INSTANCE", [](const json::object& o) {
                    return OrNone(FieldText(o, "spec.instanceRef.name"));
                  }});
  cols.push_back(
      {"ACTION", [](const json::object& o) { return OrNone(FieldText(o, "spec.action")); }});
  cols.push_back(
      {"STATUS", [](const json::object& o) { return OrNone(FieldText(o, "status.phase")); }});
  cols.push_back(
      {"ATTEMPT", [](const json::object& o) { return OrNone(FieldText(o, "status.attempt")); }});
  cols.push_back({"STARTED", [now](const json::object& o) {
                    std::string start = FieldText(o, "status.startTime");
                    return start.empty() ? "<none>" : FormatAge(start, now);
                  }});
  cols.push_back({"DURATION", [now](const json::object& o) { return RunDuration(o, now); }});
  cols.push_back({"REASON", Reason});
}

// WebhookDelivery (`gantry webhooks deliveries NAME`): WEBHOOK EVENT STATUS ATTEMPTS CODE AGE
// ERROR.
void DeliveryColumns(const Cell& age, Columns& cols) {
  auto text = [](const char* path) {
    return [path](const json::object& o) { return OrNone(FieldText(o, path)); };
  };
  cols.push_back({"WEBHOOK", text("spec.webhookRef.name")});
  cols.push_back({"EVENT", text("spec.event")});
  cols.push_back({"STATUS", text("status.phase")});
  cols.push_back({"ATTEMPTS", text("status.attempts")});
  cols.push_back({"CODE", text("status.code")});
  cols.push_back({"AGE", age});
  cols.push_back({"ERROR", text("status.error")});
}

// The columns after NAME for `kind`.
void KindColumns(const KindInfo& kind, const TableOptions& options, Columns& cols) {
  const absl::Time now = options.now;
  Cell age = [now](const json::object& o) { return Age(o, now); };
  if (kind.plural == "computeinstances") {
    ComputeInstanceColumns(options, age, cols);
  } else if (kind.plural == "computeprofiles") {
    cols.push_back({"DISPLAY NAME", Display});
    cols.push_back({"TEMPLATE", TemplateName});
    cols.push_back({"GPU", GpuColumn});
    cols.push_back({"REVISION", Revision});
    cols.push_back({"SHARING", SharingSummary});
    cols.push_back({"AGE", age});
  } else if (kind.plural == "serviceprofiles") {
    ServiceProfileColumns(options, age, cols);
  } else if (kind.plural == "serviceinstances") {
    ServiceInstanceColumns(options, age, cols);
  } else if (kind.plural == "environmenttemplates") {
    cols.push_back({"DISPLAY NAME", Display});
    cols.push_back(
        {"DRIVER", [](const json::object& o) { return OrNone(FieldText(o, "spec.driver")); }});
    cols.push_back({"REVISION", Revision});
    cols.push_back({"AGE", age});
  } else if (kind.plural == "runs") {
    RunColumns(now, cols);
  } else if (kind.plural == "projects") {
    cols.push_back({"DISPLAY NAME", Display});
    cols.push_back({"BUDGET", [](const json::object& o) { return OrNone(model::BudgetText(o)); }});
    cols.push_back({"AGE", age});
  } else if (kind.plural == "webhookdeliveries") {
    DeliveryColumns(age, cols);
  } else if (kind.plural == "nodes") {
    // Nodes are computed, not stored: no age; what a platform team asks is what is free.
    cols.push_back({"GPU SOURCE", [](const json::object& o) {
                      return OrNone(FieldText(o, "status.gpuSource"));
                    }});
    cols.push_back({"GPUS (ALLOCATED/CAPACITY)", GpuUsageText});
  } else {
    cols.push_back({"AGE", age});
  }
}

}  // namespace

std::string ExpiresText(const json::object& instance, absl::Time now) {
  std::string text = FieldText(instance, "status.expiresAt");
  if (text.empty()) return "<none>";
  std::optional<absl::Time> expires = ParseTimestamp(text);
  if (!expires) return "<unknown>";
  return *expires <= now ? "expired" : HumanDuration(*expires - now);
}

std::string GpuPercentText(const json::object& instance) {
  const json::value* v = Lookup(instance, "status.gpuUtilization");
  if (v == nullptr || !v->is_number()) return "<none>";
  return absl::StrCat(v->is_double() ? std::llround(v->get_double()) : v->to_number<int64_t>(),
                      "%");
}

std::string AutomaticActionText(const json::object& instance) {
  std::string reason = FieldText(instance, "status.reason");
  std::string why = reason == "TTLExpired"  ? "TTL expired"
                    : reason == "Idle"      ? "idle"
                    : reason == "Scheduled" ? "scheduled stop"
                                            : "";
  if (why.empty()) return "";
  return absl::StrCat(PhaseWords(FieldText(instance, "status.phase")), ": ", why);
}

std::string RenderTable(const KindInfo& kind, const std::vector<json::object>& items,
                        const TableOptions& options) {
  Columns cols;
  if (options.all_projects && kind.namespaced) {
    cols.push_back({"PROJECT", [](const json::object& o) {
                      return OrNone(FieldText(o, "metadata.namespace"));
                    }});
  }
  cols.push_back({"NAME", [](const json::object& o) { return OrNone(Name(o)); }});
  KindColumns(kind, options, cols);
  if (options.wide) {
    cols.push_back({"CREATED AT", [](const json::object& o) {
                      return OrNone(FieldText(o, "metadata.creationTimestamp"));
                    }});
  }
  std::vector<std::string> headers;
  for (const auto& c : cols) headers.push_back(c.first);
  Table table(std::move(headers));
  for (const json::object& item : items) {
    std::vector<std::string> row;
    for (const auto& c : cols) row.push_back(c.second(item));
    table.AddRow(std::move(row));
  }
  return table.Render();
}

std::string RenderNames(const KindInfo& kind, const std::vector<json::object>& items) {
  std::string out;
  for (const json::object& o : items) absl::StrAppend(&out, kind.singular, "/", Name(o), "\n");
  return out;
}

std::string RenderDocument(const KindInfo& kind, const std::vector<json::object>& items,
                           bool as_list, const std::string& format) {
  json::value doc;
  auto complete = [&](json::object o) {
    if (!kind.kind.empty()) {
      if (!o.contains("apiVersion"))
        o["apiVersion"] = json::string_view(kApiGroupVersion.data(), kApiGroupVersion.size());
      if (!o.contains("kind")) o["kind"] = kind.kind;
    }
    return o;
  };
  if (!as_list && items.size() == 1) {
    doc = complete(items[0]);
  } else {
    json::array arr;
    for (const json::object& o : items) arr.push_back(complete(o));
    doc = json::object{{"apiVersion", "v1"},
                       {"kind", "List"},
                       {"metadata", json::object{{"resourceVersion", ""}}},
                       {"items", std::move(arr)}};
  }
  return format == "yaml" ? client::JsonToYaml(doc) : client::PrettyJson(doc);
}

std::string RenderRevisions(const std::vector<json::object>& items, const TableOptions& options) {
  std::vector<std::string> headers = {"REVISION", "CREATED"};
  if (options.wide) headers.push_back("CREATED AT");
  Table table(std::move(headers));
  for (const json::object& o : items) {
    std::string rev = FieldText(o, "revision");
    if (rev.empty()) rev = FieldText(o, "status.revision");
    if (rev.empty()) rev = FieldText(o, "spec.revision");
    std::string ts = FieldText(o, "creationTimestamp");
    if (ts.empty()) ts = FieldText(o, "metadata.creationTimestamp");
    std::vector<std::string> row = {OrNone(rev), FormatAge(ts, options.now)};
    if (options.wide) row.push_back(OrNone(ts));
    table.AddRow(std::move(row));
  }
  return table.Render();
}

namespace {

// "prefix.key: value" lines for every scalar leaf under `v`; empty maps and lists print as
// "{}" / "[]" so that they are visible.
void Flatten(const json::value& v, const std::string& prefix,
             std::vector<std::pair<std::string, std::string>>& out) {
  if (v.is_object()) {
    if (v.get_object().empty() && !prefix.empty()) out.push_back({prefix, "{}"});
    for (const auto& kv : v.get_object()) {
      std::string key =
          prefix.empty() ? std::string(kv.key()) : absl::StrCat(prefix, ".", std::string(kv.key()));
      Flatten(kv.value(), key, out);
    }
  } else if (v.is_array()) {
    if (v.get_array().empty()) out.push_back({prefix, "[]"});
    for (size_t i = 0; i < v.get_array().size(); ++i) {
      Flatten(v.get_array()[i], absl::StrCat(prefix, "[", i, "]"), out);
    }
  } else {
    out.push_back({prefix, v.is_null() ? "null" : ScalarText(v)});
  }
}

// Aligned "key:  value" lines, indented by `indent`.
void AppendFields(const std::vector<std::pair<std::string, std::string>>& fields, int indent,
                  std::string& out) {
  size_t width = 0;
  for (const auto& f : fields) width = std::max(width, f.first.size() + 1);
  for (const auto& f : fields) {
    out.append(static_cast<size_t>(indent), ' ');
    out += f.first;
    out += ':';
    std::string value = f.second;
    // Continuation lines of multi-line values line up under the first.
    std::string pad(static_cast<size_t>(indent) + width + 2, ' ');
    size_t pos = 0;
    while ((pos = value.find('\n', pos)) != std::string::npos && pos + 1 < value.size()) {
      value.insert(pos + 1, pad);
      pos += pad.size() + 1;
    }
    if (!value.empty() && value.back() == '\n') value.pop_back();
    out.append(width - f.first.size() - 1 + 2, ' ');
    out += value;
    out += '\n';
  }
}

std::string MapLines(const json::object& o, std::string_view path, size_t indent) {
  const json::value* v = Lookup(o, path);
  if (v == nullptr || !v->is_object() || v->get_object().empty()) return "<none>\n";
  std::string out;
  bool first = true;
  for (const auto& kv : v->get_object()) {
    if (!first) out.append(indent, ' ');
    first = false;
    absl::StrAppend(&out, std::string(kv.key()), "=", ScalarText(kv.value()), "\n");
  }
  return out;
}

// Each line of a rendered table indented by two spaces (describe's sections).
std::string Indented(const std::string& rendered) {
  std::string out;
  for (size_t start = 0; start < rendered.size();) {
    size_t nl = rendered.find('\n', start);
    absl::StrAppend(&out, "  ", rendered.substr(start, nl - start + 1));
    start = nl + 1;
  }
  return out;
}

// "2026-12-01T19:00:00Z (3h ago)", "<none>".
std::string WhenText(const json::object& o, std::string_view path, absl::Time now) {
  std::string ts = FieldText(o, path);
  if (ts.empty()) return "<none>";
  std::optional<absl::Time> t = ParseTimestamp(ts);
  if (!t) return ts;
  return absl::StrCat(ts, " (", HumanDuration(now - *t), " ago)");
}

// An instance's lifecycle: when it started, when its TTL runs out and how long is left, its
// GPUs' last utilisation, since when they are idle, and what the server last did by itself.
std::string LifecycleSection(const json::object& o, absl::Time now) {
  std::string expires = FieldText(o, "status.expiresAt");
  std::string left = ExpiresText(o, now);
  if (!expires.empty()) {
    expires = absl::StrCat(expires, left == "expired" ? " (expired)" : " (in " + left + ")");
  }
  std::string ttl = FieldText(o, "spec.lifecycle.ttl");
  std::string automatic = AutomaticActionText(o);
  std::vector<std::pair<std::string, std::string>> fields = {
      {"Started", WhenText(o, "status.startedAt", now)},
      {"Expires", OrNone(expires)},
      {"TTL", ttl.empty() ? "<profile default>" : ttl},
      {"GPU%", GpuPercentText(o)},
      {"Idle Since", WhenText(o, "status.idleSince", now)},
      {"Last Automatic Action", OrNone(automatic)},
  };
  std::string out = "Lifecycle:\n";
  AppendFields(fields, 2, out);
  return out;
}

}  // namespace

std::string RenderDescribe(const KindInfo& kind, const json::object& object, absl::Time now) {
  std::string out;
  constexpr size_t kCol = 14;  // width of the "Annotations:  " label column
  auto line = [&](std::string_view label, const std::string& value) {
    std::string l = absl::StrCat(std::string(label), ":");
    l.append(kCol > l.size() ? kCol - l.size() : 1, ' ');
    absl::StrAppend(&out, l, value, value.empty() || value.back() != '\n' ? "\n" : "");
  };
  line("Name", OrNone(Name(object)));
  if (kind.namespaced) line("Project", OrNone(FieldText(object, "metadata.namespace")));
  std::string k = FieldText(object, "kind");
  line("Kind", OrNone(k.empty() ? kind.kind : k));
  line("Labels", MapLines(object, "metadata.labels", kCol));
  line("Annotations", MapLines(object, "metadata.annotations", kCol));
  std::string created = FieldText(object, "metadata.creationTimestamp");
  line("Created", created.empty() ? "<unknown>"
                                  : absl::StrCat(created, " (", FormatAge(created, now), " ago)"));
  if (std::string uid = FieldText(object, "metadata.uid"); !uid.empty()) line("UID", uid);
  if (std::string rv = FieldText(object, "metadata.resourceVersion"); !rv.empty()) {
    line("Resource Version", rv);
  }
  if (std::string g = FieldText(object, "metadata.generation"); !g.empty()) line("Generation", g);

  for (const char* section : {"spec", "status"}) {
    const json::value* v = object.if_contains(section);
    std::vector<std::pair<std::string, std::string>> fields;
    if (v != nullptr && v->is_object()) {
      json::object copy = v->get_object();
      if (std::string_view(section) == "status") copy.erase("conditions");
      Flatten(copy, "", fields);
    }
    out += section[0] == 's' && section[1] == 'p' ? "Spec:\n" : "Status:\n";
    if (fields.empty()) {
      out += "  <none>\n";
    } else {
      AppendFields(fields, 2, out);
    }
  }

  if (kind.plural == "computeinstances" || kind.plural == "serviceinstances") {
    out += LifecycleSection(object, now);
  }
  const json::value* conds = Lookup(object, "status.conditions");
  out += "Conditions:\n";
  if (conds == nullptr || !conds->is_array() || conds->get_array().empty()) {
    out += "  <none>\n";
  } else {
    Table t({"Type", "Status", "Reason", "Message", "Last Transition"});
    for (const json::value& c : conds->get_array()) {
      if (!c.is_object()) continue;
      const json::object& co = c.get_object();
      std::string when = FieldText(co, "lastTransitionTime");
      t.AddRow({OrNone(FieldText(co, "type")), OrNone(FieldText(co, "status")),
                OrNone(FieldText(co, "reason")), OrNone(FieldText(co, "message")),
                when.empty() ? "<unknown>" : absl::StrCat(FormatAge(when, now), " ago")});
    }
    out += Indented(t.Render());
  }
  return out;
}

std::string RenderEvents(const std::vector<json::object>& events, absl::Time now) {
  if (events.empty()) return "Events:  <none>\n";
  std::vector<const json::object*> sorted;
  for (const json::object& e : events) sorted.push_back(&e);
  auto when = [](const json::object& e) {
    std::string t = FieldText(e, "lastTimestamp");
    return t.empty() ? FieldText(e, "firstTimestamp") : t;
  };
  // Oldest first, as kubectl describe lists them (RFC 3339 UTC sorts as text).
  std::stable_sort(sorted.begin(), sorted.end(), [&](const json::object* a, const json::object* b) {
    return when(*a) < when(*b);
  });
  Table t({"Type", "Reason", "Age", "From", "Message"});
  for (const json::object* e : sorted) {
    std::string from = FieldText(*e, "source.component");
    if (from.empty()) from = FieldText(*e, "reportingComponent");
    t.AddRow({OrNone(FieldText(*e, "type")), OrNone(FieldText(*e, "reason")),
              FormatAge(when(*e), now), OrNone(from), FieldText(*e, "message")});
  }
  return "Events:\n" + Indented(t.Render());
}

}  // namespace gantry::cli
