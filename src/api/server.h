// Server: the HTTP/1.1 transport on Boost.Beast with C++20 coroutines, plain and TLS
// (OpenSSL, TLS 1.2+), on one or two listeners. Keep-alive, a
// request body limit (413 beyond it), chunked streaming of LineStreams (watch), and a
// graceful drain on SIGTERM/SIGINT: stop accepting, end streams, let in-flight requests
// finish, then return from Run. All Beast/Asio code of gantryd lives in server.cc.
//
// Reads are handled on the I/O threads; writes are handed to a pool of their own
// (ServerOptions::write_threads) and the connection's coroutine resumes on its strand
// when the answer is ready, so a write blocked on fsync never holds an I/O thread.
//
// Open connections are capped (ServerOptions::max_connections): a connection beyond the cap
// is answered 503 with a Kubernetes Status (plain HTTP; a TLS one is just closed) and closed
// at once, counted in gantry_http_connections_refused_total; gantry_http_open_connections
// is the gauge. When accept() fails (EMFILE/ENFILE: out of file descriptors) the listener
// backs off, 100 ms doubling to 1 s, instead of spinning, and logs once per episode.
//
// Thread-safety: Listen, then Run from one thread; Shutdown from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "api/router.h"
#include "common/metrics.h"

namespace gantry::api {

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;                 // 0: pick a free port
  size_t body_limit = 3 * 1024 * 1024;  // bytes; larger bodies get 413
  int threads = 4;                      // I/O threads; reads (GET, HEAD, OPTIONS) run on them
  // Threads that handle requests which write (every method but GET, HEAD and OPTIONS).
  // A write waits for its commit to be durable; while it waits, the I/O threads go on
  // reading and serving other connections, and the writes waiting together are committed
  // together (the stores' group commit), so 16 connections writing at once make batches
  // of up to 16 rather than of `threads`. 0: writes are handled on the I/O threads too.
  int write_threads = 32;
  int drain_seconds = 10;  // how long shutdown waits for in-flight requests
  // A connection that sends no whole request for this long is closed: an idle keep-alive
  // connection, or a sender too slow to finish one (each holds one of max_connections).
  int idle_timeout_seconds = 120;
  int max_connections = 1024;  // open connections (both listeners) at most
};

class Server {
 public:
  // `metrics` receives the connection metrics; it must outlive the server.
  Server(Router& router, ServerOptions options, Metrics& metrics);
  ~Server();

  // Binds and listens. Returns the port actually bound. UNAVAILABLE when the address is
  // taken or invalid.
  absl::StatusOr<uint16_t> Listen();
  // Also serves HTTPS on host:port with this PEM certificate chain and key. Returns the
  // port bound. INVALID_ARGUMENT when the files cannot be loaded. Call before Run.
  absl::StatusOr<uint16_t> ListenTls(const std::string& host, uint16_t port,
                                     const std::string& cert_file, const std::string& key_file);
  // Serves until Shutdown or SIGTERM/SIGINT, then drains. `on_shutdown` runs first when a
  // shutdown begins (the app closes watch streams and stops the engine there).
  void Run(std::function<void()> on_shutdown);
  void Shutdown();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gantry::api
