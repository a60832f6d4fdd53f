#include "drivers/common/state_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace gantry::drivers {

namespace json = boost::json;

void WriteStateFile(const std::string& state_dir, const char* file, const json::object& state) {
  if (state_dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(state_dir, ec);
  std::string path = state_dir + "/" + file;
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << json::serialize(state);
    if (!out) return;
  }
  std::filesystem::rename(tmp, path, ec);
}

json::object ReadStateFile(const std::string& state_dir, const char* file) {
  if (state_dir.empty()) return {};
  std::ifstream in(state_dir + "/" + file);
  if (!in) return {};
  std::stringstream ss;
  ss << in.rdbuf();
  boost::system::error_code ec;
  json::value v = json::parse(ss.str(), ec);
  return !ec && v.is_object() ? v.get_object() : json::object{};
}

void RemoveStateFile(const std::string& state_dir, const char* file) {
  if (state_dir.empty()) return;
  std::error_code ec;
  std::filesystem::remove(state_dir + "/" + file, ec);
}

}  // namespace gantry::drivers
