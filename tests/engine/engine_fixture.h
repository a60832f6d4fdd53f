// The fixture of the deploy-engine integration tests: a real gantryd (tests/gantryd_test.h)
// plus a scratch directory for the exec scripts the tests write, and helpers to drive the
// lifecycle actions and to wait for conditions.
//
// Synchronisation rules (STYLE.md #12): nothing here sleeps to let time pass. Scripts block on
// barrier files the test creates; the test waits for a condition (a phase, a file, a process
// gone) by polling it, with a generous deadline that only bounds a failure.
//
// The standard script (StandardScript) is driven per instance and per run by files in dir():
//   block-INSTANCE     exists → the script waits for release-RUN before it ends
//   release-RUN        lets a blocked run end
//   fail-INSTANCE      exists → the script prints six lines and exits 3
// and leaves behind started-RUN (written once it runs), stdin-RUN.json (its stdin) and
// env-RUN (its GANTRY_* environment). On success it writes the outputs
// {"endpoint": "http://INSTANCE.example:8080", "action": ACTION}.
//
// Thread-safety: like the GantrydTest it extends, for the test's thread.
#pragma once

#include <boost/json.hpp>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gantryd_test.h"

namespace gantry::testing {

// Bounds every wait: a passing test never comes near it.
inline constexpr int kEngineWaitSeconds = 120;

class EngineTest : public GantrydTest {
 protected:
  // Deploy workers; tests that need a queue (Waiting) use 1.
  virtual int Workers() { return 4; }
  std::vector<std::string> Args() override { return {"--workers", std::to_string(Workers())}; }

  void SetUp() override;
  void TearDown() override;

  // The scratch directory of this test (scripts, barrier files, what scripts leave).
  const std::string& dir() const { return dir_; }
  std::string Path(const std::string& file) const { return dir_ + "/" + file; }

  // Writes an executable /bin/sh script `file` (the shebang is added) and returns its path.
  std::string WriteScript(const std::string& file, const std::string& body);
  // The standard script described above, written once per test; returns its path.
  std::string StandardScript();

  // Creates exec template `name` running `command` (plus `exec_extra`, e.g. timeoutSeconds).
  boost::json::object CreateExecTemplate(const std::string& name, boost::json::array command,
                                         boost::json::object exec_extra = {},
                                         boost::json::array variables = {},
                                         const std::string& ns = "default");
  // Template `tmpl` (the standard script) and profile `profile` on it, in `ns`.
  void CreateStandardProfile(const std::string& profile = "std",
                             const std::string& tmpl = "std-tmpl",
                             boost::json::array variables = {}, const std::string& ns = "default");

  // POST …/computeinstances/NAME/ACTION.
  Resp Action(const std::string& name, const std::string& action,
              const std::string& ns = "default");
  // GET of the instance (expects 200).
  boost::json::object Get(const std::string& name, const std::string& ns = "default");
  // Polls the instance until `pred` holds; returns the last object seen (empty once it is
  // gone). Adds a failure (with `what`) when the deadline passes.
  boost::json::object WaitInstance(const std::string& name,
                                   const std::function<bool(const boost::json::object&)>& pred,
                                   const std::string& what, const std::string& ns = "default");
  boost::json::object WaitPhase(const std::string& name, const std::string& phase,
                                const std::string& ns = "default");
  // Polls until the instance is gone (404).
  bool WaitGone(const std::string& name, const std::string& ns = "default");
  // Runs of an instance (by the label the engine sets), oldest first by name.
  std::vector<boost::json::object> RunsOf(const std::string& name,
                                          const std::string& ns = "default");
  boost::json::object GetRun(const std::string& run, const std::string& ns = "default");
  boost::json::object WaitRunPhase(const std::string& run, const std::string& phase,
                                   const std::string& ns = "default");

