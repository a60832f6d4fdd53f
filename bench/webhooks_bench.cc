// webhooks_bench: the webhook outbox under load (issue 20 "Measure"; bench/run_all.sh builds
// and runs it against a gantryd started with --webhook-allow-private; docs/performance.md).
//
//   webhooks_bench --port P [--changes N] [--hooks H] [--connections C]
//
// Not part of gantryd and not a test. One run, one gantryd, two halves:
//   1. without webhooks: N/2 ComputeInstances are created (creates/s), then each gets a
//      deploy, which its profile's approval gate turns into Waiting/PendingApproval at once,
//      and a cancel, which returns it to NotDeployed: N state changes (changes/s), each one
//      commit through the outbox decorator, none with a subscriber.
//   2. H Webhooks subscribed to PhaseChanged are created, pointing at a receiver this program
//      runs on 127.0.0.1; the same again with N/2 fresh instances: N state changes x H
//      deliveries. Each delivery's arrival is matched to the POST that caused it (instance
//      name + new phase): the delay from the POST being sent (an upper bound of the commit
//      time) to the delivery's arrival, p50/p99/max, and deliveries/s from the first POST to
//      the last arrival.
// Prints one line of key=value figures (run_all.sh parses it); diagnostics on stderr.
//
// Thread-safety: each client thread owns its connection; the receiver's threads record
// arrivals under one mutex.
#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

constexpr char kApi[] = "/apis/paas.gantry.dev/v1/namespaces/default/";

// One keep-alive connection to gantryd; $GANTRY_TOKEN is the bearer token.
class Conn {
 public:
  explicit Conn(std::string port) : port_(std::move(port)) {}
  int Send(http::verb verb, const std::string& target, const std::string& body) {
    for (int attempt = 0;; ++attempt) {
      try {
        if (!stream_) Connect();
        http::request<http::string_body> req{verb, target, 11};
        req.set(http::field::host, "127.0.0.1");
        if (const char* t = std::getenv("GANTRY_TOKEN"))
          req.set(http::field::authorization, std::string("Bearer ") + t);
        req.keep_alive(true);
        req.set(http::field::content_type, "application/json");
        req.body() = body;
        req.prepare_payload();
        http::write(*stream_, req);
        http::response<http::string_body> res;
        http::read(*stream_, buf_, res);
        if (!res.keep_alive()) stream_.reset();
        if (res.result_int() >= 300)
          std::fprintf(stderr, "%s %s: %d %s\n", std::string(http::to_string(verb)).c_str(),
                       target.c_str(), res.result_int(), res.body().substr(0, 300).c_str());
        return res.result_int();
      } catch (const std::exception& e) {
        stream_.reset();
        if (attempt >= 1) {
          std::fprintf(stderr, "%s: %s\n", target.c_str(), e.what());
          return 0;
        }
      }
    }
  }

 private:
  void Connect() {
    tcp::resolver resolver(ioc_);
    stream_.emplace(ioc_);
    stream_->connect(resolver.resolve("127.0.0.1", port_));
    stream_->socket().set_option(tcp::no_delay(true));
    buf_.clear();
  }
  std::string port_;
  net::io_context ioc_;
  std::optional<beast::tcp_stream> stream_;
  beast::flat_buffer buf_;
};

// The receiver: answers every POST 200 and records when each body arrived.
class Receiver {
 public:
  Receiver() : acceptor_(ioc_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0)) {
    thread_ = std::thread([this] { Accept(); });
  }
  ~Receiver() {
    stop_ = true;
    beast::error_code ec;
    acceptor_.close(ec);
    if (thread_.joinable()) thread_.join();
    for (auto& t : conns_) t.join();
  }
  int port() const { return acceptor_.local_endpoint().port(); }
  struct Arrival {
    Clock::time_point at;
    std::string key;  // instance/phase
  };
  std::vector<Arrival> arrivals() {
    std::lock_guard lock(mu_);
    return arrivals_;
  }
  size_t count() {
    std::lock_guard lock(mu_);
    return arrivals_.size();
  }

 private:
  void Accept() {
    while (!stop_) {
      beast::error_code ec;
      tcp::socket s(ioc_);
      acceptor_.accept(s, ec);
      if (ec) return;
      conns_.emplace_back([this, sock = std::move(s)]() mutable { Serve(std::move(sock)); });
    }
  }
  void Serve(tcp::socket sock) {
    beast::flat_buffer buf;
    for (;;) {
      beast::error_code ec;
      http::request<http::string_body> req;
      http::read(sock, buf, req, ec);
      if (ec) return;
      auto at = Clock::now();
      std::string key;
      json::value v = json::parse(req.body(), ec);
      if (!ec && v.is_object()) {
        const json::object& o = v.as_object();
        const json::value* obj = o.if_contains("object");
        const json::value* phase = o.if_contains("phase");
        if (obj && obj->is_object() && phase && phase->is_string())
          key = json::value_to<std::string>(obj->as_object().at("name")) + "/" +
                std::string(phase->as_string());
      }
      {
        std::lock_guard lock(mu_);
        arrivals_.push_back({at, key});
      }
      http::response<http::empty_body> res{http::status::ok, 11};
      res.keep_alive(req.keep_alive());
      res.prepare_payload();
      http::write(sock, res, ec);
      if (ec || !req.keep_alive()) return;
    }
  }
  net::io_context ioc_;
  tcp::acceptor acceptor_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::vector<std::thread> conns_;  // joined in the destructor (after the acceptor closed)
  std::mutex mu_;
  std::vector<Arrival> arrivals_;
};

