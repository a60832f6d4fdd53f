// gantryd serving the web UI from / (src/api/static_files.h): files with their content types
// and cache headers, the single-page-app fallback, API paths that never become pages, path
// tricks refused, and a clear answer when the UI was not built (the API unaffected).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "client/http_client.h"
#include "gantryd_test.h"

namespace gantry::testing {
namespace {

namespace fs = std::filesystem;

void WriteFile(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

struct Page {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string content_type() const {
    return headers.count("content-type") ? headers.at("content-type") : "";
  }
};

// A GET the way a browser sends it (HttpClient always asks for JSON), without credentials:
// the UI's files are public (the login page must load). Reads to EOF (Connection: close).
Page BrowserGet(const std::string& base_url, const std::string& target,
                const std::string& accept = "text/html,application/xhtml+xml,*/*;q=0.8") {
  Page page;
  int port = std::atoi(base_url.c_str() + base_url.rfind(':') + 1);
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ADD_FAILURE() << "cannot connect to " << base_url;
    if (fd >= 0) ::close(fd);
    return page;
  }
  std::string req = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: " + accept +
                    "\r\nConnection: close\r\n\r\n";
  EXPECT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  std::string in;
  char buf[8192];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) in.append(buf, static_cast<size_t>(n));
  ::close(fd);
  size_t end = in.find("\r\n\r\n");
  if (end == std::string::npos) {
    ADD_FAILURE() << "no HTTP header in: " << in;
    return page;
  }
  page.status = std::atoi(in.c_str() + in.find(' ') + 1);
  size_t pos = in.find("\r\n") + 2;
  while (pos < end) {
    size_t eol = in.find("\r\n", pos);
    std::string line = in.substr(pos, eol - pos);
    size_t colon = line.find(':');
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    page.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
    pos = eol + 2;
  }
  page.body = in.substr(end + 4);
  return page;
}

// A built UI in a temporary folder, as `vite build` lays it out.
class StaticFilesTest : public GantrydTest {
 protected:
  static fs::path UiDir() {
    static const fs::path dir = [] {
      fs::path d = fs::temp_directory_path() / ("gantry-ui-" + std::to_string(::getpid()));
      WriteFile(d / "index.html", "<!doctype html><div id=\"root\"></div>");
      WriteFile(d / "assets" / "index-Ab12Cd34.js", "console.log('studio')");
      WriteFile(d / "assets" / "index-Ef56Gh78.css", "body{}");
      WriteFile(d / "favicon.svg", "<svg xmlns=\"http://www.w3.org/2000/svg\"/>");
      return d;
    }();
    return dir;
  }
  std::vector<std::string> Args() override { return {"--ui-dir", UiDir().string()}; }
  static void TearDownTestSuite() { fs::remove_all(UiDir()); }

  Page Fetch(const std::string& target) { return BrowserGet(gantryd_->base_url(), target); }
};

TEST_F(StaticFilesTest, ServesIndexWithNoCacheAndASecurityPolicy) {
  auto r = Fetch("/");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type(), "text/html; charset=utf-8");
  EXPECT_EQ(r.body, "<!doctype html><div id=\"root\"></div>");
  EXPECT_EQ(r.headers["cache-control"], "no-cache");
  EXPECT_NE(r.headers["content-security-policy"].find("script-src 'self'"), std::string::npos);
  EXPECT_EQ(r.headers["x-content-type-options"], "nosniff");
}

TEST_F(StaticFilesTest, HashedAssetsAreCachedForAYear) {
  auto js = Fetch("/assets/index-Ab12Cd34.js");
  EXPECT_EQ(js.status, 200);
  EXPECT_EQ(js.content_type(), "text/javascript; charset=utf-8");
  EXPECT_EQ(js.body, "console.log('studio')");
  EXPECT_EQ(js.headers["cache-control"], "public, max-age=31536000, immutable");
  auto css = Fetch("/assets/index-Ef56Gh78.css");
  EXPECT_EQ(css.content_type(), "text/css; charset=utf-8");
  auto svg = Fetch("/favicon.svg");
  EXPECT_EQ(svg.content_type(), "image/svg+xml");
  EXPECT_EQ(svg.headers["cache-control"], "no-cache");  // not hashed: revalidate
}

