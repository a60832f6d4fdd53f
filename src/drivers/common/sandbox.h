// What a driver's children (exec scripts, local workloads, Slurm's CLI and the jobs it
// submits) get from gantryd, and no more: an allow-listed environment, the account they run
// as, and the directory they may write in. Code in a workload is run by project members, so
// nothing of gantryd's own (its environment with GANTRY_BOOTSTRAP_TOKEN and
// GANTRY_ADMIN_PASSWORD, its data directory with secret.key and gantry.db, its uid and so
// /proc/<gantryd>/environ) may reach it (docs/security.md, "Workload isolation").
//
//   - ChildEnvironment: the one place a child's environment is built. From gantryd's own it
//     keeps PATH, HOME, LANG, LC_*, TZ and CUDA_VISIBLE_DEVICES (plus what a caller names,
//     e.g. SLURM_CONF for Slurm's tools); the driver's GANTRY_* run variables and the
//     template's env go on top.
//   - Sandbox::user: when gantryd runs as root, the unprivileged account (--workload-user,
//     by default gantry-workload, else nobody) every child switches to before exec
//     (the ProcessLauncher in process.h); HOME, USER and LOGNAME are then that account's.
//   - Sandbox::workload_root: where a workload's own directory (GANTRY_STATE_DIR, the default
//     working directory) lives when the data directory is closed to it: WORKLOAD_ROOT/UID,
//     owned by the workload user, mode 0700. Driver-private files (local-driver.json,
//     workload.log, slurm-driver.json) stay in the engine's state directory inside the data
//     directory, where a workload can neither read nor forge them.
//
// Thread-safety: free functions over const data; reentrant.
#pragma once

#include <sys/types.h>

#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace gantry::drivers {

// An unprivileged account children run as.
struct WorkloadUser {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // its supplementary groups (getgrouplist), gid included
  std::string home;           // its home directory from the password database
};

// What every driver's children share; built once by gantryd's main and handed to each driver.
struct Sandbox {
  std::optional<WorkloadUser> user;  // empty: children keep gantryd's uid (not root)
  std::string workload_root;         // "": a workload's directory is its state directory
};

// The account `name` (a user name, or a numeric uid) from the password database.
// NOT_FOUND "no user gantry-workload on this host" when there is none; INVALID_ARGUMENT
// when `name` is root (uid 0), which would defeat the point.
absl::StatusOr<WorkloadUser> LookUpWorkloadUser(const std::string& name);

// The complete environment of a child: from gantryd's environment only PATH, HOME, LANG,
// LC_*, TZ, CUDA_VISIBLE_DEVICES and the names in `also_inherit`; with `user`, HOME, USER and
// LOGNAME of that account; then `set` on top (it wins).
std::map<std::string, std::string> ChildEnvironment(
    const std::map<std::string, std::string>& set, const WorkloadUser* user = nullptr,
    std::initializer_list<std::string_view> also_inherit = {});

// The same as KEY=VALUE strings, the form execve takes.
std::vector<std::string> EnvStrings(const std::map<std::string, std::string>& env);

// The directory of the workload whose engine state directory is `state_dir`
// (DATA_DIR/instances/UID): `state_dir` itself without a workload root, else
// WORKLOAD_ROOT/UID. Pure: creates nothing.
std::string WorkloadDir(const Sandbox& sandbox, const std::string& state_dir);

// Creates WorkloadDir (and, with a workload root, makes it the user's, mode 0700; a symlink
// planted in its place is refused) and returns it. FAILED_PRECONDITION saying which
// directory and why when it cannot be made.
absl::StatusOr<std::string> PrepareWorkloadDir(const Sandbox& sandbox,
                                               const std::string& state_dir);

inline constexpr char kDefaultWorkloadUser[] = "gantry-workload";

// The sandbox of gantryd's drivers, from its flags. As root: `user` (--workload-user; when
// it is the default gantry-workload and there is no such user, nobody) and `workload_dir`
// (--workload-dir, "" = DATA_DIR.workloads beside the data directory). As any other user:
// none (children keep gantryd's uid and use their state directories; docs/security.md says
// what that leaves open). NOT_FOUND / INVALID_ARGUMENT from LookUpWorkloadUser.
absl::StatusOr<Sandbox> SandboxForGantryd(const std::string& user, const std::string& workload_dir,
                                          const std::string& data_dir);

// Prepares the root of the workload directories at start-up: created, owned by gantryd,
// mode 0711 (the user can reach its own directory but not list the others').
// FAILED_PRECONDITION when it cannot be made, or when a directory on the way to it is closed
// to the workload user ("... /root is closed to it"). OK when the sandbox has no root.
absl::Status PrepareWorkloadRoot(const Sandbox& sandbox);

}  // namespace gantry::drivers
