#include "drivers/local/port_allocator.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <random>
#include <sstream>

#include "drivers/common/process.h"

namespace gantry::drivers::local {

std::set<int> ParseForwardedPorts(std::string_view rules) {
  std::set<int> ports;
  std::istringstream in{std::string(rules)};
  for (std::string line; std::getline(in, line);) {
    if (line.find(" -j DNAT") == std::string::npos || line.find(" -p tcp") == std::string::npos)
      continue;
    const size_t at = line.find("--dport ");
    if (at == std::string::npos) continue;
    int first = 0, last = 0;
    const char* p = line.c_str() + at + 8;
    const int n = std::sscanf(p, "%d:%d", &first, &last);
    if (n < 1 || first < 1 || first > 65535) continue;
    if (n < 2 || last < first || last > 65535) last = first;
    for (int port = first; port <= last; ++port) ports.insert(port);
  }
  return ports;
}

std::set<int> ForwardedPorts() {
  ProcessSpec spec;
  spec.argv = {"iptables", "-t", "nat", "-S"};
  spec.timeout = std::chrono::seconds(10);
  std::string out;
  ProcessHooks hooks;
  hooks.on_line = [&out](std::string_view line) {
    out.append(line);
    out.push_back('\n');
  };
  auto result = RunProcess(spec, hooks);
  if (!result.ok() || result->exit_code != 0) return {};
  return ParseForwardedPorts(out);
}

PortAllocator::PortAllocator(int min, int max, Forwarded forwarded)
    : min_(min), max_(max), forwarded_(std::move(forwarded)) {
  // Start at a random place: several gantryds (or test binaries) on one host then rarely
  // race for the same port between the bind check and the workload's own bind.
  std::random_device rd;
  next_ = min_ + static_cast<int>(rd() % static_cast<unsigned>(max_ - min_ + 1));
}

bool PortAllocator::PortIsFree(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  // SO_REUSEADDR as servers set it: a port in TIME_WAIT is usable, one with a listener is not.
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return free;
}

absl::StatusOr<std::map<std::string, int>> PortAllocator::Allocate(
    const std::string& owner, const std::vector<std::string>& names) {
  const std::set<int> forwarded = names.empty() || !forwarded_ ? std::set<int>() : forwarded_();
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, int> given;
  const int size = max_ - min_ + 1;
  for (const auto& name : names) {
    int found = 0;
    for (int tried = 0; tried < size && !found; ++tried) {
      int port = next_;
      next_ = next_ == max_ ? min_ : next_ + 1;
      if (held_.count(port) || forwarded.count(port) || !PortIsFree(port)) continue;
      found = port;
    }
    if (!found) {
      for (const auto& [n, port] : given) held_.erase(port);
      return absl::ResourceExhaustedError("no free TCP port left in " + std::to_string(min_) + "-" +
                                          std::to_string(max_) + " for port " + name);
    }
    held_[found] = owner;
    given[name] = found;
  }
  return given;
}

void PortAllocator::Reserve(const std::string& owner, const std::map<std::string, int>& ports) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, port] : ports) held_[port] = owner;
}

void PortAllocator::Release(const std::string& owner) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = held_.begin(); it != held_.end();)
    it = it->second == owner ? held_.erase(it) : std::next(it);
}

}  // namespace gantry::drivers::local
