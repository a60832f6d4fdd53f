// Where the CLI's connection settings come from. Precedence, highest first: flags, the
// environment (GANTRY_SERVER, GANTRY_TOKEN), the config file, built-in defaults
// (http://127.0.0.1:8080, project "default").
//
// The config file is YAML with keys `server`, `token`, `project` and, for an https:// server
// whose certificate the system does not trust, `caFile` (a PEM file: gantryd's self-signed
// DATA_DIR/tls.crt, or the CA of its --tls-cert; env GANTRY_CA_FILE, flag --ca-file); it is
// --config FILE, else
// $GANTRY_CONFIG, else ~/.config/gantry/config.yaml (which may be absent).
//
// Thread-safety: free functions; the environment is read through the injected getter.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace gantry::cli {

inline constexpr char kDefaultServer[] = "http://127.0.0.1:8080";
inline constexpr char kDefaultProject[] = "default";

struct Settings {
  std::string server;
  std::string token;
  std::string project;
  std::string ca_file;                    // trusted CA for https:// servers ("" = the system's)
  bool insecure_skip_tls_verify = false;  // --insecure-skip-tls-verify (never saved)
  bool project_explicit = false;          // -n/--project was given
  std::string config_path;  // the config file consulted ("" when none); `gantry login` writes it
};

struct GlobalFlags {
  std::optional<std::string> server;
  std::optional<std::string> token;
  std::optional<std::string> project;
  std::optional<std::string> config;
  std::optional<std::string> ca_file;
  bool insecure_skip_tls_verify = false;
};

using EnvGetter = std::function<std::optional<std::string>(const std::string& name)>;
// Reads a whole file; NOT_FOUND when it does not exist.
using FileReader = std::function<absl::StatusOr<std::string>(const std::string& path)>;

// Errors: NOT_FOUND when a config file named by --config or $GANTRY_CONFIG is missing;
// INVALID_ARGUMENT when the file is not a YAML mapping or a key is not a string.
absl::StatusOr<Settings> ResolveSettings(const GlobalFlags& flags, const EnvGetter& getenv,
                                         const FileReader& read_file);

// Writes a whole file with mode 0600, creating its directory; for `gantry login`.
using FileWriter = std::function<absl::Status(const std::string& path, const std::string& text)>;
absl::Status WriteWholeFile(const std::string& path, const std::string& text);

// The config file's YAML for these settings (server, token, project, caFile when set).
std::string ConfigYaml(const Settings& settings);

// std::getenv and std::ifstream, for main.
std::optional<std::string> SystemGetEnv(const std::string& name);
absl::StatusOr<std::string> ReadWholeFile(const std::string& path);

}  // namespace gantry::cli
