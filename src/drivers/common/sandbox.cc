#include "drivers/common/sandbox.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

extern char** environ;

namespace gantry::drivers {
namespace {

// What a child may keep of gantryd's environment: how to find programs, the locale and the
// time zone, the GPUs gantryd itself was given. Everything else (tokens, passwords, proxies
// with credentials, cloud keys) stays behind.
bool Inherited(std::string_view key, std::initializer_list<std::string_view> also) {
  // GANTRYD_DIR: where gantryd was started, set by gantryd for templates (${GANTRYD_DIR}).
  for (std::string_view k :
       {"PATH", "HOME", "LANG", "LANGUAGE", "TZ", "CUDA_VISIBLE_DEVICES", "GANTRYD_DIR"})
    if (key == k) return true;
  if (key.substr(0, 3) == "LC_") return true;
  for (std::string_view k : also)
    if (key == k) return true;
  return false;
}

std::string Errno(int e) { return std::strerror(e); }

// The supplementary groups of `pw` (its primary group included).
std::vector<gid_t> GroupsOf(const passwd& pw) {
  int n = 16;
  std::vector<gid_t> groups(static_cast<size_t>(n));
  while (::getgrouplist(pw.pw_name, pw.pw_gid, groups.data(), &n) < 0) {
    if (n <= static_cast<int>(groups.size())) n = static_cast<int>(groups.size()) * 2;
    groups.resize(static_cast<size_t>(n));
  }
  groups.resize(static_cast<size_t>(n));
  return groups;
}

// The first directory on the way to `dir` (its ancestors and itself) that `user` may not
// pass through (search permission), or "" when it can reach `dir`.
std::string FirstUnreachable(const std::filesystem::path& dir, const WorkloadUser& user) {
  std::filesystem::path at;
  for (const auto& part : dir) {
    at /= part;
    struct stat st {};
    if (::stat(at.c_str(), &st) != 0) return at.string();
    bool in_group = false;
    for (gid_t g : user.groups) in_group = in_group || g == st.st_gid;
    mode_t need = st.st_uid == user.uid               ? S_IXUSR
                  : in_group || st.st_gid == user.gid ? S_IXGRP
                                                      : S_IXOTH;
    if (!(st.st_mode & need)) return at.string();
  }
  return "";
}

}  // namespace

absl::StatusOr<WorkloadUser> LookUpWorkloadUser(const std::string& name) {
  if (name.empty()) return absl::InvalidArgumentError("the workload user is empty");
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  int rc = ::getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found);
  uid_t numeric = 0;
  auto [end, parse] = std::from_chars(name.data(), name.data() + name.size(), numeric);
  if (!found && parse == std::errc() && end == name.data() + name.size())
    rc = ::getpwuid_r(numeric, &pw, buf.data(), buf.size(), &found);
  if (!found)
    return absl::NotFoundError("no user " + name + " on this host" +
                               (rc != 0 ? " (" + Errno(rc) + ")" : ""));
  if (pw.pw_uid == 0)
    return absl::InvalidArgumentError("the workload user " + name +
                                      " is root: workloads must not run as root");
  WorkloadUser u;
  u.name = pw.pw_name;
  u.uid = pw.pw_uid;
  u.gid = pw.pw_gid;
  u.groups = GroupsOf(pw);
  u.home = pw.pw_dir ? pw.pw_dir : "/";
  return u;
}

std::map<std::string, std::string> ChildEnvironment(
    const std::map<std::string, std::string>& set, const WorkloadUser* user,
    std::initializer_list<std::string_view> also_inherit) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string_view kv(*e);
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos || !Inherited(kv.substr(0, eq), also_inherit)) continue;
    env[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
  }
  if (user) {
    env["HOME"] = user->home;
    env["USER"] = user->name;
    env["LOGNAME"] = user->name;
  }
  for (const auto& [k, v] : set) env[k] = v;
  return env;
}

std::vector<std::string> EnvStrings(const std::map<std::string, std::string>& env) {
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::string WorkloadDir(const Sandbox& sandbox, const std::string& state_dir) {
  if (sandbox.workload_root.empty()) return state_dir;
  return (std::filesystem::path(sandbox.workload_root) /
          std::filesystem::path(state_dir).filename())
      .string();
}

absl::StatusOr<std::string> PrepareWorkloadDir(const Sandbox& sandbox,
                                               const std::string& state_dir) {
  std::string dir = WorkloadDir(sandbox, state_dir);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return absl::FailedPreconditionError("cannot create the workload directory " + dir + ": " +
                                         ec.message());
  if (sandbox.workload_root.empty() || !sandbox.user) return dir;
  // O_NOFOLLOW|O_DIRECTORY: the workload owns what is inside the root, but the root is
  // gantryd's, so nothing but gantryd can have put a symlink here; checked all the same.
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return absl::FailedPreconditionError("cannot open the workload directory " + dir + ": " +
                                         Errno(errno));
  int rc = ::fchown(fd, sandbox.user->uid, sandbox.user->gid);
  int e = errno;
  if (rc == 0) rc = ::fchmod(fd, 0700), e = errno;
  ::close(fd);
  if (rc != 0)
    return absl::FailedPreconditionError("cannot give the workload directory " + dir + " to " +
                                         sandbox.user->name + ": " + Errno(e));
  return dir;
}

absl::StatusOr<Sandbox> SandboxForGantryd(const std::string& user, const std::string& workload_dir,
                                          const std::string& data_dir) {
  Sandbox sandbox;
  if (::geteuid() != 0) return sandbox;
  auto found = LookUpWorkloadUser(user);
  if (!found.ok() && absl::IsNotFound(found.status()) && user == kDefaultWorkloadUser)
    found = LookUpWorkloadUser("nobody");
  if (!found.ok()) return found.status();
  sandbox.user = *std::move(found);
  sandbox.workload_root = workload_dir;
  if (sandbox.workload_root.empty()) {
    std::filesystem::path data = std::filesystem::absolute(data_dir).lexically_normal();
    if (data.filename().empty()) data = data.parent_path();  // "DIR/"
    sandbox.workload_root = data.string() + ".workloads";
  }
  return sandbox;
}

absl::Status PrepareWorkloadRoot(const Sandbox& sandbox) {
  if (sandbox.workload_root.empty()) return absl::OkStatus();
  const std::string& root = sandbox.workload_root;
  std::error_code ec;
  std::filesystem::create_directories(root, ec);
  if (ec)
    return absl::FailedPreconditionError("cannot create the workload directory " + root + ": " +
                                         ec.message());
  struct stat st {};
  if (::lstat(root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return absl::FailedPreconditionError("the workload directory " + root + " is not a directory");
  if (st.st_uid != ::geteuid() && ::chown(root.c_str(), ::geteuid(), ::getegid()) != 0)
    return absl::FailedPreconditionError("cannot take ownership of " + root + ": " + Errno(errno));
  if (::chmod(root.c_str(), 0711) != 0)
    return absl::FailedPreconditionError("cannot set the mode of " + root + ": " + Errno(errno));
  if (!sandbox.user) return absl::OkStatus();
  std::string blocked =
      FirstUnreachable(std::filesystem::absolute(root).lexically_normal(), *sandbox.user);
  if (!blocked.empty())
    return absl::FailedPreconditionError(
        "the workload user " + sandbox.user->name + " cannot reach " + root + ": " + blocked +
        " is closed to it (choose a --workload-dir it can reach, e.g. under /var/lib)");
  return absl::OkStatus();
}

}  // namespace gantry::drivers
