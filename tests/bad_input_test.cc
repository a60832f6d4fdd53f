// Integration tests of bad input against a real gantryd: malformed and oversize bodies,
// invalid UTF-8, unknown kinds and projects, path tricks, wrong content types, odd query
// values, garbage HTTP on a raw socket. Every refusal is a Kubernetes Status with the right
// code and reason, nothing is written, no answer is a 5xx, and /healthz still answers after
// (GantrydTest::TearDown checks it after every test). Also: OpenAPI, discovery, SIGTERM.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "gantryd_test.h"
#include "raw_socket.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
using ::testing::Contains;
using ::testing::IsEmpty;
using namespace std::string_literals;

// Sends `bytes` on a fresh connection, half-closes, and reads the answer until the server
// closes. Returns the raw response ("" on a connection error, with a test failure).
std::string RawExchange(int port, const std::string& bytes) {
  int fd = ConnectLoopback(port);
  if (fd < 0) return "";
  size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may answer and close before reading everything
    sent += static_cast<size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  std::string out = ReadUntilClosed(fd);
  ::close(fd);
  return out;
}

// Splits a raw HTTP/1.1 response into status code and body (Content-Length framed).
Resp ParseRaw(const std::string& raw) {
  Resp r;
  if (raw.rfind("HTTP/1.1 ", 0) != 0 || raw.size() < 12) return r;
  r.status = std::atoi(raw.c_str() + 9);
  size_t end = raw.find("\r\n\r\n");
  if (end == std::string::npos) return r;
  r.raw = raw.substr(end + 4);
  boost::system::error_code ec;
  r.body = json::parse(r.raw, ec);
  if (ec) r.body = nullptr;
  return r;
}

class BadInputTest : public GantrydTest {
 protected:
  std::vector<std::string> Args() override { return {"--max-body-bytes", "4096"}; }

  void SetUp() override {
    GantrydTest::SetUp();
    if (HasFatalFailure()) return;
    api().CreateTemplate("default", "t");
    api().CreateProfile("default", "p", "t");
    instance_ = api().CreateInstance("default", "i", "p");
  }

  std::string Instances() { return NsPath("default", "computeinstances"); }
  std::string Instance() { return NsPath("default", "computeinstances", "i"); }

  // Nothing was written: the only instance is still exactly as created.
  void ExpectUnchanged() {
    EXPECT_EQ(api().Get(Instances()).names(), std::vector<std::string>{"i"});
    EXPECT_EQ(api().Get(Instance()).obj(), instance_);
  }

  json::object instance_;
};

TEST_F(BadInputTest, MalformedBodiesAreBadRequest) {
  struct Case {
    std::string body, message;
  };
  const std::vector<Case> cases = {
      {"", "the request body is empty; expected a JSON object"},
      {"{\"metadata\":",
       "the request body is not valid JSON: incomplete JSON at line 1, column 13"},
      {"{\"a\":1}{\"b\":2}", "the request body is not valid JSON: extra data at line 1, column 8"},
      {"{'metadata': {}}", "the request body is not valid JSON: syntax error at line 1, column 2"},
      {"{\"metadata\":{\"name\":\"x\",}}",
       "the request body is not valid JSON: syntax error at line 1, column 25"},
      {"{\n  \"metadata\": {\n    \"name\": x\n  }\n}",
       "the request body is not valid JSON: syntax error at line 3, column 13"},
      {"[1]", "the request body must be a JSON object"},
      {"null", "the request body must be a JSON object"},
      {"\"spec\"", "the request body must be a JSON object"},
      {std::string(100, '[') + std::string(100, ']'),
       "the request body is not valid JSON: nesting deeper than 64 levels at line 1, column 65"},
      {std::string(70, '{'),
       "the request body is not valid JSON: syntax error at line 1, column 2"},
  };
  for (const auto& c : cases) {
    for (const std::string method : {"POST", "PUT", "PATCH"}) {
      Resp r = api().Call(method, method == "POST" ? Instances() : Instance(), c.body,
                          method == "PATCH" ? "application/merge-patch+json" : "application/json");
      EXPECT_TRUE(r.IsStatus(400, "BadRequest")) << method << " " << c.body << ": " << r.raw;
      EXPECT_EQ(r.message(), c.message) << method << " " << c.body;
    }
  }
  ExpectUnchanged();
}

