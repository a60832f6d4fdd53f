// gantryd: flags and configuration → wiring of store, API and server. Nothing else lives here.
#include <fcntl.h>
#include <sodium.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include "api/resources.h"
#include "api/router.h"
#include "api/server.h"
#include "api/static_files.h"
#include "api/watch_hub.h"
#include "app/oidc_flags.h"
#include "app/store_flags.h"
#include "auth/audit.h"
#include "auth/authenticator.h"
#include "auth/credentials.h"
#include "auth/ldap_directory.h"
#include "common/clock.h"
#include "common/ids.h"
#include "common/metrics.h"
#include "common/secrets.h"
#include "common/tls_files.h"
#include "drivers/common/sandbox.h"
#include "drivers/container/container_driver.h"
#include "drivers/exec/exec_driver.h"
#include "drivers/local/local_driver.h"
#include "drivers/slurm/slurm_driver.h"
#include "engine/approvals.h"
#include "engine/budget_monitor.h"
#include "engine/engine.h"
#include "engine/fleet_gpus.h"
#include "engine/gpu_sampler.h"
#include "engine/inventory.h"
#include "engine/lifecycle_controller.h"
#include "engine/run_log.h"
#include "engine/share_monitor.h"
#include "model/codec.h"
#include "model/lifecycle_policy.h"
#include "store/store.h"
#include "webhooks/delivery_worker.h"
#include "webhooks/http_post.h"
#include "webhooks/outbox_store.h"
#include "webhooks/webhook_spec.h"

namespace {

// A JSON-escaped message for the JSON log format.
class JsonEscapedMessage : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    for (char c : std::string_view(msg.payload.data(), msg.payload.size())) {
      switch (c) {
        case '"':
          dest.append(std::string_view("\\\""));
          break;
        case '\\':
          dest.append(std::string_view("\\\\"));
          break;
        case '\n':
          dest.append(std::string_view("\\n"));
          break;
        case '\t':
          dest.append(std::string_view("\\t"));
          break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            dest.append(std::string_view(buf));
          } else {
            dest.push_back(c);
          }
      }
    }
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonEscapedMessage>();
  }
};

// "HOST:PORT" or "[V6]:PORT" -> host, port; logs and returns false when malformed.
bool ParseHostPort(const char* flag, const std::string& value, std::string* host, uint16_t* port) {
  auto colon = value.rfind(':');
  if (colon == std::string::npos) {
    spdlog::critical("{} must be HOST:PORT, not \"{}\"", flag, value);
    return false;
  }
  *host = value.substr(0, colon);
  if (!host->empty() && host->front() == '[') *host = host->substr(1, host->size() - 2);
  try {
    int p = std::stoi(value.substr(colon + 1));
    if (p < 0 || p > 65535) throw std::out_of_range("port");
    *port = static_cast<uint16_t>(p);
  } catch (const std::exception&) {
    spdlog::critical("{} port must be a number from 0 to 65535, not \"{}\"", flag,
                     value.substr(colon + 1));
    return false;
  }
  return true;
}

std::string ShownHost(const std::string& host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

void SetUpLogging(const std::string& format, const std::string& level) {
  auto logger = std::make_shared<spdlog::logger>("gantryd",
                                                 std::make_shared<spdlog::sinks::stderr_sink_mt>());
  auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  if (format == "json") {
    formatter->add_flag<JsonEscapedMessage>('*').set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l","msg":"%*"})");
  } else {
    formatter->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %l %v");
  }
  logger->set_formatter(std::move(formatter));
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
}

// The value of environment variable `name` ("" when unset), then removes it: overwritten in
// place first, so that neither a child nor /proc/<gantryd>/environ (which shows the original
// block) can see it any more. Called before any thread starts (setenv is not thread-safe).
std::string TakeSecretEnv(const char* name) {
  char* value = std::getenv(name);
  if (!value) return "";
  std::string copy = value;
  std::memset(value, 0, copy.size());
  ::unsetenv(name);
  return copy;
}

// The --ldap-* flags and --org-admin-group (issue 21; docs/operations.md, "LDAP logins").
struct LdapFlags {
  gantry::auth::LdapOptions options;
  std::string password_file;
  std::string allowed_group;
  std::string org_admin_group;
  std::string recheck = "5m";
};

