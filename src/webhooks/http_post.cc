#include "webhooks/http_post.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/ssl.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <memory>
#include <mutex>
#include <optional>

namespace gantry::webhooks {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

std::mutex tls_mu;
std::unique_ptr<ssl::context> tls_context;  // SetReceiverTrust, or the system's at first use

absl::StatusOr<std::unique_ptr<ssl::context>> MakeContext(const std::string& ca_file) {
  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
  ctx->set_options(ssl::context::no_sslv2 | ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                   ssl::context::no_tlsv1_1);
  boost::system::error_code ec;
  if (ca_file.empty())
    ctx->set_default_verify_paths(ec);
  else
    ctx->load_verify_file(ca_file, ec);
  if (ec)
    return absl::InvalidArgumentError((ca_file.empty()
                                           ? "cannot load the system's trusted certificates"
                                           : "cannot load CA certificates from " + ca_file) +
                                      ": " + ec.message());
  ctx->set_verify_mode(ssl::verify_peer);
  return ctx;
}

absl::StatusOr<ssl::context*> ReceiverTls() {
  std::lock_guard lock(tls_mu);
  if (!tls_context) {
    auto made = MakeContext("");
    if (!made.ok()) return absl::UnavailableError(made.status().message());
    tls_context = *std::move(made);
  }
  return tls_context.get();
}

// Writes `req` to `stream` and reads the answer into `res`; then calls `finish` with the
// first error, if any.
template <class Stream, class Finish>
void Exchange(Stream& stream, http::request<http::string_body>& req, beast::flat_buffer& buffer,
              http::response<http::string_body>& res, Finish& finish) {
  http::async_write(stream, req, [&](boost::system::error_code e, size_t) {
    if (e) return finish(e);
    http::async_read(stream, buffer, res,
                     [&](boost::system::error_code read, size_t) { finish(read); });
  });
}

}  // namespace

absl::Status SetReceiverTrust(const std::string& ca_file) {
  auto made = MakeContext(ca_file);
  if (!made.ok()) return made.status();
  std::lock_guard lock(tls_mu);
  tls_context = *std::move(made);
  return absl::OkStatus();
}

std::string Signature(std::string_view secret, std::string_view body) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(body.data()), body.size(), md, &len);
  static const char* hex = "0123456789abcdef";
  std::string out = "sha256=";
  for (unsigned int i = 0; i < len; ++i) {
    out += hex[md[i] >> 4];
    out += hex[md[i] & 0xF];
  }
  return out;
}

absl::StatusOr<int> HttpPost(const Receiver& to, std::string_view body,
                             const std::map<std::string, std::string>& headers,
                             std::chrono::milliseconds timeout) {
  ssl::context* tls = nullptr;
  if (to.tls) {
    auto got = ReceiverTls();
    if (!got.ok()) return got.status();
    tls = *got;
  }
  asio::io_context ioc;
  tcp::resolver resolver(ioc);
  boost::system::error_code ec;
  auto found = resolver.resolve(to.host, to.port, ec);
  if (ec) return absl::UnavailableError("cannot resolve " + to.host + ": " + ec.message());
  if (!AllowPrivate())
    for (const auto& e : found)
      if (IsPrivateAddress(e.endpoint().address().to_string()))
        return absl::UnavailableError(to.host +
                                      " resolves to a loopback, link-local or private address (" +
                                      e.endpoint().address().to_string() +
                                      "); gantryd runs without "
                                      "--webhook-allow-private");
  http::request<http::string_body> req{http::verb::post, to.target, 11};
  req.set(http::field::host, to.host + ":" + to.port);
  req.set(http::field::user_agent, "gantry-webhooks");
  req.set(http::field::content_type, "application/json");
  for (const auto& [k, v] : headers) req.set(k, v);
  req.body() = std::string(body);
  req.prepare_payload();
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  boost::system::error_code failed;
  bool connected = false, handshaken = !tls, done = false;
  // A plain socket, or a TLS stream over one (Asio's own streams: Beast's tcp_stream and
  // ssl_stream would add their timers and buffering to every operation compiled here).
  std::optional<tcp::socket> plain;
  std::optional<ssl::stream<tcp::socket>> secure;
  tcp::socket& lowest = tls ? secure.emplace(ioc, *tls).next_layer() : plain.emplace(ioc);
  if (tls) {
    boost::system::error_code not_ip;
    asio::ip::make_address(to.host, not_ip);
    if (not_ip) SSL_set_tlsext_host_name(secure->native_handle(), to.host.c_str());  // SNI
    secure->set_verify_callback(ssl::host_name_verification(to.host));
  }
  auto finish = [&](boost::system::error_code e) {
    failed = e;
    done = true;
  };
  asio::async_connect(lowest, found, [&](boost::system::error_code e, const tcp::endpoint&) {
    if (e) return finish(e);
    connected = true;
    if (!tls) return Exchange(*plain, req, buffer, res, finish);
    secure->async_handshake(ssl::stream_base::client, [&](boost::system::error_code shake) {
      if (shake) return finish(shake);
      handshaken = true;
      Exchange(*secure, req, buffer, res, finish);
    });
  });
  // Connecting, the handshake, the request and the answer, all within `timeout`.
  ioc.run_for(timeout);
  lowest.close(ec);
  if (!done) {
    ioc.restart();
    ioc.run();  // the aborted operations' handlers
    return absl::DeadlineExceededError("no answer within " + std::to_string(timeout.count()) +
                                       " ms");
  }
  if (failed && connected && !handshaken)
    return absl::UnavailableError("TLS handshake with " + to.host + " failed: " + failed.message());
  if (failed) return absl::UnavailableError(failed.message());
  return static_cast<int>(res.result_int());
}

}  // namespace gantry::webhooks
