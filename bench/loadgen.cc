// loadgen: the HTTP client side of the Gantry benchmarks (bench/run_all.sh builds and runs it).
//
// Not part of gantryd and not a test: a small, blocking, thread-per-connection client on
// Boost.Beast, plus a process-spawn reference. Every mode prints one line of `key=value`
// figures that run_all.sh parses; diagnostics go to stderr.
//
//   loadgen create --port P --prefix NAME --connections C [--count N] [--seconds S]
//                  [--start I] [--profile NAME] [--set LABEL]
//       POSTs ComputeInstances NAME-I (one per request) over C keep-alive connections until N
//       were made or S seconds passed. Labels: env=prod|dev (1/2), team=tK (1/10),
//       shard=sK (1/1000), bench-set=LABEL.
//   loadgen list --port P --path TARGET [--count N] [--seconds S]
//       N sequential GETs of TARGET on one keep-alive connection (after one warm-up request).
//   loadgen deploy --port P --prefix NAME --count N --connections C [--set LABEL] [--sequential]
//       Watches instances of bench-set=LABEL for phase Success, then POSTs deploy for
//       NAME-0..N-1 (all at once over C connections, or one after another, each waiting for
//       its Success). Reports deploys/s and POST-to-Success latency.
//   loadgen spawn --count N --parallel P [--stdin-bytes B] [--posix-spawn]
//       Reference for the engine: fork/exec `true apply` N times, P at a time, with a stdin
//       pipe fed B bytes and a stdout/stderr pipe read to EOF, as the exec driver does. With
//       --posix-spawn, glibc's posix_spawnp (clone with CLONE_VM|CLONE_VFORK) instead of fork.
//
// Thread-safety: each worker thread owns its connection; shared results are atomics or
// guarded by a mutex.
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

extern char** environ;

namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

// gantryd needs credentials: $GANTRY_TOKEN (run_all.sh starts gantryd with the same value as
// GANTRY_BOOTSTRAP_TOKEN) is sent as a bearer token on every request.
template <class Request>
void SetAuthorization(Request& req) {
  static const char* token = std::getenv("GANTRY_TOKEN");
  if (token && *token) req.set(http::field::authorization, std::string("Bearer ") + token);
}
namespace json = boost::json;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

constexpr char kBase[] = "/apis/paas.gantry.dev/v1/namespaces/default/computeinstances";

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct Args {
  std::map<std::string, std::string> kv;
  std::string Get(const std::string& k, const std::string& def = "") const {
    auto it = kv.find(k);
    return it == kv.end() ? def : it->second;
  }
  long Int(const std::string& k, long def) const {
    auto it = kv.find(k);
    return it == kv.end() ? def : std::stol(it->second);
  }
  bool Has(const std::string& k) const { return kv.count(k) > 0; }
};

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 2; i < argc; ++i) {
    std::string k = argv[i];
    if (k.rfind("--", 0) != 0) {
      std::fprintf(stderr, "unexpected argument %s\n", argv[i]);
      std::exit(2);
    }
    k = k.substr(2);
    if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0)
      a.kv[k] = argv[++i];
    else
      a.kv[k] = "1";
  }
  return a;
}

// Percentile of sorted values (nearest rank).
double Pct(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t i = static_cast<size_t>(p / 100.0 * static_cast<double>(sorted.size()));
  return sorted[std::min(i, sorted.size() - 1)];
}

std::string Summary(std::vector<double> ms, const std::string& prefix) {
  std::sort(ms.begin(), ms.end());
  double sum = 0;
  for (double v : ms) sum += v;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%sp50_ms=%.3f %sp90_ms=%.3f %sp99_ms=%.3f %smax_ms=%.3f %smean_ms=%.3f",
                prefix.c_str(), Pct(ms, 50), prefix.c_str(), Pct(ms, 90), prefix.c_str(),
                Pct(ms, 99), prefix.c_str(), ms.empty() ? 0.0 : ms.back(), prefix.c_str(),
                ms.empty() ? 0.0 : sum / static_cast<double>(ms.size()));
  return buf;
}