TEST_F(BadInputTest, InvalidUtf8IsBadRequest) {
  // The bad byte's position is reported (the prefix before it is 48 bytes long).
  const std::string prefix = "{\"metadata\":{\"name\":\"u\"},\"spec\":{\"displayName\":\"";
  const std::string suffix = "\",\"profileRef\":{\"name\":\"p\"}}}";
  struct Case {
    std::string body, message;
  };
  const std::vector<Case> cases = {
      {prefix + "\xff\xfe" + suffix,
       "the request body is not valid JSON: syntax error at line 1, column 49"},
      {prefix + "\xc0\xaf" + suffix,  // overlong '/'
       "the request body is not valid JSON: syntax error at line 1, column 49"},
      {prefix + "\xed\xa0\x80" + suffix,  // UTF-16 surrogate
       "the request body is not valid JSON: syntax error at line 1, column 49"},
      {prefix + "cut \xe2\x82" + suffix,  // truncated sequence
       "the request body is not valid JSON: syntax error at line 1, column 53"},
      {"{\"\xff\":1}", "the request body is not valid JSON: syntax error at line 1, column 3"},
  };
  for (const auto& c : cases) {
    Resp r = api().Call("POST", Instances(), c.body);
    EXPECT_TRUE(r.IsStatus(400, "BadRequest")) << r.raw;
    EXPECT_EQ(r.message(), c.message);
    Resp p = api().Call("PATCH", Instance(), c.body, "application/merge-patch+json");
    EXPECT_TRUE(p.IsStatus(400, "BadRequest")) << p.raw;
  }
  // Valid multi-byte UTF-8 is of course fine.
  json::object ok = InstanceObject("utf8", "p");
  ok["spec"].as_object()["displayName"] = "Größe 8× H100 — 训练";
  Resp r = api().Post(Instances(), ok);
  ASSERT_EQ(r.status, 201) << r.raw;
  EXPECT_EQ(r.obj().at("spec").at("displayName"), "Größe 8× H100 — 训练");
}

