#include "cli/context.h"

#include <boost/json.hpp>
#include <ostream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli/kinds.h"
#include "client/kube_status.h"
#include "common/status_macros.h"

namespace gantry::cli {

namespace json = boost::json;

void PrintError(CommandContext& ctx, const absl::Status& status) {
  *ctx.err << "error: " << status.message() << "\n";
}
void PrintError(CommandContext& ctx, std::string_view message) {
  *ctx.err << "error: " << message << "\n";
}
int Fail(CommandContext& ctx, const absl::Status& status) {
  PrintError(ctx, status);
  return kExitError;
}

absl::Time Clock(const CommandContext& ctx) { return ctx.clock ? ctx.clock() : absl::Now(); }

void Pause(const CommandContext& ctx, absl::Duration d) {
  if (ctx.sleep) {
    ctx.sleep(d);
  } else {
    absl::SleepFor(d);
  }
}

absl::StatusOr<json::object> ParseObject(const client::HttpResponse& response) {
  boost::system::error_code ec;
  json::value v = json::parse(response.body, ec);
  if (ec || !v.is_object()) {
    return absl::InternalError(absl::StrCat("the server answered HTTP ", response.status,
                                            " with a body that is not a JSON object"));
  }
  return std::move(v.get_object());
}

absl::StatusOr<json::object> GetObject(client::HttpTransport& api, const std::string& path) {
  ASSIGN_OR_RETURN(client::HttpResponse res, api.Send("GET", path));
  RETURN_IF_ERROR(client::StatusFromResponse(res));
  return ParseObject(res);
}

absl::StatusOr<ListResult> ListAll(client::HttpTransport& api, const std::string& path,
                                   const std::string& query) {
  ListResult result;
  std::string token;
  for (int page = 0;; ++page) {
    std::string target = absl::StrCat(path, "?limit=", kListPageSize);
    if (!query.empty()) absl::StrAppend(&target, "&", query);
    if (!token.empty()) absl::StrAppend(&target, "&continue=", PercentEncode(token));
    ASSIGN_OR_RETURN(client::HttpResponse res, api.Send("GET", target));
    RETURN_IF_ERROR(client::StatusFromResponse(res));
    ASSIGN_OR_RETURN(json::object list, ParseObject(res));
    if (json::value* items = list.if_contains("items"); items && items->is_array()) {
      for (json::value& item : items->get_array()) {
        if (item.is_object()) result.items.push_back(std::move(item.get_object()));
      }
    }
    std::string next;
    if (json::value* md = list.if_contains("metadata"); md && md->is_object()) {
      json::object& m = md->get_object();
      if (auto* rv = m.if_contains("resourceVersion"); rv && rv->is_string()) {
        result.resource_version = std::string(rv->get_string());
      }
      if (auto* c = m.if_contains("continue"); c && c->is_string()) {
        next = std::string(c->get_string());
      }
    }
    if (next.empty()) return result;
    if (next == token) {
      return absl::InternalError("the server returned the same continue token twice");
    }
    token = std::move(next);
  }
}

}  // namespace gantry::cli