// One keep-alive HTTP/1.1 connection; reconnects once if the server closed it.
class Conn {
 public:
  Conn(std::string host, std::string port) : host_(std::move(host)), port_(std::move(port)) {}

  http::response<http::string_body> Do(http::verb verb, const std::string& target,
                                       const std::string& body = "") {
    for (int attempt = 0;; ++attempt) {
      try {
        if (!stream_) Connect();
        http::request<http::string_body> req{verb, target, 11};
        req.set(http::field::host, host_);
        SetAuthorization(req);
        req.keep_alive(true);
        if (verb == http::verb::post || verb == http::verb::put) {
          req.set(http::field::content_type, "application/json");
          req.body() = body;
          req.prepare_payload();
        }
        http::write(*stream_, req);
        http::response_parser<http::string_body> parser;
        parser.body_limit(256 * 1024 * 1024);
        http::read(*stream_, buf_, parser);
        auto res = parser.release();
        if (!res.keep_alive()) stream_.reset();
        return res;
      } catch (const std::exception& e) {
        stream_.reset();
        if (attempt >= 1) throw;
      }
    }
  }

 private:
  void Connect() {
    tcp::resolver resolver(ioc_);
    stream_.emplace(ioc_);
    stream_->connect(resolver.resolve(host_, port_));
    stream_->socket().set_option(tcp::no_delay(true));
    buf_.clear();
  }

  std::string host_, port_;
  net::io_context ioc_;
  std::optional<beast::tcp_stream> stream_;
  beast::flat_buffer buf_;
};

std::string InstanceBody(const std::string& name, long i, const std::string& profile,
                         const std::string& set) {
  json::object labels{{"env", i % 2 == 0 ? "prod" : "dev"},
                      {"team", "t" + std::to_string(i % 10)},
                      {"shard", "s" + std::to_string(i % 1000)},
                      {"bench-set", set}};
  json::object obj{
      {"apiVersion", "paas.gantry.dev/v1"},
      {"kind", "ComputeInstance"},
      {"metadata", json::object{{"name", name}, {"labels", std::move(labels)}}},
      {"spec", json::object{{"displayName", "Bench instance " + std::to_string(i)},
                            {"description", "Created by bench/loadgen for the benchmarks."},
                            {"profileRef", json::object{{"name", profile}}}}}};
  return json::serialize(obj);
}

int Create(const Args& a) {
  const std::string host = a.Get("host", "127.0.0.1"), port = a.Get("port");
  const std::string prefix = a.Get("prefix", "bench"), profile = a.Get("profile", "bench");
  const std::string set = a.Get("set", "main");
  const long count = a.Int("count", 0), start = a.Int("start", 0);
  const double seconds = std::stod(a.Get("seconds", "0"));
  const int conns = static_cast<int>(a.Int("connections", 16));
  std::atomic<long> next{start}, ok{0}, errors{0};
  std::mutex mu;
  std::vector<double> lat;
  std::string first_error;
  auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < conns; ++c) {
    threads.emplace_back([&] {
      Conn conn(host, port);
      std::vector<double> mine;
      while (true) {
        if (seconds > 0 && Ms(Clock::now() - t0) >= seconds * 1000) break;
        long i = next++;
        if (count > 0 && i >= start + count) break;
        std::string name = prefix + "-" + std::to_string(i);
        std::string body = InstanceBody(name, i, profile, set);
        auto s = Clock::now();
        try {
          auto res = conn.Do(http::verb::post, kBase, body);
          mine.push_back(Ms(Clock::now() - s));
          if (res.result_int() == 201) {
            ++ok;
          } else {
            ++errors;
            std::lock_guard<std::mutex> l(mu);
            if (first_error.empty())
              first_error = std::to_string(res.result_int()) + " " + res.body();
          }
        } catch (const std::exception& e) {
          ++errors;
          std::lock_guard<std::mutex> l(mu);
          if (first_error.empty()) first_error = e.what();
        }
      }
      std::lock_guard<std::mutex> l(mu);
      lat.insert(lat.end(), mine.begin(), mine.end());
    });
  }
  for (auto& t : threads) t.join();
  double secs = Ms(Clock::now() - t0) / 1000;
  if (!first_error.empty())
    std::fprintf(stderr, "loadgen create: first error: %.300s\n", first_error.c_str());
  std::printf("creates=%ld errors=%ld seconds=%.3f rate=%.1f %s\n", ok.load(), errors.load(), secs,
              static_cast<double>(ok.load()) / secs, Summary(lat, "").c_str());
  return errors > 0 ? 1 : 0;
}

