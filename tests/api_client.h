// Helpers shared by the integration tests: a thin JSON wrapper over gantry::client::HttpClient
// that records the invariant "gantryd never answers 5xx" on every call, builders for the
// objects the tests create, and a watch collector that runs a `?watch=true` stream on its own
// thread.
//
// Thread-safety: an Api (like its HttpClient) is for one thread; WatchCollector is safe to
// read from the test thread while its stream thread appends.
#pragma once

#include <boost/json.hpp>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "client/http_client.h"
#include "test_credentials.h"

namespace gantry::testing {

inline constexpr char kGroupPath[] = "/apis/paas.gantry.dev/v1";

// "/apis/paas.gantry.dev/v1/namespaces/NS/PLURAL[/NAME]".
std::string NsPath(const std::string& ns, const std::string& plural, const std::string& name = "");
// "/apis/paas.gantry.dev/v1/PLURAL[/NAME]" (projects, and lists across projects).
std::string ClusterPath(const std::string& plural, const std::string& name = "");
// Percent-encodes a query value.
std::string Escape(std::string_view s);

struct Resp {
  int status = 0;
  std::string raw;          // the body as received
  boost::json::value body;  // parsed body; null when the body is not JSON

  const boost::json::object& obj() const;
  // Status fields, "" when absent.
  std::string reason() const;
  std::string message() const;
  int64_t code() const;
  // details.causes[].field, in order.
  std::vector<std::string> cause_fields() const;
  // details.causes[i].message for the first cause with this field, "" when none.
  std::string cause_message(const std::string& field) const;
  // metadata.* string of the object (or list) returned.
  std::string meta(const std::string& key) const;
  int64_t meta_int(const std::string& key) const;
  // items[].metadata.name of a list.
  std::vector<std::string> names() const;
  // True when the body is a Kubernetes Status with this code and reason (for a 409, Gantry's
  // own reason may also be the first cause of a Conflict: src/api/status_http.cc).
  bool IsStatus(int code, const std::string& reason) const;
};

class Api {
 public:
  // Sends `token` as a bearer token (by default the harness's org-admin bootstrap token;
  // "" sends no credentials).
  explicit Api(std::string base_url, std::string token = kBootstrapToken);

  // Every call adds a test failure when the answer is a 5xx or the transport fails.
  Resp Call(const std::string& method, const std::string& target, const std::string& body = "",
            const std::string& content_type = "application/json");
  Resp Get(const std::string& target) { return Call("GET", target); }
  Resp Post(const std::string& target, const boost::json::value& body) {
    return Call("POST", target, boost::json::serialize(body));
  }
  Resp Put(const std::string& target, const boost::json::value& body) {
    return Call("PUT", target, boost::json::serialize(body));
  }
  Resp Patch(const std::string& target, const boost::json::value& body) {
    return Call("PATCH", target, boost::json::serialize(body), "application/merge-patch+json");
  }
  Resp Delete(const std::string& target) { return Call("DELETE", target); }

  // GET /healthz answered 200 "ok".
  bool Healthy();

  // Creates and expects 201; returns the stored object.
  boost::json::object MustCreate(const std::string& collection, const boost::json::value& obj);

  // Convenience: project `name`; exec template `name` (variables as given) in `ns`; profile
  // `name` on `tmpl`; instance `name` of `profile`.
  boost::json::object CreateProject(const std::string& name, const std::string& display = "");
  boost::json::object CreateTemplate(const std::string& ns, const std::string& name,
                                     boost::json::array variables = {});
  boost::json::object CreateProfile(const std::string& ns, const std::string& name,
                                    const std::string& tmpl, boost::json::array variables = {},
                                    boost::json::object labels = {});
  boost::json::object CreateInstance(const std::string& ns, const std::string& name,
                                     const std::string& profile, boost::json::object labels = {},
                                     boost::json::object extra_spec = {});

  client::HttpClient& http() { return client_; }

 private:
  client::HttpClient client_;
};

// Object builders (no I/O).
boost::json::object TemplateObject(const std::string& name, boost::json::array variables = {});
boost::json::object ProfileObject(const std::string& name, const std::string& tmpl,
                                  boost::json::array variables = {});
boost::json::object InstanceObject(const std::string& name, const std::string& profile);

// GETs `target` (a `?watch=true` stream) on its own thread over a plain socket and collects
// every line of the body, parsed, as it arrives. The test waits for conditions on what arrived
// (WaitFor, with a generous deadline that only bounds a failure). `stop_when` ends the stream
// from the client side when it returns true for an event.
//
// Why not client::HttpClient::Stream: it reads the body with http::read into a 16 KiB buffer
// and hands over nothing until 16 KiB arrived or the stream ended (src/client/http_client.cc,
// the http::read in Stream), so a quiet watch would never be seen live.
//
// The destructor shuts the socket down and joins; `unblock` is kept for callers that want
// more (it is called when the stream is still open at destruction, before the shutdown).
// `credentials`: the header lines that authenticate the request, each ending in "\r\n"
// ("Cookie: gantry_session=…\r\n"); "" sends the harness's bootstrap token.
class WatchCollector {
 public:
  WatchCollector(std::string base_url, std::string target,
                 std::function<bool(const boost::json::object& event)> stop_when,
                 std::function<void()> unblock = nullptr, std::string credentials = "");
  ~WatchCollector();
  WatchCollector(const WatchCollector&) = delete;
  WatchCollector& operator=(const WatchCollector&) = delete;

  // Waits until pred(events so far) holds or the stream ended; returns pred's last value.
  bool WaitFor(const std::function<bool(const std::vector<boost::json::object>&)>& pred);
  // Waits for the stream to end (server ended the body, the connection broke, or stop_when).
  bool WaitDone();
  std::vector<boost::json::object> events() const;
  // "TYPE name" per event, for readable assertions.
  std::vector<std::string> Summary() const;
  // OK when the server answered 2xx and ended the body cleanly or stop_when fired; else why.
  absl::Status result() const;
  // The HTTP status of the answer (0 until the header arrived).
  int http_status() const;

 private:
  void Run(const std::string& base_url, const std::string& target,
           const std::function<bool(const boost::json::object&)>& stop_when);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<boost::json::object> events_;  // guarded by mu_
  bool done_ = false;                        // guarded by mu_
  absl::Status result_;                      // guarded by mu_
  int http_status_ = 0;                      // guarded by mu_
  int fd_ = -1;                              // guarded by mu_
  std::function<void()> unblock_;
  const std::string credentials_;  // header lines, constant after construction
  std::thread thread_;
};

}  // namespace gantry::testing
