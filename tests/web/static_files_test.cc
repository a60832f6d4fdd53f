// gantryd serving the web UI from / (src/api/static_files.h): files with their content types
// and cache headers, the single-page-app fallback, API paths that never become pages, path
// tricks refused, and a clear answer when the UI was not built (the API unaffected).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "client/http_client.h"
#include "gantryd_test.h"

namespace gantry::testing {
namespace {

namespace fs = std::filesystem;

void WriteFile(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
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

  // Without credentials: the UI's files are public (the login page must load).
  client::HttpResponse Fetch(const std::string& target, const std::string& method = "GET") {
    client::HttpClient http(gantryd_->base_url());
    auto r = http.Send(method, target);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : client::HttpResponse{};
  }
};

TEST_F(StaticFilesTest, ServesIndexWithNoCacheAndASecurityPolicy) {
  auto r = Fetch("/");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(r.body, "<!doctype html><div id=\"root\"></div>");
  EXPECT_EQ(r.headers["cache-control"], "no-cache");
  EXPECT_NE(r.headers["content-security-policy"].find("script-src 'self'"), std::string::npos);
  EXPECT_EQ(r.headers["x-content-type-options"], "nosniff");
}

TEST_F(StaticFilesTest, HashedAssetsAreCachedForAYear) {
  auto js = Fetch("/assets/index-Ab12Cd34.js");
  EXPECT_EQ(js.status, 200);
  EXPECT_EQ(js.content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(js.body, "console.log('studio')");
  EXPECT_EQ(js.headers["cache-control"], "public, max-age=31536000, immutable");
  auto css = Fetch("/assets/index-Ef56Gh78.css");
  EXPECT_EQ(css.content_type, "text/css; charset=utf-8");
  auto svg = Fetch("/favicon.svg");
  EXPECT_EQ(svg.content_type, "image/svg+xml");
  EXPECT_EQ(svg.headers["cache-control"], "no-cache");  // not hashed: revalidate
}

TEST_F(StaticFilesTest, ClientRoutesGetIndexMissingFilesGet404) {
  for (const char* route : {"/p/ml-research/instances", "/p/ml-research/instances/gpu-instance-prod",
                            "/login", "/projects/vision?tab=members"}) {
    auto r = Fetch(route);
    EXPECT_EQ(r.status, 200) << route;
    EXPECT_EQ(r.content_type, "text/html; charset=utf-8") << route;
  }
  auto missing = Fetch("/assets/index-Gone0000.js");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.content_type, "text/plain; charset=utf-8");
  EXPECT_EQ(Fetch("/logo.png").status, 404);
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
  client::HttpClient http(gantryd_->base_url());
  auto r = http.Send("GET", "/");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(r->content_type, "text/plain; charset=utf-8");
  EXPECT_NE(r->body.find("its web UI (PaaS Studio) was not built"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("bash scripts/run.sh"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("/apis/paas.gantry.dev/v1"), std::string::npos) << r->body;
  EXPECT_EQ(api().Get(ClusterPath("projects")).status, 200);
  EXPECT_NE(gantryd_->Log().find("web UI not built"), std::string::npos);
}

}  // namespace
}  // namespace gantry::testing
