#include "client/http_client.h"

#include <openssl/ssl.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/url/parse.hpp>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "client/absl_compat.h"
#include "client/kube_status.h"
#include "common/status_macros.h"

namespace gantry::client {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using TlsStream = ssl::stream<tcp::socket>;

// Answers larger than this are refused rather than buffered (a full list page is far smaller).
constexpr std::uint64_t kMaxBodyBytes = 256ull << 20;

std::string Describe(const beast::error_code& ec) {
  std::string m = ec.message();
  if (!m.empty()) m[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(m[0])));
  return m;
}

// The errors that mean "the peer closed this connection", as opposed to a protocol failure.
bool IsDeadConnection(const beast::error_code& ec) {
  return ec == http::error::end_of_stream || ec == net::error::eof ||
         ec == net::error::connection_reset || ec == net::error::broken_pipe ||
         ec == net::error::connection_aborted || ec == http::error::partial_message ||
         ec == ssl::error::stream_truncated;
}

// When a Send must be done (SetTimeout); none: unbounded.
using Deadline = std::optional<std::chrono::steady_clock::time_point>;
using Finish = std::function<void(beast::error_code)>;

// Runs the asynchronous operations `start` begins on `ioc` until they call their Finish or
// `deadline` passes (none: until they finish). Past the deadline `raw`, the connection's TCP
// socket, is closed, which completes them with operation_aborted, and the answer is
// timed_out. (One asynchronous path, with or without a deadline: each HTTP operation is
// compiled once per stream type, not also in a blocking form.)
beast::error_code RunUntil(net::io_context& ioc, Deadline deadline, tcp::socket& raw,
                           const std::function<void(Finish)>& start) {
  beast::error_code result;
  bool done = false;
  ioc.restart();
  start([&](beast::error_code ec) {
    result = ec;
    done = true;
  });
  if (!deadline) {
    ioc.run();
    return result;
  }
  ioc.run_until(*deadline);
  if (done) return result;
  beast::error_code ignored;
  raw.close(ignored);
  ioc.restart();
  ioc.run();  // the aborted operations' handlers
  return net::error::timed_out;
}

absl::Status TimedOut(const std::string& base_url, const char* doing) {
  return absl::DeadlineExceededError(
      absl::StrCat("no answer from ", base_url, " in time (", doing, ")"));
}

template <class Fields>
void CopyHeaders(const Fields& fields, HttpResponse& out) {
  for (const auto& f : fields) {
    std::string name = absl::AsciiStrToLower(std::string(f.name_string()));
    auto [it, inserted] = out.headers.emplace(name, std::string(f.value()));
    if (!inserted) absl::StrAppend(&it->second, ", ", std::string(f.value()));
  }
  auto ct = out.headers.find("content-type");
  if (ct != out.headers.end()) out.content_type = ct->second;
}

}  // namespace

struct HttpClient::Impl {
  net::io_context ioc;
  std::unique_ptr<ssl::context> tls;      // https:// only
  tcp::socket socket{ioc};                // http://
  std::unique_ptr<TlsStream> tls_stream;  // https://: the kept-alive connection
  beast::flat_buffer buffer;
  bool connected = false;

  // Calls f with the connection's stream: the TLS stream or the plain socket.
  template <class F>
  auto With(F&& f) {
    return tls_stream ? f(*tls_stream) : f(socket);
  }
  // The connection's TCP socket.
  tcp::socket& Raw() { return tls_stream ? tls_stream->next_layer() : socket; }

  void Close() {
    beast::error_code ignored;
    // No TLS close_notify: it could block on a dead peer, and HTTP framing ends our requests.
    tcp::socket& s = Raw();
    s.shutdown(tcp::socket::shutdown_both, ignored);
    s.close(ignored);
    tls_stream.reset();
    buffer.consume(buffer.size());
    connected = false;
  }
};

HttpClient::HttpClient(std::string base_url, std::string token, TlsOptions tls)
    : base_url_(std::move(base_url)), token_(std::move(token)), impl_(std::make_unique<Impl>()) {
  while (!base_url_.empty() && base_url_.back() == '/') base_url_.pop_back();
  auto parsed = boost::urls::parse_uri(base_url_);
  if (!parsed) {
    init_status_ = absl::InvalidArgumentError(
        absl::StrCat("invalid server URL \"", base_url_, "\": want http://host:port"));
    return;
  }
  std::string scheme = absl::AsciiStrToLower(std::string(parsed->scheme()));
  if ((scheme != "http" && scheme != "https") || parsed->host().empty()) {
    init_status_ = absl::InvalidArgumentError(absl::StrCat(
        "invalid server URL \"", base_url_, "\": want http://host:port or https://host:port"));
    return;
  }
  host_ = std::string(parsed->host_address());  // without the [] around an IPv6 address
  port_ = parsed->has_port() ? std::string(parsed->port()) : scheme == "https" ? "443" : "80";
  host_header_ = std::string(parsed->encoded_host_and_port());
  path_prefix_ = std::string(parsed->encoded_path());
  while (!path_prefix_.empty() && path_prefix_.back() == '/') path_prefix_.pop_back();
  if (scheme == "https") {
    auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
    ctx->set_options(ssl::context::no_sslv2 | ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                     ssl::context::no_tlsv1_1);
    beast::error_code ec;
    if (!tls.ca_file.empty())
      ctx->load_verify_file(tls.ca_file, ec);
    else
      ctx->set_default_verify_paths(ec);
    if (ec) {
      init_status_ = absl::InvalidArgumentError(
          tls.ca_file.empty()
              ? absl::StrCat("cannot load the system's trusted certificates: ", Describe(ec))
              : absl::StrCat("cannot load CA certificates from ", tls.ca_file, ": ", Describe(ec)));
      return;
    }
    if (tls.insecure_skip_verify) {
      ctx->set_verify_mode(ssl::verify_none);
    } else {
      ctx->set_verify_mode(ssl::verify_peer);
      ctx->set_verify_callback(ssl::host_name_verification(host_));
    }
    impl_->tls = std::move(ctx);
  }
}