  // The core Events of `name` (GET /api/v1/namespaces/NS/events by involvedObject), run
  // events and the lifecycle controller's warnings alike.
  std::vector<boost::json::object> EventsOf(const std::string& name,
                                            const std::string& kind = "ComputeInstance",
                                            const std::string& ns = "default");
  // The AuditEvents of automatic actions (user system:lifecycle) on `name`.
  std::vector<boost::json::object> SystemAudit(const std::string& name);

  // Files as barriers.
  void Touch(const std::string& file) const;
  bool Exists(const std::string& file) const;
  std::string ReadFile(const std::string& path) const;
  // Polls until `file` (in dir()) exists.
  bool WaitFile(const std::string& file) const;

  // A blocking deploy: creates block-NAME, deploys, waits until the run started. Returns the
  // run's name.
  std::string DeployBlocked(const std::string& name, const std::string& ns = "default");

  std::string script_;  // the standard script, once written
  std::string dir_;
};

// GET `target` from gantryd at 127.0.0.1:`port` on its own thread and collects the body line by
// line as it arrives (chunked or not): for `?watch=true` and `…/log?follow=true`.
//
// Why not WatchCollector (tests/api_client.h): it rides on client::HttpClient::Stream, which
// reads the body with http::read into a 16 KiB buffer and so hands over nothing until 16 KiB
// arrived or the stream ended (src/client/http_client.cc, the http::read in Stream). Streams
// here are small and must be seen live, so this reads the socket directly.
//
// `stop_when(line)` true ends the stream from the client side after that line. The destructor
// shuts the socket down and joins. Thread-safety: all methods are for any thread.
class LineStreamReader {
 public:
  LineStreamReader(int port, std::string target,
                   std::function<bool(const std::string& line)> stop_when = nullptr);
  ~LineStreamReader();
  LineStreamReader(const LineStreamReader&) = delete;
  LineStreamReader& operator=(const LineStreamReader&) = delete;

  // Waits until pred(lines so far) holds or the stream ended; returns pred's last value.
  bool WaitFor(const std::function<bool(const std::vector<std::string>&)>& pred);
  // Waits for the end (the server ended the body, the connection broke, or stop_when).
  bool WaitDone();
  std::vector<std::string> lines() const;
  // The lines parsed as JSON objects (non-objects are skipped).
  std::vector<boost::json::object> objects() const;
  int http_status() const;
  // True when the server ended the body properly (last chunk, or Content-Length reached).
  bool complete() const;

 private:
  void Loop(std::string target, std::function<bool(const std::string&)> stop_when);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  int fd_ = -1;                     // guarded by mu_
  std::vector<std::string> lines_;  // guarded by mu_
  bool done_ = false;               // guarded by mu_
  bool complete_ = false;           // guarded by mu_
  int status_ = 0;                  // guarded by mu_
  std::thread thread_;
};

// Polls `cond` (every 20 ms) until it holds or `seconds` pass; returns its last value.
bool PollUntil(const std::function<bool()>& cond, int seconds = kEngineWaitSeconds);

// "2026-12-02T03:00:00Z" (gantryd's form) as a time; nullopt for anything else.
std::optional<std::chrono::system_clock::time_point> ParseUtc(const std::string& text);

// PIDs of live processes whose command line (NUL-separated argv) contains `needle`.
std::vector<int> ProcessesWith(const std::string& needle);

// A status string field by dotted path ("" when absent).
std::string Str(const boost::json::object& o, std::string_view path);
int64_t Int(const boost::json::object& o, std::string_view path, int64_t fallback = -1);
// The whole value at a dotted path, or null.
boost::json::value At(const boost::json::object& o, std::string_view path);
// The status.conditions entry of `type` ({} when there is none).
boost::json::object Condition(const boost::json::object& instance, const std::string& type);
// Asserts a refusal: status code, Status reason and the exact message a user sees.
void ExpectRefused(const Resp& r, int code, const std::string& reason, const std::string& message);

}  // namespace gantry::testing
