#include "webhooks/http_post.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace gantry::webhooks {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

}  // namespace

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
  if (to.tls)
    return absl::UnimplementedError("https:// receivers are not supported by this gantryd yet");
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
  beast::tcp_stream stream(ioc);
  http::request<http::string_body> req{http::verb::post, to.target, 11};
  req.set(http::field::host, to.host + ":" + to.port);
  req.set(http::field::user_agent, "gantry-webhooks");
  req.set(http::field::content_type, "application/json");
  for (const auto& [k, v] : headers) req.set(k, v);
  req.body() = std::string(body);
  req.prepare_payload();
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  int status = 0;
  boost::system::error_code failed;
  stream.expires_after(timeout);
  stream.async_connect(found, [&](boost::system::error_code e, const tcp::endpoint&) {
    if (e) return void(failed = e);
    http::async_write(stream, req, [&](boost::system::error_code e2, size_t) {
      if (e2) return void(failed = e2);
      http::async_read(stream, buffer, res, [&](boost::system::error_code e3, size_t) {
        if (e3) return void(failed = e3);
        status = static_cast<int>(res.result_int());
      });
    });
  });
  ioc.run();
  stream.socket().close(ec);
  if (failed == beast::error::timeout)
    return absl::DeadlineExceededError("no answer within " + std::to_string(timeout.count()) +
                                       " ms");
  if (failed) return absl::UnavailableError(failed.message());
  return status;
}

}  // namespace gantry::webhooks