void AddLdapFlags(CLI::App& app, LdapFlags& f) {
  app.add_option("--ldap-url", f.options.url,
                 "Check password logins of users without a local password against this LDAP "
                 "directory (ldap://HOST:389 or ldaps://HOST:636)");
  app.add_option("--ldap-bind-dn", f.options.bind_dn, "The service account gantryd searches as");
  app.add_option("--ldap-bind-password-file", f.password_file,
                 "A file holding the service account's password");
  app.add_option("--ldap-user-base", f.options.user_base, "Where users are searched");
  app.add_option("--ldap-user-filter", f.options.user_filter,
                 "Finds the user; {user} is the login name (escaped)")
      ->capture_default_str();
  app.add_option("--ldap-group-base", f.options.group_base,
                 "Where groups are searched (none: no groups)");
  app.add_option("--ldap-group-filter", f.options.group_filter,
                 "Finds the user's groups; {dn} is the user's DN, {user} the login name")
      ->capture_default_str();
  app.add_flag("--ldap-start-tls", f.options.start_tls, "StartTLS on an ldap:// URL");
  app.add_option("--ldap-ca-file", f.options.ca_file,
                 "PEM CA certificates for the directory's TLS certificate (default: the system's)");
  app.add_option("--ldap-allowed-group", f.allowed_group,
                 "Only members of this directory group may log in");
  app.add_option("--org-admin-group", f.org_admin_group,
                 "Members of this directory group are org-admin");
  app.add_option("--ldap-recheck", f.recheck,
                 "Sessions and tokens of LDAP users are checked against the directory again "
                 "after this long (a duration; 0s: every request)")
      ->capture_default_str();
}

// The --ldap-url directory (null without it; options set in `auth`), or why the flags are wrong.
absl::StatusOr<std::unique_ptr<gantry::auth::LdapDirectory>> MakeDirectory(
    LdapFlags f, gantry::auth::AuthOptions& auth) {
  gantry::auth::LdapOptions& o = f.options;
  if (o.url.empty()) {
    if (!f.allowed_group.empty() || !o.bind_dn.empty())
      return absl::InvalidArgumentError("the --ldap-* flags need --ldap-url");
    auth.org_admin_group = f.org_admin_group;  // for --oidc-issuer (checked in main)
    return nullptr;
  }
  if (o.url.rfind("ldap://", 0) != 0 && o.url.rfind("ldaps://", 0) != 0)
    return absl::InvalidArgumentError("--ldap-url must start with ldap:// or ldaps://");
  if (o.start_tls && o.url.rfind("ldaps://", 0) == 0)
    return absl::InvalidArgumentError("--ldap-start-tls is for ldap:// URLs (ldaps:// is TLS)");
  if (o.user_base.empty()) return absl::InvalidArgumentError("--ldap-url needs --ldap-user-base");
  if (o.user_filter.find("{user}") == std::string::npos)
    return absl::InvalidArgumentError("--ldap-user-filter must contain {user}");
  if (!o.bind_dn.empty()) {
    std::ifstream in(f.password_file);
    std::stringstream ss;
    ss << in.rdbuf();
    if (f.password_file.empty() || !in)
      return absl::InvalidArgumentError(
          "--ldap-bind-dn needs a readable --ldap-bind-password-file");
    o.bind_password = ss.str();
    while (!o.bind_password.empty() &&
           (o.bind_password.back() == '\n' || o.bind_password.back() == '\r'))
      o.bind_password.pop_back();
  }
  auto recheck = gantry::model::ParseDurationOrZero(f.recheck);  // 0: every request (tests)
  if (!recheck.ok())
    return absl::InvalidArgumentError("--ldap-recheck: " + std::string(recheck.status().message()) +
                                      " (or 0s: every request)");
  auth.directory_recheck = *recheck;
  auth.allowed_group = f.allowed_group;
  auth.org_admin_group = f.org_admin_group;
  spdlog::info("password logins of users without a local password are checked against {}", o.url);
  return std::make_unique<gantry::auth::LdapDirectory>(std::move(o));
}

}  // namespace

