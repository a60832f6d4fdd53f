#include "api_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>

namespace gantry::testing {
namespace {

namespace json = boost::json;

// Bounds a failing wait only; a passing test never gets near it.
constexpr auto kWaitDeadline = std::chrono::seconds(120);

const json::object& EmptyObject() {
  static const json::object kEmpty;
  return kEmpty;
}

}  // namespace

std::string NsPath(const std::string& ns, const std::string& plural, const std::string& name) {
  std::string p = std::string(kGroupPath) + "/namespaces/" + ns + "/" + plural;
  if (!name.empty()) p += "/" + name;
  return p;
}

std::string ClusterPath(const std::string& plural, const std::string& name) {
  std::string p = std::string(kGroupPath) + "/" + plural;
  if (!name.empty()) p += "/" + name;
  return p;
}

std::string Escape(std::string_view s) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

const json::object& Resp::obj() const {
  return body.is_object() ? body.get_object() : EmptyObject();
}

std::string Resp::reason() const {
  const json::value* v = obj().if_contains("reason");
  return v && v->is_string() ? std::string(v->get_string()) : "";
}

std::string Resp::message() const {
  const json::value* v = obj().if_contains("message");
  return v && v->is_string() ? std::string(v->get_string()) : "";
}

int64_t Resp::code() const {
  const json::value* v = obj().if_contains("code");
  return v && v->is_int64() ? v->get_int64() : 0;
}

std::vector<std::string> Resp::cause_fields() const {
  std::vector<std::string> out;
  const json::value* d = obj().if_contains("details");
  if (!d || !d->is_object()) return out;
  const json::value* c = d->get_object().if_contains("causes");
  if (!c || !c->is_array()) return out;
  for (const auto& e : c->get_array())
    if (e.is_object())
      if (const json::value* f = e.get_object().if_contains("field"); f && f->is_string())
        out.emplace_back(f->get_string());
  return out;
}

std::string Resp::cause_message(const std::string& field) const {
  const json::value* d = obj().if_contains("details");
  if (!d || !d->is_object()) return "";
  const json::value* c = d->get_object().if_contains("causes");
  if (!c || !c->is_array()) return "";
  for (const auto& e : c->get_array()) {
    if (!e.is_object()) continue;
    const json::value* f = e.get_object().if_contains("field");
    const json::value* m = e.get_object().if_contains("message");
    if (f && f->is_string() && f->get_string() == field && m && m->is_string())
      return std::string(m->get_string());
  }
  return "";
}

std::string Resp::meta(const std::string& key) const {
  const json::value* m = obj().if_contains("metadata");
  if (!m || !m->is_object()) return "";
  const json::value* v = m->get_object().if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : "";
}

int64_t Resp::meta_int(const std::string& key) const {
  const json::value* m = obj().if_contains("metadata");
  if (!m || !m->is_object()) return 0;
  const json::value* v = m->get_object().if_contains(key);
  return v && v->is_int64() ? v->get_int64() : 0;
}

std::vector<std::string> Resp::names() const {
  std::vector<std::string> out;
  const json::value* items = obj().if_contains("items");
  if (!items || !items->is_array()) return out;
  for (const auto& it : items->get_array())
    out.push_back(std::string(it.at("metadata").at("name").as_string()));
  return out;
}

bool Resp::IsStatus(int want_code, const std::string& want_reason) const {
  const auto& o = obj();
  auto str = [&](const char* k) {
    const json::value* v = o.if_contains(k);
    return v && v->is_string() ? std::string(v->get_string()) : std::string("<absent>");
  };
  // Gantry's own 409 reasons (InstanceInProgress, HasServices, …) travel as the first cause
  // of a Conflict (src/api/status_http.cc).
  bool reason_ok = reason() == want_reason;
  if (!reason_ok && reason() == "Conflict") {
    const json::value* details = o.if_contains("details");
    const json::value* causes =
        details && details->is_object() ? details->get_object().if_contains("causes") : nullptr;
    if (causes && causes->is_array() && !causes->get_array().empty() &&
        causes->get_array()[0].is_object()) {
      const json::value* r = causes->get_array()[0].get_object().if_contains("reason");
      reason_ok = r && r->is_string() && r->get_string() == want_reason;
    }
  }
  return status == want_code && str("kind") == "Status" && str("apiVersion") == "v1" &&
         str("status") == "Failure" && code() == want_code && reason_ok && !message().empty();
}

Api::Api(std::string base_url, std::string token)
    : client_(std::move(base_url), std::move(token)) {}

Resp Api::Call(const std::string& method, const std::string& target, const std::string& body,
               const std::string& content_type) {
  Resp r;
  auto res = client_.Send(method, target, body, content_type);
  if (!res.ok()) {
    ADD_FAILURE() << method << " " << target << ": transport error: " << res.status();
    return r;
  }
  r.status = res->status;
  r.raw = res->body;
  boost::system::error_code ec;
  r.body = json::parse(r.raw, ec);
  if (ec) r.body = nullptr;
  EXPECT_LT(r.status, 500) << method << " " << target << " answered " << r.status << ": " << r.raw;
  return r;
}

bool Api::Healthy() {
  Resp r = Get("/healthz");
  return r.status == 200 && r.raw == "ok";
}

json::object Api::MustCreate(const std::string& collection, const json::value& obj) {
  Resp r = Post(collection, obj);
  EXPECT_EQ(r.status, 201) << "POST " << collection << " " << json::serialize(obj) << " → "
                           << r.raw;
  return r.obj();
}

json::object Api::CreateProject(const std::string& name, const std::string& display) {
  json::object spec;
  if (!display.empty()) spec["displayName"] = display;
  return MustCreate(ClusterPath("projects"), json::object{{"apiVersion", "paas.gantry.dev/v1"},
                                                          {"kind", "Project"},
                                                          {"metadata", {{"name", name}}},
                                                          {"spec", spec}});
}

json::object TemplateObject(const std::string& name, json::array variables) {
  json::object spec{{"displayName", "Template " + name},
                    {"driver", "exec"},
                    {"exec", {{"command", json::array{"./deploy.sh"}}}}};
  if (!variables.empty()) spec["variables"] = std::move(variables);
  return json::object{{"apiVersion", "paas.gantry.dev/v1"},
                      {"kind", "EnvironmentTemplate"},
                      {"metadata", {{"name", name}}},
                      {"spec", std::move(spec)}};
}

json::object ProfileObject(const std::string& name, const std::string& tmpl,
                           json::array variables) {
  json::object spec{{"displayName", "Profile " + name},
                    {"templateRef", {{"name", tmpl}}},
                    {"resources", {{"gpu", {{"type", "h100"}, {"count", 8}}}, {"cpu", 64}}}};
  if (!variables.empty()) spec["variables"] = std::move(variables);
  return json::object{{"apiVersion", "paas.gantry.dev/v1"},
                      {"kind", "ComputeProfile"},
                      {"metadata", {{"name", name}}},
                      {"spec", std::move(spec)}};
}

json::object InstanceObject(const std::string& name, const std::string& profile) {
  return json::object{
      {"apiVersion", "paas.gantry.dev/v1"},
      {"kind", "ComputeInstance"},
      {"metadata", {{"name", name}}},
      {"spec", {{"displayName", "Instance " + name}, {"profileRef", {{"name", profile}}}}}};
}

json::object Api::CreateTemplate(const std::string& ns, const std::string& name,
                                 json::array variables) {
  return MustCreate(NsPath(ns, "environmenttemplates"), TemplateObject(name, std::move(variables)));
}

json::object Api::CreateProfile(const std::string& ns, const std::string& name,
                                const std::string& tmpl, json::array variables,
                                json::object labels) {
  json::object obj = ProfileObject(name, tmpl, std::move(variables));
  if (!labels.empty()) obj["metadata"].as_object()["labels"] = std::move(labels);
  return MustCreate(NsPath(ns, "computeprofiles"), obj);
}

json::object Api::CreateInstance(const std::string& ns, const std::string& name,
                                 const std::string& profile, json::object labels,
                                 json::object extra_spec) {
  json::object obj = InstanceObject(name, profile);
  if (!labels.empty()) obj["metadata"].as_object()["labels"] = std::move(labels);
  for (auto& kv : extra_spec) obj["spec"].as_object()[kv.key()] = kv.value();
  return MustCreate(NsPath(ns, "computeinstances"), obj);
}

WatchCollector::WatchCollector(std::string base_url, std::string target,
                               std::function<bool(const json::object&)> stop_when,
                               std::function<void()> unblock, std::string credentials)
    : unblock_(std::move(unblock)),
      credentials_(credentials.empty()
                       ? "Authorization: Bearer " + std::string(kBootstrapToken) + "\r\n"
                       : std::move(credentials)) {
  thread_ = std::thread([this, base_url = std::move(base_url), target = std::move(target),
                         stop_when = std::move(stop_when)] { Run(base_url, target, stop_when); });
}

WatchCollector::~WatchCollector() {
  bool done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done = done_;
    if (!done && fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);  // wakes the reader's recv
  }
  if (!done && unblock_) unblock_();
  thread_.join();
}

