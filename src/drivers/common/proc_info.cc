#include "drivers/common/proc_info.h"

#include <dirent.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

namespace gantry::drivers {

bool ReadProcStat(int pid, ProcStat* out) {
  if (pid <= 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return false;
  // The command name (field 2) may hold spaces and parentheses: skip to the last ')'.
  size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 > stat.size()) return false;
  std::istringstream rest(stat.substr(close + 2));
  ProcStat s;
  std::string field;
  if (!(rest >> s.state >> s.ppid >> s.pgrp)) return false;
  for (int i = 6; i <= 21; ++i)
    if (!(rest >> field)) return false;
  if (!(rest >> s.start_time)) return false;
  *out = s;
  return true;
}

bool ProcessAlive(int pid, long long start_time) {
  ProcStat s;
  if (!ReadProcStat(pid, &s)) return false;
  return s.start_time == start_time && s.state != 'Z' && s.state != 'X';
}

std::vector<int> ProcessGroupMembers(int pgid) {
  std::vector<int> members;
  if (pgid <= 0) return members;
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir("/proc"), &::closedir);
  if (!dir) return members;
  while (dirent* e = ::readdir(dir.get())) {
    if (!std::isdigit(static_cast<unsigned char>(e->d_name[0]))) continue;
    int pid = std::atoi(e->d_name);
    ProcStat s;
    // A process may exit between readdir and the read: then it is simply not a member.
    if (ReadProcStat(pid, &s) && s.pgrp == pgid && s.state != 'Z' && s.state != 'X')
      members.push_back(pid);
  }
  return members;
}

}  // namespace gantry::drivers