TEST_F(BadInputTest, BodyOverTheLimitIs413) {
  json::object big = InstanceObject("big", "p");
  big["spec"].as_object()["description"] = std::string(5000, 'x');
  Resp r = api().Post(Instances(), big);
  EXPECT_TRUE(r.IsStatus(413, "RequestEntityTooLarge")) << r.raw;
  EXPECT_EQ(r.message(), "the request body is larger than the limit of 4096 bytes");

  // Announced by Content-Length alone: refused before the body is read.
  std::string raw =
      RawExchange(gantryd_->port(), "POST " + Instances() +
                                        " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                        "Content-Length: 1000000000\r\n\r\n{");
  Resp rr = ParseRaw(raw);
  EXPECT_TRUE(rr.IsStatus(413, "RequestEntityTooLarge")) << raw;

  // Just under the limit is fine.
  Api fresh(gantryd_->base_url());
  json::object fits = InstanceObject("fits", "p");
  fits["spec"].as_object()["description"] = std::string(3500, 'x');
  EXPECT_EQ(fresh.Post(Instances(), fits).status, 201);
  EXPECT_TRUE(fresh.Get(Instances() + "/big").IsStatus(404, "NotFound"));
}

TEST_F(BadInputTest, UnknownKindsAreNotFound) {
  for (const std::string& path :
       {NsPath("default", "widgets"), NsPath("default", "widgets", "x"), ClusterPath("widgets"),
        NsPath("default", "computeinstance"), NsPath("default", "ComputeInstances")}) {
    Resp r = api().Get(path);
    EXPECT_TRUE(r.IsStatus(404, "NotFound")) << path << ": " << r.raw;
  }
  Resp r = api().Post(NsPath("default", "widgets"), InstanceObject("x", "p"));
  EXPECT_TRUE(r.IsStatus(404, "NotFound")) << r.raw;
  EXPECT_EQ(r.message(), "the server doesn't have a resource type \"widgets\"");

  Resp group = api().Get("/apis/other.dev/v1/namespaces/default/computeinstances");
  EXPECT_TRUE(group.IsStatus(404, "NotFound")) << group.raw;
  EXPECT_EQ(group.message(),
            "the server could not find the requested resource "
            "(/apis/other.dev/v1/namespaces/default/computeinstances)");
  Resp version = api().Get("/apis/paas.gantry.dev/v2/projects");
  EXPECT_TRUE(version.IsStatus(404, "NotFound")) << version.raw;

  Resp ns = api().Get(std::string(kGroupPath) + "/namespaces/default");
  EXPECT_TRUE(ns.IsStatus(404, "NotFound")) << ns.raw;
  EXPECT_EQ(ns.message(), "projects are served at /apis/paas.gantry.dev/v1/projects/default");
  Resp deep = api().Get(Instance() + "/a/b/c");
  EXPECT_TRUE(deep.IsStatus(404, "NotFound")) << deep.raw;
  ExpectUnchanged();
}

TEST_F(BadInputTest, UnknownProjectIsNotFound) {
  for (const std::string method : {"GET", "PUT", "PATCH", "DELETE"}) {
    Resp r = api().Call(method, NsPath("ghost", "computeinstances", "i"),
                        json::serialize(InstanceObject("i", "p")),
                        method == "PATCH" ? "application/merge-patch+json" : "application/json");
    EXPECT_TRUE(r.IsStatus(404, "NotFound")) << method << ": " << r.raw;
    EXPECT_EQ(r.message(), "project \"ghost\" not found") << method;
  }
  Resp create = api().Post(NsPath("ghost", "computeinstances"), InstanceObject("i", "p"));
  EXPECT_TRUE(create.IsStatus(404, "NotFound")) << create.raw;
  EXPECT_EQ(create.message(), "project \"ghost\" not found");
  EXPECT_TRUE(api().Get(ClusterPath("projects", "ghost")).IsStatus(404, "NotFound"));
}

TEST_F(BadInputTest, PathTricksAreRefused) {
  struct Case {
    std::string target, message;
  };
  const std::string g = kGroupPath;
  const std::vector<Case> cases = {
      {g + "/namespaces/default/%2e%2e/computeinstances",
       "the request path contains an invalid segment \"..\""},
      {g + "/namespaces/default/%2E%2E/computeinstances",
       "the request path contains an invalid segment \"..\""},
      {g + "/namespaces/default/computeinstances/%2e",
       "the request path contains an invalid segment \".\""},
      {g + "/namespaces/default/computeinstances/../../../projects",
       "the request path contains an invalid segment \"..\""},
      {g + "/namespaces/%2e%2e/projects", "the request path contains an invalid segment \"..\""},
      {g + "/namespaces/default/computeinstances/a%2Fb",
       "the request path contains an invalid segment \"a/b\""},
      {g + "/namespaces/default%2Fcomputeinstances",
       "the request path contains an invalid segment \"default/computeinstances\""},
      {g + "/namespaces/default/computeinstances/a%00b",
       "the request path contains an invalid segment \"a\0b\""s},
      {g + "/namespaces/default/computeinstances/%zz", "the request path is not a valid URL path"},
  };
  for (const auto& c : cases) {
    for (const std::string method : {"GET", "DELETE"}) {
      Resp r = api().Call(method, c.target);
      EXPECT_TRUE(r.IsStatus(400, "BadRequest")) << method << " " << c.target << ": " << r.raw;
      EXPECT_EQ(r.message(), c.message) << c.target;
    }
  }
  // Empty segments are tolerated and name the same resource.
  Resp slashes = api().Get("//apis//paas.gantry.dev/v1//namespaces/default/computeinstances/i/");
  EXPECT_EQ(slashes.status, 200) << slashes.raw;
  EXPECT_EQ(slashes.obj(), instance_);
  // A name that decodes to something else is just another (missing) name.
  EXPECT_TRUE(api().Get(Instances() + "/%69%20").IsStatus(404, "NotFound"));
  ExpectUnchanged();
}

TEST_F(BadInputTest, NonOriginFormTargetsAreRefused) {
  for (const std::string target : {"*", "http://evil.example/apis", "apis/paas.gantry.dev/v1"}) {
    std::string raw =
        RawExchange(gantryd_->port(), "GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n");
    Resp r = ParseRaw(raw);
    EXPECT_TRUE(r.IsStatus(400, "BadRequest")) << target << ": " << raw;
    EXPECT_EQ(r.message(), "the request path is not a valid URL path");
  }
}

TEST_F(BadInputTest, WrongContentTypesAre415) {
  const std::string yaml = "metadata:\n  name: y\n";
  Resp post = api().Call("POST", Instances(), yaml, "application/yaml");
  EXPECT_TRUE(post.IsStatus(415, "UnsupportedMediaType")) << post.raw;
  EXPECT_EQ(post.message(),
            "the body must be application/json, not application/yaml (the gantry CLI converts "
            "YAML for you)");
  Resp put = api().Call("PUT", Instance(), "<i/>", "application/xml");
  EXPECT_TRUE(put.IsStatus(415, "UnsupportedMediaType")) << put.raw;
  EXPECT_EQ(put.message(),
            "the body must be application/json, not application/xml (the gantry CLI converts "
            "YAML for you)");
  Resp form = api().Call("POST", Instances(), "a=b", "application/x-www-form-urlencoded");
  EXPECT_TRUE(form.IsStatus(415, "UnsupportedMediaType")) << form.raw;

  // Media types are compared without parameters and case.
  json::object obj = InstanceObject("typed", "p");
  EXPECT_EQ(api()
                .Call("POST", Instances(), json::serialize(obj), "Application/JSON; charset=utf-8")
                .status,
            201);
  EXPECT_EQ(api().Get(Instances()).names(), (std::vector<std::string>{"typed", "i"}));
}

TEST_F(BadInputTest, UnsupportedPatchTypesAre415) {
  struct Case {
    std::string type, body;
  };
  const std::vector<Case> cases = {
      {"application/json", "{\"spec\":{}}"},
      {"", "{\"spec\":{}}"},
  };
  for (const auto& c : cases) {
    Resp r = api().Call("PATCH", Instance(), c.body, c.type);
    EXPECT_TRUE(r.IsStatus(415, "UnsupportedMediaType")) << c.type << ": " << r.raw;
    EXPECT_EQ(r.message(), "the patch type \"" + c.type +
                               "\" is not supported; use application/merge-patch+json, "
                               "application/json-patch+json or application/apply-patch+yaml");
  }
  // Strategic merge needs Go types' patch strategies: refused as Kubernetes refuses it for
  // custom resources, saying what to use instead.
  Resp smp =
      api().Call("PATCH", Instance(), "{\"spec\":{}}", "application/strategic-merge-patch+json");
  EXPECT_TRUE(smp.IsStatus(415, "UnsupportedMediaType")) << smp.raw;
  EXPECT_EQ(smp.message(),
            "strategic merge patch is not supported for computeinstances.paas.gantry.dev: use "
            "kubectl patch --type=merge or --type=json (application/merge-patch+json, "
            "application/json-patch+json or application/apply-patch+yaml)");
  ExpectUnchanged();
}

TEST_F(BadInputTest, MergePatchMustBeAnObject) {
  for (const std::string body : {"[1]", "null", "\"x\"", "42"}) {
    Resp r = api().Call("PATCH", Instance(), body, "application/merge-patch+json");
    EXPECT_TRUE(r.IsStatus(400, "BadRequest")) << body << ": " << r.raw;
    EXPECT_EQ(r.message(), "the request body must be a JSON object");
  }
  Resp nospec = api().Patch(Instance(), json::object{{"spec", nullptr}});
  EXPECT_TRUE(nospec.IsStatus(422, "Invalid")) << nospec.raw;
  EXPECT_EQ(nospec.cause_message("spec"), "Required value");
  ExpectUnchanged();
}

TEST_F(BadInputTest, UnsupportedMethodsAre405) {
  struct Case {
    std::string method, target, message;
  };
  const std::vector<Case> cases = {
      {"DELETE", Instances(), "DELETE is not supported on a collection"},
      {"PUT", Instances(), "PUT is not supported on a collection"},
      {"PATCH", Instances(), "PATCH is not supported on a collection"},
      {"POST", Instance(), "POST is not supported on computeinstances"},
      {"POST", "/healthz", "use GET"},
      {"DELETE", "/readyz", "use GET"},
  };
  for (const auto& c : cases) {
    Resp r = api().Call(c.method, c.target, "{}");
    EXPECT_TRUE(r.IsStatus(405, "MethodNotAllowed"))
        << c.method << " " << c.target << ": " << r.raw;
    EXPECT_EQ(r.message(), c.message);
  }
  ExpectUnchanged();
}

TEST_F(BadInputTest, HugeAndOddQueryValues) {
  struct Case {
    std::string query, message;
  };
  const std::vector<Case> cases = {
      {"limit=%00", "limit must be a non-negative integer, not \"\0\""s},
      {"limit=1e3", "limit must be a non-negative integer, not \"1e3\""},
      {"limit=18446744073709551616",
       "limit must be a non-negative integer, not \"18446744073709551616\""},
      {"search=" + std::string(1000, 'q'), "search text is longer than 256 characters"},
      {"continue=c1.", "continue token \"c1.\" is not valid; start the list again"},
      {"continue=c1.-5", "continue token \"c1.-5\" is not valid; start the list again"},
      {"fieldSelector=metadata.name%3Da%5C", "invalid field selector: invalid escape sequence: \\"},
      {"fieldSelector=metadata.name%3Da%3Db",
       "invalid field selector: unescaped character in value: '='"},
  };
  for (const auto& c : cases) {
    Resp r = api().Get(Instances() + "?" + c.query);
    EXPECT_TRUE(r.IsStatus(400, "BadRequest")) << c.query.substr(0, 80) << ": " << r.raw;
    EXPECT_EQ(r.message(), c.message) << c.query.substr(0, 80);
  }
  // Selectors that are long, binary or not UTF-8 are refused, not crashed on.
  for (const std::string& sel :
       {std::string(10000, 'a'), std::string("%ff%fe=x"), std::string("a=%ff"), std::string("%00"),
        std::string(2000, '('), std::string("a in (") + std::string(5000, ',') + ")"}) {
    Resp r = api().Get(Instances() + "?labelSelector=" + sel);
    EXPECT_TRUE(r.IsStatus(400, "BadRequest")) << sel.substr(0, 40) << ": " << r.raw;
  }
  // A very long query string overflows the header limit: 400 from the HTTP layer.
  std::string raw =
      RawExchange(gantryd_->port(), "GET " + Instances() + "?search=" + std::string(70000, 'x') +
                                        " HTTP/1.1\r\nHost: x\r\n\r\n");
  Resp r = ParseRaw(raw);
  EXPECT_TRUE(r.IsStatus(400, "BadRequest")) << raw.substr(0, 300);
  EXPECT_EQ(r.message(), "malformed HTTP request: header limit exceeded");

  // Unknown and repeated parameters are harmless.
  EXPECT_EQ(api().Get(Instances() + "?pretty=true&limit=1&limit=2&x=%zz%").status, 400);
  EXPECT_EQ(api().Get(Instances() + "?pretty=true&unknown=1").status, 200);
  EXPECT_EQ(api().Get(Instances() + "?watch=False").names(), std::vector<std::string>{"i"});
  // Kubernetes takes every value but 0 and false for true (api/query_params.h): a watch.
  WatchCollector maybe(gantryd_->base_url(), Instances() + "?watch=maybe",
                       [](const json::object&) { return true; });
  ASSERT_TRUE(maybe.WaitDone());
  EXPECT_EQ(maybe.Summary(), std::vector<std::string>{"ADDED i"});
  ExpectUnchanged();
}

TEST_F(BadInputTest, GarbageHttpOnARawSocketIs400) {
  struct Case {
    std::string bytes, message;
  };
  const std::vector<Case> cases = {
      {"GARBAGE\r\n\r\n", "malformed HTTP request: bad method"},
      {std::string("\x00\x01\x02\xff\r\n\r\n", 8), "malformed HTTP request: bad method"},
      {"GET /healthz HTTP/9.9\r\n\r\n", "malformed HTTP request: bad version"},
      {"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
       "malformed HTTP request: bad Content-Length"},
      {"GET / HTTP/1.1\r\nBad Header\r\n\r\n", "malformed HTTP request: bad field"},
      {"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
       "malformed HTTP request: bad chunk"},
      {"GET / HTTP/1.1\r\nX: " + std::string(70000, 'h') + "\r\n\r\n",
       "malformed HTTP request: header limit exceeded"},
  };
  for (const auto& c : cases) {
    std::string raw = RawExchange(gantryd_->port(), c.bytes);
    Resp r = ParseRaw(raw);
    EXPECT_TRUE(r.IsStatus(400, "BadRequest")) << c.message << ": " << raw.substr(0, 300);
    EXPECT_EQ(r.message(), c.message);
    EXPECT_NE(raw.find("\r\nConnection: close\r\n"), std::string::npos) << raw.substr(0, 300);
  }
  // A connection that sends nothing and closes gets nothing, and harms nothing.
  EXPECT_EQ(RawExchange(gantryd_->port(), ""), "");
  // A partial request line, then close.
  RawExchange(gantryd_->port(), "GET /apis/paas.gan");
  EXPECT_TRUE(api().Healthy());
  ExpectUnchanged();
}

TEST_F(BadInputTest, KeepAliveServesManyRequestsOnOneConnection) {
  for (int i = 0; i < 20; ++i) ASSERT_EQ(api().Get(Instance()).status, 200);
  // Refusals do not close a keep-alive connection either.
  for (int i = 0; i < 5; ++i) api().Get(NsPath("default", "widgets"));
  EXPECT_EQ(api().http().connections_opened_for_test(), 1);
}

// ---------------------------------------------------------------------------------------------
// Discovery and OpenAPI

// Issue 15, item 5: a member must not be able to store bytes that make an object unreadable
// (and so undeletable, its GPUs unreleasable). Every string that reaches storage is UTF-8.
TEST_F(BadInputTest, InvalidUtf8NeverReachesStorage) {
  // ?fieldManager=%FF (the field manager's name is stored in managedFields).
  Resp fm = api().Call("PATCH", Instance() + "?fieldManager=%FF",
                       R"({"metadata":{"labels":{"a":"b"}}})", "application/merge-patch+json");
  EXPECT_TRUE(fm.IsStatus(400, "BadRequest")) << fm.raw;
  EXPECT_EQ(fm.message(), "fieldManager must be valid UTF-8");
  // A YAML apply body with invalid UTF-8 in a label value.
  Resp yaml =
      api().Call("PATCH", Instance() + "?fieldManager=me",
                 "metadata:\n  labels:\n    a: \"\xff\xfe\"\n", "application/apply-patch+yaml");
  EXPECT_TRUE(yaml.IsStatus(400, "BadRequest")) << yaml.raw;
  EXPECT_THAT(yaml.message(), ::testing::HasSubstr("not valid UTF-8"));
  ExpectUnchanged();
  // A User-Agent with bytes >= 0x80 names the field manager: they become U+FFFD.
  std::string body = R"({"metadata":{"labels":{"ua":"x"}}})";
  std::string raw = RawExchange(
      gantryd_->port(),
      "PATCH " + Instance() + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
          std::string(kBootstrapToken) +
          "\r\nUser-Agent: cli\xff\xc3/1.0\r\nContent-Type: application/merge-patch+json\r\n"
          "Connection: close\r\nContent-Length: " +
          std::to_string(body.size()) + "\r\n\r\n" + body);
  Resp ua = ParseRaw(raw);
  ASSERT_EQ(ua.status, 200) << raw;
  Resp got = api().Get(Instance());
  ASSERT_EQ(got.status, 200) << got.raw;
  bool found = false;
  for (const auto& m : got.obj().at("metadata").at("managedFields").as_array())
    if (m.at("manager").as_string() == "cli\xEF\xBF\xBD\xEF\xBF\xBD") found = true;
  EXPECT_TRUE(found) << got.raw;
  EXPECT_EQ(api().Get(Instances()).names(), std::vector<std::string>{"i"});
  EXPECT_EQ(api().Delete(Instance()).status, 200);
}

TEST_F(BadInputTest, OpenApiNamesEveryKind) {
  Resp index = api().Get("/openapi/v3");
  ASSERT_EQ(index.status, 200) << index.raw;
  EXPECT_EQ(index.obj().at("paths").at("apis/paas.gantry.dev/v1").at("serverRelativeURL"),
            "/openapi/v3/apis/paas.gantry.dev/v1");

  Resp doc = api().Get("/openapi/v3/apis/paas.gantry.dev/v1");
  ASSERT_EQ(doc.status, 200) << doc.raw.substr(0, 300);
  ASSERT_TRUE(doc.body.is_object());
  EXPECT_TRUE(std::string(doc.obj().at("openapi").as_string()).starts_with("3."));
  const json::object& schemas = doc.obj().at("components").at("schemas").as_object();
  const json::object& paths = doc.obj().at("paths").as_object();
  struct Kind {
    std::string kind, plural;
    bool namespaced;
  };
  for (const Kind& k : std::vector<Kind>{{"Project", "projects", false},
                                         {"EnvironmentTemplate", "environmenttemplates", true},
                                         {"ComputeProfile", "computeprofiles", true},
                                         {"ComputeInstance", "computeinstances", true}}) {
    const std::string ref = "dev.gantry.paas.v1." + k.kind;
    ASSERT_TRUE(schemas.contains(ref)) << ref;
    ASSERT_TRUE(schemas.contains(ref + "List")) << ref;
    const json::array& gvk = schemas.at(ref).at("x-kubernetes-group-version-kind").as_array();
    ASSERT_EQ(gvk.size(), 1u);
    EXPECT_EQ(std::string(gvk[0].at("kind").as_string()), k.kind);
    EXPECT_EQ(gvk[0].at("group"), "paas.gantry.dev");
    EXPECT_EQ(gvk[0].at("version"), "v1");
    const std::string base = k.namespaced
                                 ? "/apis/paas.gantry.dev/v1/namespaces/{namespace}/" + k.plural
                                 : "/apis/paas.gantry.dev/v1/" + k.plural;
    EXPECT_TRUE(paths.contains(base)) << base;
    EXPECT_TRUE(paths.contains(base + "/{name}")) << base;
  }
  // The instance schema documents spec.profileRef, the field the seed is about.
  EXPECT_NE(json::serialize(schemas.at("dev.gantry.paas.v1.ComputeInstance")).find("profileRef"),
            std::string::npos);
}

TEST_F(BadInputTest, DiscoveryDocumentsParse) {
  Resp apis = api().Get("/apis");
  ASSERT_EQ(apis.status, 200);
  EXPECT_EQ(apis.obj().at("kind"), "APIGroupList");
  Resp group = api().Get("/apis/paas.gantry.dev");
  ASSERT_EQ(group.status, 200);
  EXPECT_EQ(group.obj().at("name"), "paas.gantry.dev");
  Resp resources = api().Get("/apis/paas.gantry.dev/v1");
  ASSERT_EQ(resources.status, 200);
  EXPECT_EQ(resources.obj().at("kind"), "APIResourceList");
  std::vector<std::string> names;
  for (const auto& r : resources.obj().at("resources").as_array())
    names.emplace_back(r.at("name").as_string());
  EXPECT_THAT(names, Contains("projects"));
  EXPECT_THAT(names, Contains("environmenttemplates"));
  EXPECT_THAT(names, Contains("computeprofiles"));
  EXPECT_THAT(names, Contains("computeinstances"));
  EXPECT_EQ(api().Get("/version").status, 200);
  Resp ready = api().Get("/readyz");
  EXPECT_EQ(ready.status, 200);
  EXPECT_EQ(ready.raw, "ok");
  Resp nope = api().Get("/nope");
  EXPECT_TRUE(nope.IsStatus(404, "NotFound")) << nope.raw;
  EXPECT_EQ(nope.message(), "the server could not find the requested resource (/nope)");
}

// ---------------------------------------------------------------------------------------------
// Process behaviour

TEST_F(BadInputTest, SigtermExitsZero) {
  EXPECT_EQ(gantryd_->Terminate(), 0) << gantryd_->Log();
  EXPECT_NE(gantryd_->Log().find("stopped"), std::string::npos) << gantryd_->Log();
}

TEST_F(BadInputTest, SigtermWithAnOpenWatchEndsTheWatchAndExitsZero) {
  WatchCollector watch(gantryd_->base_url(), Instances() + "?watch=true", nullptr);
  ASSERT_TRUE(watch.WaitFor([](const auto& ev) { return ev.size() >= 1; }));
  EXPECT_EQ(gantryd_->Terminate(), 0) << gantryd_->Log();
  EXPECT_TRUE(watch.WaitDone());
}

class JsonLogTest : public GantrydTest {
 protected:
  std::vector<std::string> Args() override { return {"--log-format", "json"}; }
};

TEST_F(JsonLogTest, EveryLogLineIsAJsonObject) {
  api().Get("/apis/paas.gantry.dev/v1/namespaces/default/widgets");
  ASSERT_EQ(gantryd_->Terminate(), 0);
  std::string log = gantryd_->Log();
  size_t start = 0;
  int lines = 0;
  bool saw_listening = false;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    std::string line = log.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    ++lines;
    boost::system::error_code ec;
    json::value v = json::parse(line, ec);
    ASSERT_FALSE(ec) << line;
    ASSERT_TRUE(v.is_object()) << line;
    EXPECT_TRUE(v.as_object().contains("time")) << line;
    EXPECT_TRUE(v.as_object().contains("level")) << line;
    std::string msg(v.at("msg").as_string());
    if (msg.starts_with("listening on http://127.0.0.1:")) saw_listening = true;
  }
  EXPECT_GE(lines, 2);
  EXPECT_TRUE(saw_listening) << log;
}

}  // namespace
}  // namespace gantry::testing