int main(int argc, char** argv) {
  // A write to a peer that went away (a socket, a pipe to a child or to our own log reader)
  // is an EPIPE error where it happens, never the silent death of gantryd. Children get every
  // signal back at its default (drivers/common/process.cc).
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app{"gantryd: the Gantry GPU PaaS control plane"};
  std::string listen = "127.0.0.1:8080";
  std::string data_dir = ".gantry";
  std::string log_format = "text";
  std::string log_level = "info";
  // The HTTP server's flags are bound to its options (api/server.h has the defaults).
  gantry::api::ServerOptions server_options;
  gantry::app::StoreFlags store_flags;
  int workers = 4;
  int drain_seconds = 10;
  std::string gpus_flag;
  std::string port_range = "20000-29999";
  // Not the 127.0.0.1 the UI is served on by default: a session cookie set there must not
  // reach workloads (Router::SetWorkloadHost).
  std::string advertise_host = "localhost";
  std::string host_id;
  int lease_seconds = 30;
  app.add_option("--listen", listen, "HOST:PORT to serve HTTP on (port 0 picks a free port)")
      ->capture_default_str();
  app.add_option("--data-dir", data_dir,
                 "Directory of the SQLite database, the secret key and the run logs")
      ->capture_default_str();
  gantry::app::AddStoreFlags(app, store_flags);
  app.add_option("--host-id", host_id,
                 "This replica's host identity: runs of host-bound drivers (local) stay with "
                 "their host (default: the host name)");
  app.add_option("--lease-seconds", lease_seconds,
                 "How long a run's lease lasts without renewal before another replica takes "
                 "the run over (PostgreSQL)")
      ->check(CLI::Range(3, 3600))
      ->capture_default_str();
  app.add_option("--log-format", log_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))
      ->capture_default_str();
  app.add_option("--max-body-bytes", server_options.body_limit, "Larger request bodies get 413")
      ->capture_default_str();
  app.add_option("--threads", server_options.threads, "HTTP I/O threads; reads are handled on them")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--write-threads", server_options.write_threads,
                 "Threads for requests that write (they wait for the commit; writes waiting "
                 "together are committed together); 0: on the I/O threads")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  int64_t list_page_size = 500;
  app.add_option("--list-page-size", list_page_size,
                 "Objects read from the store at a time by a list without a limit (sent as it "
                 "is read) and by a watch's initial events")
      ->check(CLI::Range(int64_t{1}, int64_t{100000}))
      ->capture_default_str();
  double bookmark_seconds = 60;
  app.add_option("--watch-bookmark-seconds", bookmark_seconds,
                 "How often watches with allowWatchBookmarks=true get a BOOKMARK event")
      ->check(CLI::Range(0.05, 3600.0))
      ->capture_default_str();
  app.add_option("--workers", workers, "Runs executed at once")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--drain-seconds", drain_seconds,
                 "On SIGTERM, how long in-flight requests and runs may take to finish")
      ->check(CLI::Range(0, 3600))
      ->capture_default_str();
  app.add_option("--gpus", gpus_flag,
                 "GPUs of this host as TYPE:COUNT[,TYPE:COUNT] (e.g. h100:8); default: nvidia-smi");
  bool webhook_allow_private = false;
  int webhook_timeout_ms = 10000;
  int webhook_backoff_ms = 1000;
  std::string webhook_retention = "7d";
  std::string webhook_ca_file;
  app.add_option("--webhook-ca-file", webhook_ca_file,
                 "PEM CA certificates https:// webhook receivers must chain to (default: the "
                 "system's)");
  app.add_flag("--webhook-allow-private", webhook_allow_private,
               "Allow webhook receivers on loopback, link-local and private addresses");
  app.add_option("--webhook-timeout-ms", webhook_timeout_ms, "Per-attempt webhook timeout")
      ->check(CLI::Range(100, 60000))
      ->capture_default_str();
  app.add_option("--webhook-delivery-retention", webhook_retention,
                 "How long ended webhook deliveries stay listed (90s, 30m, 8h, 7d)")
      ->capture_default_str();
  app.add_option("--webhook-backoff-ms", webhook_backoff_ms,
                 "First webhook retry delay; it doubles per attempt up to 1h")
      ->check(CLI::Range(10, 600000))
      ->capture_default_str();
  std::string gpu_sample_interval = "30s";
  app.add_option("--gpu-sample-interval", gpu_sample_interval,
                 "How often the GPU utilisation of local instances is sampled with nvidia-smi "
                 "(a duration such as 30s or 5m; docs/gpu-sampling.md)")
      ->capture_default_str();
  std::string budget_check_interval = "60s";
  app.add_option("--budget-check-interval", budget_check_interval,
                 "How often projects' monthly budgets are priced for their 80 % and 100 % "
                 "Events (a duration; docs/usage.md)")
      ->capture_default_str();
  app.add_option("--port-range", port_range, "Ports for local instances, MIN-MAX")
      ->capture_default_str();
  app.add_option("--advertise-host", advertise_host,
                 "Host name or address in the endpoints of local instances; the web UI must "
                 "be reached by another name (logins by this one are refused)")
      ->capture_default_str();
  std::string tls_listen, tls_cert, tls_key;
  app.add_option("--tls-listen", tls_listen,
                 "Also serve HTTPS on HOST:PORT (stock kubectl sends tokens only over TLS)");
  app.add_option("--tls-cert", tls_cert,
                 "PEM certificate chain for --tls-listen (default: DATA_DIR/tls.crt, a "
                 "self-signed one made on first use)");
  app.add_option("--tls-key", tls_key,
                 "PEM private key for --tls-listen (default: DATA_DIR/tls.key)");
  std::string session_idle = "30m", session_max = "12h";
  app.add_option("--session-idle", session_idle,
                 "Web sessions end after this long without a request (e.g. 30m)")
      ->capture_default_str();
  app.add_option("--session-max", session_max, "Web sessions end this long after login")
      ->capture_default_str();
  std::string workload_user = gantry::drivers::kDefaultWorkloadUser;
  app.add_option("--workload-user", workload_user,
                 "When gantryd runs as root: the user workloads, scripts and Slurm jobs run as "
                 "(default gantry-workload, else nobody)");
  std::string workload_dir;
  app.add_option("--workload-dir", workload_dir,
                 "When gantryd runs as root: where workloads keep their files, one directory "
                 "per instance (default: DATA_DIR.workloads)");
  std::string ui_dir = gantry::api::StaticFiles::DefaultRoot();
  app.add_option("--ui-dir", ui_dir, "The built web UI served from / (web/dist)")
      ->capture_default_str();
  std::string audit_retention = "90d";
  app.add_option("--audit-retention", audit_retention,
                 "Audit events older than this are deleted (a duration such as 90d or 12h)")
      ->capture_default_str();
  app.add_option("--max-connections", server_options.max_connections,
                 "Open HTTP connections at most; more are answered 503 and closed")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_option("--idle-timeout-seconds", server_options.idle_timeout_seconds,
                 "Close an HTTP connection that sends no whole request for this long")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  LdapFlags ldap_flags;
  AddLdapFlags(app, ldap_flags);
  gantry::app::OidcFlags oidc_flags;
  gantry::app::AddOidcFlags(app, oidc_flags);
  CLI11_PARSE(app, argc, argv);

  SetUpLogging(log_format, log_level);
  const std::string bootstrap_token = TakeSecretEnv("GANTRY_BOOTSTRAP_TOKEN");
  const std::string admin_password = TakeSecretEnv("GANTRY_ADMIN_PASSWORD");
  // Templates may refer to the directory gantryd runs in (e.g. examples/ scripts).
  ::setenv("GANTRYD_DIR", std::filesystem::current_path().string().c_str(), 1);
  if (sodium_init() < 0) {
    spdlog::critical("libsodium failed to initialise");
    return 1;
  }
  if (!ParseHostPort("--listen", listen, &server_options.host, &server_options.port)) return 2;
  std::string tls_host;
  uint16_t tls_port = 0;
  if (!tls_listen.empty() && !ParseHostPort("--tls-listen", tls_listen, &tls_host, &tls_port))
    return 2;
  server_options.drain_seconds = drain_seconds;
  gantry::auth::AuditOptions audit_options;
  if (auto r = gantry::model::ParseDuration(audit_retention); r.ok()) {
    audit_options.retention = *r;
  } else {
    spdlog::critical("--audit-retention: {}", std::string(r.status().message()));
    return 2;
  }
  auto webhook_retention_d = gantry::model::ParseDuration(webhook_retention);
  if (!webhook_retention_d.ok()) {
    spdlog::critical("--webhook-delivery-retention: {}",
                     std::string(webhook_retention_d.status().message()));
    return 2;
  }

  std::error_code fs_ec;
  std::filesystem::create_directories(data_dir, fs_ec);
  if (fs_ec) {
    spdlog::critical("cannot create data directory {}: {}", data_dir, fs_ec.message());
    return 1;
  }
  // Closed to everyone else, workloads included: gantry.db, secret.key, run logs.
  if (::chmod(data_dir.c_str(), 0700) != 0) {
    spdlog::critical("cannot make data directory {} private (0700): {}", data_dir,
                     std::strerror(errno));
    return 1;
  }
  auto sandbox = gantry::drivers::SandboxForGantryd(workload_user, workload_dir, data_dir);
  if (sandbox.ok())
    if (absl::Status s = gantry::drivers::PrepareWorkloadRoot(*sandbox); !s.ok()) sandbox = s;
  if (!sandbox.ok()) {
    spdlog::critical("--workload-user/--workload-dir: {}", std::string(sandbox.status().message()));
    return 1;
  }
  if (sandbox->user)
    spdlog::info("workloads run as user {} (uid {}) in {}", sandbox->user->name, sandbox->user->uid,
                 sandbox->workload_root);
  // One gantryd per data directory: the SQLite store has a single owner, which is what lets
  // the engine recover runs of a dead predecessor at once. (PostgreSQL replicas each have
  // their own data directory for the key copy and run logs.)
  std::string lock_path = (std::filesystem::path(data_dir) / "gantryd.lock").string();
  int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd < 0 || ::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    spdlog::critical("another gantryd is using {} (lock {})", data_dir, lock_path);
    return 1;
  }
  gantry::Metrics metrics;
  const bool postgres = store_flags.postgres();
  auto opened = gantry::app::OpenStore(store_flags, data_dir, metrics);
  if (!opened.ok()) {
    spdlog::critical("{}", std::string(opened.status().message()));
    return postgres && absl::IsInvalidArgument(opened.status()) ? 2 : 1;
  }
  std::unique_ptr<gantry::store::Store> store = std::move(opened->store);
  const std::string store_where = opened->where;

  auto secrets = gantry::SecretBox::Open((std::filesystem::path(data_dir) / "secret.key").string());
  if (!secrets.ok()) {
    spdlog::critical("{}", std::string(secrets.status().message()));
    return 1;
  }
  gantry::SystemClock clock;
  // Every write goes through the webhook outbox (docs/webhooks.md).
  store = std::make_unique<gantry::webhooks::OutboxStore>(std::move(store), clock);
  gantry::webhooks::SetAllowPrivate(webhook_allow_private);
  if (absl::Status trust = gantry::webhooks::SetReceiverTrust(webhook_ca_file); !trust.ok()) {
    spdlog::critical("--webhook-ca-file: {}", std::string(trust.message()));
    return 1;
  }
  gantry::api::WatchHub hub;
  hub.StartBookmarks(std::chrono::milliseconds(static_cast<int64_t>(bookmark_seconds * 1000)));
  gantry::engine::RunLogs logs((std::filesystem::path(data_dir) / "runs").string());
  gantry::engine::Inventory inventory;
  if (!gpus_flag.empty()) {
    auto configured = gantry::engine::ParseGpuFlag(gpus_flag);
    if (!configured.ok()) {
      spdlog::critical("{}", std::string(configured.status().message()));
      return 2;
    }
    inventory = *configured;
  } else {
    std::string why;
    inventory = gantry::engine::DiscoverGpus(&why);
    if (inventory.gpus.empty())
      spdlog::info("no GPUs found ({}); use --gpus TYPE:COUNT to configure them",
                   why.empty() ? "nvidia-smi lists none" : why);
  }
  std::map<std::string, int64_t> gpus_per_type;
  for (const auto& g : inventory.gpus) ++gpus_per_type[g.type];
  for (const auto& [type, n] : gpus_per_type)
    spdlog::info("GPUs: {} x {} ({})", n, type, inventory.source);
  gantry::engine::GpuAllocator allocator(inventory);
  const auto sample_interval = gantry::model::ParseDuration(gpu_sample_interval);
  if (!sample_interval.ok()) {
    spdlog::critical("--gpu-sample-interval: {}", std::string(sample_interval.status().message()));
    return 2;
  }
  const auto budget_interval = gantry::model::ParseDuration(budget_check_interval);
  if (!budget_interval.ok()) {
    spdlog::critical("--budget-check-interval: {}",
                     std::string(budget_interval.status().message()));
    return 2;
  }
  gantry::drivers::local::LocalDriverOptions local_options;
  {
    auto dash = port_range.find('-');
    try {
      if (dash == std::string::npos) throw std::invalid_argument("range");
      local_options.port_min = std::stoi(port_range.substr(0, dash));
      local_options.port_max = std::stoi(port_range.substr(dash + 1));
      if (local_options.port_min < 1 || local_options.port_max > 65535 ||
          local_options.port_min > local_options.port_max)
        throw std::invalid_argument("range");
    } catch (const std::exception&) {
      spdlog::critical("--port-range must be MIN-MAX within 1-65535, not \"{}\"", port_range);
      return 2;
    }
  }
  local_options.advertise_host = advertise_host;
  local_options.sandbox = *sandbox;
  gantry::drivers::slurm::SlurmDriverOptions slurm_options;
  slurm_options.sandbox = *sandbox;
  gantry::drivers::SystemProcessLauncher launcher;  // the one way drivers start programs
  gantry::drivers::DriverRegistry drivers;
  drivers.Register(std::make_unique<gantry::drivers::exec::ExecDriver>(*sandbox, launcher));
  drivers.Register(
      std::make_unique<gantry::drivers::local::LocalDriver>(local_options, clock, launcher));
  drivers.Register(std::make_unique<gantry::drivers::slurm::SlurmDriver>(slurm_options, launcher));
  drivers.Register(std::make_unique<gantry::drivers::container::ContainerDriver>(
      gantry::drivers::container::OptionsLike(local_options, data_dir), launcher));
  gantry::engine::EngineOptions engine_options;
  engine_options.workers = workers;
  if (host_id.empty()) {
    char host[256] = {0};
    ::gethostname(host, sizeof host - 1);
    host_id = host;
  }
  engine_options.holder = "gantryd-" + gantry::NewUid().substr(0, 8);
  engine_options.host = host_id;
  engine_options.lease = std::chrono::seconds(lease_seconds);
  engine_options.sole_owner = !postgres;
  engine_options.drain = std::chrono::seconds(drain_seconds);
  engine_options.state_dir = (std::filesystem::path(data_dir) / "instances").string();
  gantry::engine::Engine engine(*store, drivers, **secrets, logs, clock, metrics, allocator,
                                engine_options);
  // Set below, once it exists: the authenticator's caches follow identity changes.
  std::atomic<gantry::auth::Authenticator*> authn_observer{nullptr};
  // Set below, once it exists: commits that touch instances wake the lifecycle controller.
  std::atomic<gantry::engine::LifecycleController*> lifecycle_observer{nullptr};
  std::atomic<gantry::webhooks::DeliveryWorker*> webhook_observer{nullptr};
  store->SetCommitObserver(
      [&hub, &engine, &authn_observer, &lifecycle_observer, &webhook_observer](const auto& events) {
        hub.Publish(events);
        if (auto* w = webhook_observer.load())
          for (const auto& e : events)
            if (e.kind == gantry::webhooks::kDeliveryKind && e.type == "ADDED") {
              w->Notify();
              break;
            }
        if (auto* a = authn_observer.load()) a->OnCommit(events);
        engine.OnCommit(events);
        if (auto* l = lifecycle_observer.load()) l->OnCommit(events);
      });
  gantry::api::ResourceService resources(*store, hub, clock, **secrets, drivers);
  resources.SetPageSize(list_page_size);
  // This host in the fleet's GPUs before the first write is served (the share monitor renews
  // it): the overcommit warning and condition sum every replica's host.
  if (auto s = gantry::engine::PublishHostGpus(*store, host_id, gpus_per_type, clock.Now());
      !s.ok()) {
    spdlog::critical("cannot record this host's GPUs: {}", std::string(s.message()));
    return 1;
  }
  resources.SetGpuWarnings(true);
  resources.SetInstanceDeleteHook(
      [&engine](const gantry::api::Target& t, bool cascade, bool* accepted) {
        return engine.Delete(t.kind->kind, t.ns, t.name, cascade, accepted);
      });
  if (auto s = resources.EnsureProject("default", "Default project"); !s.ok()) {
    spdlog::critical("cannot create the default project: {}", std::string(s.message()));
    return 1;
  }
  if (auto s = engine.Start(); !s.ok()) {
    spdlog::critical("the deploy engine cannot start: {}", std::string(s.message()));
    return 1;
  }
  gantry::engine::GpuSampler gpu_sampler(*store, drivers, allocator, clock, metrics, launcher,
                                         {.interval = *sample_interval});
  gpu_sampler.Start();
  gantry::auth::AuthOptions auth_options;
  {
    auto idle = gantry::model::ParseDuration(session_idle);
    auto max = gantry::model::ParseDuration(session_max);
    if (!idle.ok() || !max.ok()) {
      spdlog::critical("--{}: {}", idle.ok() ? "session-max" : "session-idle",
                       std::string((idle.ok() ? max : idle).status().message()));
      return 1;
    }
    auth_options.session_idle = *idle;
    auth_options.session_max = *max;
    if (const std::string& t = bootstrap_token; !t.empty()) {
      if (t.size() < 16) {
        spdlog::critical("GANTRY_BOOTSTRAP_TOKEN must be at least 16 characters long");
        return 1;
      }
      auth_options.bootstrap_token = t;
      spdlog::warn("GANTRY_BOOTSTRAP_TOKEN is set: it acts as an org-admin token until restart");
    }
  }
  auto directory = MakeDirectory(std::move(ldap_flags), auth_options);
  if (!directory.ok()) {
    spdlog::critical("{}", std::string(directory.status().message()));
    return 2;
  }
  auth_options.directory = directory->get();
  auto sso = gantry::app::MakeOidc(std::move(oidc_flags), clock);
  if (!sso.ok()) {
    spdlog::critical("{}", std::string(sso.status().message()));
    return 2;
  }
  auth_options.sso = sso->get();
  auth_options.secrets = secrets->get();
  if (!auth_options.org_admin_group.empty() && !*directory && !*sso) {
    spdlog::critical("--org-admin-group needs --ldap-url or --oidc-issuer");
    return 2;
  }
  gantry::auth::Authenticator authn(*store, clock, auth_options);
  authn_observer = &authn;
  // Unhooked before authn is destroyed: what is torn down after it may still commit.
  struct Unhook {
    std::atomic<gantry::auth::Authenticator*>& observer;
    ~Unhook() { observer = nullptr; }
  } unhook{authn_observer};
  gantry::auth::AuditLog audit(*store, clock, metrics, audit_options);
  audit.StartPruning(gantry::auth::AuditLog::PruneInterval(audit_options.retention));
  // Approval gates (docs/approvals.md): their expiries ride on the lifecycle loop, which is
  // declared after them so that it stops first.
  gantry::engine::Approvals approvals(*store, engine, audit, clock, metrics);
  // TTL, idle and schedule deadlines (docs/lifecycle-controller.md); after the engine started.
  gantry::engine::LifecycleController lifecycle(*store, engine, drivers, audit, clock, metrics);
  lifecycle.SetApprovals(&approvals);
  lifecycle_observer = &lifecycle;
  struct UnhookLifecycle {
    std::atomic<gantry::engine::LifecycleController*>& observer;
    ~UnhookLifecycle() { observer = nullptr; }
  } unhook_lifecycle{lifecycle_observer};
  lifecycle.Start();
  // The 80 % and 100 % Events of monthly budgets (engine/budget_monitor.h).
  gantry::engine::BudgetMonitor budgets(*store, clock, metrics, *budget_interval);
  budgets.Start();
  // gantry_project_gpus and GuaranteesOvercommitted (engine/share_monitor.h).
  gantry::engine::ShareMonitor shares(*store, clock, metrics, allocator, host_id);
  shares.Start();
  gantry::webhooks::DeliveryOptions webhook_options;
  webhook_options.holder = engine_options.holder;
  webhook_options.attempt_timeout = std::chrono::milliseconds(webhook_timeout_ms);
  webhook_options.backoff_base = std::chrono::milliseconds(webhook_backoff_ms);
  webhook_options.metrics = &metrics;
  webhook_options.retention = *webhook_retention_d;
  gantry::webhooks::DeliveryWorker webhook_worker(*store, **secrets, clock, webhook_options);
  webhook_observer = &webhook_worker;
  struct UnhookWebhooks {
    std::atomic<gantry::webhooks::DeliveryWorker*>& observer;
    ~UnhookWebhooks() { observer = nullptr; }
  } unhook_webhooks{webhook_observer};
  webhook_worker.Start();
  resources.SetCredentials(&authn);
  {
    auto admin = authn.EnsureAdmin(admin_password);
    if (!admin.ok()) {
      spdlog::critical("cannot create the first user: {}", std::string(admin.status().message()));
      return 1;
    }
    if (admin->has_value()) {
      if ((*admin)->empty()) {
        spdlog::info("created user admin (org-admin) with the password from GANTRY_ADMIN_PASSWORD");
      } else {
        // Printed once, on stdout and not in the log: the log may be shipped elsewhere.
        std::printf(
            "\n  Gantry created user \"admin\" (org-admin) with password: %s\n"
            "  It is shown only this once. Log in with: gantry login --user admin\n\n",
            (*admin)->c_str());
        std::fflush(stdout);
        spdlog::info(
            "created user admin (org-admin); its generated password was printed on stdout");
      }
    }
  }
  gantry::api::Router router(resources, engine, logs, metrics, authn, audit,
                             [&store, &engine]() -> absl::Status {
                               if (!engine.Running())
                                 return absl::UnavailableError("the deploy engine is not running");
                               return store->Ping();
                             });
  gantry::api::StaticFiles ui(ui_dir);
  router.SetStaticFiles(&ui);
  router.SetWorkloadHost(advertise_host);
  router.SetLifecycleEvents(&lifecycle);
  router.SetSso(sso->get());
  router.SetApprovals(&approvals);
  if (!ui.available()) spdlog::info("web UI not built (no index.html in {}): / explains", ui_dir);
  gantry::api::Server server(router, server_options, metrics);
  auto port = server.Listen();
  if (!port.ok()) {
    spdlog::critical("{}", std::string(port.status().message()));
    return 1;
  }
  std::optional<uint16_t> https_port;
  if (!tls_listen.empty()) {
    if (tls_cert.empty() != tls_key.empty()) {
      spdlog::critical("give both --tls-cert and --tls-key, or neither (a self-signed pair)");
      return 2;
    }
    if (tls_cert.empty()) {
      tls_cert = (std::filesystem::path(data_dir) / "tls.crt").string();
      tls_key = (std::filesystem::path(data_dir) / "tls.key").string();
      if (auto s =
              gantry::EnsureSelfSignedCertificate(tls_cert, tls_key, {tls_host, advertise_host});
          !s.ok()) {
        spdlog::critical("{}", std::string(s.message()));
        return 1;
      }
    }
    auto p = server.ListenTls(tls_host, tls_port, tls_cert, tls_key);
    if (!p.ok()) {
      spdlog::critical("{}", std::string(p.status().message()));
      return 1;
    }
    https_port = *p;
  }
  spdlog::info("data in {}", store_where);
  if (postgres) spdlog::info("replica {} on host {}", engine_options.holder, host_id);
  if (https_port)
    spdlog::info("listening on https://{}:{} (certificate {})", ShownHost(tls_host), *https_port,
                 tls_cert);
  spdlog::info("listening on http://{}:{}", ShownHost(server_options.host), *port);
  server.Run([&hub] { hub.CloseAll(); });
  audit.StopPruning();
  lifecycle.Stop();
  budgets.Stop();
  shares.Stop();
  webhook_observer = nullptr;
  webhook_worker.Stop();
  gpu_sampler.Stop();
  bool drained = engine.Stop();
  drivers.Shutdown();
  // The PostgreSQL store's tail thread outlives the engine and the hub: detach them.
  store->SetCommitObserver(nullptr);
  spdlog::info("stopped");
  if (!drained) {
    // Runs still executing are left for the next start to recover; do not wait for them.
    std::fflush(nullptr);
    ::_exit(0);
  }
  return 0;
}
