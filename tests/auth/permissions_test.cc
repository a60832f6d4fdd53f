// The permission matrix of docs/security.md, cell by cell, against a real gantryd: every
// role x verb x kind x (own project, other project, shared into the caller's project) gets
// exactly the documented answer. Allowed: 2xx (405 for writes of read-only kinds). Refused:
// 403 Forbidden whose message names the missing permission. No credentials: 401.
//
// The expected table below is written out by hand from docs/security.md; it is not computed
// from the code under test.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "api_client.h"
#include "gantryd_process.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;

// Roles by letter: O org-admin, P paas-admin, A project-admin, M member, V viewer, N nobody
// (a user with no role anywhere).
const char kRoles[] = "OPAMVN";
const std::map<char, std::string> kUserOf = {{'O', "orgadmin"}, {'P', "paasadmin"},
                                             {'A', "padmin"},   {'M', "member"},
                                             {'V', "viewer"},   {'N', "nobody"}};

constexpr char kOwn[] = "p-own";
constexpr char kOther[] = "p-other";
constexpr char kSrc[] = "p-src";  // its objects are shared (Selected) into p-own

class PermissionMatrix : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    gantryd_ = new GantrydProcess();
    absl::Status s = gantryd_->Start();
    ASSERT_TRUE(s.ok()) << s;
    admin_ = new Api(gantryd_->base_url());
    Api& a = *admin_;
    for (const char* p : {kOwn, kOther, kSrc}) {
      a.CreateProject(p);
      a.CreateTemplate(p, "tpl");
      a.MustCreate(NsPath(p, "environmenttemplates"), Fresh("environmenttemplates", "stpl"));
      a.CreateProfile(p, "prof", "tpl");
      a.CreateInstance(p, "inst", "prof");
      a.MustCreate(NsPath(p, "serviceprofiles"), Fresh("serviceprofiles", "sprof"));
      a.MustCreate(NsPath(p, "serviceinstances"), Fresh("serviceinstances", "sinst"));
      a.MustCreate(NsPath(p, "webhooks"), Fresh("webhooks", "hook"));
    }
    json::object shared{
        {"spec", json::object{{"sharing", json::object{{"mode", "Selected"},
                                                       {"projects", json::array{kOwn}}}}}}};
    for (const char* plural : {"environmenttemplates", "computeprofiles", "computeinstances",
                               "serviceprofiles", "serviceinstances"})
      ASSERT_EQ(a.Patch(NsPath(kSrc, plural, Existing(plural)), shared).status, 200);
    auto user = [&](const std::string& name, const std::string& org_role) {
      json::object spec{{"displayName", name}, {"password", "password-of-" + name}};
      if (!org_role.empty()) spec["orgRole"] = org_role;
      a.MustCreate(ClusterPath("users"),
                   json::object{{"metadata", json::object{{"name", name}}}, {"spec", spec}});
    };
    user("orgadmin", "org-admin");
    user("paasadmin", "paas-admin");
    for (const char* u : {"padmin", "member", "viewer", "nobody", "extra"}) user(u, "");
    auto bind = [&](const std::string& project, const std::string& u, const std::string& role) {
      a.MustCreate(NsPath(project, "rolebindings"),
                   json::object{{"metadata", json::object{{"name", u + "-" + role}}},
                                {"spec", json::object{{"user", u}, {"role", role}}}});
    };
    bind(kOwn, "padmin", "project-admin");
    bind(kOwn, "member", "member");
    bind(kOwn, "viewer", "viewer");
    for (const char* p : {kOwn, kOther, kSrc}) bind(p, "extra", "viewer");
    for (const auto& [letter, name] : kUserOf) {
      Resp t =
          a.Post(ClusterPath("users", name) + "/tokens", json::object{{"description", "matrix"}});
      ASSERT_EQ(t.status, 201) << t.raw;
      apis_[letter] = new Api(gantryd_->base_url(), std::string(t.obj().at("token").as_string()));
    }
  }

  static void TearDownTestSuite() {
    for (auto& [l, api] : apis_) delete api;
    apis_.clear();
    delete admin_;
    delete gantryd_;
  }

  // A fresh object of `plural` in `project` for create and delete cells.
  static json::object Fresh(const std::string& plural, const std::string& name) {
    // A template whose commands run on the Slurm cluster: PaaS Admins write those; templates
    // of the host drivers (local, exec) need org-admin (HostDriverTemplatesNeedOrgAdmin).
    if (plural == "environmenttemplates")
      return json::object{
          {"metadata", json::object{{"name", name}}},
          {"spec", json::object{{"driver", "slurm"},
                                {"slurm", json::object{{"command", json::array{"true"}}}}}}};
    if (plural == "computeprofiles") return ProfileObject(name, "tpl");
    if (plural == "computeinstances") return InstanceObject(name, "prof");
    if (plural == "serviceprofiles")
      return json::object{{"metadata", json::object{{"name", name}}},
                          {"spec", json::object{{"serviceType", "notebook"},
                                                {"templateRef", json::object{{"name", "tpl"}}}}}};
    if (plural == "serviceinstances")
      return json::object{{"metadata", json::object{{"name", name}}},
                          {"spec", json::object{{"profileRef", json::object{{"name", "sprof"}}},
                                                {"computeRef", json::object{{"name", "inst"}}}}}};
    if (plural == "rolebindings")
      return json::object{{"metadata", json::object{{"name", name}}},
                          {"spec", json::object{{"user", "extra"}, {"role", "viewer"}}}};
    if (plural == "webhooks" || plural == "clusterwebhooks")  // a public host: no flag needed
      return json::object{{"metadata", json::object{{"name", name}}},
                          {"spec", json::object{{"url", "https://hooks.example.com/gantry"},
                                                {"events", json::array{"ApprovalRequested"}},
                                                {"secret", "hmac-key-" + name}}}};
    if (plural == "projects") return json::object{{"metadata", json::object{{"name", name}}}};
    if (plural == "users")
      return json::object{{"metadata", json::object{{"name", name}}},
                          {"spec", json::object{{"displayName", name}}}};
    return {};
  }

  // The object of `plural` every project has.
  static std::string Existing(const std::string& plural) {
    return plural == "environmenttemplates" ? "stpl"
           : plural == "computeprofiles"    ? "prof"
           : plural == "computeinstances"   ? "inst"
           : plural == "serviceprofiles"    ? "sprof"
           : plural == "serviceinstances"   ? "sinst"
           : plural == "webhooks"           ? "hook"
                                            : "extra-viewer";
  }

  static std::string Unique() { return "cell-" + std::to_string(++counter_); }

  static GantrydProcess* gantryd_;
  static Api* admin_;
  static std::map<char, Api*> apis_;
  static int counter_;
};

