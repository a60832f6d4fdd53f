// The fixture of the local-driver integration tests (issue 6): the engine tests' fixture
// (tests/engine/engine_fixture.h: a real gantryd, a scratch directory, polling helpers) with
// configured GPUs (`--gpus h100:8`), a port range and an advertised host, plus what these
// tests need on top: local templates whose workloads are small scripts in the scratch
// directory, the Node view, and /proc looks at workload processes.
//
// Workloads. Every workload's command line holds the scratch directory (the script's path),
// so EngineTest::TearDown ends whatever a failed test left running, by pid. The standard
// workload (Workload()) writes its environment to env-INSTANCE (atomically: a temp file, then
// mv) and either serves HTTP (python3 http.server on $GANTRY_PORT_HTTP, from www-INSTANCE) or
// just waits. Nothing in a test sleeps to synchronise: it polls a condition (PollUntil) with
// a generous deadline that only bounds a failure.
//
// Thread-safety: like EngineTest, for the test's thread (helpers taking an Api& may run on
// others).
#pragma once

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "engine_fixture.h"

namespace gantry::testing {

namespace local_test {

namespace json = boost::json;

// Fields of /proc/PID/stat after the command name: state, ppid, pgrp, session.
struct ProcStat {
  bool exists = false;
  char state = '?';
  int ppid = 0;
  int pgrp = 0;
  int session = 0;
};

inline ProcStat ReadProcStat(int pid) {
  ProcStat st;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!in || !std::getline(in, text)) return st;
  size_t close = text.rfind(')');
  if (close == std::string::npos) return st;
  std::istringstream rest(text.substr(close + 1));
  rest >> st.state >> st.ppid >> st.pgrp >> st.session;
  st.exists = !rest.fail();
  return st;
}

// A process that exists and is not a zombie (a zombie has ended; only its entry is left).
inline bool Alive(int pid) {
  ProcStat st = ReadProcStat(pid);
  return pid > 0 && st.exists && st.state != 'Z' && st.state != 'X';
}

// SIGKILL to the workload process `pid` (or, with `group`, its whole process group). Refuses
// pids that would hit this test itself (0, 1, negatives) and returns false then.
inline bool KillWorkload(int pid, bool group = false) {
  if (pid <= 1 || pid == ::getpid()) {
    ADD_FAILURE() << "refusing to kill pid " << pid;
    return false;
  }
  return ::kill(group ? -pid : pid, SIGKILL) == 0;
}

// Live (non-zombie) pids whose process group is `pgid`.
inline std::vector<int> ProcessesInGroup(int pgid) {
  std::vector<int> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    int pid = std::stoi(name);
    ProcStat st = ReadProcStat(pid);
    if (st.exists && st.pgrp == pgid && st.state != 'Z' && st.state != 'X') out.push_back(pid);
  }
  return out;
}

// ProcessesWith (engine_fixture.h) without zombies.
inline std::vector<int> LiveProcessesWith(const std::string& needle) {
  std::vector<int> out;
  for (int pid : ProcessesWith(needle))
    if (Alive(pid)) out.push_back(pid);
  return out;
}

// The value of `key` in an `env` dump (KEY=VALUE lines); "<unset>" when absent.
inline std::string EnvValue(const std::string& dump, const std::string& key) {
  std::istringstream in(dump);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key + "=", 0) == 0) return line.substr(key.size() + 1);
  return "<unset>";
}

// A JSON array of strings as "a,b,c".
inline std::string JoinStrings(const json::value& v) {
  std::string out;
  if (!v.is_array()) return "<not an array: " + json::serialize(v) + ">";
  for (const auto& e : v.get_array()) {
    if (!out.empty()) out += ",";
    out += e.is_string() ? std::string(e.get_string()) : json::serialize(e);
  }
  return out;
}

// Items of a list answer.
inline std::vector<json::object> Items(const Resp& r) {
  std::vector<json::object> out;
  if (!r.body.is_object()) return out;
  if (const json::value* items = r.obj().if_contains("items"); items && items->is_array())
    for (const auto& it : items->get_array())
      if (it.is_object()) out.push_back(it.get_object());
  return out;
}

// GET /apis/paas.gantry.dev/v1/nodes: the one Node of this host (empty on any error).
inline json::object GetNode(Api& api) {
  Resp r = api.Get(ClusterPath("nodes"));
  EXPECT_EQ(r.status, 200) << r.raw;
  std::vector<json::object> items = Items(r);
  EXPECT_EQ(items.size(), 1u) << r.raw;
  return items.empty() ? json::object{} : items[0];
}

// The node's GPU index → assignedTo ("" when free).
inline std::map<int64_t, std::string> Assignments(const json::object& node) {
  std::map<int64_t, std::string> out;
  json::value gpus = At(node, "status.gpus");
  if (gpus.is_array())
    for (const auto& g : gpus.get_array())
      if (g.is_object()) out[Int(g.get_object(), "index")] = Str(g.get_object(), "assignedTo");
  return out;
}

}  // namespace local_test

class LocalTest : public EngineTest {
 protected:
  // The advertised host in endpoints: not an address, so a test can tell it was used.
  static constexpr char kAdvertiseHost[] = "gantry-local-test.invalid";

  virtual std::string Gpus() { return "h100:8"; }
  std::vector<std::string> Args() override {
    std::vector<std::string> args = EngineTest::Args();
    args.insert(args.end(), {"--gpus", Gpus(), "--port-range", "30000-39999", "--advertise-host",
                             kAdvertiseHost});
    return args;
  }