void WatchCollector::Run(const std::string& base_url, const std::string& target,
                         const std::function<bool(const json::object&)>& stop_when) {
  auto finish = [&](absl::Status s) {
    std::lock_guard<std::mutex> lock(mu_);
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    result_ = std::move(s);
    done_ = true;
    cv_.notify_all();
  };
  // base_url is "http://127.0.0.1:PORT".
  size_t colon = base_url.rfind(':');
  int port = colon == std::string::npos ? 0 : std::atoi(base_url.c_str() + colon + 1);
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (fd >= 0) ::close(fd);
    finish(absl::UnavailableError("cannot connect to " + base_url));
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fd_ = fd;
  }
  std::string request = "GET " + target +
                        " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n" +
                        credentials_ + "Connection: close\r\n\r\n";
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    finish(absl::UnavailableError("cannot send the request"));
    return;
  }

  std::string in;  // bytes received and not consumed yet
  auto fill = [&]() -> bool {
    char buf[8192];
    while (true) {
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      in.append(buf, static_cast<size_t>(n));
      return true;
    }
  };
  size_t header_end;
  while ((header_end = in.find("\r\n\r\n")) == std::string::npos)
    if (!fill()) return finish(absl::UnavailableError("connection closed before the header"));
  std::string header = in.substr(0, header_end);
  in.erase(0, header_end + 4);
  int status = header.size() > 12 ? std::atoi(header.c_str() + 9) : 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    http_status_ = status;
  }
  std::string lower = header;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const bool chunked = lower.find("transfer-encoding: chunked") != std::string::npos;

  std::string body;  // de-chunked bytes not yet split into lines
  // Hands complete lines to the collector; false when stop_when fired.
  auto deliver = [&]() -> bool {
    size_t start = 0;
    for (size_t nl; (nl = body.find('\n', start)) != std::string::npos; start = nl + 1) {
      std::string line = body.substr(start, nl - start);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) continue;
      boost::system::error_code ec;
      json::value v = json::parse(line, ec);
      json::object event = !ec && v.is_object() ? v.get_object() : json::object{{"unparsed", line}};
      bool stop = stop_when && stop_when(event);
      {
        std::lock_guard<std::mutex> lock(mu_);
        events_.push_back(std::move(event));
        cv_.notify_all();
      }
      if (stop) {
        body.erase(0, nl + 1);
        return false;
      }
    }
    body.erase(0, start);
    return true;
  };

  if (!chunked) {
    // A plain (Content-Length or close-delimited) body: an error Status, typically.
    while (fill()) {
    }
    body += in;
    in.clear();
    if (status < 200 || status > 299) {
      return finish(absl::FailedPreconditionError("HTTP " + std::to_string(status) + ": " + body));
    }
    body += "\n";
    deliver();
    return finish(absl::OkStatus());
  }
  while (true) {
    size_t eol;
    while ((eol = in.find("\r\n")) == std::string::npos)
      if (!fill()) return finish(absl::UnavailableError("stream broke inside a chunk header"));
    size_t size = std::strtoul(in.substr(0, eol).c_str(), nullptr, 16);
    in.erase(0, eol + 2);
    if (size == 0) break;
    while (in.size() < size + 2)
      if (!fill()) return finish(absl::UnavailableError("stream broke inside a chunk"));
    body.append(in, 0, size);
    in.erase(0, size + 2);
    if (!deliver()) return finish(absl::OkStatus());
  }
  if (!body.empty()) {
    body += "\n";
    deliver();
  }
  if (status < 200 || status > 299)
    return finish(absl::FailedPreconditionError("HTTP " + std::to_string(status)));
  finish(absl::OkStatus());
}

bool WatchCollector::WaitFor(const std::function<bool(const std::vector<json::object>&)>& pred) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, kWaitDeadline, [&] { return done_ || pred(events_); });
  return pred(events_);
}

bool WatchCollector::WaitDone() {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, kWaitDeadline, [&] { return done_; });
}

int WatchCollector::http_status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return http_status_;
}

std::vector<json::object> WatchCollector::events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

std::vector<std::string> WatchCollector::Summary() const {
  std::vector<std::string> out;
  for (const auto& e : events()) {
    const json::value* type = e.if_contains("type");
    const json::value* obj = e.if_contains("object");
    std::string name;
    if (obj && obj->is_object())
      if (const json::value* m = obj->get_object().if_contains("metadata"); m && m->is_object())
        if (const json::value* n = m->get_object().if_contains("name"); n && n->is_string())
          name = std::string(n->get_string());
    out.push_back((type && type->is_string() ? std::string(type->get_string()) : "?") + " " + name);
  }
  return out;
}

absl::Status WatchCollector::result() const {
  std::lock_guard<std::mutex> lock(mu_);
  return result_;
}

}  // namespace gantry::testing