GantrydProcess* PermissionMatrix::gantryd_ = nullptr;
Api* PermissionMatrix::admin_ = nullptr;
std::map<char, Api*> PermissionMatrix::apis_;
int PermissionMatrix::counter_ = 0;

// One row: what a role may do to a namespaced kind, per scope.
struct Row {
  std::string plural;
  std::string verb;                // get list create update delete operate
  std::string own, other, shared;  // role letters allowed
};

// docs/security.md, "Namespaced kinds".
const std::vector<Row> kNamespaced = {
    {"environmenttemplates", "get", "OPAMV", "OP", "OPAMV"},
    {"environmenttemplates", "list", "OPAMV", "OP", "OP"},
    {"environmenttemplates", "create", "OP", "OP", "OP"},
    {"environmenttemplates", "update", "OP", "OP", "OP"},
    {"environmenttemplates", "delete", "OP", "OP", "OP"},
    {"computeprofiles", "get", "OPAMV", "OP", "OPAMV"},
    {"computeprofiles", "list", "OPAMV", "OP", "OP"},
    {"computeprofiles", "create", "OP", "OP", "OP"},
    {"computeprofiles", "update", "OP", "OP", "OP"},
    {"computeprofiles", "delete", "OP", "OP", "OP"},
    {"computeinstances", "get", "OPAMV", "OP", "OPAMV"},
    {"computeinstances", "list", "OPAMV", "OP", "OP"},
    {"computeinstances", "create", "OPAM", "OP", "OP"},
    {"computeinstances", "update", "OPAM", "OP", "OP"},
    {"computeinstances", "delete", "OPAM", "OP", "OP"},
    {"computeinstances", "operate", "OPAM", "OP", "OP"},
    {"serviceprofiles", "get", "OPAMV", "OP", "OPAMV"},
    {"serviceprofiles", "list", "OPAMV", "OP", "OP"},
    {"serviceprofiles", "create", "OP", "OP", "OP"},
    {"serviceprofiles", "update", "OP", "OP", "OP"},
    {"serviceprofiles", "delete", "OP", "OP", "OP"},
    {"serviceinstances", "get", "OPAMV", "OP", "OPAMV"},
    {"serviceinstances", "list", "OPAMV", "OP", "OP"},
    {"serviceinstances", "create", "OPAM", "OP", "OP"},
    {"serviceinstances", "update", "OPAM", "OP", "OP"},
    {"serviceinstances", "delete", "OPAM", "OP", "OP"},
    {"serviceinstances", "operate", "OPAM", "OP", "OP"},
    {"rolebindings", "get", "OPAMV", "OP", "OP"},
    {"rolebindings", "list", "OPAMV", "OP", "OP"},
    {"rolebindings", "create", "OA", "O", "O"},
    {"rolebindings", "update", "OA", "O", "O"},
    {"rolebindings", "delete", "OA", "O", "O"},
    {"webhooks", "get", "OA", "O", "O"},
    {"webhooks", "list", "OA", "O", "O"},
    {"webhooks", "create", "OA", "O", "O"},
    {"webhooks", "update", "OA", "O", "O"},
    {"webhooks", "delete", "OA", "O", "O"},
    {"webhookdeliveries", "list", "OA", "O", "O"},
    {"runs", "list", "OPAMV", "OP", "OP"},
    {"runs", "create", "OPAMV", "OP", "OP"},  // allowed callers get 405: runs are read-only
};

