// A real single-node Slurm cluster for the Slurm driver's integration tests: slurmctld and
// slurmd from Debian's slurm-wlm, run in the foreground as children of the test process, in a
// temporary directory with their own slurm.conf (AuthType=auth/none, free ports, partition
// "gpu", node "gnode1" with Gres=gpu:h100:4 backed by placeholder device files: character
// devices 1,3 — /dev/null's — or plain files where mknod is not allowed).
//
// Start() returns UNAVAILABLE with what went wrong (and the daemons' log tails) when Slurm is
// not installed or cannot run here; the tests turn that into GTEST_SKIP, unless
// GANTRY_REQUIRE_SLURM=1 (CI) makes it a failure. The destructor cancels every job, waits for
// them to end, stops the daemons and removes the directory.
//
// Thread-safety: for the test's thread.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gantry::testing {

struct CommandOutput {
  int exit_code = -1;
  std::string out;  // stdout and stderr
};

class SlurmCluster {
 public:
  static constexpr int kGpus = 4;  // h100s of gnode1
  static constexpr char kNode[] = "gnode1";
  static constexpr char kPartition[] = "gpu";
  static constexpr char kClusterName[] = "gantrytest";

  SlurmCluster();
  ~SlurmCluster();
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  // Writes the configuration, starts both daemons and waits until the node is idle.
  absl::Status Start();
  // Stops / starts slurmctld alone (the cluster "down"; jobs keep running on the node).
  void StopController();
  absl::Status StartController();

  const std::string& dir() const { return dir_; }
  std::string conf() const { return dir_ + "/slurm.conf"; }

  // Runs a Slurm command (`squeue`, `scancel`, ...) against this cluster with a time limit.
  CommandOutput Run(const std::vector<std::string>& argv) const;
  // The job's state as `squeue --json` shows it ("" when Slurm does not list it).
  std::string JobState(const std::string& job_id) const;
  // A field of the job in `squeue --json` ("" when absent).
  std::string JobField(const std::string& job_id, const std::string& field) const;
  // Cancels every job and waits until none is pending or running.
  bool CancelAll() const;
  // Everything both daemons logged.
  std::string Logs() const;

 private:
  pid_t Spawn(const std::vector<std::string>& argv, const std::string& log) const;
  static void Stop(pid_t& pid);
  bool WaitNodeIdle() const;

  std::string dir_;
  int ctld_port_ = 0, slurmd_port_ = 0;
  pid_t ctld_ = -1, slurmd_ = -1;
};

// Whether the tests must run (CI): GANTRY_REQUIRE_SLURM=1.
bool SlurmRequired();

}  // namespace gantry::testing
