#include "auth/ldap_directory.h"

#include <ldap.h>
#include <spdlog/spdlog.h>
#include <sys/time.h>

#include <algorithm>
#include <memory>

#include "auth/credentials.h"
#include "common/errors.h"
#include "common/status_macros.h"

namespace gantry::auth {
namespace {

// What a person is told when the directory cannot answer: no LDAP internals (the log has them).
constexpr char kUnreachable[] =
    "the organisation's directory (LDAP) cannot be reached right now, so the password cannot "
    "be checked; try again later, or tell an administrator";
// More groups than this for one user are not read (and a warning is logged).
constexpr int kMaxGroupsRead = 1000;

struct Unbind {
  void operator()(LDAP* ld) const { ldap_unbind_ext_s(ld, nullptr, nullptr); }
};
using Connection = std::unique_ptr<LDAP, Unbind>;
struct MsgFree {
  void operator()(LDAPMessage* m) const { ldap_msgfree(m); }
};
using Message = std::unique_ptr<LDAPMessage, MsgFree>;

absl::Status Unreachable(std::string_view what, int rc) {
  spdlog::warn("LDAP: {}: {}", what, ldap_err2string(rc));
  return absl::UnavailableError(kUnreachable);
}

bool UsesTls(const LdapOptions& o) { return o.start_tls || o.url.rfind("ldaps://", 0) == 0; }

timeval Timeval(std::chrono::seconds s) { return timeval{static_cast<time_t>(s.count()), 0}; }

// Per-connection options: LDAPv3, no referral chasing, timeouts, and TLS that checks the
// server's certificate (against ca_file when given).
absl::Status SetOptions(LDAP* ld, const LdapOptions& o) {
  int version = LDAP_VERSION3;
  ldap_set_option(ld, LDAP_OPT_PROTOCOL_VERSION, &version);
  ldap_set_option(ld, LDAP_OPT_REFERRALS, LDAP_OPT_OFF);
  timeval tv = Timeval(o.timeout);
  ldap_set_option(ld, LDAP_OPT_NETWORK_TIMEOUT, &tv);
  ldap_set_option(ld, LDAP_OPT_TIMEOUT, &tv);
  if (!UsesTls(o)) return absl::OkStatus();
  int demand = LDAP_OPT_X_TLS_DEMAND;
  ldap_set_option(ld, LDAP_OPT_X_TLS_REQUIRE_CERT, &demand);
  if (!o.ca_file.empty()) ldap_set_option(ld, LDAP_OPT_X_TLS_CACERTFILE, o.ca_file.c_str());
  int is_server = 0;
  if (int rc = ldap_set_option(ld, LDAP_OPT_X_TLS_NEWCTX, &is_server); rc != LDAP_OPT_SUCCESS)
    return Unreachable("TLS setup (--ldap-ca-file " + o.ca_file + ")", rc);
  return absl::OkStatus();
}

absl::StatusOr<Connection> Connect(const LdapOptions& o) {
  LDAP* raw = nullptr;
  int rc = ldap_initialize(&raw, o.url.c_str());
  if (rc != LDAP_SUCCESS || raw == nullptr) return Unreachable("--ldap-url " + o.url, rc);
  Connection ld(raw);
  RETURN_IF_ERROR(SetOptions(raw, o));
  if (o.start_tls)
    if (rc = ldap_start_tls_s(raw, nullptr, nullptr); rc != LDAP_SUCCESS)
      return Unreachable("StartTLS with " + o.url, rc);
  return ld;
}

int SimpleBind(LDAP* ld, const std::string& dn, std::string_view password) {
  berval cred;
  cred.bv_val = const_cast<char*>(password.data());
  cred.bv_len = password.size();
  return ldap_sasl_bind_s(ld, dn.c_str(), LDAP_SASL_SIMPLE, &cred, nullptr, nullptr, nullptr);
}

// A subtree search. `truncated`: more entries matched than `limit`.
absl::StatusOr<Message> Search(LDAP* ld, const std::string& base, const std::string& filter,
                               const std::vector<std::string>& attributes, int limit,
                               std::chrono::seconds timeout, bool* truncated) {
  std::vector<char*> attrs;
  for (const std::string& a : attributes) attrs.push_back(const_cast<char*>(a.c_str()));
  attrs.push_back(nullptr);
  timeval tv = Timeval(timeout);
  LDAPMessage* raw = nullptr;
  int rc = ldap_search_ext_s(ld, base.c_str(), LDAP_SCOPE_SUBTREE, filter.c_str(), attrs.data(), 0,
                             nullptr, nullptr, &tv, limit, &raw);
  Message res(raw);
  *truncated = rc == LDAP_SIZELIMIT_EXCEEDED;
  if (rc == LDAP_SUCCESS || rc == LDAP_SIZELIMIT_EXCEEDED || rc == LDAP_NO_SUCH_OBJECT) return res;
  return Unreachable("search of " + base + " with " + filter, rc);
}

std::vector<std::string> Values(LDAP* ld, LDAPMessage* entry, const std::string& attribute) {
  std::vector<std::string> out;
  berval** vals = ldap_get_values_len(ld, entry, attribute.c_str());
  if (vals == nullptr) return out;
  for (berval** v = vals; *v != nullptr; ++v) out.emplace_back((*v)->bv_val, (*v)->bv_len);
  ldap_value_free_len(vals);
  return out;
}

std::string FirstValue(LDAP* ld, LDAPMessage* entry, const std::string& attribute) {
  std::vector<std::string> v = Values(ld, entry, attribute);
  return v.empty() ? "" : v.front();
}

std::string Dn(LDAP* ld, LDAPMessage* entry) {
  char* dn = ldap_get_dn(ld, entry);
  std::string out = dn ? dn : "";
  ldap_memfree(dn);
  return out;
}

}  // namespace

LdapDirectory::LdapDirectory(LdapOptions options) : options_(std::move(options)) {}

std::string LdapDirectory::EscapeFilterValue(std::string_view value) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '*' || c == '(' || c == ')' || c == '\\' || c == '\0') {
      unsigned char u = static_cast<unsigned char>(c);
      out += '\\';
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    } else {
      out += c;
    }
  }
  return out;
}

