#include "api/router_responses.h"

#include "api/status_http.h"
#include "api/table.h"
#include "auth/credentials.h"
#include "common/clock.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "model/codec.h"
#include "model/sealed_fields.h"

namespace gantry::api {

namespace json = boost::json;

namespace {

// The Age column of tables only. Router has no injected clock (yet); nothing stored or
// decided depends on this reading, and tests never assert on ages.
std::chrono::system_clock::time_point TableNow() {
  static const SystemClock clock;
  return clock.Now();
}

}  // namespace

Response JsonResponse(int status, const json::object& body) {
  Response r;
  r.status = status;
  r.body = json::serialize(body);
  return r;
}

Response Text(int status, std::string body) {
  Response r;
  r.status = status;
  r.content_type = "text/plain; charset=utf-8";
  r.body = std::move(body);
  return r;
}

// Secrets never leave the server, in objects or in lists.
void Redact(json::object& body) {
  if (json::value* items = body.if_contains("items"); items && items->is_array()) {
    for (auto& item : items->get_array())
      if (item.is_object()) model::RedactSealed(item.get_object());
  } else {
    model::RedactSealed(body);
  }
}

Response FromStatusOr(absl::StatusOr<json::object> result, int ok_status) {
  if (!result.ok()) return ErrorResponse(result.status());
  Redact(*result);
  return JsonResponse(ok_status, *result);
}

Response WriteResponse(absl::StatusOr<json::object> result, int ok_status,
                       const std::vector<std::string>& warnings) {
  Response r = FromStatusOr(std::move(result), ok_status);
  if (r.status / 100 != 2) return r;
  for (const std::string& w : warnings) {
    std::string quoted = "299 - \"";
    for (unsigned char ch : w) {
      if (ch < 0x20 || ch == 0x7f) continue;
      if (ch == '"' || ch == '\\') quoted += '\\';
      quoted += static_cast<char>(ch);
    }
    r.headers.emplace_back("Warning", quoted + "\"");
  }
  return r;
}

// A get or list: JSON, or a meta.k8s.io Table when the client asks for one (kubectl get).
Response ReadResponse(const Request& request, const Query& query, const model::KindInfo& kind,
                      absl::StatusOr<json::object> result) {
  std::string version = TableVersionWanted(request.accept);
  if (version.empty() || !result.ok()) return FromStatusOr(std::move(result));
  auto include = ParseIncludeObject(query.count("includeObject") ? query.at("includeObject") : "");
  if (!include.ok()) return ErrorResponse(include.status());
  Redact(*result);
  return JsonResponse(200, ToTable(kind, *result, *include, version, TableNow()));
}

Response ReadTextResponse(const Request& request, const Query& query, const model::KindInfo& kind,
                          absl::StatusOr<std::string> text) {
  if (!text.ok()) return ErrorResponse(text.status());
  if (!TableVersionWanted(request.accept).empty() || model::HoldsSealed(*text))
    return ReadResponse(request, query, kind, model::ParseStoredObject(*text));
  Response r;
  r.status = 200;
  r.body = *std::move(text);
  return r;
}

namespace {

// The pieces of a streamed list (StreamedList): the envelope with the first page, then each
// page's items, then the end.
struct ListPieces {
  const model::KindInfo* kind;
  NextPage next;
  std::string table_version;  // "" for a plain list
  IncludeObject include = IncludeObject::kMetadata;
  std::string token;  // the next page's continue token; "" once the last page was read
  bool wrote_item = false;
  bool ended = false;

