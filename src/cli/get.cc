#include "cli/get.h"

#include <boost/json.hpp>
#include <ostream>

#include "absl/strings/str_cat.h"
#include "cli/kinds.h"
#include "cli/printers.h"
#include "cli/table.h"

namespace gantry::cli {
namespace {

int Usage(CommandContext& ctx, std::string_view message) {
  PrintError(ctx, message);
  return kExitUsage;
}

// The Events section of an instance (its runs and the lifecycle warnings), as kubectl
// describe reads them: GET /api/v1/namespaces/NS/events with an involvedObject selector. A
// server that cannot answer leaves the section out; the describe itself succeeded.
std::string DescribeEvents(CommandContext& ctx, const KindInfo& kind,
                           const boost::json::object& object) {
  std::string ns = FieldText(object, "metadata.namespace");
  if (ns.empty()) ns = ctx.settings.project;
  std::string selector = absl::StrCat("involvedObject.name=", FieldText(object, "metadata.name"),
                                      ",involvedObject.kind=", kind.kind);
  absl::StatusOr<boost::json::object> list =
      GetObject(*ctx.api, absl::StrCat("/api/v1/namespaces/", PercentEncode(ns),
                                       "/events?fieldSelector=", PercentEncode(selector)));
  if (!list.ok()) return "";
  std::vector<boost::json::object> events;
  if (const boost::json::value* items = list->if_contains("items"); items && items->is_array())
    for (const boost::json::value& e : items->get_array())
      if (e.is_object()) events.push_back(e.get_object());
  return RenderEvents(events, ctx.now);
}

}  // namespace

int RunGet(CommandContext& ctx, const GetOptions& options) {
  const std::string& o = options.output;
  if (!o.empty() && o != "wide" && o != "name" && o != "json" && o != "yaml") {
    return Usage(
        ctx, absl::StrCat("unknown output format \"", o, "\": use one of json, yaml, wide, name"));
  }
  absl::StatusOr<KindInfo> kind = ResolveKind(options.kind);
  if (!kind.ok()) return Usage(ctx, std::string(kind.status().message()));
  if (!options.names.empty() && options.all_projects) {
    return Usage(ctx, "a name cannot be combined with -A (--all-projects)");
  }
  TableOptions table{o == "wide", options.all_projects, ctx.now};

  if (options.revisions) {
    if (options.names.size() != 1) return Usage(ctx, "--revisions needs exactly one NAME");
    absl::StatusOr<ListResult> list = ListAll(
        *ctx.api, ObjectPath(*kind, ctx.settings.project, options.names[0]) + "/revisions", "");
    if (!list.ok()) return Fail(ctx, list.status());
    if (o == "json" || o == "yaml") {
      KindInfo untyped;  // revision items are printed as the server sent them
      *ctx.out << RenderDocument(untyped, list->items, true, o);
    } else {
      *ctx.out << RenderRevisions(list->items, table);
    }
    return kExitOk;
  }

  std::vector<boost::json::object> items;
  bool as_list = true;
  if (!options.names.empty()) {
    int failures = 0;
    for (const std::string& name : options.names) {
      absl::StatusOr<boost::json::object> obj =
          GetObject(*ctx.api, ObjectPath(*kind, ctx.settings.project, name));
      if (!obj.ok()) {
        PrintError(ctx, obj.status());
        ++failures;
        if (obj.status().code() == absl::StatusCode::kUnavailable) return kExitError;
        continue;
      }
      items.push_back(*std::move(obj));
    }
    as_list = options.names.size() > 1;
    if (items.empty()) return kExitError;
    if (o == "json" || o == "yaml") {
      *ctx.out << RenderDocument(*kind, items, as_list, o);
    } else if (o == "name") {
      *ctx.out << RenderNames(*kind, items);
    } else {
      *ctx.out << RenderTable(*kind, items, table);
    }
    return failures == 0 ? kExitOk : kExitError;
  }

  std::string query;
  auto add = [&](std::string_view key, const std::string& value) {
    if (value.empty()) return;
    if (!query.empty()) query += '&';
    absl::StrAppend(&query, std::string(key), "=", PercentEncode(value));
  };
  add("labelSelector", options.label_selector);
  add("fieldSelector", options.field_selector);
  add("search", options.search);
  absl::StatusOr<ListResult> list =
      ListAll(*ctx.api, CollectionPath(*kind, ctx.settings.project, options.all_projects), query);
  if (!list.ok()) return Fail(ctx, list.status());
  if (o == "json" || o == "yaml") {
    *ctx.out << RenderDocument(*kind, list->items, true, o);
    return kExitOk;
  }
  if (list->items.empty()) {
    if (kind->namespaced && !options.all_projects) {
      *ctx.err << "No resources found in " << ctx.settings.project << " project.\n";
    } else {
      *ctx.err << "No resources found.\n";
    }
    return kExitOk;
  }
  if (o == "name") {
    *ctx.out << RenderNames(*kind, list->items);
  } else {
    *ctx.out << RenderTable(*kind, list->items, table);
  }
  return kExitOk;
}

int RunDescribe(CommandContext& ctx, const DescribeOptions& options) {
  absl::StatusOr<KindInfo> kind = ResolveKind(options.kind);
  if (!kind.ok()) return Usage(ctx, std::string(kind.status().message()));
  if (options.names.empty()) return Usage(ctx, "describe needs KIND NAME...");
  int failures = 0;
  bool first = true;
  for (const std::string& name : options.names) {
    absl::StatusOr<boost::json::object> obj =
        GetObject(*ctx.api, ObjectPath(*kind, ctx.settings.project, name));
    if (!obj.ok()) {
      PrintError(ctx, obj.status());
      ++failures;
      if (obj.status().code() == absl::StatusCode::kUnavailable) return kExitError;
      continue;
    }
    if (!first) *ctx.out << "\n\n";
    first = false;
    *ctx.out << RenderDescribe(*kind, *obj, ctx.now);
    if (kind->plural == "computeinstances" || kind->plural == "serviceinstances") {
      *ctx.out << DescribeEvents(ctx, *kind, *obj);
    }
  }
  return failures == 0 ? kExitOk : kExitError;
}

}  // namespace gantry::cli
