#include "engine_fixture.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace gantry::testing {

namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

std::string MakeScratchDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/gantry-eng-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr)
    throw std::runtime_error("mkdtemp failed: " + std::string(std::strerror(errno)));
  return std::string(buf.data());
}

const json::value* Find(const json::object& o, std::string_view path) {
  const json::object* cur = &o;
  const json::value* v = nullptr;
  while (true) {
    size_t dot = path.find('.');
    std::string_view key = path.substr(0, dot);
    v = cur->if_contains(key);
    if (!v) return nullptr;
    if (dot == std::string_view::npos) return v;
    if (!v->is_object()) return nullptr;
    cur = &v->get_object();
    path.remove_prefix(dot + 1);
  }
}

}  // namespace

std::optional<std::chrono::system_clock::time_point> ParseUtc(const std::string& text) {
  std::tm tm{};
  std::istringstream in(text);
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%SZ");
  if (in.fail()) return std::nullopt;
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

bool PollUntil(const std::function<bool()>& cond, int seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (true) {
    if (cond()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return cond();
    // Not synchronisation: the interval between two looks at a condition.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::vector<int> ProcessesWith(const std::string& needle) {
  std::vector<int> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    if (!in) continue;
    std::stringstream ss;
    ss << in.rdbuf();
    std::string cmdline = ss.str();
    for (char& c : cmdline)
      if (c == '\0') c = ' ';
    if (cmdline.find(needle) != std::string::npos) out.push_back(std::stoi(name));
  }
  return out;
}

std::string Str(const json::object& o, std::string_view path) {
  const json::value* v = Find(o, path);
  return v && v->is_string() ? std::string(v->get_string()) : "";
}

int64_t Int(const json::object& o, std::string_view path, int64_t fallback) {
  const json::value* v = Find(o, path);
  return v && v->is_int64() ? v->get_int64() : fallback;
}

json::value At(const json::object& o, std::string_view path) {
  const json::value* v = Find(o, path);
  return v ? *v : json::value(nullptr);
}

json::object Condition(const json::object& instance, const std::string& type) {
  json::value conds = At(instance, "status.conditions");
  if (conds.is_array())
    for (const auto& c : conds.get_array())
      if (c.is_object() && Str(c.get_object(), "type") == type) return c.get_object();
  return {};
}

void ExpectRefused(const Resp& r, int code, const std::string& reason, const std::string& message) {
  EXPECT_TRUE(r.IsStatus(code, reason)) << r.status << " " << r.raw;
  EXPECT_EQ(r.message(), message) << r.raw;
}

LineStreamReader::LineStreamReader(int port, std::string target,
                                   std::function<bool(const std::string&)> stop_when) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ADD_FAILURE() << "cannot connect to 127.0.0.1:" << port << ": " << std::strerror(errno);
    if (fd >= 0) ::close(fd);
    done_ = true;
    return;
  }
  fd_ = fd;
  thread_ = std::thread([this, target = std::move(target), stop_when = std::move(stop_when)] {
    Loop(target, stop_when);
  });
}

LineStreamReader::~LineStreamReader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
  }
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) ::close(fd_);
}

