#include "api/server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>
#include <chrono>
#include <memory>
#include <thread>
#include <utility>

#include "api/http_connection.h"
#include "api/status_http.h"
#include "common/errors.h"

namespace gantry::api {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using net::awaitable;
using net::use_awaitable;
constexpr auto kTuple = net::as_tuple(use_awaitable);

constexpr char kOpenConnections[] = "gantry_http_open_connections";
constexpr char kRefusedConnections[] = "gantry_http_connections_refused_total";
// The accept back-off after a failure (EMFILE, ENFILE, ...): first wait, and the longest.
constexpr auto kAcceptBackoffFirst = std::chrono::milliseconds(100);
constexpr auto kAcceptBackoffMax = std::chrono::seconds(1);

struct Server::Impl {
  Impl(Router& r, ServerOptions o, Metrics& m);

  awaitable<void> Accept(tcp::acceptor& from, bool tls);
  // How long to wait before the next accept after the failure `why`; `delay` is the
  // episode's back-off so far (zero on its first failure, which alone is logged as a warning).
  static std::chrono::milliseconds AcceptBackoff(const std::string& why,
                                                 std::chrono::milliseconds delay, int failures);
  // Takes a slot for a new connection, or refuses it (503 and close) when at the cap.
  bool TakeSlot(tcp::socket& socket, bool tls);
  void ReleaseSlot();
  // One connection, plain or TLS, from its accept to its end.
  awaitable<void> Session(tcp::socket socket, bool tls);
  // The request loop of one connection.
  awaitable<void> Serve(Connection& connection, const std::string& remote);
  // Writes a watch's lines as they come (Response::stream); ends the connection.
  awaitable<void> WriteStream(Connection& connection, const Response& response, unsigned version);
  // Writes a body produced piece by piece (Response::next_piece) with chunked encoding.
  // Returns whether the connection may serve another request.
  awaitable<bool> WritePieces(Connection& connection, const Response& response, unsigned version,
                              bool keep_alive);
  // The router's answer to `r`: handled here for reads, on write_pool for writes.
  awaitable<Response> Handle(const Request& r);
  void BeginShutdown();
  void PollDrain();

