#include "engine/run_log.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace gantry::engine {

RunLogs::RunLogs(std::string dir) : dir_(std::move(dir)) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
}

std::string RunLogs::PathOf(const std::string& run_uid) const {
  return dir_ + "/" + run_uid + ".log";
}

void RunLogs::Append(const std::string& run_uid, std::string_view line) {
  std::lock_guard<std::mutex> lock(mu_);
  {
    std::ofstream out(PathOf(run_uid), std::ios::app);
    out << line << '\n';
  }
  auto it = followers_.find(run_uid);
  if (it == followers_.end()) return;
  for (auto& s : it->second) s->Push(std::string(line));
}

void RunLogs::Finish(const std::string& run_uid) {
  std::vector<std::shared_ptr<LineStream>> streams;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = followers_.find(run_uid);
    if (it == followers_.end()) return;
    streams.swap(it->second);
    followers_.erase(it);
  }
  for (auto& s : streams) s->Close();
}

std::string RunLogs::Read(const std::string& run_uid) {
  std::lock_guard<std::mutex> lock(mu_);
  std::ifstream in(PathOf(run_uid));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void RunLogs::Follow(const std::string& run_uid, bool active, std::shared_ptr<LineStream> stream) {
  std::lock_guard<std::mutex> lock(mu_);
  std::ifstream in(PathOf(run_uid));
  std::string line;
  while (std::getline(in, line)) stream->Push(line);
  if (!active) {
    stream->Close();
    return;
  }
  followers_[run_uid].push_back(stream);
}

void RunLogs::Remove(const std::string& run_uid) {
  Finish(run_uid);
  std::error_code ec;
  std::filesystem::remove(PathOf(run_uid), ec);
}

}  // namespace gantry::engine
