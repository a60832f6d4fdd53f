// The fixture of the container-driver integration tests (issue 23): the local tests' fixture
// (tests/local/local_fixture.h: a real gantryd with `--gpus h100:8`, a port range and an
// advertised host) plus real Podman. The image is built once per test binary from local files
// only: FROM scratch with the static /bin/busybox of Debian's busybox-static and a page, so
// no registry is needed. Its default command serves /www with busybox httpd on port 8080.
//
// Podman missing: the tests are skipped with the reason, except under GANTRY_CI=1 where that
// is a failure (CI installs it: scripts/install-deps.sh). TearDown removes whatever a failed
// test left: the containers and volumes labelled gantry.owner=<this gantryd's data dir>.
//
// Thread-safety: like LocalTest, for the test's thread.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "drivers/common/process.h"
#include "local_fixture.h"

namespace gantry::testing {

inline constexpr char kTestImage[] = "localhost/gantry-test/busybox:1";

// Runs podman ARGS to the end; its exit code (-1 when it cannot run) and output lines.
struct PodmanResult {
  int exit_code = -1;
  std::vector<std::string> lines;
  std::string Text() const {
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
  }
};

// Runs argv (a program on PATH and its arguments) to the end.
inline PodmanResult RunTool(std::vector<std::string> argv) {
  drivers::ProcessSpec spec;
  spec.argv = std::move(argv);
  PodmanResult out;
  drivers::ProcessHooks hooks;
  hooks.on_line = [&out](std::string_view line) { out.lines.emplace_back(line); };
  auto r = drivers::RunProcess(spec, hooks);
  if (r.ok()) out.exit_code = r->exit_code;
  return out;
}

inline PodmanResult Podman(std::vector<std::string> args) {
  args.insert(args.begin(), "podman");
  return RunTool(std::move(args));
}

// The words of an `iptables -S` rule, with a "quoted comment" as one word.
inline std::vector<std::string> RuleWords(const std::string& rule) {
  std::vector<std::string> words;
  std::string word;
  bool quoted = false, any = false;
  for (char c : rule) {
    if (c == '"') {
      quoted = !quoted;
      any = true;
    } else if (c == ' ' && !quoted) {
      if (any) words.push_back(word);
      word.clear();
      any = false;
    } else {
      word += c;
      any = true;
    }
  }
  if (any) words.push_back(word);
  return words;
}

// Deletes the port-forwarding rules that netavark left behind for containers that no longer
// exist (a container removed uncleanly, e.g. with its gantryd killed, keeps its DNAT rule),
// for host ports in [min, max]. Such a rule, earlier in the chain than a new container's,
// sends connections to the dead container's address: "connection refused" for a container
// that runs. Needs root (iptables); does nothing otherwise.
inline void DeleteStaleDnatRules(int min, int max) {
  std::set<std::string> live;
  for (const auto& id : Podman({"ps", "-aq", "--no-trunc"}).lines) live.insert(id);
  PodmanResult rules = RunTool({"iptables", "-t", "nat", "-S"});
  if (rules.exit_code != 0) return;
  std::set<std::string> stale_ports;
  const std::string marker = "podman id: ";
  for (const auto& rule : rules.lines) {
    size_t at = rule.find(marker);
    if (rule.rfind("-A NETAVARK-HOSTPORT-DNAT ", 0) != 0 || at == std::string::npos) continue;
    std::string id = rule.substr(at + marker.size());
    if (live.count(id.substr(0, id.find('"')))) continue;
    std::vector<std::string> words = RuleWords(rule);
    for (size_t i = 0; i + 1 < words.size(); ++i) {
      if (words[i] != "--dport") continue;
      int port = std::atoi(words[i + 1].c_str());
      if (port >= min && port <= max) stale_ports.insert(words[i + 1]);
    }
  }
  for (const auto& rule : rules.lines) {
    std::vector<std::string> words = RuleWords(rule);
    if (words.size() < 2 || words[0] != "-A") continue;
    bool stale = false;
    for (size_t i = 0; i + 1 < words.size(); ++i)
      stale = stale || (words[i] == "--dport" && stale_ports.count(words[i + 1]));
    if (!stale) continue;
    words[0] = "-D";
    words.insert(words.begin(), {"iptables", "-t", "nat"});
    RunTool(words);
  }
}

inline bool PodmanInstalled() {
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    std::string dir =
        path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!dir.empty() && ::access((dir + "/podman").c_str(), X_OK) == 0) return true;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return false;
}