TEST_F(StaticFilesTest, ClientRoutesGetIndexMissingFilesGet404) {
  for (const char* route :
       {"/p/ml-research/instances", "/p/ml-research/instances/gpu-instance-prod", "/login",
        "/projects/vision?tab=members"}) {
    auto r = Fetch(route);
    EXPECT_EQ(r.status, 200) << route;
    EXPECT_EQ(r.content_type(), "text/html; charset=utf-8") << route;
  }
  auto missing = Fetch("/assets/index-Gone0000.js");
  EXPECT_EQ(missing.status, 404);
  EXPECT_NE(missing.body.find("could not find the requested resource (/assets/index-Gone0000.js)"),
            std::string::npos)
      << missing.body;
  EXPECT_EQ(Fetch("/logo.png").status, 404);
}

TEST_F(StaticFilesTest, ClientsThatDoNotAskForHtmlGetTheApis404) {
  // curl, scripts, the CLI: a mistyped path is the API's Status, not a page.
  Resp nope = api().Get("/nope");
  EXPECT_TRUE(nope.IsStatus(404, "NotFound")) << nope.raw;
  EXPECT_EQ(nope.message(), "the server could not find the requested resource (/nope)");
  Page any = BrowserGet(gantryd_->base_url(), "/p/ml-research/instances", "*/*");
  EXPECT_EQ(any.status, 404);
  // The UI itself is still there for them.
  Page root = BrowserGet(gantryd_->base_url(), "/", "*/*");
  EXPECT_EQ(root.status, 200);
  EXPECT_EQ(root.content_type(), "text/html; charset=utf-8");
}

TEST_F(StaticFilesTest, ApiPathsNeverBecomePages) {
  for (const char* path : {"/apis/paas.gantry.dev/v1/nosuchthings", "/apis/other.group/v1",
                           "/api/v2", "/openapi/v9", "/auth/nosuch"}) {
    Resp r = api().Get(path);
    EXPECT_NE(r.raw.find("\"kind\":\"Status\""), std::string::npos) << path << ": " << r.raw;
    EXPECT_GE(r.status, 400) << path;
  }
  // Writes to a UI path are not the UI's business: the API's 404.
  Resp post = api().Call("POST", "/p/ml-research/instances", "{}");
  EXPECT_TRUE(post.IsStatus(404, "NotFound")) << post.raw;
}

TEST_F(StaticFilesTest, PathTricksAreRefused) {
  // The router refuses ".." and encoded slashes before the UI sees the path.
  EXPECT_EQ(Fetch("/assets/..%2F..%2Fetc%2Fpasswd").status, 400);
  EXPECT_EQ(Fetch("/%2e%2e/%2e%2e/etc/passwd").status, 400);
  auto r = Fetch("/assets/../../../etc/passwd");
  EXPECT_EQ(r.body.find("root:x:0:0"), std::string::npos);
}

class NoUiTest : public GantrydTest {
 protected:
  std::vector<std::string> Args() override {
    return {"--ui-dir", (fs::temp_directory_path() / "gantry-no-ui-here").string()};
  }
};

TEST_F(NoUiTest, RootExplainsHowToBuildTheUiAndTheApiWorks) {
  Page page = BrowserGet(gantryd_->base_url(), "/p/ml-research/instances");
  EXPECT_EQ(page.status, 404);
  EXPECT_NE(page.body.find("was not built"), std::string::npos) << page.body;
  client::HttpClient http(gantryd_->base_url());
  auto r = http.Send("GET", "/");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(r->content_type, "text/plain; charset=utf-8");
  EXPECT_NE(r->body.find("its web UI (PaaS Studio) was not built"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("bash scripts/run.sh"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("/apis/paas.gantry.dev/v1"), std::string::npos) << r->body;
  EXPECT_EQ(api().Get(ClusterPath("projects")).status, 200);
  EXPECT_TRUE(api().Get("/nope").IsStatus(404, "NotFound"));
  EXPECT_TRUE(gantryd_->WaitForLog("web UI not built")) << gantryd_->Log();
}

}  // namespace
}  // namespace gantry::testing