TEST_F(PermissionMatrix, NamespacedKindsInOwnOtherAndSharedInProjects) {
  std::vector<std::string> wrong;
  int cells = 0;
  for (const Row& row : kNamespaced) {
    for (const char* scope : {"own", "other", "shared"}) {
      std::string project = scope == std::string("own")     ? kOwn
                            : scope == std::string("other") ? kOther
                                                            : kSrc;
      const std::string& allowed = scope == std::string("own")     ? row.own
                                   : scope == std::string("other") ? row.other
                                                                   : row.shared;
      std::string existing = Existing(row.plural);
      for (char role : std::string(kRoles)) {
        Api& api = *apis_[role];
        Resp r;
        std::string name = Unique();
        if (row.verb == "get") {
          r = api.Get(NsPath(project, row.plural, existing));
        } else if (row.verb == "list") {
          r = api.Get(NsPath(project, row.plural));
        } else if (row.verb == "create") {
          r = api.Post(NsPath(project, row.plural),
                       row.plural == "runs"
                           ? json::object{{"metadata", json::object{{"name", name}}}}
                           : Fresh(row.plural, name));
        } else if (row.verb == "update") {
          r = api.Patch(
              NsPath(project, row.plural, existing),
              json::object{{"metadata", json::object{{"labels", json::object{{"cell", name}}}}}});
        } else if (row.verb == "delete") {
          admin_->MustCreate(NsPath(project, row.plural), Fresh(row.plural, name));
          r = api.Delete(NsPath(project, row.plural, name));
        } else if (row.verb == "operate") {
          r = api.Post(NsPath(project, row.plural, existing) + "/upgrade", json::object{});
        }
        ++cells;
        bool want = allowed.find(role) != std::string::npos;
        bool ok = want ? (row.plural == "runs" && row.verb == "create" ? r.status == 405
                                                                       : r.status / 100 == 2)
                       : r.IsStatus(403, "Forbidden") &&
                             r.message().find("forbidden: User \"" + kUserOf.at(role) +
                                              "\" cannot") != std::string::npos &&
                             r.message().find("role") != std::string::npos;
        if (!ok)
          wrong.push_back(std::string(1, role) + " " + row.verb + " " + row.plural + " (" + scope +
                          "): want " + (want ? "allowed" : "403") + ", got " +
                          std::to_string(r.status) + " " + r.message());
      }
    }
  }
  EXPECT_GT(cells, 600);
  EXPECT_TRUE(wrong.empty()) << wrong.size() << " cells differ from docs/security.md:\n"
                             << [&] {
                                  std::string s;
                                  for (const auto& w : wrong) s += "  " + w + "\n";
                                  return s;
                                }();
}