class ContainerTest : public LocalTest {
 protected:
  // Host ports for the containers: apart from the local-driver tests' 30000-39999 (they run
  // beside these under ctest -j) and below the kernel's ephemeral range (32768 up). A
  // container removed uncleanly can leave its DNAT rule behind, and on an ephemeral port that
  // rule sends connections to a later gantryd listening on port 0 to a dead container
  // ("connection refused": seen when these tests used 30000-39999).
  static constexpr int kMinPort = 15000, kMaxPort = 16999;
  std::vector<std::string> Args() override {
    std::vector<std::string> args = LocalTest::Args();
    for (size_t i = 0; i + 1 < args.size(); ++i)
      if (args[i] == "--port-range")
        args[i + 1] = std::to_string(kMinPort) + "-" + std::to_string(kMaxPort);
    return args;
  }
  void SetUp() override {
    if (!PodmanInstalled()) {
      if (std::getenv("GANTRY_CI")) FAIL() << "podman is not installed (GANTRY_CI=1)";
      GTEST_SKIP() << "podman is not installed: apt-get install podman runc busybox-static";
    }
    ASSERT_NO_FATAL_FAILURE(BuildImage());
    DeleteStaleDnatRules(kMinPort, kMaxPort);
    LocalTest::SetUp();
  }

  void TearDown() override {
    if (gantryd_) {
      const std::string label = "label=gantry.owner=" + Owner();
      for (const auto& c : Podman({"ps", "-aq", "--filter", label}).lines)
        Podman({"rm", "-f", "-t", "0", c});
      for (const auto& v : Podman({"volume", "ls", "-q", "--filter", label}).lines)
        Podman({"volume", "rm", "-f", v});
    }
    LocalTest::TearDown();
  }

  // Builds kTestImage once per binary (podman build from a scratch directory).
  static void BuildImage() {
    static bool built = false;
    if (built) return;
    ASSERT_TRUE(std::filesystem::exists("/bin/busybox")) << "apt-get install busybox-static";
    std::string dir = std::filesystem::temp_directory_path().string() + "/gantry-image-" +
                      std::to_string(::getpid());
    std::filesystem::create_directories(dir + "/www");
    std::filesystem::copy_file("/bin/busybox", dir + "/busybox",
                               std::filesystem::copy_options::overwrite_existing);
    std::ofstream(dir + "/www/index.html") << "hello from a container\n";
    std::ofstream(dir + "/Containerfile")
        << "FROM scratch\nCOPY busybox /bin/busybox\nCOPY www /www\n"
           "CMD [\"/bin/busybox\", \"httpd\", \"-f\", \"-p\", \"8080\", \"-h\", \"/www\"]\n";
    PodmanResult r = Podman({"build", "-q", "-t", kTestImage, dir});
    std::filesystem::remove_all(dir);
    ASSERT_EQ(r.exit_code, 0) << r.Text();
    built = true;
  }

  // The gantry.owner label of this gantryd's containers: its absolute data directory.
  std::string Owner() const {
    return std::filesystem::absolute(gantryd_->data_dir()).lexically_normal().string();
  }

  // A container template `name` whose image is the `image` variable (default kTestImage),
  // serving HTTP on container port 8080 with a volume at /data; `script` (busybox sh) runs
  // first, then httpd serves /www. `extra` is merged into spec.container.
  boost::json::object CreateContainerTemplate(const std::string& name, const std::string& script,
                                              boost::json::object extra = {}) {
    boost::json::object container{
        {"image", "${image}"},
        {"command", boost::json::array{"/bin/busybox", "sh", "-c",
                                       script + "\nexec /bin/busybox httpd -f -p 8080 -h /www"}},
        {"env", boost::json::object{{"WORKLOAD_MARK", "set-by-template"}}},
        {"ports",
         boost::json::array{boost::json::object{{"name", "http"}, {"containerPort", 8080}}}},
        {"volumes",
         boost::json::array{boost::json::object{{"name", "data"}, {"mountPath", "/data"}}}},
        {"readiness", boost::json::object{{"httpPath", "/"}, {"port", "http"}}}};
    for (auto& kv : extra) container[kv.key()] = kv.value();
    boost::json::array variables{
        boost::json::object{{"name", "image"}, {"type", "string"}, {"default", kTestImage}}};
    return api().MustCreate(NsPath("default", "environmenttemplates"),
                            boost::json::object{{"apiVersion", "paas.gantry.dev/v1"},
                                                {"kind", "EnvironmentTemplate"},
                                                {"metadata", {{"name", name}}},
                                                {"spec",
                                                 {{"displayName", "Container " + name},
                                                  {"driver", "container"},
                                                  {"variables", std::move(variables)},
                                                  {"container", std::move(container)}}}});
  }

  // The container's value at a Go template of `podman inspect` ("" when there is none).
  static std::string Inspect(const std::string& container, const std::string& format) {
    PodmanResult r = Podman({"container", "inspect", "--format", format, container});
    return r.exit_code == 0 && !r.lines.empty() ? r.lines.back() : "";
  }

  // GET `path` on 127.0.0.1:port: the status and the body's lines.
  static std::pair<int, std::vector<std::string>> HttpGet(int port, const std::string& path) {
    LineStreamReader reader(port, path);
    EXPECT_TRUE(reader.WaitDone()) << "GET http://127.0.0.1:" << port << path << " did not end";
    return {reader.http_status(), reader.lines()};
  }

  static int PortOf(const std::string& endpoint) {
    size_t colon = endpoint.rfind(':');
    return colon == std::string::npos ? 0 : std::atoi(endpoint.c_str() + colon + 1);
  }
};

}  // namespace gantry::testing