  Router& router;
  ServerOptions options;
  Metrics& metrics;
  std::string busy_response;  // the bytes of the 503 for connections beyond the cap
  // Before ioc: destroying ioc destroys the sessions, which give their slots back.
  std::atomic<int> open_connections{0};
  std::atomic<bool> at_cap{false};  // logged that the cap was reached; cleared below it
  net::io_context ioc;
  // After ioc: destroyed (stopped and joined) first. Run joins it before returning, so no
  // handler is still running when the sessions and the router go away.
  net::thread_pool write_pool;
  tcp::acceptor acceptor;
  tcp::acceptor tls_acceptor;
  std::unique_ptr<net::ssl::context> ssl;
  std::atomic<bool> shutting_down{false};
  std::atomic<int> in_flight{0};
  std::function<void()> on_shutdown;
  std::unique_ptr<net::steady_timer> drain_timer;
  std::chrono::steady_clock::time_point drain_deadline;
};

namespace {

// The status line and headers of `r` on `res`.
void SetHead(const Response& r, bool keep_alive, http::response<http::empty_body>& res) {
  res.set(http::field::server, "gantryd");
  res.set(http::field::content_type, r.content_type);
  res.set(http::field::cache_control, "no-store");
  for (const auto& [k, v] : r.headers) {
    if (beast::iequals(k, "Set-Cookie") || beast::iequals(k, "Warning"))
      res.insert(k, v);  // one header per cookie, per warning
    else
      res.set(k, v);
  }
  res.keep_alive(keep_alive);
}

// Whether a response with this status has no body, and so no Content-Length (RFC 9110).
bool WithoutBody(int status) { return status < 200 || status == 204 || status == 304; }

// The head of `r`, with the Content-Length of its body (also for HEAD, which sends no body).
std::string HeadOf(const Response& r, unsigned version, bool keep_alive) {
  http::response<http::empty_body> res{static_cast<http::status>(r.status), version};
  SetHead(r, keep_alive, res);
  if (!WithoutBody(r.status)) res.content_length(r.body.size());
  return SerializeHead(res);
}

}  // namespace

Server::Impl::Impl(Router& r, ServerOptions o, Metrics& m)
    : router(r),
      options(std::move(o)),
      metrics(m),
      write_pool(static_cast<size_t>(std::max(1, options.write_threads))),  // 0: never used
      acceptor(ioc),
      tls_acceptor(ioc) {
  Response busy = ErrorResponse(absl::UnavailableError(
      "the server has the most open connections it allows (" +
      std::to_string(options.max_connections) + "); retry later, or close idle connections"));
  busy.headers.emplace_back("Retry-After", "1");
  busy_response = HeadOf(busy, 11, false) + busy.body;
  metrics.Describe(kOpenConnections, "gauge", "Open HTTP connections (both listeners).");
  metrics.Describe(kRefusedConnections, "counter",
                   "Connections closed at once because --max-connections were open.");
  metrics.Add(kOpenConnections, {}, 0);
  metrics.Add(kRefusedConnections, {}, 0);
}

Server::Server(Router& router, ServerOptions options, Metrics& metrics)
    : impl_(std::make_unique<Impl>(router, std::move(options), metrics)) {}
Server::~Server() = default;

namespace {

absl::StatusOr<uint16_t> Bind(tcp::acceptor& a, const std::string& host, uint16_t port) {
  boost::system::error_code ec;
  auto addr = net::ip::make_address(host, ec);
  if (ec) return absl::InvalidArgumentError("invalid listen address \"" + host + "\"");
  tcp::endpoint ep(addr, port);
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(net::socket_base::max_listen_connections, ec);
  if (ec)
    return absl::UnavailableError("cannot listen on " + host + ":" + std::to_string(port) + ": " +
                                  ec.message());
  return a.local_endpoint().port();
}

}  // namespace

absl::StatusOr<uint16_t> Server::Listen() {
  return Bind(impl_->acceptor, impl_->options.host, impl_->options.port);
}

absl::StatusOr<uint16_t> Server::ListenTls(const std::string& host, uint16_t port,
                                           const std::string& cert_file,
                                           const std::string& key_file) {
  auto ctx = std::make_unique<net::ssl::context>(net::ssl::context::tls_server);
  ctx->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                   net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                   net::ssl::context::no_tlsv1_1 | net::ssl::context::single_dh_use);
  boost::system::error_code ec;
  ctx->use_certificate_chain_file(cert_file, ec);
  if (ec)
    return absl::InvalidArgumentError("cannot load the TLS certificate " + cert_file + ": " +
                                      ec.message());
  ctx->use_private_key_file(key_file, net::ssl::context::pem, ec);
  if (ec)
    return absl::InvalidArgumentError("cannot load the TLS key " + key_file + ": " + ec.message());
  impl_->ssl = std::move(ctx);
  return Bind(impl_->tls_acceptor, host, port);
}

void Server::Run(std::function<void()> on_shutdown) {
  impl_->on_shutdown = std::move(on_shutdown);
  net::signal_set signals(impl_->ioc, SIGINT, SIGTERM);
  signals.async_wait([this](boost::system::error_code ec, int sig) {
    if (ec) return;
    spdlog::info("received signal {}; draining", sig);
    Shutdown();
  });
  if (impl_->acceptor.is_open())
    net::co_spawn(impl_->ioc, impl_->Accept(impl_->acceptor, false), net::detached);
  if (impl_->tls_acceptor.is_open())
    net::co_spawn(impl_->ioc, impl_->Accept(impl_->tls_acceptor, true), net::detached);
  std::vector<std::thread> threads;
  for (int i = 1; i < impl_->options.threads; ++i)
    threads.emplace_back([this] { impl_->ioc.run(); });
  impl_->ioc.run();
  for (auto& t : threads) t.join();
  // Writes still running past the drain finish before the router can go away; what they
  // answer goes nowhere (the stopped io_context never resumes their sessions).
  impl_->write_pool.join();
}

