#include "cli/config.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <boost/json.hpp>

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
                                  {"project", &s.project}}) {
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