void LineStreamReader::Loop(std::string target, std::function<bool(const std::string&)> stop_when) {
  std::string request = "GET " + target +
                        " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: */*\r\nAuthorization: Bearer " +
                        std::string(kBootstrapToken) + "\r\n\r\n";
  bool complete = false;
  if (::send(fd_, request.data(), request.size(), MSG_NOSIGNAL) ==
      static_cast<ssize_t>(request.size())) {
    std::string raw;   // bytes received and not yet decoded
    std::string body;  // decoded body bytes not yet split into lines
    bool in_body = false, chunked = false;
    int64_t remaining = -1;  // Content-Length left, or the current chunk's bytes left
    bool stop = false;
    char buf[4096];
    auto emit = [&] {
      size_t start = 0;
      for (size_t nl; !stop && (nl = body.find('\n', start)) != std::string::npos; start = nl + 1) {
        std::string line = body.substr(start, nl - start);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        stop = stop_when && stop_when(line);
        std::lock_guard<std::mutex> lock(mu_);
        lines_.push_back(std::move(line));
        cv_.notify_all();
      }
      body.erase(0, start);
    };
    while (!stop && !complete) {
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (in_body && !chunked && remaining < 0) complete = true;  // body ends at EOF
        break;
      }
      raw.append(buf, static_cast<size_t>(n));
      if (!in_body) {
        size_t end = raw.find("\r\n\r\n");
        if (end == std::string::npos) continue;
        std::string head = raw.substr(0, end);
        raw.erase(0, end + 4);
        in_body = true;
        {
          std::lock_guard<std::mutex> lock(mu_);
          status_ = head.size() > 12 ? std::atoi(head.c_str() + 9) : 0;
        }
        std::string lower = head;
        for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        chunked = lower.find("transfer-encoding: chunked") != std::string::npos;
        if (size_t cl = lower.find("content-length:"); !chunked && cl != std::string::npos)
          remaining = std::atoll(lower.c_str() + cl + 15);
      }
      // Decode what arrived.
      while (!complete) {
        if (!chunked) {
          size_t take = remaining < 0
                            ? raw.size()
                            : std::min<size_t>(raw.size(), static_cast<size_t>(remaining));
          body += raw.substr(0, take);
          raw.erase(0, take);
          if (remaining >= 0) {
            remaining -= static_cast<int64_t>(take);
            if (remaining == 0) complete = true;
          }
          break;
        }
        if (remaining <= 0) {  // expecting a chunk-size line (after the previous chunk's CRLF)
          if (remaining == 0) {
            if (raw.size() < 2) break;
            raw.erase(0, 2);
            remaining = -1;
          }
          size_t eol = raw.find("\r\n");
          if (eol == std::string::npos) break;
          int64_t size = std::strtoll(raw.substr(0, eol).c_str(), nullptr, 16);
          raw.erase(0, eol + 2);
          if (size == 0) {
            complete = true;
            break;
          }
          remaining = size;
        }
        size_t take = std::min<size_t>(raw.size(), static_cast<size_t>(remaining));
        body += raw.substr(0, take);
        raw.erase(0, take);
        remaining -= static_cast<int64_t>(take);
        if (remaining > 0) break;  // the rest of this chunk is still on its way
      }
      emit();
    }
    if (complete && !stop && !body.empty()) {
      body += "\n";
      emit();
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  complete_ = complete;
  done_ = true;
  cv_.notify_all();
}

bool LineStreamReader::WaitFor(const std::function<bool(const std::vector<std::string>&)>& pred) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::seconds(kEngineWaitSeconds),
               [&] { return done_ || pred(lines_); });
  return pred(lines_);
}

bool LineStreamReader::WaitDone() {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::seconds(kEngineWaitSeconds), [&] { return done_; });
}

std::vector<std::string> LineStreamReader::lines() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lines_;
}

std::vector<json::object> LineStreamReader::objects() const {
  std::vector<json::object> out;
  for (const auto& l : lines()) {
    boost::system::error_code ec;
    json::value v = json::parse(l, ec);
    if (!ec && v.is_object()) out.push_back(v.get_object());
  }
  return out;
}

int LineStreamReader::http_status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

bool LineStreamReader::complete() const {
  std::lock_guard<std::mutex> lock(mu_);
  return complete_;
}

void EngineTest::SetUp() {
  dir_ = MakeScratchDir();
  // As root, gantryd runs scripts and workloads as its unprivileged workload user: they must
  // be able to read the scripts and write their barrier and output files here.
  ::chmod(dir_.c_str(), 0777);
  GantrydTest::SetUp();
}