int List(const Args& a) {
  Conn conn(a.Get("host", "127.0.0.1"), a.Get("port"));
  const std::string path = a.Get("path");
  const long count = a.Int("count", 1000);
  const double seconds = std::stod(a.Get("seconds", "0"));
  auto warm = conn.Do(http::verb::get, path);
  if (warm.result_int() != 200) {
    std::fprintf(stderr, "loadgen list: %d %.300s\n", warm.result_int(), warm.body().c_str());
    return 1;
  }
  size_t items = 0;
  auto v = json::parse(warm.body());
  if (auto* it = v.as_object().if_contains("items")) items = it->as_array().size();
  std::vector<double> lat;
  size_t bytes = warm.body().size();
  long errors = 0;
  auto t0 = Clock::now();
  for (long i = 0; i < count; ++i) {
    if (seconds > 0 && Ms(Clock::now() - t0) >= seconds * 1000) break;
    auto s = Clock::now();
    auto res = conn.Do(http::verb::get, path);
    lat.push_back(Ms(Clock::now() - s));
    if (res.result_int() != 200) ++errors;
  }
  std::printf("requests=%zu errors=%ld items=%zu bytes=%zu %s\n", lat.size(), errors, items, bytes,
              Summary(lat, "").c_str());
  return errors > 0 ? 1 : 0;
}

// Reads a watch stream and records when each instance first reports phase Success.
class SuccessWatcher {
 public:
  SuccessWatcher(std::string host, std::string port, std::string target, size_t want)
      : host_(std::move(host)), port_(std::move(port)), target_(std::move(target)), want_(want) {}