struct Args {
  std::map<std::string, std::string> kv;
  std::string Get(const std::string& k, const std::string& d) const {
    auto it = kv.find(k);
    return it == kv.end() ? d : it->second;
  }
};

// Runs `work(conn, i)` for i in [0, n) over `conns` connections; returns the seconds taken.
template <class F>
double Parallel(const std::string& port, int n, int conns, F work) {
  std::atomic<int> next{0};
  auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < conns; ++c)
    threads.emplace_back([&] {
      Conn conn(port);
      for (int i; (i = next++) < n;) work(conn, i);
    });
  for (auto& t : threads) t.join();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string InstanceBody(const std::string& name) {
  return json::serialize(json::object{{"apiVersion", "paas.gantry.dev/v1"},
                                      {"kind", "ComputeInstance"},
                                      {"metadata", {{"name", name}}},
                                      {"spec", {{"profileRef", {{"name", "gated"}}}}}});
}

void Setup(const std::string& port) {
  Conn c(port);
  c.Send(http::verb::post, std::string(kApi) + "environmenttemplates",
         R"({"metadata":{"name":"noop"},"spec":{"driver":"exec",
             "exec":{"command":["true"],"timeoutSeconds":60}}})");
  c.Send(http::verb::post, std::string(kApi) + "computeprofiles",
         R"({"metadata":{"name":"gated"},"spec":{"templateRef":{"name":"noop"},
             "resources":{"gpu":{"count":8}},"approval":{"required":true}}})");
}

struct Half {
  double create_rate = 0, change_rate = 0;
  std::map<std::string, Clock::time_point> sent;  // instance/phase -> when its POST was sent
  Clock::time_point first;
};

// Creates n instances PREFIX-i, then deploys (-> Waiting) and cancels (-> NotDeployed) each.
Half RunHalf(const std::string& port, const std::string& prefix, int n, int conns) {
  Half h;
  std::mutex mu;
  double s = Parallel(port, n, conns, [&](Conn& c, int i) {
    c.Send(http::verb::post, std::string(kApi) + "computeinstances",
           InstanceBody(prefix + "-" + std::to_string(i)));
  });
  h.create_rate = n / s;
  h.first = Clock::now();
  s = Parallel(port, n, conns, [&](Conn& c, int i) {
    const std::string name = prefix + "-" + std::to_string(i);
    const std::string path = std::string(kApi) + "computeinstances/" + name;
    for (const char* step : {"deploy", "cancel"}) {
      auto at = Clock::now();
      {
        std::lock_guard lock(mu);
        h.sent[name + (step[0] == 'd' ? "/Waiting" : "/NotDeployed")] = at;
      }
      c.Send(http::verb::post, path + "/" + step, "{}");
    }
  });
  h.change_rate = 2 * n / s;
  return h;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) a.kv[std::string(argv[i]).substr(2)] = argv[i + 1];
  const std::string port = a.Get("port", "");
  const int changes = std::stoi(a.Get("changes", "1000"));
  const int hooks = std::stoi(a.Get("hooks", "3"));
  const int conns = std::stoi(a.Get("connections", "8"));
  if (port.empty()) {
    std::fprintf(stderr, "usage: webhooks_bench --port P [--changes N] [--hooks H]\n");
    return 2;
  }
  Receiver receiver;
  Setup(port);
  Half without = RunHalf(port, "a", changes / 2, conns);
  Conn c(port);
  for (int h = 0; h < hooks; ++h)
    c.Send(http::verb::post, std::string(kApi) + "webhooks",
           json::serialize(json::object{
               {"metadata", {{"name", "hook" + std::to_string(h)}}},
               {"spec",
                {{"url",
                  "http://127.0.0.1:" + std::to_string(receiver.port()) + "/h" + std::to_string(h)},
                 {"events", json::array{"PhaseChanged"}},
                 {"secret", "bench-secret-" + std::to_string(h)}}}}));
  Half with = RunHalf(port, "b", changes / 2, conns);
  const size_t expected = static_cast<size_t>(changes / 2 * 2) * hooks;
  auto deadline = Clock::now() + std::chrono::seconds(300);
  while (receiver.count() < expected && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::vector<double> delays;
  Clock::time_point last = with.first;
  for (const auto& arrival : receiver.arrivals()) {
    auto it = with.sent.find(arrival.key);
    if (it == with.sent.end()) continue;
    delays.push_back(std::chrono::duration<double, std::milli>(arrival.at - it->second).count());
    last = std::max(last, arrival.at);
  }
  const double span = std::chrono::duration<double>(last - with.first).count();
  std::printf(
      "changes=%d hooks=%d deliveries=%zu expected=%zu deliveries_per_s=%.0f delay_p50_ms=%.1f "
      "delay_p99_ms=%.1f delay_max_ms=%.1f creates_per_s_without=%.0f creates_per_s_with=%.0f "
      "changes_per_s_without=%.0f changes_per_s_with=%.0f\n",
      changes, hooks, delays.size(), expected, span > 0 ? delays.size() / span : 0,
      Percentile(delays, 0.5), Percentile(delays, 0.99), Percentile(delays, 1.0),
      without.create_rate, with.create_rate, without.change_rate, with.change_rate);
  std::fflush(stdout);
  // The receiver's connection threads may sit in a keep-alive read: end without joining them.
  std::_Exit(delays.size() == expected ? 0 : 1);
}