void EngineTest::TearDown() {
  GantrydTest::TearDown();
  // gantryd is gone (and its scripts with it, PR_SET_PDEATHSIG and process groups). Anything a
  // failed test left behind that still names our scratch directory was started by this test:
  // end it by its id.
  for (int pid : ProcessesWith(dir_)) ::kill(pid, SIGKILL);
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

std::string EngineTest::WriteScript(const std::string& file, const std::string& body) {
  std::string path = Path(file);
  {
    std::ofstream out(path, std::ios::trunc);
    out << "#!/bin/sh\n" << body;
  }
  ::chmod(path.c_str(), 0755);
  return path;
}

std::string EngineTest::StandardScript() {
  if (!script_.empty()) return script_;
  script_ = WriteScript("deploy.sh", R"SH(D=')SH" + dir_ + R"SH('
cat > "$D/stdin-$GANTRY_RUN.json"
env | grep '^GANTRY_' | sort > "$D/env-$GANTRY_RUN"
echo "hello from $GANTRY_RUN ($1)"
touch "$D/started-$GANTRY_RUN"
if [ -f "$D/block-$GANTRY_INSTANCE" ]; then
  while [ ! -f "$D/release-$GANTRY_RUN" ]; do sleep 0.02; done
fi
if [ -f "$D/fail-$GANTRY_INSTANCE" ]; then
  for i in 1 2 3 4 5 6; do echo "fail line $i"; done
  exit 3
fi
echo "bye from $GANTRY_RUN"
printf '{"endpoint": "http://%s.example:8080", "action": "%s"}\n' "$GANTRY_INSTANCE" "$1" > "$GANTRY_OUTPUTS"
)SH");
  return script_;
}

json::object EngineTest::CreateExecTemplate(const std::string& name, json::array command,
                                            json::object exec_extra, json::array variables,
                                            const std::string& ns) {
  json::object exec{{"command", std::move(command)}, {"workingDir", dir_}};
  for (auto& kv : exec_extra) exec[kv.key()] = kv.value();
  json::object spec{
      {"displayName", "Template " + name}, {"driver", "exec"}, {"exec", std::move(exec)}};
  if (!variables.empty()) spec["variables"] = std::move(variables);
  return api().MustCreate(NsPath(ns, "environmenttemplates"),
                          json::object{{"apiVersion", "paas.gantry.dev/v1"},
                                       {"kind", "EnvironmentTemplate"},
                                       {"metadata", {{"name", name}}},
                                       {"spec", std::move(spec)}});
}

void EngineTest::CreateStandardProfile(const std::string& profile, const std::string& tmpl,
                                       json::array variables, const std::string& ns) {
  CreateExecTemplate(tmpl, json::array{StandardScript()}, {}, std::move(variables), ns);
  api().CreateProfile(ns, profile, tmpl);
}

std::vector<json::object> EngineTest::EventsOf(const std::string& name, const std::string& kind,
                                               const std::string& ns) {
  Resp r = api().Get("/api/v1/namespaces/" + ns + "/events?fieldSelector=involvedObject.name%3D" +
                     name + ",involvedObject.kind%3D" + kind);
  EXPECT_EQ(r.status, 200) << r.raw;
  std::vector<json::object> out;
  if (r.status == 200)
    for (const auto& e : r.obj().at("items").as_array()) out.push_back(e.as_object());
  return out;
}

std::vector<json::object> EngineTest::SystemAudit(const std::string& name) {
  Resp r = api().Get("/apis/paas.gantry.dev/v1/auditevents");
  EXPECT_EQ(r.status, 200) << r.raw;
  std::vector<json::object> out;
  if (r.status == 200)
    for (const auto& e : r.obj().at("items").as_array())
      if (Str(e.as_object(), "user") == "system:lifecycle" &&
          Str(e.as_object(), "objectRef.name") == name)
        out.push_back(e.as_object());
  return out;
}

Resp EngineTest::Action(const std::string& name, const std::string& action, const std::string& ns) {
  return api().Post(NsPath(ns, "computeinstances", name) + "/" + action, json::object{});
}

json::object EngineTest::Get(const std::string& name, const std::string& ns) {
  Resp r = api().Get(NsPath(ns, "computeinstances", name));
  EXPECT_EQ(r.status, 200) << r.raw;
  return r.obj();
}

json::object EngineTest::WaitInstance(const std::string& name,
                                      const std::function<bool(const json::object&)>& pred,
                                      const std::string& what, const std::string& ns) {
  json::object last;
  bool ok = PollUntil([&] {
    Resp r = api().Get(NsPath(ns, "computeinstances", name));
    last = r.status == 200 ? r.obj() : json::object{};
    return pred(last);
  });
  if (!ok)
    ADD_FAILURE() << "instance " << ns << "/" << name << " never became " << what
                  << "; last seen: " << json::serialize(last) << "\ngantryd log:\n"
                  << gantryd_->Log();
  return last;
}

json::object EngineTest::WaitPhase(const std::string& name, const std::string& phase,
                                   const std::string& ns) {
  return WaitInstance(
      name, [&](const json::object& o) { return Str(o, "status.phase") == phase; },
      "phase " + phase, ns);
}

bool EngineTest::WaitGone(const std::string& name, const std::string& ns) {
  bool ok =
      PollUntil([&] { return api().Get(NsPath(ns, "computeinstances", name)).status == 404; });
  EXPECT_TRUE(ok) << "instance " << name << " was never removed";
  return ok;
}

std::vector<json::object> EngineTest::RunsOf(const std::string& name, const std::string& ns) {
  Resp r = api().Get(NsPath(ns, "runs") +
                     "?labelSelector=" + Escape("paas.gantry.dev/instance=" + name));
  EXPECT_EQ(r.status, 200) << r.raw;
  std::vector<json::object> out;
  if (const json::value* items = r.obj().if_contains("items"); items && items->is_array())
    for (const auto& it : items->get_array())
      if (it.is_object()) out.push_back(it.get_object());
  // Run names are INSTANCE-N: order by N.
  auto seq = [](const json::object& r) {
    std::string n = Str(r, "metadata.name");
    return std::atoll(n.substr(n.rfind('-') + 1).c_str());
  };
  std::sort(out.begin(), out.end(),
            [&](const json::object& a, const json::object& b) { return seq(a) < seq(b); });
  return out;
}

json::object EngineTest::GetRun(const std::string& run, const std::string& ns) {
  Resp r = api().Get(NsPath(ns, "runs", run));
  EXPECT_EQ(r.status, 200) << r.raw;
  return r.obj();
}

json::object EngineTest::WaitRunPhase(const std::string& run, const std::string& phase,
                                      const std::string& ns) {
  json::object last;
  bool ok = PollUntil([&] {
    Resp r = api().Get(NsPath(ns, "runs", run));
    last = r.obj();
    return Str(last, "status.phase") == phase;
  });
  EXPECT_TRUE(ok) << "run " << run << " never became " << phase
                  << "; last seen: " << json::serialize(last);
  return last;
}

void EngineTest::Touch(const std::string& file) const {
  std::ofstream out(Path(file), std::ios::app);
}

bool EngineTest::Exists(const std::string& file) const { return fs::exists(Path(file)); }

std::string EngineTest::ReadFile(const std::string& path) const {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool EngineTest::WaitFile(const std::string& file) const {
  bool ok = PollUntil([&] { return Exists(file); });
  EXPECT_TRUE(ok) << "no " << Path(file) << " appeared";
  return ok;
}

std::string EngineTest::DeployBlocked(const std::string& name, const std::string& ns) {
  Touch("block-" + name);
  Resp r = Action(name, "deploy", ns);
  EXPECT_EQ(r.status, 202) << r.raw;
  std::string run = Str(r.obj(), "status.lastRunRef.name");
  EXPECT_FALSE(run.empty()) << r.raw;
  WaitFile("started-" + run);
  WaitPhase(name, "InProgress", ns);
  return run;
}

}  // namespace gantry::testing