void Server::Shutdown() {
  net::post(impl_->ioc, [this] { impl_->BeginShutdown(); });
}

void Server::Impl::BeginShutdown() {
  if (shutting_down.exchange(true)) return;
  boost::system::error_code ec;
  acceptor.close(ec);
  tls_acceptor.close(ec);
  if (on_shutdown) on_shutdown();
  // Wait for in-flight requests (bounded), then stop: idle keep-alive reads are abandoned.
  drain_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(options.drain_seconds);
  drain_timer = std::make_unique<net::steady_timer>(ioc);
  PollDrain();
}

void Server::Impl::PollDrain() {
  if (in_flight.load() == 0 || std::chrono::steady_clock::now() >= drain_deadline) {
    if (in_flight.load() != 0)
      spdlog::warn("shutdown: {} requests still running after the drain period", in_flight.load());
    ioc.stop();
    return;
  }
  drain_timer->expires_after(std::chrono::milliseconds(20));
  drain_timer->async_wait([this](boost::system::error_code) { PollDrain(); });
}

awaitable<void> Server::Impl::Accept(tcp::acceptor& from, bool tls) {
  std::chrono::milliseconds delay{0};
  int failures = 0;
  net::steady_timer backoff(ioc);
  while (!shutting_down) {
    auto [ec, socket] = co_await from.async_accept(kTuple);
    if (ec) {
      if (shutting_down || ec == net::error::operation_aborted) co_return;
      delay = AcceptBackoff(ec.message(), delay, failures++);
      backoff.expires_after(delay);
      co_await backoff.async_wait(kTuple);
      continue;
    }
    if (failures > 0) {
      spdlog::info("accepting connections again after {} failed accepts", failures);
      delay = std::chrono::milliseconds(0);
      failures = 0;
    }
    if (!TakeSlot(socket, tls)) continue;
    socket.set_option(tcp::no_delay(true), ec);
    net::co_spawn(net::make_strand(ioc), Session(std::move(socket), tls), net::detached);
  }
}

std::chrono::milliseconds Server::Impl::AcceptBackoff(const std::string& why,
                                                      std::chrono::milliseconds delay,
                                                      int failures) {
  // Out of file descriptors, accept() fails at once and would fail again at once: retrying
  // without a pause spins a core and floods the log. Pending connections wait in the
  // listen backlog meanwhile.
  if (failures == 0)
    spdlog::warn(
        "accept failed: {}; backing off ({} ms doubling to {} ms) until it succeeds "
        "(raise the open-file limit or lower --max-connections)",
        why, kAcceptBackoffFirst.count(), std::chrono::milliseconds(kAcceptBackoffMax).count());
  else
    spdlog::debug("accept failed again: {}", why);
  return delay.count() == 0 ? kAcceptBackoffFirst
                            : std::min<std::chrono::milliseconds>(delay * 2, kAcceptBackoffMax);
}

bool Server::Impl::TakeSlot(tcp::socket& socket, bool tls) {
  // Only the accept loops add to the count (one coroutine each), so load-then-add races
  // only with releases, which can only make room.
  if (open_connections.load() < options.max_connections) {
    ++open_connections;
    metrics.Add(kOpenConnections, {}, 1);
    if (at_cap.exchange(false)) spdlog::info("below the connection cap again");
    return true;
  }
  metrics.Add(kRefusedConnections, {});
  if (!at_cap.exchange(true))
    spdlog::warn(
        "{} connections are open, the most --max-connections allows: refusing new "
        "ones (counted in {})",
        options.max_connections, kRefusedConnections);
  // Best effort and without waiting: the answer fits in an empty send buffer.
  boost::system::error_code ec;
  socket.non_blocking(true, ec);
  if (!tls) socket.write_some(net::buffer(busy_response), ec);
  socket.shutdown(tcp::socket::shutdown_both, ec);
  socket.close(ec);
  return false;
}

void Server::Impl::ReleaseSlot() {
  --open_connections;
  metrics.Add(kOpenConnections, {}, -1);
}