  // Connects and sends the request; returns once the response header has arrived, so that
  // the server has subscribed before any deploy is posted.
  void Start() {
    tcp::resolver resolver(ioc_);
    stream_.emplace(ioc_);
    stream_->connect(resolver.resolve(host_, port_));
    http::request<http::empty_body> req{http::verb::get, target_, 11};
    req.set(http::field::host, host_);
    SetAuthorization(req);
    http::write(*stream_, req);
    parser_.body_limit(boost::none);
    http::read_header(*stream_, buf_, parser_);
    if (parser_.get().result_int() != 200) {
      std::fprintf(stderr, "loadgen: watch answered %d\n", parser_.get().result_int());
      std::exit(1);
    }
    thread_ = std::thread([this] { Loop(); });
  }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  // Blocks until `name` succeeded or the stream ended; returns false on the latter.
  bool WaitFor(const std::string& name) {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return ended_ || done_.count(name); });
    return done_.count(name) > 0;
  }
  std::unordered_map<std::string, Clock::time_point> Done() {
    std::lock_guard<std::mutex> l(mu_);
    return done_;
  }
  long failed() const { return failed_; }

 private:
  void Loop() {
    std::string pending;
    auto on_chunk = [&](std::uint64_t, beast::string_view body, beast::error_code&) {
      pending.append(body.data(), body.size());
      size_t nl;
      while ((nl = pending.find('\n')) != std::string::npos) {
        Line(pending.substr(0, nl));
        pending.erase(0, nl + 1);
      }
      return body.size();
    };
    parser_.on_chunk_body(on_chunk);
    beast::error_code ec;
    while (!parser_.is_done()) {
      {
        std::lock_guard<std::mutex> l(mu_);
        if (done_.size() >= want_) break;
      }
      http::read_some(*stream_, buf_, parser_, ec);
      if (ec) break;
    }
    std::lock_guard<std::mutex> l(mu_);
    ended_ = true;
    cv_.notify_all();
  }
  void Line(const std::string& line) {
    auto now = Clock::now();
    boost::system::error_code ec;
    auto v = json::parse(line, ec);
    if (ec || !v.is_object()) return;
    const auto* obj = v.as_object().if_contains("object");
    if (!obj || !obj->is_object()) return;
    const auto& o = obj->as_object();
    std::string name, phase;
    if (auto* m = o.if_contains("metadata"); m && m->is_object())
      if (auto* n = m->as_object().if_contains("name"); n && n->is_string())
        name = n->as_string().c_str();
    if (auto* s = o.if_contains("status"); s && s->is_object())
      if (auto* p = s->as_object().if_contains("phase"); p && p->is_string())
        phase = p->as_string().c_str();
    std::lock_guard<std::mutex> l(mu_);
    if (phase == "Success") done_.emplace(name, now);
    if (phase == "Failed") ++failed_;
    cv_.notify_all();
  }

  std::string host_, port_, target_;
  const size_t want_;
  net::io_context ioc_;
  std::optional<beast::tcp_stream> stream_;
  beast::flat_buffer buf_;
  http::response_parser<http::empty_body> parser_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<std::string, Clock::time_point> done_;
  bool ended_ = false;
  std::atomic<long> failed_{0};
};

int Deploy(const Args& a) {
  const std::string host = a.Get("host", "127.0.0.1"), port = a.Get("port");
  const std::string prefix = a.Get("prefix", "deploy"), set = a.Get("set", "deploy");
  const long count = a.Int("count", 1000);
  const int conns = static_cast<int>(a.Int("connections", 32));
  const bool sequential = a.Has("sequential");
  const long timeout_s = a.Int("timeout", 240);

  Conn probe(host, port);
  auto first = probe.Do(http::verb::get, std::string(kBase) + "?limit=1");
  std::string rv(
      json::parse(first.body()).at("metadata").at("resourceVersion").as_string().c_str());
  SuccessWatcher watcher(host, port,
                         std::string(kBase) + "?watch=true&resourceVersion=" + rv +
                             "&timeoutSeconds=" + std::to_string(timeout_s) +
                             "&fieldSelector=status.phase%3DSuccess&labelSelector=bench-set%3D" +
                             set,
                         static_cast<size_t>(count));
  watcher.Start();

  std::vector<Clock::time_point> posted(static_cast<size_t>(count));
  std::vector<double> post_lat(static_cast<size_t>(count), 0);
  std::atomic<long> next{0}, errors{0};
  std::mutex mu;
  std::string first_error;
  auto post_one = [&](Conn& conn, long i) {
    std::string name = prefix + "-" + std::to_string(i);
    auto s = Clock::now();
    posted[static_cast<size_t>(i)] = s;
    try {
      auto res = conn.Do(http::verb::post, std::string(kBase) + "/" + name + "/deploy", "{}");
      post_lat[static_cast<size_t>(i)] = Ms(Clock::now() - s);
      if (res.result_int() / 100 != 2) {
        ++errors;
        std::lock_guard<std::mutex> l(mu);
        if (first_error.empty()) first_error = std::to_string(res.result_int()) + " " + res.body();
      }
    } catch (const std::exception& e) {
      ++errors;
      std::lock_guard<std::mutex> l(mu);
      if (first_error.empty()) first_error = e.what();
    }
    return name;
  };
  auto t0 = Clock::now();
  if (sequential) {
    Conn conn(host, port);
    for (long i = 0; i < count; ++i)
      if (!watcher.WaitFor(post_one(conn, i))) break;
  } else {
    std::vector<std::thread> threads;
    for (int c = 0; c < conns; ++c)
      threads.emplace_back([&] {
        Conn conn(host, port);
        for (long i; (i = next++) < count;) post_one(conn, i);
      });
    for (auto& t : threads) t.join();
  }
  auto posts_done = Clock::now();
  watcher.Join();
  auto done = watcher.Done();
  std::vector<double> lat;
  Clock::time_point last = t0;
  for (long i = 0; i < count; ++i) {
    auto it = done.find(prefix + "-" + std::to_string(i));
    if (it == done.end()) continue;
    lat.push_back(Ms(it->second - posted[static_cast<size_t>(i)]));
    last = std::max(last, it->second);
  }
  double secs = Ms(last - t0) / 1000;
  if (!first_error.empty())
    std::fprintf(stderr, "loadgen deploy: first error: %.300s\n", first_error.c_str());
  std::printf(
      "deployed=%zu of=%ld post_errors=%ld failed=%ld seconds=%.3f rate=%.1f posts_seconds=%.3f %s "
      "%s\n",
      lat.size(), count, errors.load(), watcher.failed(), secs,
      secs > 0 ? static_cast<double>(lat.size()) / secs : 0.0, Ms(posts_done - t0) / 1000,
      Summary(lat, "").c_str(), Summary(post_lat, "post_").c_str());
  return lat.size() == static_cast<size_t>(count) && errors == 0 ? 0 : 1;
}