HttpClient::~HttpClient() {
  if (impl_) impl_->Close();
}

namespace {

absl::Status ConnectSocket(net::io_context& ioc, tcp::socket& socket, const std::string& host,
                           const std::string& port, const std::string& base_url,
                           Deadline deadline = std::nullopt) {
  tcp::resolver resolver(ioc);
  beast::error_code ec;
  auto results = resolver.resolve(host, port, ec);
  if (!ec)
    ec = RunUntil(ioc, deadline, socket, [&](Finish finish) {
      net::async_connect(socket, results,
                         [finish](beast::error_code e, const tcp::endpoint&) { finish(e); });
    });
  if (ec == net::error::timed_out) return TimedOut(base_url, "connecting");
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("cannot reach gantryd at ", base_url, ": ", Describe(ec)));
  }
  socket.set_option(tcp::no_delay(true), ec);
  return absl::OkStatus();
}

// Connects `stream`'s socket and runs the TLS handshake (SNI for host names).
absl::Status ConnectTls(net::io_context& ioc, TlsStream& stream, const std::string& host,
                        const std::string& port, const std::string& base_url,
                        Deadline deadline = std::nullopt) {
  RETURN_IF_ERROR(ConnectSocket(ioc, stream.next_layer(), host, port, base_url, deadline));
  beast::error_code ec;
  net::ip::make_address(host, ec);
  if (ec) SSL_set_tlsext_host_name(stream.native_handle(), host.c_str());  // not an IP address
  ec = {};
  ec = RunUntil(ioc, deadline, stream.next_layer(), [&](Finish finish) {
    stream.async_handshake(ssl::stream_base::client, [finish](beast::error_code e) { finish(e); });
  });
  if (ec == net::error::timed_out) return TimedOut(base_url, "in the TLS handshake");
  if (ec) {
    std::string why = Describe(ec);
    return absl::UnavailableError(
        absl::StrCat("TLS handshake with gantryd at ", base_url, " failed: ", why,
                     why.find("certificate") != std::string::npos
                         ? " (pass the server's CA with --ca-file, e.g. gantryd's DATA_DIR/tls.crt)"
                         : ""));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<HttpResponse> HttpClient::Send(std::string_view method, std::string_view target,
                                              std::string_view body,
                                              std::string_view content_type) {
  return SendWithHeaders(method, target, {}, body, content_type);
}

absl::StatusOr<HttpResponse> HttpClient::SendWithHeaders(
    std::string_view method, std::string_view target,
    const std::map<std::string, std::string>& headers, std::string_view body,
    std::string_view content_type) {
  RETURN_IF_ERROR(init_status_);
  http::verb verb = http::string_to_verb(method);
  if (verb == http::verb::unknown) {
    return absl::InvalidArgumentError(absl::StrCat("unknown HTTP method \"", Sv(method), "\""));
  }
  http::request<http::string_body> req{verb, absl::StrCat(path_prefix_, Sv(target)), 11};
  req.set(http::field::host, host_header_);
  req.set(http::field::user_agent, "gantry-cli");
  req.set(http::field::accept, "application/json");
  if (!token_.empty()) req.set(http::field::authorization, absl::StrCat("Bearer ", token_));
  for (const auto& [k, v] : headers) req.set(k, v);
  if (!body.empty() || verb == http::verb::post || verb == http::verb::put ||
      verb == http::verb::patch) {
    req.set(http::field::content_type, content_type);
    req.body() = std::string(body);
  }
  req.keep_alive(true);
  req.prepare_payload();
  const Deadline deadline =
      timeout_.count() > 0 ? Deadline(std::chrono::steady_clock::now() + timeout_) : std::nullopt;

  for (int attempt = 0;; ++attempt) {
    const bool reused = impl_->connected;
    if (!reused) {
      if (impl_->tls) {
        impl_->tls_stream = std::make_unique<TlsStream>(impl_->ioc, *impl_->tls);
        absl::Status connected =
            ConnectTls(impl_->ioc, *impl_->tls_stream, host_, port_, base_url_, deadline);
        if (!connected.ok()) {
          impl_->Close();
          return connected;
        }
      } else {
        absl::Status connected =
            ConnectSocket(impl_->ioc, impl_->socket, host_, port_, base_url_, deadline);
        if (!connected.ok()) {
          impl_->Close();
          return connected;
        }
      }
      impl_->connected = true;
      ++connections_opened_;
    }
    beast::error_code ec;
    http::response_parser<http::string_body> parser;
    parser.body_limit(kMaxBodyBytes);
    impl_->With([&](auto& stream) {
      ec = RunUntil(impl_->ioc, deadline, impl_->Raw(), [&](Finish finish) {
        http::async_write(stream, req, [&, finish](beast::error_code e, std::size_t) {
          if (e) return finish(e);
          http::async_read(stream, impl_->buffer, parser,
                           [finish](beast::error_code read, std::size_t) { finish(read); });
        });
      });
    });
    if (ec == net::error::timed_out) {
      impl_->Close();
      return TimedOut(base_url_, "waiting for the answer");
    }
    if (ec) {
      impl_->Close();
      // A kept-alive connection the server dropped while idle: the request never reached it,
      // so sending it again on a fresh connection is safe (once).
      if (reused && attempt == 0 && !parser.got_some() && IsDeadConnection(ec)) continue;
      return absl::UnavailableError(
          absl::StrCat("lost connection to gantryd at ", base_url_, ": ", Describe(ec)));
    }
    auto& res = parser.get();
    HttpResponse out;
    out.status = static_cast<int>(res.result_int());
    CopyHeaders(res, out);
    out.body = std::move(res.body());
    if (!res.keep_alive()) impl_->Close();
    return out;
  }
}

namespace {

// GETs `req` over `socket` (plain or TLS; `raw` is its TCP socket, closed at the end) and
// hands the body to `on_line` line by line as it arrives (HttpTransport::Stream).
template <class Stream>
absl::Status StreamOver(Stream& socket, tcp::socket& raw,
                        const http::request<http::empty_body>& req, const std::string& base_url,
                        const std::function<bool(std::string_view line)>& on_line) {
  struct Closer {
    tcp::socket& s;
    ~Closer() {
      beast::error_code ignored;
      s.shutdown(tcp::socket::shutdown_both, ignored);
      s.close(ignored);
    }
  } closer{raw};

  beast::error_code ec;
  http::write(socket, req, ec);

  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(boost::none);  // a watch has no natural end
  if (!ec) http::read_header(socket, buffer, parser, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("lost connection to gantryd at ", base_url, ": ", Describe(ec)));
  }

  const int status = static_cast<int>(parser.get().result_int());
  const bool ok = status >= 200 && status < 300;
  std::string pending;  // bytes after the last newline
  std::string error_body;
  char chunk[16 * 1024];
  while (!parser.is_done()) {
    parser.get().body().data = chunk;
    parser.get().body().size = sizeof(chunk);
    // read_some, not read: read() only returns once the 16 KiB chunk is full or the body
    // ends, which holds back a watch event or a log line until more arrive behind it.
    http::read_some(socket, buffer, parser, ec);
    if (ec == http::error::need_buffer) ec = {};
    const size_t n = sizeof(chunk) - parser.get().body().size;
    if (!ok) {
      if (error_body.size() < 1 << 20) error_body.append(chunk, n);
    } else {
      pending.append(chunk, n);
      size_t start = 0;
      for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
        std::string_view line(pending.data() + start, nl - start);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (!on_line(line)) return absl::OkStatus();
      }
      pending.erase(0, start);
    }
    if (ec) {
      return absl::UnavailableError(
          absl::StrCat("lost connection to gantryd at ", base_url, ": ", Describe(ec)));
    }
  }
  if (!ok) {
    HttpResponse res;
    res.status = status;
    CopyHeaders(parser.get(), res);
    res.body = std::move(error_body);
    return StatusFromResponse(res);
  }
  if (!pending.empty()) {
    std::string_view line(pending);
    if (line.back() == '\r') line.remove_suffix(1);
    on_line(line);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status HttpClient::Stream(std::string_view target,
                                const std::function<bool(std::string_view line)>& on_line) {
  RETURN_IF_ERROR(init_status_);
  http::request<http::empty_body> req{http::verb::get, absl::StrCat(path_prefix_, Sv(target)), 11};
  req.set(http::field::host, host_header_);
  req.set(http::field::user_agent, "gantry-cli");
  req.set(http::field::accept, "application/json");
  if (!token_.empty()) req.set(http::field::authorization, absl::StrCat("Bearer ", token_));
  if (impl_->tls) {
    TlsStream stream(impl_->ioc, *impl_->tls);
    RETURN_IF_ERROR(ConnectTls(impl_->ioc, stream, host_, port_, base_url_));
    ++connections_opened_;
    return StreamOver(stream, stream.next_layer(), req, base_url_, on_line);
  }
  tcp::socket socket(impl_->ioc);
  RETURN_IF_ERROR(ConnectSocket(impl_->ioc, socket, host_, port_, base_url_));
  ++connections_opened_;
  return StreamOver(socket, socket, req, base_url_, on_line);
}

}  // namespace gantry::client
