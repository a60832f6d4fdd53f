#include "auth/authenticator.h"

#include "auth/credentials.h"
#include "common/errors.h"
#include "common/ids.h"
#include "common/status_macros.h"
#include "model/codec.h"

namespace gantry::auth {

std::string CookieValue(std::string_view header, std::string_view name) {
  while (!header.empty()) {
    size_t end = header.find(';');
    std::string_view part = header.substr(0, end);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    size_t eq = part.find('=');
    if (eq != std::string_view::npos && part.substr(0, eq) == name)
      return std::string(part.substr(eq + 1));
    if (end == std::string_view::npos) break;
    header.remove_prefix(end + 1);
  }
  return "";
}

namespace {

namespace json = boost::json;
using model::FindPath;
using model::GetString;

constexpr char kTokenPrefix[] = "gnt_";
constexpr char kSessionPrefix[] = "gss_";
constexpr char kTokenRecord[] = "tok-";
constexpr char kSessionRecord[] = "ses-";
// A session's lastSeen and a token's lastUsed are written at most this often (idle expiry is
// coarser than this).
constexpr std::chrono::seconds kTouchEvery{60};

json::object Record(const char* kind, const std::string& name, json::object spec) {
  return json::object{{"kind", kind},
                      {"metadata", json::object{{"name", name}, {"namespace", ""}}},
                      {"spec", std::move(spec)}};
}

// "10.0.0.1:5555" -> "10.0.0.1" (the limiter counts per address, not per connection).
std::string Host(std::string_view source) {
  size_t colon = source.rfind(':');
  return std::string(colon == std::string_view::npos ? source : source.substr(0, colon));
}

// `at` (RFC 3339, "" for never) has passed.
bool ExpiredAt(const std::string& at, std::chrono::system_clock::time_point now) {
  if (at.empty()) return false;
  auto t = ParseTimestamp(at);
  return !t || *t <= now;
}

bool Expired(const json::object& spec, const char* field,
             std::chrono::system_clock::time_point now) {
  return ExpiredAt(GetString(spec, field), now);
}

const json::object& Spec(const json::object& obj) {
  static const json::object kEmpty;
  const json::value* v = obj.if_contains("spec");
  return v && v->is_object() ? v->get_object() : kEmpty;
}

// The internal records (tokens, sessions) of `user`.
store::ListOptions OfUser(const char* kind, const std::string& user) {
  store::ListOptions opts;
  opts.kind = kind;
  opts.ns = "";
  opts.fields = {{"spec.user", true, user}};
  return opts;
}

// The RoleBindings of every project whose `field` (spec.user, spec.group) is `value`.
store::ListOptions BindingsWhere(const char* field, const std::string& value) {
  store::ListOptions opts;
  opts.kind = "RoleBinding";
  opts.ns = std::nullopt;
  opts.fields = {{field, true, value}};
  return opts;
}

// The project role of `binding`, into `s`; several bindings in one project: the strongest wins.
void AddBoundRole(const json::object& binding, Subject& s) {
  Role r = RoleFromName(GetString(binding, "spec.role"));
  if (!IsProjectRole(r)) return;
  Role& held = s.projects[GetString(binding, "metadata.namespace")];
  if (held == Role::kNone || static_cast<int>(r) > static_cast<int>(held)) held = r;
}

json::object TokenView(const json::object& record) {
  const json::object& spec = Spec(record);
  return json::object{
      {"apiVersion", "paas.gantry.dev/v1"},
      {"kind", "Token"},
      {"metadata", json::object{{"name", GetString(record, "metadata.name")},
                                {"creationTimestamp", GetString(spec, "createdAt")}}},
      {"spec", json::object{{"user", GetString(spec, "user")},
                            {"description", GetString(spec, "description")},
                            {"expiresAt", GetString(spec, "expiresAt")}}}};
}

}  // namespace

Authenticator::Authenticator(store::Store& store, const Clock& clock, AuthOptions options)
    : store_(store),
      clock_(clock),
      options_(std::move(options)),
      bootstrap_hash_(options_.bootstrap_token.size() >= 16 ? HashSecret(options_.bootstrap_token)
                                                            : "") {}

std::string Authenticator::Now() const { return FormatRfc3339(clock_.Now()); }

absl::StatusOr<Identity> Authenticator::Authenticate(std::string_view authorization,
                                                     std::string_view cookie_header) {
  return Resolve(authorization, cookie_header, /*touch=*/true);
}

absl::StatusOr<Identity> Authenticator::Recheck(std::string_view authorization,
                                                std::string_view cookie_header) {
  return Resolve(authorization, cookie_header, /*touch=*/false);
}

absl::StatusOr<Identity> Authenticator::Resolve(std::string_view authorization,
                                                std::string_view cookie_header, bool touch) {
  if (!authorization.empty()) {
    constexpr std::string_view kBearer = "Bearer ";
    if (authorization.size() <= kBearer.size() ||
        !std::equal(kBearer.begin(), kBearer.end(), authorization.begin(),
                    [](char a, char b) { return std::tolower(a) == std::tolower(b); }))
      return UnauthorizedError("the Authorization header must be \"Bearer <token>\"");
    std::string_view token = authorization.substr(kBearer.size());
    while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
    while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
    return FromToken(token, touch);
  }
  std::string session = CookieValue(cookie_header, kSessionCookie);
  if (!session.empty()) return FromSession(session, touch);
  return UnauthorizedError(
      "authentication required: send \"Authorization: Bearer <token>\" (gantry login, gantry "
      "tokens create) or log in at /auth/login");
}

absl::StatusOr<Identity> Authenticator::FromToken(std::string_view token, bool touch) {
  if (token.empty() || token.size() > 512)
    return UnauthorizedError("the bearer token is not valid");
  std::string hash = HashSecret(token);
  if (!bootstrap_hash_.empty() && HashesEqual(hash, bootstrap_hash_)) {
    Identity id;
    id.subject.user = kBootstrapUser;
    id.subject.org_role = Role::kOrgAdmin;
    return id;
  }
  std::optional<CachedToken> cached;
  uint64_t generation;
  {
    std::lock_guard lock(cache_mu_);
    generation = generation_;
    if (auto it = tokens_.find(hash); it != tokens_.end()) cached = it->second;
  }
  if (!cached) {
    auto record = store_.Get(kApiToken, "", RecordName(kTokenRecord, hash));
    if (!record.ok()) {
      if (absl::IsNotFound(record.status()))
        return UnauthorizedError("the bearer token is not valid (unknown or revoked)");
      return record.status();
    }
    const json::object& spec = Spec(*record);
    if (!HashesEqual(GetString(spec, "hash"), hash))
      return UnauthorizedError("the bearer token is not valid (unknown or revoked)");
    cached = CachedToken{GetString(spec, "user"), GetString(spec, "expiresAt"),
                         ParseTimestamp(GetString(spec, "lastUsed"))
                             .value_or(std::chrono::system_clock::time_point{})};
    std::lock_guard lock(cache_mu_);
    if (generation == generation_) {
      if (tokens_.size() >= kMaxCached) tokens_.clear();
      tokens_[hash] = *cached;
    }
  }
  auto now = clock_.Now();
  if (ExpiredAt(cached->expires_at, now))
    return UnauthorizedError("the bearer token expired at " + cached->expires_at);
  Identity id;
  ASSIGN_OR_RETURN(id.subject, SubjectFor(cached->user));
  if (touch && cached->last_used + kTouchEvery <= now) TouchToken(hash, now);
  return id;
}

void Authenticator::TouchToken(const std::string& hash, std::chrono::system_clock::time_point now) {
  {
    // Concurrent requests with one token: the first one that finds it due writes.
    std::lock_guard lock(cache_mu_);
    if (auto it = tokens_.find(hash); it != tokens_.end()) {
      if (it->second.last_used + kTouchEvery > now) return;
      it->second.last_used = now;
    }
  }
  auto record = store_.Get(kApiToken, "", RecordName(kTokenRecord, hash));
  if (!record.ok()) return;  // revoked meanwhile
  json::object touched = *record;
  touched["spec"].as_object()["lastUsed"] = FormatRfc3339(now);
  int64_t rv = std::stoll(GetString(*record, "metadata.resourceVersion", "0"));
  // A concurrent touch (another replica) may win; either way the use is recorded.
  (void)store_.Commit(
      {store::Write{store::Write::Op::kUpdate, kApiToken, std::move(touched), rv, 0}},
      store::Durability::kRelaxed);
}

absl::StatusOr<Identity> Authenticator::FromSession(std::string_view secret, bool touch) {
  constexpr char kLoginAgain[] = "; log in again";
  if (secret.size() > 512)
    return UnauthorizedError("the session is not valid" + std::string(kLoginAgain));
  std::string hash = HashSecret(secret);
  std::string name = RecordName(kSessionRecord, hash);
  auto record = store_.Get(kSession, "", name);
  if (!record.ok()) {
    if (absl::IsNotFound(record.status()))
      return UnauthorizedError("the session ended (logged out or expired)" +
                               std::string(kLoginAgain));
    return record.status();
  }
  const json::object& spec = Spec(*record);
  if (!HashesEqual(GetString(spec, "hash"), hash))
    return UnauthorizedError("the session is not valid" + std::string(kLoginAgain));
  auto now = clock_.Now();
  auto last_seen = ParseTimestamp(GetString(spec, "lastSeen"));
  bool idle = !last_seen || *last_seen + options_.session_idle <= now;
  if (idle || Expired(spec, "expiresAt", now)) {
    // Best effort: an expired session is removed on first sight.
    (void)store_.Commit({store::Write{store::Write::Op::kDelete, kSession, *record, 0, 0}},
                        store::Durability::kRelaxed);
    return UnauthorizedError(
        std::string(idle ? "the session expired after inactivity" : "the session expired") +
        kLoginAgain);
  }
  Identity id;
  ASSIGN_OR_RETURN(id.subject, SubjectFor(GetString(spec, "user")));
  id.via_session = true;
  id.session = name;
  id.csrf = GetString(spec, "csrf");
  if (touch && *last_seen + kTouchEvery <= now) {
    json::object touched = *record;
    touched["spec"].as_object()["lastSeen"] = FormatRfc3339(now);
    int64_t rv = std::stoll(GetString(*record, "metadata.resourceVersion", "0"));
    // A concurrent touch may win; either way the session was seen.
    (void)store_.Commit(
        {store::Write{store::Write::Op::kUpdate, kSession, std::move(touched), rv, 0}},
        store::Durability::kRelaxed);
  }
  return id;
}

void Authenticator::OnCommit(const std::vector<store::Event>& events) {
  bool identity_changed = false;
  std::lock_guard lock(cache_mu_);
  for (const auto& e : events) {
    if (e.kind == "User") directory_due_.erase(e.name);
    // A token's only update is its lastUsed (TouchToken): it changes nobody's access.
    const bool token_changed = e.kind == kApiToken && e.type != "MODIFIED";
    identity_changed = identity_changed || e.kind == "User" || e.kind == "RoleBinding" ||
                       token_changed || e.kind == kUserCredential;
  }
  if (!identity_changed) return;
  ++generation_;
  tokens_.clear();
  subjects_.clear();
}

absl::StatusOr<Subject> Authenticator::SubjectFor(const std::string& user) {
  RETURN_IF_ERROR(RecheckDirectory(user));
  uint64_t generation;
  {
    std::lock_guard lock(cache_mu_);
    generation = generation_;
    if (auto it = subjects_.find(user); it != subjects_.end()) return it->second;
  }
  ASSIGN_OR_RETURN(Subject s, ReadSubject(user));
  std::lock_guard lock(cache_mu_);
  if (generation == generation_) {
    if (subjects_.size() >= kMaxCached) subjects_.clear();
    subjects_[user] = s;
  }
  return s;
}

absl::StatusOr<Subject> Authenticator::ReadSubject(const std::string& user) {
  auto obj = store_.Get("User", "", user);
  if (!obj.ok()) {
    if (absl::IsNotFound(obj.status()))
      return UnauthorizedError("user \"" + user + "\" no longer exists");
    return obj.status();
  }
  const json::object& spec = Spec(*obj);
  if (const json::value* d = spec.if_contains("disabled"); d && d->is_bool() && d->get_bool())
    return UnauthorizedError("user \"" + user + "\" is disabled");
  // A directory user the last re-check found gone (or outside the allowed group).
  const bool directory_user =
      GetString(spec, "source") == kSourceLdap || GetString(spec, "source") == kSourceOidc;
  if (std::string why = GetString(*obj, "status.directoryRefusal"); directory_user && !why.empty())
    return UnauthorizedError(why);
  Subject s;
  s.user = user;
  Role org = RoleFromName(GetString(spec, "orgRole"));
  s.org_role = IsOrgRole(org) ? org : Role::kNone;
  ASSIGN_OR_RETURN(auto bindings, store_.List(BindingsWhere("spec.user", user)));
  for (const auto& b : bindings.items) AddBoundRole(b, s);
  if (directory_user) {
    std::vector<std::string> groups;
    if (const json::value* g = FindPath(*obj, "status.groups"); g && g->is_array())
      for (const json::value& v : g->get_array())
        if (v.is_string() && !v.get_string().empty()) groups.emplace_back(v.get_string());
    RETURN_IF_ERROR(AddGroupRoles(groups, s));
  }
  return s;
}

absl::Status Authenticator::AddGroupRoles(const std::vector<std::string>& groups, Subject& s) {
  for (const std::string& group : groups) {
    ASSIGN_OR_RETURN(auto bindings, store_.List(BindingsWhere("spec.group", group)));
    for (const auto& b : bindings.items) AddBoundRole(b, s);
  }
  return absl::OkStatus();
}

absl::Status Authenticator::CheckLimiter(const std::string& key, int limit) {
  std::lock_guard lock(mu_);
  auto it = failures_.find(key);
  if (it == failures_.end()) return absl::OkStatus();
  auto now = clock_.Now();
  auto& q = it->second;
  while (!q.empty() && q.front() + options_.login_window <= now) q.pop_front();
  if (q.empty()) {
    failures_.erase(it);
    return absl::OkStatus();
  }
  if (static_cast<int>(q.size()) < limit) return absl::OkStatus();
  auto wait =
      std::chrono::duration_cast<std::chrono::seconds>(q.front() + options_.login_window - now);
  return TooManyRequestsError("too many failed logins; try again in " +
                              std::to_string(std::max<int64_t>(1, wait.count())) + " seconds");
}

void Authenticator::RecordFailure(const std::string& key, int limit) {
  std::lock_guard lock(mu_);
  auto& q = failures_[key];
  q.push_back(clock_.Now());
  while (static_cast<int>(q.size()) > limit) q.pop_front();
  // Bound the limiter's memory: forget the oldest keys past a generous size.
  if (failures_.size() > 100000) failures_.erase(failures_.begin());
}

absl::StatusOr<Subject> Authenticator::CheckPassword(std::string_view user,
                                                     std::string_view password,
                                                     std::string_view source) {
  // Failures count per (user, address) and per address, never per user alone: guessing
  // alice's password from one address must not lock alice out from hers.
  std::string addr = Host(source);
  std::string pair_key = "pair:" + addr + "|" + std::string(user.substr(0, 256));
  std::string addr_key = "addr:" + addr;
  RETURN_IF_ERROR(CheckLimiter(pair_key, options_.login_failures));
  RETURN_IF_ERROR(CheckLimiter(addr_key, options_.login_address_failures));
  std::string hash;
  if (!user.empty() && user.size() <= 253) {
    auto cred = store_.Get(kUserCredential, "", std::string(user));
    if (cred.ok())
      hash = GetString(Spec(*cred), "passwordHash");
    else if (!absl::IsNotFound(cred.status()))
      return cred.status();
    // No local password: the directory decides (a local password always wins: break-glass).
    if (hash.empty() && options_.directory != nullptr)
      return DirectoryLogin(user, password, pair_key, addr_key);
  }
  if (hash.empty() || !VerifyPassword(password, hash)) {
    if (hash.empty()) {
      // Spend the same time as a real check, so timing does not tell which users exist.
      static const std::string kDummy = *HashPassword("not-a-real-password");
      (void)VerifyPassword(password, kDummy);
    }
    RecordFailure(pair_key, options_.login_failures);
    RecordFailure(addr_key, options_.login_address_failures);
    return UnauthorizedError(kInvalidLogin);
  }
  ASSIGN_OR_RETURN(Subject subject, SubjectFor(std::string(user)));
  {
    std::lock_guard lock(mu_);
    failures_.erase(pair_key);
  }
  return subject;
}

absl::StatusOr<LoginResult> Authenticator::Login(std::string_view user, std::string_view password,
                                                 std::string_view source) {
  ASSIGN_OR_RETURN(Subject subject, CheckPassword(user, password, source));
  return OpenSession(std::move(subject), source);
}

absl::StatusOr<LoginResult> Authenticator::OpenSession(Subject subject, std::string_view source) {
  LoginResult out;
  out.identity.subject = std::move(subject);
  const std::string user = out.identity.subject.user;
  auto now = clock_.Now();
  out.cookie_value = NewSecret(kSessionPrefix);
  std::string secret_hash = HashSecret(out.cookie_value);
  out.identity.via_session = true;
  out.identity.session = RecordName(kSessionRecord, secret_hash);
  out.identity.csrf = NewSecret("");
  out.expires_at = FormatRfc3339(now + options_.session_max);
  json::object spec{{"user", user},
                    {"hash", secret_hash},
                    {"csrf", out.identity.csrf},
                    {"createdAt", FormatRfc3339(now)},
                    {"expiresAt", out.expires_at},
                    {"lastSeen", FormatRfc3339(now)},
                    {"source", Host(source)}};
  RETURN_IF_ERROR(
      store_
          .Commit({store::Write{store::Write::Op::kCreate, kSession,
                                Record(kSession, out.identity.session, std::move(spec)), 0, 0}})
          .status());
  return out;
}

absl::Status Authenticator::Logout(const std::string& session_record) {
  json::object key = Record(kSession, session_record, {});
  auto out =
      store_.Commit({store::Write{store::Write::Op::kDelete, kSession, std::move(key), 0, 0}});
  if (!out.ok() && !absl::IsNotFound(out.status())) return out.status();
  return absl::OkStatus();
}

absl::StatusOr<json::object> Authenticator::CreateToken(const std::string& user,
                                                        const std::string& description,
                                                        std::optional<std::chrono::seconds> ttl) {
  if (description.size() > 256)
    return BadRequestError("the description is longer than 256 characters");
  ASSIGN_OR_RETURN(int64_t held, store_.Count(kApiToken, "", OfUser(kApiToken, user).fields));
  if (held >= 100)
    return ConflictError("user " + user + " already holds 100 tokens; revoke some first",
                         "TooManyTokens");
  auto now = clock_.Now();
  std::string secret = NewSecret(kTokenPrefix);
  std::string hash = HashSecret(secret);
  json::object spec{{"user", user},
                    {"hash", hash},
                    {"description", description},
                    {"createdAt", FormatRfc3339(now)},
                    {"expiresAt", ttl ? FormatRfc3339(now + *ttl) : ""}};
  std::string name = RecordName(kTokenRecord, hash);
  ASSIGN_OR_RETURN(auto stored,
                   store_.Commit({store::Write{store::Write::Op::kCreate, kApiToken,
                                               Record(kApiToken, name, std::move(spec)), 0, 0}}));
  json::object view = TokenView(stored[0]);
  view["token"] = secret;  // the only time it is shown
  return view;
}

absl::StatusOr<json::object> Authenticator::ListTokens(const std::string& user) {
  ASSIGN_OR_RETURN(auto page, store_.List(OfUser(kApiToken, user)));
  json::array items;
  auto now = clock_.Now();
  for (const auto& r : page.items) {
    json::object view = TokenView(r);
    view["status"] = json::object{{"expired", Expired(Spec(r), "expiresAt", now)},
                                  {"lastUsed", GetString(Spec(r), "lastUsed")}};
    items.push_back(std::move(view));
  }
  return json::object{{"apiVersion", "paas.gantry.dev/v1"},
                      {"kind", "TokenList"},
                      {"metadata", json::object{}},
                      {"items", std::move(items)}};
}

absl::Status Authenticator::RevokeToken(const std::string& user, const std::string& name) {
  auto record = store_.Get(kApiToken, "", name);
  if (!record.ok() || GetString(Spec(*record), "user") != user) {
    if (record.ok() || absl::IsNotFound(record.status()))
      return NotFoundError("token \"" + name + "\" of user " + user + " not found");
    return record.status();
  }
  return store_.Commit({store::Write{store::Write::Op::kDelete, kApiToken, *record, 0, 0}})
      .status();
}

absl::StatusOr<json::object> Authenticator::ListSessions(const std::string& user,
                                                         const std::string& current) {
  ASSIGN_OR_RETURN(auto page, store_.List(OfUser(kSession, user)));
  json::array items;
  auto now = clock_.Now();
  for (const auto& r : page.items) {
    const json::object& spec = Spec(r);
    auto last_seen = ParseTimestamp(GetString(spec, "lastSeen"));
    // Ended already, though not yet removed (FromSession removes it on first sight).
    if (!last_seen || *last_seen + options_.session_idle <= now || Expired(spec, "expiresAt", now))
      continue;
    std::string name = GetString(r, "metadata.name");
    items.push_back(json::object{
        {"apiVersion", "paas.gantry.dev/v1"},
        {"kind", "Session"},
        {"metadata",
         json::object{{"name", name}, {"creationTimestamp", GetString(spec, "createdAt")}}},
        {"spec", json::object{{"user", GetString(spec, "user")},
                              {"source", GetString(spec, "source")},
                              {"expiresAt", GetString(spec, "expiresAt")}}},
        {"status", json::object{{"lastSeen", GetString(spec, "lastSeen")},
                                {"current", !current.empty() && name == current}}}});
  }
  return json::object{{"apiVersion", "paas.gantry.dev/v1"},
                      {"kind", "SessionList"},
                      {"metadata", json::object{}},
                      {"items", std::move(items)}};
}

absl::Status Authenticator::EndSession(const std::string& user, const std::string& name) {
  auto record = store_.Get(kSession, "", name);
  if (!record.ok() || GetString(Spec(*record), "user") != user) {
    if (record.ok() || absl::IsNotFound(record.status()))
      return NotFoundError("session \"" + name + "\" of user " + user + " not found");
    return record.status();
  }
  auto out = store_.Commit({store::Write{store::Write::Op::kDelete, kSession, *record, 0, 0}});
  if (!out.ok() && absl::IsNotFound(out.status()))
    return NotFoundError("session \"" + name + "\" of user " + user + " not found");
  return out.status();
}

absl::StatusOr<int64_t> Authenticator::EndSessions(const std::string& user) {
  ASSIGN_OR_RETURN(auto page, store_.List(OfUser(kSession, user)));
  int64_t ended = 0;
  // One commit each: a session that ends meanwhile (logout, expiry) does not fail the rest.
  for (auto& r : page.items) {
    auto out =
        store_.Commit({store::Write{store::Write::Op::kDelete, kSession, std::move(r), 0, 0}});
    if (out.ok())
      ++ended;
    else if (!absl::IsNotFound(out.status()))
      return out.status();
  }
  return ended;
}

absl::StatusOr<store::Write> Authenticator::PasswordWrite(const std::string& user,
                                                          std::string_view password) {
  auto account = store_.Get("User", "", user);
  if (account.ok() && GetString(Spec(*account), "source") == kSourceLdap)
    return BadRequestError("user \"" + user +
                           "\" logs in with the organisation's directory (LDAP): change the "
                           "password there");
  if (account.ok() && GetString(Spec(*account), "source") == kSourceOidc)
    return BadRequestError("user \"" + user +
                           "\" logs in with single sign-on (OIDC): they have no Gantry password");
  if (!account.ok() && !absl::IsNotFound(account.status())) return account.status();
  ASSIGN_OR_RETURN(std::string hash, HashPassword(password));
  json::object obj = Record(kUserCredential, user, json::object{{"passwordHash", hash}});
  auto existing = store_.Get(kUserCredential, "", user);
  if (existing.ok())
    return store::Write{store::Write::Op::kUpdate, kUserCredential, std::move(obj), 0, 0};
  if (!absl::IsNotFound(existing.status())) return existing.status();
  return store::Write{store::Write::Op::kCreate, kUserCredential, std::move(obj), 0, 0};
}

absl::StatusOr<std::vector<store::Write>> Authenticator::PasswordChangeWrites(
    const PasswordChange& change) {
  if (change.caller == change.user) {
    if (change.current_password.empty())
      return InvalidError("User", change.user,
                          {{"spec.currentPassword",
                            "Required value: changing your own password needs your current "
                            "password",
                            "FieldValueRequired"}});
    auto checked = CheckPassword(change.user, change.current_password, change.source);
    if (absl::IsUnauthenticated(checked.status()))
      return ForbiddenError("users.paas.gantry.dev \"" + change.user +
                            "\" is forbidden: spec.currentPassword is not the current password");
    RETURN_IF_ERROR(checked.status());
  }
  std::vector<store::Write> out;
  auto password = PasswordWrite(change.user, change.password);
  if (!password.ok())
    return InvalidError("User", change.user,
                        {{"spec.password", std::string(password.status().message())}});
  out.push_back(*std::move(password));
  ASSIGN_OR_RETURN(auto sessions, store_.List(OfUser(kSession, change.user)));
  for (auto& r : sessions.items)
    if (GetString(r, "metadata.name") != change.caller_session)
      out.push_back({store::Write::Op::kDelete, kSession, std::move(r), 0, 0});
  return out;
}

absl::StatusOr<std::vector<store::Write>> Authenticator::ForgetWrites(const std::string& user) {
  std::vector<store::Write> out;
  auto cred = store_.Get(kUserCredential, "", user);
  if (cred.ok())
    out.push_back({store::Write::Op::kDelete, kUserCredential, *cred, 0, 0});
  else if (!absl::IsNotFound(cred.status()))
    return cred.status();
  for (const char* kind : {kApiToken, kSession}) {
    ASSIGN_OR_RETURN(auto page, store_.List(OfUser(kind, user)));
    for (auto& r : page.items) out.push_back({store::Write::Op::kDelete, kind, std::move(r), 0, 0});
  }
  // Role bindings name a user by name only: left behind, they would grant their roles to the
  // next user created with this name.
  store::ListOptions bindings = OfUser("RoleBinding", user);
  bindings.ns = std::nullopt;  // every project
  ASSIGN_OR_RETURN(auto page, store_.List(bindings));
  for (auto& r : page.items)
    out.push_back({store::Write::Op::kDelete, "RoleBinding", std::move(r), 0, 0});
  return out;
}

absl::StatusOr<std::optional<std::string>> Authenticator::EnsureAdmin(const std::string& password) {
  ASSIGN_OR_RETURN(int64_t users, store_.Count("User", "", {}));
  if (users > 0) return std::optional<std::string>();
  std::string pw = password.empty() ? GeneratePassword() : password;
  ASSIGN_OR_RETURN(std::string hash, HashPassword(pw));
  json::object user{
      {"apiVersion", "paas.gantry.dev/v1"},
      {"kind", "User"},
      {"metadata", json::object{{"name", "admin"},
                                {"namespace", ""},
                                {"uid", NewUid()},
                                {"generation", 1},
                                {"creationTimestamp", Now()}}},
      {"spec", json::object{{"displayName", "Administrator"}, {"orgRole", "org-admin"}}},
      {"status", json::object{}}};
  std::vector<store::Write> writes;
  writes.push_back({store::Write::Op::kCreate, "User", std::move(user), 0, 0});
  writes.push_back({store::Write::Op::kCreate, kUserCredential,
                    Record(kUserCredential, "admin", json::object{{"passwordHash", hash}}), 0, 0});
  RETURN_IF_ERROR(store_.Commit(std::move(writes)).status());
  return std::optional<std::string>(password.empty() ? pw : "");
}

}  // namespace gantry::auth
