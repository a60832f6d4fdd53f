// What /proc says about processes and process groups: whether a recorded workload (pid and
// start time) is still that process, and which live processes remain in a process group.
// Used by drivers that supervise long-running processes and must tell their own workload
// from an unrelated process that reused its pid.
//
// Thread-safety: all functions are reentrant; they read /proc and keep no state.
#pragma once

#include <string>
#include <vector>

namespace gantry::drivers {

struct ProcStat {
  char state = '?';           // R, S, D, Z, T, ... (field 3)
  int ppid = 0;               // field 4
  int pgrp = 0;               // field 5
  long long start_time = -1;  // field 22, clock ticks since boot
};

// Parses /proc/PID/stat; false when the process does not exist (or cannot be read).
bool ReadProcStat(int pid, ProcStat* out);

// True when `pid` exists, started at `start_time` and is not a zombie: the recorded process
// is still running. A zombie counts as gone: it has exited and only waits to be reaped.
bool ProcessAlive(int pid, long long start_time);

// The live (non-zombie) processes whose process group is `pgid`, found by scanning /proc.
std::vector<int> ProcessGroupMembers(int pgid);

}  // namespace gantry::drivers
