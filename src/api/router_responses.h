// The answers the router builds (router.cc, api_routes.cc): JSON and text responses,
// Kubernetes Tables for kubectl get, watch streams, and the checks of a request's media
// type. Secrets are redacted from every object and list on the way out.
//
// Thread-safety: plain functions.
#pragma once

#include <boost/json.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "api/http_types.h"
#include "api/query_params.h"
#include "auth/authenticator.h"
#include "model/schema.h"

namespace gantry::api {

Response JsonResponse(int status, const boost::json::object& body);
Response Text(int status, std::string body);
// Secrets never leave the server, in objects or in lists.
void Redact(boost::json::object& body);
// The object (redacted) with `ok_status`, or the Status of the error.
Response FromStatusOr(absl::StatusOr<boost::json::object> result, int ok_status = 200);
// The answer to a create or an update: FromStatusOr, with each of `warnings` as a
// `Warning: 299 - "..."` header (RFC 7234's warn-code 299, as the Kubernetes API server sends
// them; kubectl prints each as "Warning: ..."). Quotes and backslashes are escaped, control
// characters dropped.
Response WriteResponse(absl::StatusOr<boost::json::object> result, int ok_status,
                       const std::vector<std::string>& warnings);
// A get or list: JSON, or a meta.k8s.io Table when the client asks for one (kubectl get).
Response ReadResponse(const Request& request, const Query& query, const model::KindInfo& kind,
                      absl::StatusOr<boost::json::object> result);
// A get from the object's stored JSON text (ResourceService::GetText): the text is sent as
// it is (no parse, no walk, no serialisation) when the answer is plain JSON and the object
// holds no sealed value to redact; otherwise it is read and answered as ReadResponse does.
Response ReadTextResponse(const Request& request, const Query& query, const model::KindInfo& kind,
                          absl::StatusOr<std::string> text);
// Reads the page of a list that a continue token names (ResourceService::List with it).
using NextPage =
    std::function<absl::StatusOr<boost::json::object>(const std::string& continue_token)>;
// A list sent as it is read, a page at a time (chunked): one JSON list, or one Table when the
// client asks for one, as ReadResponse would answer the whole list, written incrementally so
// that only a page is ever in memory. `first` is the first page as ResourceService::List
// returns it; while a page has metadata.continue, `next` reads the one after. The answer
// carries the first page's resourceVersion and no continue token. What that guarantees:
// docs/api.md, "Lists".
Response StreamedList(const Request& request, const Query& query, const model::KindInfo& kind,
                      boost::json::object first, NextPage next);
// A watch: the stream of events (as one-row Tables when asked for), or the refusal.
Response WatchResponse(const Request& request, const Query& query, const model::KindInfo& kind,
                       absl::StatusOr<std::shared_ptr<LineStream>> stream);
// 404 for a path nothing is served at.
Response NotFoundPath(const std::string& path);
// The media type without parameters, lower-cased.
std::string MediaType(std::string_view content_type);
// 415 unless the body is JSON (or has no type).
absl::Status CheckJsonBody(const Request& r);
bool IsMutation(const std::string& method);
// A change made with a session cookie carries the session's CSRF token in X-Gantry-CSRF.
bool CsrfMatches(const Request& request, const auth::Identity& identity);

}  // namespace gantry::api
