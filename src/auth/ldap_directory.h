// LdapDirectory: password checks and group lookups against the organisation's LDAP directory
// (OpenLDAP, Active Directory), through libldap's C API. gantryd --ldap-url (issue 21).
//
// A login is search-then-bind: on one connection gantryd binds as its service account
// (--ldap-bind-dn, password from --ldap-bind-password-file) and searches --ldap-user-base
// with --ldap-user-filter, "{user}" replaced by the login name escaped as RFC 4515 says;
// exactly one entry must match. Then, on a second connection, it binds as that entry's DN
// with the password the person typed: the directory checks the password, gantryd never sees
// a hash. An empty password is refused before any bind (LDAP treats a simple bind with an
// empty password as an anonymous bind, which "succeeds"). The groups are then read on the
// service connection: --ldap-group-base searched with --ldap-group-filter, "{dn}" replaced
// by the user's escaped DN and "{user}" by the escaped login name; a group's name is its cn.
//
// TLS: ldaps:// URLs, or StartTLS on ldap:// (--ldap-start-tls); the server's certificate is
// checked against --ldap-ca-file (else the system's CAs) and its host name, and a connection
// whose TLS cannot be set up is not used. Neither password is ever logged or put in a Status.
//
// Errors: UNAUTHENTICATED when the user is not found, is found more than once, or the
// password is wrong (one message for all three); UNAVAILABLE, with a message for a person
// and no LDAP internals, when the directory cannot be reached or refuses the service account
// (the details go to gantryd's log).
//
// Thread-safety: safe from any thread; every call opens its own connections and keeps no
// state between calls.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace gantry::auth {

struct LdapOptions {
  std::string url;            // ldap://host:389 or ldaps://host:636
  std::string bind_dn;        // the service account; "" binds anonymously for the search
  std::string bind_password;  // read from --ldap-bind-password-file
  std::string user_base;
  std::string user_filter = "(uid={user})";
  std::string group_base;  // "" reads no groups
  std::string group_filter = "(member={dn})";
  bool start_tls = false;
  std::string ca_file;              // PEM CA bundle for the server's certificate; "" = system CAs
  std::chrono::seconds timeout{5};  // connect, and each operation
  // Attributes read from the user's entry (display name: the first of these present).
  std::vector<std::string> display_name_attributes{"displayName", "cn"};
  std::string email_attribute = "mail";
  std::string group_name_attribute = "cn";
};

// What the directory says about one user.
struct DirectoryEntry {
  std::string dn;
  std::string display_name;
  std::string email;
  std::vector<std::string> groups;  // the groups' names (cn), sorted
};

class LdapDirectory {
 public:
  explicit LdapDirectory(LdapOptions options);

  // Checks `password` for login name `user` (search-then-bind, above) and returns the entry
  // with its groups.
  absl::StatusOr<DirectoryEntry> Authenticate(std::string_view user,
                                              std::string_view password) const;
  // The entry of `user` without a password check (the periodic re-check of sessions and
  // tokens); nullopt when the directory no longer has exactly one such user.
  absl::StatusOr<std::optional<DirectoryEntry>> Lookup(std::string_view user) const;

  // `value` escaped for an LDAP search filter (RFC 4515: `*`, `(`, `)`, `\` and NUL as \XX).
  static std::string EscapeFilterValue(std::string_view value);
  // `filter` with every "{user}" and "{dn}" replaced by the escaped values.
  static std::string ExpandFilter(std::string_view filter, std::string_view user,
                                  std::string_view dn);

 private:
  const LdapOptions options_;
};

}  // namespace gantry::auth
