#include "ldap_test_server.h"

#include <fcntl.h>
#include <ldap.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "common/test_process.h"
#include "common/tls_files.h"

namespace gantry::testing {
namespace {

namespace fs = std::filesystem;

constexpr char kRootDn[] = "cn=admin,dc=gantry,dc=test";
constexpr char kRootPassword[] = "root-secret-1";
constexpr auto kStartDeadline = std::chrono::seconds(30);

// Where Debian's slapd keeps its backends (dpkg -L slapd | grep back_mdb).
std::string ModuleDir() {
  for (const char* d : {"/usr/lib/ldap", "/usr/lib/x86_64-linux-gnu/ldap",
                        "/usr/lib/aarch64-linux-gnu/ldap", "/usr/libexec/openldap"})
    if (fs::exists(fs::path(d) / "back_mdb.so") || fs::exists(fs::path(d) / "back_mdb.la"))
      return d;
  return "";
}

std::string Config(const std::string& dir, const std::string& modules) {
  std::string conf;
  for (const char* schema : {"core", "cosine", "inetorgperson", "nis"})
    conf += "include /etc/ldap/schema/" + std::string(schema) + ".schema\n";
  conf += "modulepath " + modules + "\nmoduleload back_mdb\n";
  conf += "pidfile " + dir + "/slapd.pid\nargsfile " + dir + "/slapd.args\n";
  conf += "TLSCertificateFile " + dir + "/tls.crt\nTLSCertificateKeyFile " + dir + "/tls.key\n";
  conf += "database mdb\nmaxsize 10485760\nsuffix \"dc=gantry,dc=test\"\n";
  conf += "rootdn \"" + std::string(kRootDn) + "\"\nrootpw " + kRootPassword + "\n";
  conf += "directory " + dir + "/db\n";
  conf += "access to attrs=userPassword by self write by anonymous auth by * none\n";
  conf += "access to * by dn.exact=\"" + std::string(LdapTestServer::kServiceDn) +
          "\" read by self read by * none\n";
  return conf;
}

std::string Person(const std::string& uid, const std::string& name) {
  return "dn: " + LdapTestServer::UserDn(uid) + "\nobjectClass: inetOrgPerson\nuid: " + uid +
         "\ncn: " + name + "\nsn: " + uid + "\ndisplayName: " + name + "\nmail: " + uid +
         "@gantry.test\nuserPassword: " + LdapTestServer::PasswordOf(uid) + "\n\n";
}

std::string Group(const std::string& cn, const std::vector<std::string>& members) {
  std::string out = "dn: cn=" + cn + "," + LdapTestServer::kGroups +
                    "\nobjectClass: groupOfNames\ncn: " + cn + "\n";
  for (const auto& m : members) out += "member: " + LdapTestServer::UserDn(m) + "\n";
  return out + "\n";
}

std::string Directory() {
  std::string ldif =
      "dn: dc=gantry,dc=test\nobjectClass: dcObject\nobjectClass: organization\ndc: gantry\n"
      "o: Gantry test\n\n";
  for (const char* ou : {"services", "people", "groups"})
    ldif += "dn: ou=" + std::string(ou) +
            ",dc=gantry,dc=test\nobjectClass: organizationalUnit\n"
            "ou: " +
            ou + "\n\n";
  ldif += "dn: " + std::string(LdapTestServer::kServiceDn) +
          "\nobjectClass: person\ncn: gantry\nsn: gantry\nuserPassword: " +
          LdapTestServer::kServicePassword + "\n\n";
  ldif += Person("alice", "Alice Liddell") + Person("bob", "Bob Builder") +
          Person("mallory", "Mallory Mole");
  ldif += Group("ml-researchers", {"alice", "bob"}) + Group("gantry-admins", {"bob"}) +
          Group("vision-team", {"alice", "mallory"});
  return ldif;
}

// A connection bound as the root DN, for the changes tests make.
absl::StatusOr<LDAP*> RootConnection(const std::string& url) {
  LDAP* ld = nullptr;
  if (ldap_initialize(&ld, url.c_str()) != LDAP_SUCCESS)
    return absl::InternalError("ldap_initialize");
  int version = LDAP_VERSION3;
  ldap_set_option(ld, LDAP_OPT_PROTOCOL_VERSION, &version);
  berval cred{static_cast<ber_len_t>(std::strlen(kRootPassword)), const_cast<char*>(kRootPassword)};
  int rc = ldap_sasl_bind_s(ld, kRootDn, LDAP_SASL_SIMPLE, &cred, nullptr, nullptr, nullptr);
  if (rc != LDAP_SUCCESS) {
    ldap_unbind_ext_s(ld, nullptr, nullptr);
    return absl::InternalError(std::string("root bind: ") + ldap_err2string(rc));
  }
  return ld;
}

}  // namespace

bool LdapRequired() {
  const char* gantry_ci = std::getenv("GANTRY_CI");
  const char* ci = std::getenv("CI");
  return (gantry_ci && std::string(gantry_ci) == "1") || (ci && std::string(ci) == "true");
}

absl::StatusOr<std::unique_ptr<LdapTestServer>> LdapTestServer::Create() {
  std::unique_ptr<LdapTestServer> s(new LdapTestServer());
  if (absl::Status st = s->Prepare(); !st.ok()) return st;
  if (absl::Status st = s->Start(); !st.ok()) return st;
  return s;
}

absl::Status LdapTestServer::Prepare() {
  if (!fs::exists("/usr/sbin/slapd") || !fs::exists("/usr/sbin/slapadd"))
    return absl::UnavailableError("slapd is not installed (Debian: slapd ldap-utils)");
  std::string modules = ModuleDir();
  if (modules.empty()) return absl::UnavailableError("slapd's back_mdb module not found");
  dir_ = MakeTempDir("gantry-ldap");
  if (dir_.empty()) return absl::UnavailableError("mkdtemp: " + std::string(std::strerror(errno)));
  fs::create_directories(dir_ + "/db");
  std::ofstream(dir_ + "/slapd.conf") << Config(dir_, modules);
  std::ofstream(dir_ + "/directory.ldif") << Directory();
  pid_t add =
      SpawnLogged({"/usr/sbin/slapadd", "-f", dir_ + "/slapd.conf", "-l", dir_ + "/directory.ldif"},
                  dir_ + "/slapadd.log");
  if (add < 0 || WaitExit(add) != 0)
    return absl::UnavailableError("slapadd failed:\n" + ReadFileOrEmpty(dir_ + "/slapadd.log"));
  if (absl::Status tls = EnsureSelfSignedCertificate(ca_file(), dir_ + "/tls.key", {"127.0.0.1"});
      !tls.ok())
    return tls;
  port_ = FreeLoopbackPort();
  tls_port_ = FreeLoopbackPort();
  if (port_ == 0 || tls_port_ == 0 || tls_port_ == port_)
    return absl::UnavailableError("no free ports");
  return absl::OkStatus();
}

std::string LdapTestServer::url() const { return "ldap://127.0.0.1:" + std::to_string(port_); }
std::string LdapTestServer::tls_url() const {
  return "ldaps://127.0.0.1:" + std::to_string(tls_port_);
}
std::string LdapTestServer::ca_file() const { return dir_ + "/tls.crt"; }

absl::Status LdapTestServer::Start() {
  std::string log = dir_ + "/slapd.log";
  pid_ = SpawnLogged({"/usr/sbin/slapd", "-h", url() + "/ " + tls_url() + "/", "-f",
                      dir_ + "/slapd.conf", "-d", "256"},
                     log, {.parent_death_signal = SIGTERM, .env = {}});
  if (pid_ < 0) return absl::UnavailableError("cannot start slapd");
  return WaitUntilServing(
      &pid_, [&] { return AcceptsOnLoopback(port_) && AcceptsOnLoopback(tls_port_); }, "slapd", log,
      kStartDeadline);
}

absl::Status LdapTestServer::Stop() {
  if (pid_ < 0) return absl::OkStatus();
  ::kill(pid_, SIGTERM);
  int rc = WaitExit(pid_);
  pid_ = -1;
  // Any exit after SIGTERM is a stop: slapd 2.5 stopped right after it began
  // serving can still be finishing its start-up and then exits 1 ("listener
  // initialization failed") although it shut down as asked.
  if (rc < 0)
    return absl::InternalError("slapd could not be waited for:\n" +
                               ReadFileOrEmpty(dir_ + "/slapd.log"));
  return absl::OkStatus();
}

absl::Status LdapTestServer::Delete(const std::string& dn) {
  auto ld = RootConnection(url());
  if (!ld.ok()) return ld.status();
  int rc = ldap_delete_ext_s(*ld, dn.c_str(), nullptr, nullptr);
  ldap_unbind_ext_s(*ld, nullptr, nullptr);
  if (rc != LDAP_SUCCESS) return absl::InternalError("delete " + dn + ": " + ldap_err2string(rc));
  return absl::OkStatus();
}

absl::Status LdapTestServer::RemoveMember(const std::string& group, const std::string& member_dn) {
  auto ld = RootConnection(url());
  if (!ld.ok()) return ld.status();
  std::string dn = "cn=" + group + "," + kGroups;
  char attr[] = "member";
  char* values[] = {const_cast<char*>(member_dn.c_str()), nullptr};
  LDAPMod mod{};
  mod.mod_op = LDAP_MOD_DELETE;
  mod.mod_type = attr;
  mod.mod_values = values;
  LDAPMod* mods[] = {&mod, nullptr};
  int rc = ldap_modify_ext_s(*ld, dn.c_str(), mods, nullptr, nullptr);
  ldap_unbind_ext_s(*ld, nullptr, nullptr);
  if (rc != LDAP_SUCCESS) return absl::InternalError("modify " + dn + ": " + ldap_err2string(rc));
  return absl::OkStatus();
}

LdapTestServer::~LdapTestServer() {
  (void)Stop();
  std::error_code ec;
  if (!dir_.empty()) fs::remove_all(dir_, ec);
}

}  // namespace gantry::testing