// One fork/exec of `true apply` with pipes, as drivers/common/process.cc does it.
double SpawnOnce(const std::string& input, bool posix_spawn) {
  auto s = Clock::now();
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) std::abort();
  char* argv[] = {const_cast<char*>("true"), const_cast<char*>("apply"), nullptr};
  pid_t pid = -1;
  if (posix_spawn) {
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, out[1], 2);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    if (::posix_spawnp(&pid, "true", &fa, &attr, argv, environ) != 0) std::abort();
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
  } else if ((pid = ::fork()) == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    ::setpgid(0, 0);
    ::execvp(argv[0], argv);
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  (void)!::write(in[1], input.data(), input.size());
  ::close(in[1]);
  char buf[4096];
  while (::read(out[0], buf, sizeof buf) > 0) {
  }
  ::close(out[0]);
  int st;
  ::waitpid(pid, &st, 0);
  return Ms(Clock::now() - s);
}

int Spawn(const Args& a) {
  const long count = a.Int("count", 1000);
  const int parallel = static_cast<int>(a.Int("parallel", 4));
  const std::string input(static_cast<size_t>(a.Int("stdin-bytes", 600)), ' ');
  const bool posix_spawn = a.Has("posix-spawn");
  ::signal(SIGPIPE, SIG_IGN);
  std::atomic<long> next{0};
  std::mutex mu;
  std::vector<double> lat;
  auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int p = 0; p < parallel; ++p)
    threads.emplace_back([&] {
      std::vector<double> mine;
      while (next++ < count) mine.push_back(SpawnOnce(input, posix_spawn));
      std::lock_guard<std::mutex> l(mu);
      lat.insert(lat.end(), mine.begin(), mine.end());
    });
  for (auto& t : threads) t.join();
  double secs = Ms(Clock::now() - t0) / 1000;
  std::printf("spawns=%zu seconds=%.3f rate=%.1f %s\n", lat.size(), secs,
              static_cast<double>(lat.size()) / secs, Summary(lat, "").c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: loadgen create|list|deploy|spawn --port P ...\n");
    return 2;
  }
  std::string mode = argv[1];
  Args a = Parse(argc, argv);
  try {
    if (mode == "create") return Create(a);
    if (mode == "list") return List(a);
    if (mode == "deploy") return Deploy(a);
    if (mode == "spawn") return Spawn(a);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loadgen %s: %s\n", mode.c_str(), e.what());
    return 1;
  }
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