  // The standard workload script (see the header comment), written once per test. Its first
  // argument: `http` serves HTTP; `plain` waits (the shell and a child `tail`, one process
  // group); `stubborn` waits like plain but ignores SIGTERM (so does its child). Exits 7 at
  // once when fail-INSTANCE exists.
  std::string Workload() {
    if (!workload_.empty()) return workload_;
    workload_ = WriteScript("workload.sh", R"SH(D=')SH" + dir() + R"SH('
env | sort > "$D/.env-$GANTRY_INSTANCE.tmp" && mv "$D/.env-$GANTRY_INSTANCE.tmp" "$D/env-$GANTRY_INSTANCE"
echo "workload $GANTRY_INSTANCE starts with GPUs [$CUDA_VISIBLE_DEVICES] ($*)"
[ -f "$D/fail-$GANTRY_INSTANCE" ] && { echo "failing on purpose"; exit 7; }
if [ "$1" = http ]; then
  mkdir -p "$D/www-$GANTRY_INSTANCE"
  echo "hello from $GANTRY_INSTANCE" > "$D/www-$GANTRY_INSTANCE/index.html"
  exec python3 -m http.server "$GANTRY_PORT_HTTP" --bind 127.0.0.1 --directory "$D/www-$GANTRY_INSTANCE"
fi
[ "$1" = stubborn ] && trap '' TERM
# The child names the scratch directory too (a marker for /proc scans) and waits forever.
tail -f /dev/null "$D/workload.sh" > /dev/null &
wait
)SH");
    return workload_;
  }

  // Local template `name` running Workload() (`http`: serving HTTP with an HTTP readiness
  // check); `extra` is merged into spec.local (e.g. restartPolicy).
  boost::json::object CreateLocalTemplate(const std::string& name, bool http,
                                          boost::json::object extra = {},
                                          const std::string& ns = "default",
                                          const std::string& mode = "") {
    boost::json::object local{
        {"command", boost::json::array{"/bin/sh", Workload()}},
        {"args", boost::json::array{mode.empty() ? (http ? "http" : "plain") : mode}},
        {"env", boost::json::object{{"WORKLOAD_MARK", "set-by-template"}}}};
    if (http) {
      local["ports"] = boost::json::array{boost::json::object{{"name", "http"}}};
      local["readiness"] =
          boost::json::object{{"httpPath", "/"}, {"port", "http"}, {"timeoutSeconds", 60}};
    }
    for (auto& kv : extra) local[kv.key()] = kv.value();
    return api().MustCreate(NsPath(ns, "environmenttemplates"),
                            boost::json::object{{"apiVersion", "paas.gantry.dev/v1"},
                                                {"kind", "EnvironmentTemplate"},
                                                {"metadata", {{"name", name}}},
                                                {"spec",
                                                 {{"displayName", "Local " + name},
                                                  {"driver", "local"},
                                                  {"local", std::move(local)}}}});
  }

  // Profile `name` on `tmpl` with `resources` (e.g. {gpu: {type: h100, count: 1}}).
  boost::json::object CreateLocalProfile(const std::string& name, const std::string& tmpl,
                                         boost::json::object resources,
                                         const std::string& ns = "default") {
    return api().MustCreate(NsPath(ns, "computeprofiles"),
                            boost::json::object{{"apiVersion", "paas.gantry.dev/v1"},
                                                {"kind", "ComputeProfile"},
                                                {"metadata", {{"name", name}}},
                                                {"spec",
                                                 {{"displayName", "Profile " + name},
                                                  {"templateRef", {{"name", tmpl}}},
                                                  {"resources", std::move(resources)}}}});
  }

  static boost::json::object Gpu(int count, const std::string& type = "h100") {
    boost::json::object gpu{{"count", count}};
    if (!type.empty()) gpu["type"] = type;
    return boost::json::object{{"gpu", std::move(gpu)}};
  }

  // Deploys (expects 202) and returns the answer's run name.
  std::string Deploy(const std::string& name, const std::string& ns = "default") {
    Resp r = Action(name, "deploy", ns);
    EXPECT_EQ(r.status, 202) << r.raw;
    return Str(r.obj(), "status.lastRunRef.name");
  }

  // The workload's pid as the instance's status.driverState records it (0 when none).
  static int DriverPid(const boost::json::object& instance) {
    return static_cast<int>(Int(instance, "status.driverState.pid", 0));
  }

  // Waits until the env dump of `instance`'s workload exists and returns it.
  std::string WorkloadEnv(const std::string& instance) {
    EXPECT_TRUE(WaitFile("env-" + instance));
    return ReadFile(Path("env-" + instance));
  }

  // Polls until the plain workload led by `pid` has started its child (`tail`, the script's
  // last step: its output and env dump are written by then).
  bool WaitWorkloadChild(int pid) {
    bool ok = PollUntil([&] {
      for (int member : local_test::ProcessesInGroup(pid))
        if (member != pid &&
            ReadFile("/proc/" + std::to_string(member) + "/cmdline").rfind("tail", 0) == 0)
          return true;
      return false;
    });
    EXPECT_TRUE(ok) << "the workload " << pid << " never started its child";
    return ok;
  }

  // Polls until no live process is in group `pgid` nor names `needle` in its command line.
  bool WaitNoProcesses(int pgid, const std::string& needle) {
    bool ok = PollUntil([&] {
      return (pgid <= 0 || local_test::ProcessesInGroup(pgid).empty()) &&
             local_test::LiveProcessesWith(needle).empty();
    });
    EXPECT_TRUE(ok) << "processes left: group " << pgid << ": "
                    << ::testing::PrintToString(local_test::ProcessesInGroup(pgid)) << "; with \""
                    << needle
                    << "\": " << ::testing::PrintToString(local_test::LiveProcessesWith(needle));
    return ok;
  }

  std::string workload_;
};

}  // namespace gantry::testing