// docs/security.md, "Templates that run on the host": creating or changing a template of the
// local or exec driver runs code on the control-plane host, so only an org-admin may.
TEST_F(PermissionMatrix, HostDriverTemplatesNeedOrgAdmin) {
  for (char role : std::string(kRoles)) {
    Api& api = *apis_[role];
    const std::string me = kUserOf.at(role);
    std::string name = Unique();
    Resp created = api.Post(NsPath(kOwn, "environmenttemplates"), TemplateObject(name));
    Resp updated = api.Patch(
        NsPath(kOwn, "environmenttemplates", "tpl"),
        json::object{{"metadata", json::object{{"labels", json::object{{"cell", name}}}}}});
    if (role == 'O') {
      EXPECT_EQ(created.status, 201) << created.raw;
      EXPECT_EQ(updated.status, 200) << updated.raw;
      continue;
    }
    // Turning a cluster template into a host one is writing a host template too.
    Resp turned = api.Patch(
        NsPath(kOwn, "environmenttemplates", "stpl"),
        json::object{
            {"spec", json::object{{"driver", "exec"},
                                  {"slurm", nullptr},
                                  {"exec", json::object{{"command", json::array{"true"}}}}}}});
    for (const Resp* r : {&created, &updated, &turned}) {
      EXPECT_TRUE(r->IsStatus(403, "Forbidden")) << role << " " << r->raw;
      if (role != 'P') continue;  // the others lack the role for any template
      EXPECT_THAT(r->message(), ::testing::HasSubstr("forbidden: User \"" + me + "\" cannot"));
      EXPECT_THAT(r->message(),
                  ::testing::HasSubstr("templates of the local and exec drivers need the org-admin "
                                       "role"));
    }
  }
}

// docs/security.md, "Cluster-scoped kinds". `target` is "self" for the caller's own user.
struct ClusterRow {
  std::string what;
  std::string allowed;
};