namespace {

// Gives a connection's slot back once: when the peer can first see its connection end
// (Connection::OnEnd), or else when the session ends however it ends (also when the
// io_context stops and destroys the coroutine, or a TLS handshake fails).
class Slot {
 public:
  explicit Slot(std::function<void()> release) : release_(std::move(release)) {}
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;
  ~Slot() { Release(); }
  void Release() {
    if (auto release = std::exchange(release_, nullptr)) release();
  }

 private:
  std::function<void()> release_;
};

}  // namespace

awaitable<void> Server::Impl::WriteStream(Connection& connection, const Response& response,
                                          unsigned version) {
  auto& lines = response.stream;
  http::response<http::empty_body> res{static_cast<http::status>(response.status), version};
  res.set(http::field::server, "gantryd");
  res.set(http::field::content_type, response.content_type);
  res.set(http::field::cache_control, "no-store");
  res.chunked(true);
  res.keep_alive(false);
  connection.ExpiresNever();
  if (co_await connection.Write(SerializeHead(res))) {
    lines->Cancel();
    co_return;
  }
  auto executor = co_await net::this_coro::executor;
  auto timer = std::make_shared<net::steady_timer>(executor);
  auto notified = std::make_shared<std::atomic<bool>>(false);
  lines->SetWakeup([timer, notified, executor] {
    notified->store(true);
    net::post(executor, [timer] { timer->cancel(); });
  });
  auto deadline = std::chrono::steady_clock::now() + lines->timeout;
  bool ok = true;
  while (ok) {
    bool closed = false;
    std::vector<std::string> batch = lines->Drain(&closed);
    // Everything pending is written: the next page of a paged producer, if any.
    if (batch.empty() && !closed && lines->Refill()) continue;
    if (!batch.empty()) {
      std::string data;
      for (auto& l : batch) data += l;
      connection.ExpiresAfter(std::chrono::seconds(30));
      if (co_await connection.WriteChunk(data)) ok = false;
      connection.ExpiresNever();
    }
    if (!ok || closed || shutting_down) break;
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) break;
    if (notified->exchange(false)) continue;
    timer->expires_after(
        std::min<std::chrono::steady_clock::duration>(deadline - now, std::chrono::seconds(5)));
    co_await timer->async_wait(kTuple);
  }
  lines->Cancel();
  if (ok) {
    connection.ExpiresAfter(std::chrono::seconds(30));
    co_await connection.WriteChunk("");  // the last chunk
  }
}

awaitable<bool> Server::Impl::WritePieces(Connection& connection, const Response& response,
                                          unsigned version, bool keep_alive) {
  http::response<http::empty_body> res{static_cast<http::status>(response.status), version};
  SetHead(response, keep_alive, res);
  res.chunked(true);
  connection.ExpiresAfter(std::chrono::seconds(60));
  if (co_await connection.Write(SerializeHead(res))) co_return false;
  std::string piece = response.body;
  while (true) {
    if (!piece.empty()) {
      connection.ExpiresAfter(std::chrono::seconds(60));
      if (co_await connection.WriteChunk(piece)) co_return false;
    }
    absl::StatusOr<std::string> next = response.next_piece();
    if (!next.ok()) {
      // The status line went out long ago: cut the connection without the last chunk, so
      // that the client sees a broken answer rather than a short valid one.
      spdlog::warn("a streamed answer failed after it started: {}", next.status().ToString());
      co_return false;
    }
    if (next->empty()) break;
    piece = *std::move(next);
  }
  connection.ExpiresAfter(std::chrono::seconds(60));
  co_return !co_await connection.WriteChunk("") && keep_alive;  // the last chunk
}

namespace {

std::string RemoteOf(const tcp::socket& socket) {
  boost::system::error_code ec;
  auto ep = socket.remote_endpoint(ec);
  return ec ? "" : ep.address().to_string() + ":" + std::to_string(ep.port());
}

bool IsRead(const std::string& method) {
  return method == "GET" || method == "HEAD" || method == "OPTIONS";
}

}  // namespace

