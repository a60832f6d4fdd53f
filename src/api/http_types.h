// Transport-independent HTTP request and response (STYLE.md #9): handlers are plain
// functions from Request to Response; sockets, Beast and coroutines stay in server.cc.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/line_stream.h"

namespace gantry::api {

using ::gantry::LineStream;

struct Request {
  std::string method;  // GET, POST, PUT, PATCH, DELETE, ...
  std::string target;  // raw request-target: path and query, percent-encoded
  std::string content_type;
  std::string accept;
  std::string authorization;
  std::string cookie;      // the Cookie header (web sessions)
  std::string host;        // the Host header: which name the client reached us by
  std::string csrf;        // the X-Gantry-CSRF header
  std::string user_agent;  // names the field manager of writes without ?fieldManager=
  std::string body;
  std::string remote;  // peer address, for logs and audit
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // When set, the body is followed by this stream, sent with chunked encoding.
  std::shared_ptr<LineStream> stream;
  // When set (and `stream` is not), the body is the first piece of an answer produced as it
  // is sent, with chunked encoding (a list read from the store a page at a time): the
  // transport writes a piece, then asks for the next, until one is empty (the end). An error
  // after the status line went out cuts the connection short of the last chunk, so the
  // client sees a broken answer, never a short valid one. It runs on the transport's
  // thread and may block on the store, as Router::Handle does (the router streams GETs only).
  std::function<absl::StatusOr<std::string>()> next_piece;
};

}  // namespace gantry::api