TEST_F(PermissionMatrix, ClusterScopedKinds) {
  std::vector<std::string> wrong;
  const std::vector<ClusterRow> rows = {
      {"get project own", "OPAMV"},   {"get project other", "OP"},
      {"list projects", "OPAMVN"},    {"create project", "O"},
      {"update project own", "O"},    {"delete project", "O"},
      {"get user self", "OPAMVN"},    {"get user other", "OP"},
      {"list users", "OP"},           {"create user", "O"},
      {"update user self", "OPAMVN"}, {"update user other", "O"},
      {"delete user", "O"},           {"list tokens self", "OPAMVN"},
      {"list tokens other", "O"},     {"create token self", "OPAMVN"},
      {"create token other", "O"},    {"list nodes", "OP"},
      {"list auditevents", "OP"},     {"list clusterwebhooks", "O"},
      {"create clusterwebhook", "O"},
  };
  for (const ClusterRow& row : rows) {
    for (char role : std::string(kRoles)) {
      Api& api = *apis_[role];
      const std::string me = kUserOf.at(role);
      std::string name = Unique();
      Resp r;
      const std::string& w = row.what;
      if (w == "get project own")
        r = api.Get(ClusterPath("projects", kOwn));
      else if (w == "get project other")
        r = api.Get(ClusterPath("projects", kOther));
      else if (w == "list projects")
        r = api.Get(ClusterPath("projects"));
      else if (w == "create project")
        r = api.Post(ClusterPath("projects"), Fresh("projects", name));
      else if (w == "update project own")
        r = api.Patch(ClusterPath("projects", kOwn),
                      json::object{{"spec", json::object{{"description", name}}}});
      else if (w == "delete project") {
        admin_->MustCreate(ClusterPath("projects"), Fresh("projects", name));
        r = api.Delete(ClusterPath("projects", name));
      } else if (w == "get user self")
        r = api.Get(ClusterPath("users", me));
      else if (w == "get user other")
        r = api.Get(ClusterPath("users", "extra"));
      else if (w == "list users")
        r = api.Get(ClusterPath("users"));
      else if (w == "create user")
        r = api.Post(ClusterPath("users"), Fresh("users", name));
      else if (w == "update user self")
        r = api.Patch(ClusterPath("users", me),
                      json::object{{"spec", json::object{{"displayName", name}}}});
      else if (w == "update user other")
        r = api.Patch(ClusterPath("users", "extra"),
                      json::object{{"spec", json::object{{"displayName", name}}}});
      else if (w == "delete user") {
        admin_->MustCreate(ClusterPath("users"), Fresh("users", name));
        r = api.Delete(ClusterPath("users", name));
      } else if (w == "list tokens self")
        r = api.Get(ClusterPath("users", me) + "/tokens");
      else if (w == "list tokens other")
        r = api.Get(ClusterPath("users", "extra") + "/tokens");
      else if (w == "create token self")
        r = api.Post(ClusterPath("users", me) + "/tokens", json::object{{"description", name}});
      else if (w == "create token other")
        r = api.Post(ClusterPath("users", "extra") + "/tokens",
                     json::object{{"description", name}});
      else if (w == "list nodes")
        r = api.Get(ClusterPath("nodes"));
      else if (w == "list auditevents")
        r = api.Get(ClusterPath("auditevents"));
      else if (w == "list clusterwebhooks")
        r = api.Get(ClusterPath("clusterwebhooks"));
      else if (w == "create clusterwebhook")
        r = api.Post(ClusterPath("clusterwebhooks"), Fresh("clusterwebhooks", name));
      bool want = row.allowed.find(role) != std::string::npos;
      bool ok = want ? r.status / 100 == 2 : r.IsStatus(403, "Forbidden");
      if (!ok)
        wrong.push_back(std::string(1, role) + " " + w + ": want " + (want ? "allowed" : "403") +
                        ", got " + std::to_string(r.status) + " " + r.message());
    }
  }
  EXPECT_TRUE(wrong.empty()) << [&] {
    std::string s;
    for (const auto& x : wrong) s += "  " + x + "\n";
    return s;
  }();
}