std::string LdapDirectory::ExpandFilter(std::string_view filter, std::string_view user,
                                        std::string_view dn) {
  std::string out;
  for (size_t i = 0; i < filter.size();) {
    if (filter.substr(i, 6) == "{user}") {
      out += EscapeFilterValue(user);
      i += 6;
    } else if (filter.substr(i, 4) == "{dn}") {
      out += EscapeFilterValue(dn);
      i += 4;
    } else {
      out += filter[i++];
    }
  }
  return out;
}

namespace {

// A connection bound as the service account (anonymous when no bind DN is configured).
absl::StatusOr<Connection> ServiceConnection(const LdapOptions& o) {
  ASSIGN_OR_RETURN(Connection ld, Connect(o));
  if (o.bind_dn.empty()) return ld;
  if (int rc = SimpleBind(ld.get(), o.bind_dn, o.bind_password); rc != LDAP_SUCCESS)
    return Unreachable("bind as the service account " + o.bind_dn, rc);
  return ld;
}

// The one entry `user` names, with display name and email; nullopt for none or several.
absl::StatusOr<std::optional<DirectoryEntry>> FindUser(LDAP* ld, const LdapOptions& o,
                                                       std::string_view user) {
  std::vector<std::string> attrs = o.display_name_attributes;
  attrs.push_back(o.email_attribute);
  std::string filter = LdapDirectory::ExpandFilter(o.user_filter, user, "");
  bool truncated = false;
  ASSIGN_OR_RETURN(Message res, Search(ld, o.user_base, filter, attrs, 2, o.timeout, &truncated));
  int count = res ? ldap_count_entries(ld, res.get()) : 0;
  if (truncated || count > 1) {
    spdlog::warn("LDAP: a login name matches more than one entry under {}; refused", o.user_base);
    return std::nullopt;
  }
  LDAPMessage* e = count == 1 ? ldap_first_entry(ld, res.get()) : nullptr;
  if (e == nullptr) return std::nullopt;
  DirectoryEntry out;
  out.dn = Dn(ld, e);
  for (const std::string& a : o.display_name_attributes)
    if (out.display_name = FirstValue(ld, e, a); !out.display_name.empty()) break;
  out.email = FirstValue(ld, e, o.email_attribute);
  if (out.dn.empty()) return std::nullopt;
  return out;
}

absl::Status ReadGroups(LDAP* ld, const LdapOptions& o, std::string_view user,
                        DirectoryEntry& entry) {
  if (o.group_base.empty()) return absl::OkStatus();
  std::string filter = LdapDirectory::ExpandFilter(o.group_filter, user, entry.dn);
  bool truncated = false;
  ASSIGN_OR_RETURN(Message res, Search(ld, o.group_base, filter, {o.group_name_attribute},
                                       kMaxGroupsRead, o.timeout, &truncated));
  if (truncated)
    spdlog::warn("LDAP: {} is in more than {} groups; read the first", entry.dn, kMaxGroupsRead);
  for (LDAPMessage* e = res ? ldap_first_entry(ld, res.get()) : nullptr; e != nullptr;
       e = ldap_next_entry(ld, e))
    if (std::string name = FirstValue(ld, e, o.group_name_attribute); !name.empty())
      entry.groups.push_back(std::move(name));
  std::sort(entry.groups.begin(), entry.groups.end());
  entry.groups.erase(std::unique(entry.groups.begin(), entry.groups.end()), entry.groups.end());
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DirectoryEntry> LdapDirectory::Authenticate(std::string_view user,
                                                           std::string_view password) const {
  // An empty password would make the bind below an anonymous one, which succeeds.
  if (user.empty() || password.empty()) return UnauthorizedError(kInvalidLogin);
  ASSIGN_OR_RETURN(Connection service, ServiceConnection(options_));
  ASSIGN_OR_RETURN(std::optional<DirectoryEntry> found, FindUser(service.get(), options_, user));
  if (!found) return UnauthorizedError(kInvalidLogin);
  // The user's own bind on a connection of its own: the service connection stays bound as
  // the service account for the group search.
  ASSIGN_OR_RETURN(Connection check, Connect(options_));
  int rc = SimpleBind(check.get(), found->dn, password);
  if (rc == LDAP_SERVER_DOWN || rc == LDAP_CONNECT_ERROR || rc == LDAP_TIMEOUT ||
      rc == LDAP_UNAVAILABLE || rc == LDAP_BUSY)
    return Unreachable("bind as " + found->dn, rc);
  // Wrong password, and also a locked or expired account (unwilling to perform, ...).
  if (rc != LDAP_SUCCESS) return UnauthorizedError(kInvalidLogin);
  RETURN_IF_ERROR(ReadGroups(service.get(), options_, user, *found));
  return *std::move(found);
}

absl::StatusOr<std::optional<DirectoryEntry>> LdapDirectory::Lookup(std::string_view user) const {
  if (user.empty()) return std::nullopt;
  ASSIGN_OR_RETURN(Connection service, ServiceConnection(options_));
  ASSIGN_OR_RETURN(std::optional<DirectoryEntry> found, FindUser(service.get(), options_, user));
  if (found) RETURN_IF_ERROR(ReadGroups(service.get(), options_, user, *found));
  return found;
}

}  // namespace gantry::auth