awaitable<Response> Server::Impl::Handle(const Request& r) {
  if (IsRead(r.method) || options.write_threads == 0) co_return router.Handle(r);
  co_return co_await net::co_spawn(
      write_pool, [this, &r]() -> awaitable<Response> { co_return router.Handle(r); },
      use_awaitable);
}

awaitable<void> Server::Impl::Session(tcp::socket socket, bool tls) {
  auto slot = std::make_shared<Slot>([this] { ReleaseSlot(); });
  std::string remote = RemoteOf(socket);
  auto executor = co_await net::this_coro::executor;
  // Not a conditional expression: GCC 12 destroys a co_await's temporaries twice there.
  std::shared_ptr<Connection> connection;
  if (tls)
    connection = co_await TlsConnection(std::move(socket), *ssl, executor, remote);
  else
    connection = PlainConnection(std::move(socket), executor);
  if (!connection) co_return;
  connection->OnEnd([slot] { slot->Release(); });
  co_await Serve(*connection, remote);
  co_await connection->Finish();
  connection->Close();
}

// GCC reports -Wmismatched-new-delete for this coroutine's frame: Asio's frame operator new
// takes the memory from aligned_alloc and its operator delete gives it back with free,
// which match, but once both are inlined GCC pairs the allocation with the class's operator
// delete. A false positive that other users of Asio's coroutines silence too
// (erigontech/silkworm#2046); silenced here for this function only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
awaitable<void> Server::Impl::Serve(Connection& connection, const std::string& remote) {
  beast::flat_buffer buffer;
  while (!shutting_down) {
    Connection::RequestParser parser;
    parser.body_limit(options.body_limit);
    parser.header_limit(64 * 1024);
    connection.ExpiresAfter(std::chrono::seconds(options.idle_timeout_seconds));
    boost::system::error_code ec = co_await connection.ReadRequest(buffer, parser);
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == net::error::operation_aborted || ec == net::error::bad_descriptor ||
        ec == net::error::connection_reset)
      break;
    if (ec) {
      // Malformed HTTP or an oversize body: answer once, then close.
      absl::Status status = ec == http::error::body_limit
                                ? TooLargeError("the request body is larger than the limit of " +
                                                std::to_string(options.body_limit) + " bytes")
                                : BadRequestError("malformed HTTP request: " + ec.message());
      Response error = ErrorResponse(status);
      connection.ExpiresAfter(std::chrono::seconds(10));
      co_await connection.Write(HeadOf(error, 11, false), error.body);
      break;
    }
    auto& req = parser.get();
    Request r;
    r.method = std::string(req.method_string());
    r.target = std::string(req.target());
    r.content_type = std::string(req[http::field::content_type]);
    r.accept = std::string(req[http::field::accept]);
    r.authorization = std::string(req[http::field::authorization]);
    r.cookie = std::string(req[http::field::cookie]);
    r.host = std::string(req[http::field::host]);
    r.csrf = std::string(req["X-Gantry-CSRF"]);
    r.user_agent = std::string(req[http::field::user_agent]);
    r.body = std::move(req.body());
    r.remote = remote;
    ++in_flight;
    auto start = std::chrono::steady_clock::now();
    Response response = co_await Handle(r);
    auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
    spdlog::debug("{} {} {} {}us {}", r.method, r.target, response.status, micros, remote);
    if (response.stream) {
      --in_flight;
      co_await WriteStream(connection, response, req.version());
      break;
    }
    bool keep_alive = req.keep_alive() && !shutting_down;
    if (response.next_piece && r.method != "HEAD") {
      bool again = co_await WritePieces(connection, response, req.version(), keep_alive);
      --in_flight;
      if (!again) break;
      continue;
    }
    bool with_body = r.method != "HEAD" && !WithoutBody(response.status);
    connection.ExpiresAfter(std::chrono::seconds(60));
    boost::system::error_code wec =
        co_await connection.Write(HeadOf(response, req.version(), keep_alive),
                                  with_body ? std::string_view(response.body) : std::string_view());
    --in_flight;
    if (wec || !keep_alive) break;
  }
}

#pragma GCC diagnostic pop

}  // namespace gantry::api
