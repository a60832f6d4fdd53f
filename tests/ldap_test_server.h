// A throwaway OpenLDAP directory for tests (LdapDirectory's unit test, the LDAP login tests
// against gantryd): a slapd.conf and an mdb database in a temporary directory, loaded with
// slapadd from the LDIF below, and slapd itself on 127.0.0.1 and two free ports (ldap://, which
// offers StartTLS, and ldaps://, with a self-signed certificate for 127.0.0.1). Modelled on
// store/postgres/pg_test_server.h.
//
// The directory (base dc=gantry,dc=test):
//   ou=services  cn=gantry (the service account gantryd binds as; password kServicePassword)
//   ou=people    uid=alice, uid=bob, uid=mallory (inetOrgPerson; password "<uid>-password-1")
//   ou=groups    cn=ml-researchers (alice, bob), cn=gantry-admins (bob),
//                cn=vision-team (alice, mallory); mallory is in neither of the others
// Only the service account may search; anyone may bind (userPassword: auth only).
//
// One server per LdapTestServer, so that a test may change the directory (Delete,
// RemoveMember) or stop it (Stop, Start) without affecting others. The server gets
// PR_SET_PDEATHSIG; the destructor stops it and removes the directory.
//
// Thread-safety: for the test's thread (start it from the thread that stays alive: the
// parent-death signal follows the thread that forked).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace gantry::testing {

class LdapTestServer {
 public:
  static constexpr char kBase[] = "dc=gantry,dc=test";
  static constexpr char kServiceDn[] = "cn=gantry,ou=services,dc=gantry,dc=test";
  static constexpr char kServicePassword[] = "service-secret-1";
  static constexpr char kPeople[] = "ou=people,dc=gantry,dc=test";
  static constexpr char kGroups[] = "ou=groups,dc=gantry,dc=test";

  // A running server with the directory above; UNAVAILABLE (with the reason and slapd's
  // output) when slapd is not installed or does not start.
  static absl::StatusOr<std::unique_ptr<LdapTestServer>> Create();
  ~LdapTestServer();

  std::string url() const;      // ldap://127.0.0.1:PORT (StartTLS offered)
  std::string tls_url() const;  // ldaps://127.0.0.1:PORT2
  // The PEM certificate slapd serves TLS with (self-signed for 127.0.0.1): the CA to trust.
  std::string ca_file() const;
  // The password of `uid` in the directory ("alice" -> "alice-password-1").
  static std::string PasswordOf(const std::string& uid) { return uid + "-password-1"; }
  static std::string UserDn(const std::string& uid) { return "uid=" + uid + "," + kPeople; }

  // Changes, as the directory's root DN: removes an entry; removes a member from a group.
  absl::Status Delete(const std::string& dn);
  absl::Status RemoveMember(const std::string& group, const std::string& member_dn);

  // Stops slapd (the directory is down) and starts it again on the same port and data.
  absl::Status Stop();
  absl::Status Start();

 private:
  LdapTestServer() = default;
  absl::Status Prepare();

  std::string dir_;
  int port_ = 0;
  int tls_port_ = 0;
  int pid_ = -1;
};

// True when the LDAP tests must run rather than skip: GANTRY_CI=1 or CI=true.
bool LdapRequired();

}  // namespace gantry::testing