  // The page as sent: redacted, as a Table when asked for. The array to send is "items" or
  // "rows"; the continue token is taken out (into `token`).
  json::object Shape(json::object page) {
    token.clear();
    if (json::value* meta = page.if_contains("metadata"); meta && meta->is_object()) {
      token = model::GetString(meta->get_object(), "continue");
      meta->get_object().erase("continue");
    }
    Redact(page);
    if (table_version.empty()) return page;
    return ToTable(*kind, page, include, table_version, TableNow());
  }
  const char* ArrayKey() const { return table_version.empty() ? "items" : "rows"; }
  // The array's elements, each after a comma but the first of the list.
  void AppendItems(json::object& shaped, std::string& out) {
    json::value* items = shaped.if_contains(ArrayKey());
    if (!items || !items->is_array()) return;
    for (const json::value& item : items->get_array()) {
      if (wrote_item) out += ',';
      out += json::serialize(item);
      wrote_item = true;
    }
  }
  // The object without its array, left open at the array: `{"kind":...,"items":[`.
  std::string Open(json::object shaped) {
    json::value items = std::move(shaped[ArrayKey()]);
    shaped.erase(ArrayKey());
    std::string out = json::serialize(shaped);
    out.pop_back();  // the closing brace
    out += std::string(shaped.empty() ? "" : ",") + "\"" + ArrayKey() + "\":[";
    json::object only{{ArrayKey(), std::move(items)}};
    AppendItems(only, out);
    return out;
  }
  absl::StatusOr<std::string> Next() {
    std::string out;
    while (!token.empty() && out.empty()) {
      ASSIGN_OR_RETURN(json::object page, next(token));
      json::object shaped = Shape(std::move(page));
      AppendItems(shaped, out);
    }
    if (token.empty() && !ended) {
      out += "]}";
      ended = true;
    }
    return out;
  }
};

}  // namespace

Response StreamedList(const Request& request, const Query& query, const model::KindInfo& kind,
                      json::object first, NextPage next) {
  auto pieces = std::make_shared<ListPieces>();
  pieces->kind = &kind;
  pieces->next = std::move(next);
  pieces->table_version = TableVersionWanted(request.accept);
  if (!pieces->table_version.empty()) {
    auto include =
        ParseIncludeObject(query.count("includeObject") ? query.at("includeObject") : "");
    if (!include.ok()) return ErrorResponse(include.status());
    pieces->include = *include;
  }
  Response r;
  r.body = pieces->Open(pieces->Shape(std::move(first)));
  r.next_piece = [pieces] { return pieces->Next(); };
  return r;
}

// A watch: the stream of events (as one-row Tables when asked for), or the refusal.
Response WatchResponse(const Request& request, const Query& query, const model::KindInfo& kind,
                       absl::StatusOr<std::shared_ptr<LineStream>> stream) {
  if (!stream.ok()) return ErrorResponse(stream.status());
  Response r;
  r.stream = *std::move(stream);
  if (std::string version = TableVersionWanted(request.accept); !version.empty()) {
    auto include =
        ParseIncludeObject(query.count("includeObject") ? query.at("includeObject") : "");
    if (!include.ok()) {
      r.stream->Cancel();
      return ErrorResponse(include.status());
    }
    r.stream = TableWatch(std::move(r.stream), kind, *include, version, TableNow);
  }
  return r;
}

Response NotFoundPath(const std::string& path) {
  return ErrorResponse(
      NotFoundError("the server could not find the requested resource (" + path + ")"));
}

// The media type without parameters, lower-cased.
std::string MediaType(std::string_view content_type) {
  std::string out(content_type.substr(0, content_type.find(';')));
  while (!out.empty() && out.back() == ' ') out.pop_back();
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

absl::Status CheckJsonBody(const Request& r) {
  std::string type = MediaType(r.content_type);
  if (type.empty() || type == "application/json") return absl::OkStatus();
  return UnsupportedMediaTypeError("the body must be application/json, not " + type +
                                   " (the gantry CLI converts YAML for you)");
}

bool IsMutation(const std::string& method) {
  return method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE";
}

bool CsrfMatches(const Request& request, const auth::Identity& identity) {
  return auth::HashesEqual(auth::HashSecret(request.csrf), auth::HashSecret(identity.csrf));
}

}  // namespace gantry::api
