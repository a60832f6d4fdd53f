#include "cli/config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "client/yaml_json.h"
#include "common/status_macros.h"

namespace gantry::cli {

std::optional<std::string> SystemGetEnv(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": no such file or not readable"));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return absl::UnavailableError(absl::StrCat(path, ": read error"));
  return ss.str();
}

absl::Status WriteWholeFile(const std::string& path, const std::string& text) {
  std::error_code ec;
  std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return absl::UnavailableError(absl::StrCat(path, ": ", std::strerror(errno)));
  ::fchmod(fd, 0600);  // an existing file keeps its mode otherwise: it holds a token
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) {
      ::close(fd);
      return absl::UnavailableError(absl::StrCat(path, ": write failed"));
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) return absl::UnavailableError(absl::StrCat(path, ": close failed"));
  return absl::OkStatus();
}

std::string ConfigYaml(const Settings& settings) {
  // JSON strings are valid YAML scalars: no quoting rules to get wrong.
  return absl::StrCat(
      "server: ", boost::json::serialize(boost::json::value(settings.server)),
      "\ntoken: ", boost::json::serialize(boost::json::value(settings.token)),
      "\nproject: ", boost::json::serialize(boost::json::value(settings.project)), "\n",
      settings.ca_file.empty()
          ? ""
          : absl::StrCat("caFile: ", boost::json::serialize(boost::json::value(settings.ca_file)),
                         "\n"));
}

absl::StatusOr<Settings> ResolveSettings(const GlobalFlags& flags, const EnvGetter& getenv,
                                         const FileReader& read_file) {
  std::string path;
  bool must_exist = true;
  if (flags.config) {
    path = *flags.config;
  } else if (auto env = getenv("GANTRY_CONFIG"); env && !env->empty()) {
    path = *env;
  } else if (auto home = getenv("HOME"); home && !home->empty()) {
    path = *home + "/.config/gantry/config.yaml";
    must_exist = false;
  }

  Settings s;
  s.config_path = path;
  if (!path.empty()) {
    absl::StatusOr<std::string> text = read_file(path);
    if (!text.ok()) {
      if (must_exist || text.status().code() != absl::StatusCode::kNotFound) {
        return absl::Status(text.status().code(),
                            absl::StrCat("config file ", text.status().message()));
      }
    } else {
      auto docs = client::YamlToJsonObjects(*text);
      if (!docs.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("config file ", path, ": ", docs.status().message()));
      }
      if (!docs->empty()) {
        const boost::json::object& o = (*docs)[0];
        for (auto [key, field] : {std::pair<const char*, std::string*>{"server", &s.server},
                                  {"token", &s.token},
                                  {"project", &s.project},
                                  {"caFile", &s.ca_file}}) {
          const boost::json::value* v = o.if_contains(key);
          if (v == nullptr || v->is_null()) continue;
          if (!v->is_string()) {
            return absl::InvalidArgumentError(
                absl::StrCat("config file ", path, ": ", key, " must be a string"));
          }
          *field = std::string(v->get_string());
        }
      }
    }
  }
  if (auto v = getenv("GANTRY_SERVER"); v && !v->empty()) s.server = *v;
  if (auto v = getenv("GANTRY_TOKEN"); v && !v->empty()) s.token = *v;
  if (auto v = getenv("GANTRY_CA_FILE"); v && !v->empty()) s.ca_file = *v;
  if (flags.ca_file) s.ca_file = *flags.ca_file;
  s.insecure_skip_tls_verify = flags.insecure_skip_tls_verify;
  if (flags.server) s.server = *flags.server;
  if (flags.token) s.token = *flags.token;
  if (flags.project) {
    s.project = *flags.project;
    s.project_explicit = true;
  }
  if (s.server.empty()) s.server = kDefaultServer;
  if (s.project.empty()) s.project = kDefaultProject;
  return s;
}

}  // namespace gantry::cli