TEST_F(PermissionMatrix, WithoutCredentialsEverythingIs401) {
  Api anonymous(gantryd_->base_url(), "");
  for (const std::string& path :
       {NsPath(kOwn, "computeinstances"), NsPath(kOwn, "computeinstances", "inst"),
        ClusterPath("projects"), ClusterPath("users"), ClusterPath("auditevents"),
        ClusterPath("computeinstances")}) {
    Resp r = anonymous.Get(path);
    EXPECT_TRUE(r.IsStatus(401, "Unauthorized")) << path << ": " << r.raw;
  }
  Resp r = anonymous.Post(NsPath(kOwn, "computeinstances"), InstanceObject("x", "prof"));
  EXPECT_TRUE(r.IsStatus(401, "Unauthorized")) << r.raw;
  Api bogus(gantryd_->base_url(), "gnt_not-a-real-token");
  EXPECT_TRUE(bogus.Get(ClusterPath("projects")).IsStatus(401, "Unauthorized"));
  // Discovery, OpenAPI and health stay public (kubectl reads them before it authenticates).
  EXPECT_EQ(anonymous.Get("/apis/paas.gantry.dev/v1").status, 200);
  EXPECT_EQ(anonymous.Get("/openapi/v3").status, 200);
  EXPECT_EQ(anonymous.Get("/healthz").status, 200);
}

TEST_F(PermissionMatrix, ListsAcrossProjectsShowOnlyTheCallersProjects) {
  Resp r = apis_['M']->Get(ClusterPath("computeinstances"));
  ASSERT_EQ(r.status, 200) << r.raw;
  for (const auto& item : r.obj().at("items").as_array())
    EXPECT_EQ(item.at("metadata").at("namespace").as_string(), kOwn);
  r = apis_['N']->Get(ClusterPath("computeinstances"));
  ASSERT_EQ(r.status, 200);
  EXPECT_TRUE(r.obj().at("items").as_array().empty()) << r.raw;
  r = apis_['V']->Get(ClusterPath("projects"));
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.names(), std::vector<std::string>{kOwn});
  r = apis_['P']->Get(ClusterPath("projects"));
  EXPECT_GE(r.names().size(), 4u);  // default + the three
}

TEST_F(PermissionMatrix, SharedInObjectsAppearInTheTargetProjectsListsMarked) {
  Resp r = apis_['V']->Get(NsPath(kOwn, "computeprofiles"));
  ASSERT_EQ(r.status, 200) << r.raw;
  bool found = false;
  for (const auto& item : r.obj().at("items").as_array()) {
    const json::object& o = item.as_object();
    if (o.at("metadata").at("namespace").as_string() == kSrc) {
      found = true;
      EXPECT_EQ(o.at("status").at("sharedFrom").at("namespace").as_string(), kSrc);
    }
  }
  EXPECT_TRUE(found) << r.raw;
  // Not shared with p-other: its lists do not show p-src's objects.
  r = admin_->Get(NsPath(kOther, "computeprofiles"));
  for (const auto& item : r.obj().at("items").as_array())
    EXPECT_EQ(item.at("metadata").at("namespace").as_string(), kOther);
}

TEST_F(PermissionMatrix, OnlyAnOrgAdminChangesOrgRoles) {
  Resp r = apis_['M']->Patch(ClusterPath("users", "member"),
                             json::object{{"spec", json::object{{"orgRole", "org-admin"}}}});
  EXPECT_TRUE(r.IsStatus(403, "Forbidden")) << r.raw;
  r = apis_['P']->Patch(ClusterPath("users", "paasadmin"),
                        json::object{{"spec", json::object{{"disabled", true}}}});
  EXPECT_TRUE(r.IsStatus(403, "Forbidden")) << r.raw;
  // Nor may the last org-admin go: admin and orgadmin are two; removing one is fine, the
  // last one is refused.
  r = apis_['O']->Patch(ClusterPath("users", "admin"),
                        json::object{{"spec", json::object{{"orgRole", "paas-admin"}}}});
  EXPECT_EQ(r.status, 200) << r.raw;
  r = apis_['O']->Delete(ClusterPath("users", "orgadmin"));
  EXPECT_TRUE(r.IsStatus(409, "LastOrgAdmin")) << r.raw;
  r = apis_['O']->Patch(ClusterPath("users", "admin"),
                        json::object{{"spec", json::object{{"orgRole", "org-admin"}}}});
  EXPECT_EQ(r.status, 200) << r.raw;
}

}  // namespace
}  // namespace gantry::testing
