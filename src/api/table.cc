#include "api/table.h"

#include <cmath>
#include <ctime>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "common/errors.h"
#include "model/budget.h"
#include "model/codec.h"

namespace gantry::api {
namespace {

namespace json = boost::json;
using model::GetInt;
using model::GetString;
using TimePoint = std::chrono::system_clock::time_point;

struct Column {
  std::string name;
  std::string description;
  int priority = 0;  // 1: only with -o wide
  std::function<std::string(const json::object&, TimePoint)> cell;
};

Column Path(std::string name, std::string path, int priority = 0) {
  std::string description = "The object's " + path + ".";
  return Column{std::move(name), std::move(description), priority,
                [path](const json::object& o, TimePoint) { return GetString(o, path); }};
}

Column IntPath(std::string name, std::string path, int priority = 0) {
  std::string description = "The object's " + path + ".";
  return Column{std::move(name), std::move(description), priority,
                [path](const json::object& o, TimePoint) {
                  const json::value* v = model::FindPath(o, path);
                  return v && v->is_int64() ? std::to_string(v->get_int64()) : std::string();
                }};
}

// An RFC 3339 UTC timestamp at `path` ("2026-12-02T03:00:00Z"); nullopt when absent or bad.
std::optional<TimePoint> TimeAt(const json::object& o, const std::string& path) {
  std::string ts = GetString(o, path);
  std::tm tm{};
  if (ts.empty() || !strptime(ts.c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) return std::nullopt;
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

std::chrono::seconds Seconds(std::chrono::system_clock::duration d) {
  return std::chrono::duration_cast<std::chrono::seconds>(d);
}

// "Age" as Kubernetes shows it, from metadata.creationTimestamp (RFC 3339, UTC).
Column Age() {
  return Column{"Age", "Time since the object was created.", 0,
                [](const json::object& o, TimePoint now) -> std::string {
                  std::optional<TimePoint> created = TimeAt(o, "metadata.creationTimestamp");
                  return created ? HumanDuration(Seconds(now - *created)) : "<unknown>";
                }};
}

// None, All, or "Selected (a, b)".
Column Sharing(int priority = 0) {
  return Column{"Sharing", "Projects this object is shared with.", priority,
                [](const json::object& o, TimePoint) {
                  std::string mode = GetString(o, "spec.sharing.mode", "None");
                  if (mode != "Selected") return mode;
                  std::string projects;
                  if (const json::value* p = model::FindPath(o, "spec.sharing.projects");
                      p && p->is_array())
                    for (const auto& e : p->get_array())
                      if (e.is_string())
                        projects += (projects.empty() ? "" : ", ") + std::string(e.get_string());
                  return mode + " (" + projects + ")";
                }};
}

// This month's spend against spec.budget (status.spend): "412.50/1000 EUR (41%)".
Column BudgetColumn() {
  return Column{"Budget", "This month's spend of the monthly budget (status.spend).", 0,
                [](const json::object& o, TimePoint) { return model::BudgetText(o); }};
}

// A reference as NAME, or NAMESPACE/NAME when it points into another project.
Column Ref(std::string name, std::string path, int priority = 0) {
  return Column{std::move(name), "The referenced object.", priority,
                [path](const json::object& o, TimePoint) {
                  std::string ns = GetString(o, path + ".namespace");
                  std::string n = GetString(o, path + ".name");
                  return ns.empty() || ns == GetString(o, "metadata.namespace") ? n : ns + "/" + n;
                }};
}

// A map as "key<sep>value,…" (outputs "endpoint=http://…", capacity "h100:8").
Column MapColumn(std::string name, std::string description, std::string path, std::string sep,
                 int priority = 0) {
  return Column{std::move(name), std::move(description), priority,
                [path, sep](const json::object& o, TimePoint) {
                  std::string out;
                  if (const json::value* m = model::FindPath(o, path); m && m->is_object())
                    for (const auto& kv : m->get_object())
                      out += (out.empty() ? "" : ",") + std::string(kv.key()) + sep +
                             (kv.value().is_string() ? std::string(kv.value().get_string())
                                                     : json::serialize(kv.value()));
                  return out;
                }};
}

// spec.computeSelector as kubectl prints a label selector ("tier=gpu,zone in (a,b),!spot");
// "<any>" when it selects every compute profile.
std::string SelectorText(const json::object& o) {
  std::string out;
  auto add = [&out](const std::string& part) { out += (out.empty() ? "" : ",") + part; };
  auto text = [](const json::value& v) {
    return v.is_string() ? std::string(v.get_string()) : json::serialize(v);
  };
  if (const json::value* ml = model::FindPath(o, "spec.computeSelector.matchLabels");
      ml && ml->is_object())
    for (const auto& kv : ml->get_object()) add(std::string(kv.key()) + "=" + text(kv.value()));
  if (const json::value* me = model::FindPath(o, "spec.computeSelector.matchExpressions");
      me && me->is_array()) {
    for (const auto& e : me->get_array()) {
      if (!e.is_object()) continue;
      std::string key = GetString(e.get_object(), "key");
      std::string op = GetString(e.get_object(), "operator");
      std::string values;
      if (const json::value* vs = e.get_object().if_contains("values"); vs && vs->is_array())
        for (const auto& v : vs->get_array()) values += (values.empty() ? "" : ",") + text(v);
      if (op == "Exists")
        add(key);
      else if (op == "DoesNotExist")
        add("!" + key);
      else
        add(key + (op == "NotIn" ? " notin (" : " in (") + values + ")");
    }
  }
  return out.empty() ? "<any>" : out;
}

// The seed's words for an instance's phase.
Column InstanceStatus() {
  return Column{"Status", "Deployment status.", 0, [](const json::object& o, TimePoint) {
                  std::string phase = GetString(o, "status.phase", "NotDeployed");
                  if (phase == "NotDeployed") return std::string("Not Deployed");
                  if (phase == "InProgress") return std::string("In Progress");
                  return phase;
                }};
}

// Time left until status.expiresAt as kubectl prints ages ("2h13m"); "expired" once it has
// passed, "<none>" for an instance without a TTL.
Column Expires() {
  return Column{"Expires", "Time left until the instance's TTL runs out (status.expiresAt).", 0,
                [](const json::object& o, TimePoint now) -> std::string {
                  if (GetString(o, "status.expiresAt").empty()) return "<none>";
                  std::optional<TimePoint> expires = TimeAt(o, "status.expiresAt");
                  if (!expires) return "<unknown>";
                  std::chrono::seconds left = Seconds(*expires - now);
                  return left.count() <= 0 ? "expired" : HumanDuration(left);
                }};
}

// status.gpuUtilization as kubectl top prints CPU% ("37%"); "<none>" before a sample.
Column GpuPercent() {
  return Column{"GPU%", "Mean utilisation of the instance's GPUs at the last sample.", 0,
                [](const json::object& o, TimePoint) -> std::string {
                  const json::value* v = model::FindPath(o, "status.gpuUtilization");
                  if (!v || !v->is_number()) return "<none>";
                  int64_t percent =
                      v->is_double() ? std::llround(v->get_double()) : v->to_number<int64_t>();
                  return std::to_string(percent) + "%";
                }};
}

Column NameColumn() {
  return {"Name", "Name must be unique within a project.", 0,
          [](const json::object& o, TimePoint) { return GetString(o, "metadata.name"); }};
}

std::vector<Column> ComputeProfileColumns() {
  Column gpus{"GPUs", "GPU type and count.", 1, [](const json::object& o, TimePoint) {
                std::string type = GetString(o, "spec.resources.gpu.type");
                int64_t count = GetInt(o, "spec.resources.gpu.count", 0);
                if (type.empty() && count == 0) return std::string();
                return type.empty() ? std::to_string(count) : std::to_string(count) + "x " + type;
              }};
  return {NameColumn(),
          Path("Display Name", "spec.displayName"),
          Ref("Template", "spec.templateRef"),
          IntPath("Revision", "status.revision"),
          Sharing(),
          Age(),
          gpus,
          Path("Description", "spec.description", 1)};
}

std::vector<Column> ServiceProfileColumns() {
  Column selector{"Compute Selector", "Which compute profiles the service runs on.", 1,
                  [](const json::object& o, TimePoint) { return SelectorText(o); }};
  return {NameColumn(),
          Path("Display Name", "spec.displayName"),
          Path("Type", "spec.serviceType"),
          Ref("Template", "spec.templateRef"),
          IntPath("Revision", "status.revision"),
          Age(),
          selector,
          Ref("Auto-create Compute", "spec.autoCreateCompute.profileRef", 1),
          Sharing(1),
          Path("Description", "spec.description", 1)};
}

// Admission and Position (fair share, docs/fair-share.md): Guaranteed or Borrowed, and the
// place in the queue for its GPUs while Waiting (1 = next).
std::vector<Column> ComputeInstanceColumns() {
  return {NameColumn(),
          Path("Display Name", "spec.displayName"),
          Ref("Profile", "spec.profileRef"),
          Expires(),
          GpuPercent(),
          Age(),
          InstanceStatus(),
          Sharing(),
          IntPath("Revision", "status.profileRevision", 1),
          Path("Reason", "status.reason", 1),
          Path("Last Run", "status.lastRunRef.name", 1),
          Path("Admission", "status.admission", 1),
          IntPath("Position", "status.queuePosition", 1)};
}

std::vector<Column> ServiceInstanceColumns() {
  return {NameColumn(),
          Path("Display Name", "spec.displayName"),
          Ref("Profile", "spec.profileRef"),
          Ref("Compute", "spec.computeRef"),
          InstanceStatus(),
          Expires(),
          GpuPercent(),
          Age(),
          IntPath("Revision", "status.profileRevision", 1),
          Path("Reason", "status.reason", 1),
          MapColumn("Outputs", "What the driver produced.", "status.outputs", "=", 1),
          Sharing(1)};
}

std::vector<Column> AuditEventColumns() {
  return {Path("Time", "time"),
          Path("User", "user"),
          Path("Verb", "verb"),
          Path("Resource", "objectRef.resource"),
          Path("Project", "objectRef.namespace"),
          Path("Object", "objectRef.name"),
          Path("Result", "result"),
          IntPath("Code", "code"),
          Path("Message", "message", 1),
          Path("Source", "sourceAddress", 1)};
}

std::vector<Column> ColumnsFor(const model::KindInfo& kind) {
  Column name = NameColumn();
  Column display = Path("Display Name", "spec.displayName");
  Column description = Path("Description", "spec.description", 1);
  if (kind.kind == "Project")
    return {name, display, Path("Status", "status.phase"), BudgetColumn(), Age(), description};
  if (kind.kind == "EnvironmentTemplate")
    return {name,
            display,
            Path("Driver", "spec.driver"),
            IntPath("Revision", "status.revision"),
            Sharing(),
            Age(),
            description};
  if (kind.kind == "ComputeProfile") return ComputeProfileColumns();
  if (kind.kind == "ComputeInstance") return ComputeInstanceColumns();
  if (kind.kind == "ServiceProfile") return ServiceProfileColumns();
  if (kind.kind == "ServiceInstance") return ServiceInstanceColumns();
  if (kind.kind == "Run")
    return {name,
            Path("Instance", "spec.instanceRef.name"),
            Path("Action", "spec.action"),
            Path("Status", "status.phase"),
            Age(),
            IntPath("Generation", "spec.generation", 1),
            Path("Reason", "status.reason", 1)};
  if (kind.kind == "User")
    return {name, display, Path("Email", "spec.email"), Path("Org Role", "spec.orgRole"), Age()};
  if (kind.kind == "RoleBinding")
    return {name, Path("User", "spec.user"), Path("Role", "spec.role"), Age()};
  if (kind.kind == "AuditEvent") return AuditEventColumns();
  if (kind.kind == "Webhook" || kind.kind == "ClusterWebhook")
    return {name,
            Path("URL", "spec.url"),
            Path("Format", "spec.format"),
            IntPath("Last Code", "status.lastDelivery.code"),
            Path("Last Error", "status.lastDelivery.error", 1),
            Age()};
  if (kind.kind == "WebhookDelivery")
    return {name,
            Path("Webhook", "spec.webhookRef.name"),
            Path("Event", "spec.event"),
            Path("Status", "status.phase"),
            IntPath("Attempts", "status.attempts"),
            IntPath("Code", "status.code"),
            Age(),
            Path("Error", "status.error", 1)};
  if (kind.kind == "Node")
    return {name, Path("GPU Source", "status.gpuSource"),
            MapColumn("Capacity", "GPUs per type.", "status.capacity", ":")};
  return {name, Age()};
}

json::object RowOf(const std::vector<Column>& columns, const json::object& obj,
                   IncludeObject include, std::string_view version, TimePoint now) {
  json::array cells;
  for (const auto& c : columns) cells.push_back(json::string(c.cell(obj, now)));
  json::object row{{"cells", std::move(cells)}};
  if (include == IncludeObject::kObject) {
    row["object"] = obj;
  } else if (include == IncludeObject::kMetadata) {
    const json::value* meta = obj.if_contains("metadata");
    row["object"] = json::object{{"kind", "PartialObjectMetadata"},
                                 {"apiVersion", "meta.k8s.io/" + std::string(version)},
                                 {"metadata", meta ? *meta : json::object()}};
  }
  return row;
}

json::array Definitions(const std::vector<Column>& columns) {
  json::array defs;
  for (const auto& c : columns)
    defs.push_back(json::object{{"name", c.name},
                                {"type", "string"},
                                {"format", c.name == "Name" ? "name" : ""},
                                {"description", c.description},
                                {"priority", c.priority}});
  return defs;
}

}  // namespace

std::string TableVersionWanted(std::string_view accept) {
  // Accept: a comma-separated list of media types with ;key=value parameters, in the
  // client's order of preference. The first Table entry we can serve wins.
  size_t start = 0;
  while (start <= accept.size()) {
    size_t end = accept.find(',', start);
    if (end == std::string_view::npos) end = accept.size();
    std::string_view entry = accept.substr(start, end - start);
    bool table = false, meta_group = false;
    std::string version;
    size_t p = entry.find(';');
    while (p != std::string_view::npos) {
      size_t next = entry.find(';', p + 1);
      std::string_view param = entry.substr(
          p + 1, next == std::string_view::npos ? std::string_view::npos : next - p - 1);
      while (!param.empty() && param.front() == ' ') param.remove_prefix(1);
      while (!param.empty() && param.back() == ' ') param.remove_suffix(1);
      if (param == "as=Table") table = true;
      if (param == "g=meta.k8s.io") meta_group = true;
      if (param == "v=v1" || param == "v=v1beta1") version = std::string(param.substr(2));
      p = next;
    }
    if (table && meta_group && !version.empty()) return version;
    start = end + 1;
  }
  return "";
}

absl::StatusOr<IncludeObject> ParseIncludeObject(std::string_view value) {
  if (value.empty() || value == "Metadata") return IncludeObject::kMetadata;
  if (value == "None") return IncludeObject::kNone;
  if (value == "Object") return IncludeObject::kObject;
  return BadRequestError("includeObject must be None, Metadata or Object, not \"" +
                         std::string(value) + "\"");
}

json::object ToTable(const model::KindInfo& kind, const json::object& body, IncludeObject include,
                     std::string_view version, TimePoint now) {
  std::vector<Column> columns = ColumnsFor(kind);
  json::array rows;
  json::object meta;
  if (const json::value* items = body.if_contains("items"); items && items->is_array()) {
    for (const auto& item : items->get_array())
      if (item.is_object())
        rows.push_back(RowOf(columns, item.get_object(), include, version, now));
    if (const json::value* m = body.if_contains("metadata"); m && m->is_object())
      meta = m->get_object();
  } else {
    rows.push_back(RowOf(columns, body, include, version, now));
    meta["resourceVersion"] = GetString(body, "metadata.resourceVersion");
  }
  return json::object{{"kind", "Table"},
                      {"apiVersion", "meta.k8s.io/" + std::string(version)},
                      {"metadata", std::move(meta)},
                      {"columnDefinitions", Definitions(columns)},
                      {"rows", std::move(rows)}};
}

std::shared_ptr<LineStream> TableWatch(std::shared_ptr<LineStream> events,
                                       const model::KindInfo& kind, IncludeObject include,
                                       std::string version, std::function<TimePoint()> now) {
  auto out = std::make_shared<LineStream>();
  out->timeout = events->timeout;
  out->max_pending = events->max_pending;
  // The relay runs on whichever thread pushes into `events`; the mutex keeps two pushers
  // from reordering events between draining and forwarding. It holds `out` weakly: the
  // transport owns `out`, and `out` (through its cancel hook) keeps `events` alive.
  auto mu = std::make_shared<std::mutex>();
  std::weak_ptr<LineStream> weak_out = out;
  std::weak_ptr<LineStream> weak_events = events;
  auto relay = [weak_out, weak_events, mu, &kind, include, version, now] {
    auto target = weak_out.lock();
    auto source = weak_events.lock();
    if (!target || !source) return;
    std::lock_guard<std::mutex> lock(*mu);
    bool closed = false;
    for (std::string& line : source->Drain(&closed)) {
      if (!line.empty() && line.back() == '\n') line.pop_back();
      boost::system::error_code ec;
      json::value event = json::parse(line, ec);
      if (!ec && event.is_object()) {
        json::object& e = event.as_object();
        json::value* obj = e.if_contains("object");
        std::string type = GetString(e, "type");
        if (type != "ERROR" && type != "BOOKMARK" && obj && obj->is_object())
          *obj = ToTable(kind, obj->get_object(), include, version, now());
        line = json::serialize(e);
      }
      if (!target->Push(std::move(line))) {
        source->Cancel();
        return;
      }
    }
    if (closed) target->Close();
  };
  out->SetOnCancel([events] { events->Cancel(); });
  // Initial events read in pages: the transport asks `out`, the pages go into `events`.
  out->SetRefill([weak_events] {
    auto source = weak_events.lock();
    return source && source->Refill();
  });
  events->SetWakeup(relay);
  relay();  // what was pushed before the wakeup was set (the initial ADDED events)
  return out;
}

std::string HumanDuration(std::chrono::seconds d) {
  // Kubernetes' k8s.io/apimachinery/pkg/util/duration.HumanDuration.
  int64_t seconds = d.count();
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 120) return std::to_string(seconds) + "s";
  int64_t minutes = seconds / 60;
  if (minutes < 10) {
    int64_t s = seconds % 60;
    return std::to_string(minutes) + "m" + (s ? std::to_string(s) + "s" : "");
  }
  if (minutes < 180) return std::to_string(minutes) + "m";
  int64_t hours = minutes / 60;
  if (hours < 8) {
    int64_t m = minutes % 60;
    return std::to_string(hours) + "h" + (m ? std::to_string(m) + "m" : "");
  }
  if (hours < 48) return std::to_string(hours) + "h";
  if (hours < 24 * 8) {
    int64_t h = hours % 24;
    return std::to_string(hours / 24) + "d" + (h ? std::to_string(h) + "h" : "");
  }
  if (hours < 24 * 365 * 2) return std::to_string(hours / 24) + "d";
  if (hours < 24 * 365 * 8) {
    int64_t dy = (hours / 24) % 365;
    return std::to_string(hours / 24 / 365) + "y" + (dy ? std::to_string(dy) + "d" : "");
  }
  return std::to_string(hours / 24 / 365) + "y";
}

}  // namespace gantry::api
