// Tenant safety of sensitive values (issue 15, items 1, 2 and 8's instancesPerUser) against a
// real gantryd: two members of one project, alice and bob. bob cannot make the server decrypt
// alice's secret by moving its ciphertext (JSON patch copy/move into another variable, an
// annotation, the display name); no answer, audit record or log line quotes a sensitive value;
// kubectl's last-applied-configuration and sensitive template defaults are sealed or redacted;
// the per-user instance quota holds through autoCreateCompute and under concurrent creates.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "api_client.h"
#include "gantryd_test.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kSecret[] = "hf_alice_Secret_4242";
constexpr char kDefaultSecret[] = "dflt_Secret_9797";
constexpr char kJsonPatch[] = "application/json-patch+json";

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class SecretsTest : public GantrydTest {
 protected:
  void SetUp() override {
    GantrydTest::SetUp();
    if (HasFatalFailure()) return;
    api().CreateProject("ml");
    // The exec program succeeds only when it received the secrets in plaintext (on stdin).
    api().MustCreate(
        NsPath("ml", "environmenttemplates"),
        json::object{
            {"metadata", json::object{{"name", "nb"}}},
            {"spec",
             json::object{
                 {"driver", "exec"},
                 {"exec", json::object{{"command",
                                        // The secret split in two: the template itself must
                                        // not hold it in plaintext.
                                        json::array{"sh", "-c", "grep -q dflt_Sec\"\"ret_9797"}}}},
                 {"variables",
                  json::array{
                      json::object{{"name", "hf_token"}, {"sensitive", true}},
                      json::object{{"name", "image"},
                                   {"type", "enum"},
                                   {"allowedValues", json::array{"pytorch", "jax"}},
                                   {"default", "pytorch"}},
                      json::object{{"name", "workers"}, {"type", "number"}, {"default", "1"}},
                      json::object{{"name", "api_key"},
                                   {"sensitive", true},
                                   {"default", kDefaultSecret}}}}}}});
    api().CreateProfile("ml", "prof", "nb");
    alice_ = Member("alice");
    bob_ = Member("bob");
    Resp r =
        alice_->Post(NsPath("ml", "computeinstances"),
                     json::object{{"metadata", json::object{{"name", "alice-nb"}}},
                                  {"spec", json::object{{"profileRef", {{"name", "prof"}}},
                                                        {"variables", {{"hf_token", kSecret}}}}}});
    ASSERT_EQ(r.status, 201) << r.raw;
  }

  std::unique_ptr<Api> Member(const std::string& name) {
    api().MustCreate(ClusterPath("users"),
                     json::object{{"metadata", json::object{{"name", name}}},
                                  {"spec", json::object{{"password", name + "-password-1"}}}});
    api().MustCreate(NsPath("ml", "rolebindings"),
                     json::object{{"metadata", json::object{{"name", name}}},
                                  {"spec", json::object{{"user", name}, {"role", "member"}}}});
    Resp t = api().Post(ClusterPath("users", name) + "/tokens", json::object{});
    EXPECT_EQ(t.status, 201) << t.raw;
    std::string token(t.obj().at("token").as_string());
    if (name == "bob") bob_token_ = token;
    return std::make_unique<Api>(gantryd_->base_url(), token);
  }

  Resp JsonPatch(Api& as, const std::string& target, const json::array& ops) {
    return as.Call("PATCH", target, json::serialize(ops), kJsonPatch);
  }

  // Every place a secret could leak to: the data directory's files (the store), gantryd's log,
  // and the audit trail as an org-admin reads it.
  void ExpectNowhere(const std::string& secret) {
    for (const auto& e : std::filesystem::directory_iterator(gantryd_->data_dir())) {
      if (e.is_regular_file() && e.path().filename().string().rfind("gantry.db", 0) == 0) {
        EXPECT_THAT(Slurp(e.path()), Not(HasSubstr(secret))) << e.path();
      }
    }
    EXPECT_THAT(gantryd_->Log(), Not(HasSubstr(secret)));
    EXPECT_THAT(api().Get(ClusterPath("auditevents")).raw, Not(HasSubstr(secret)));
  }

  std::string Instance(const std::string& name = "alice-nb") {
    return NsPath("ml", "computeinstances", name);
  }

  std::unique_ptr<Api> alice_, bob_;
  std::string bob_token_;
};

TEST_F(SecretsTest, CopyingCiphertextIntoAnotherVariableIsRefusedWithoutDecrypting) {
  for (const char* into : {"/spec/variables/image", "/spec/variables/workers"}) {
    for (const char* op : {"copy", "move"}) {
      Resp r = JsonPatch(*bob_, Instance(),
                         json::array{json::object{
                             {"op", op}, {"from", "/spec/variables/hf_token"}, {"path", into}}});
      EXPECT_EQ(r.status, 422) << op << " " << into << ": " << r.raw;
      EXPECT_THAT(r.raw, Not(HasSubstr(kSecret)));
      EXPECT_THAT(r.raw, HasSubstr("a sealed value is only valid in the variable it was sealed "
                                   "for"));
    }
  }
  ExpectNowhere(kSecret);
  EXPECT_EQ(api().Get(Instance()).obj().at("spec").at("variables").at("hf_token"), "<sensitive>");
}

TEST_F(SecretsTest, CiphertextCannotBeMovedWhereItCouldBeRead) {
  const std::vector<std::string> targets = {"/metadata/annotations", "/metadata/labels",
                                            "/spec/displayName", "/spec/description"};
  for (const auto& path : targets) {
    json::array ops;
    if (path == "/metadata/annotations" || path == "/metadata/labels")
      ops.push_back(json::object{{"op", "add"}, {"path", path}, {"value", json::object{}}});
    ops.push_back(json::object{
        {"op", "copy"},
        {"from", "/spec/variables/hf_token"},
        {"path",
         path == "/metadata/annotations" || path == "/metadata/labels" ? path + "/x" : path}});
    Resp r = JsonPatch(*bob_, Instance(), ops);
    EXPECT_EQ(r.status, 422) << path << ": " << r.raw;
    EXPECT_THAT(r.raw, HasSubstr("holds an encrypted secret of this server")) << path;
    EXPECT_THAT(r.raw, Not(HasSubstr("sealed:v")));
  }
  Resp got = bob_->Get(Instance());
  EXPECT_THAT(got.raw, Not(HasSubstr("sealed:v")));
  ExpectNowhere(kSecret);
}

TEST_F(SecretsTest, ValidationMessagesNeverQuoteASensitiveValue) {
  // A profile that restricts a sensitive variable: a value outside the list is refused
  // without being quoted, in the answer and in the audit record of the refusal.
  api().CreateProfile("ml", "strict", "nb",
                      json::array{json::object{{"name", "hf_token"},
                                               {"override", "restricted"},
                                               {"allowedValues", json::array{"a", "b"}}}});
  Resp r =
      alice_->Post(NsPath("ml", "computeinstances"),
                   json::object{{"metadata", json::object{{"name", "strict-nb"}}},
                                {"spec", json::object{{"profileRef", {{"name", "strict"}}},
                                                      {"variables", {{"hf_token", kSecret}}}}}});
  EXPECT_EQ(r.status, 422) << r.raw;
  EXPECT_THAT(r.raw, HasSubstr("sensitive, not shown"));
  ExpectNowhere(kSecret);
}

TEST_F(SecretsTest, TheOwnerKeepsTheSecretByRedactedOrPlaintextRoundTrips) {
  json::object got = api().Get(Instance()).obj();
  std::string rv(got.at("metadata").at("resourceVersion").as_string());
  // GET, change the display name, PUT back what was shown ("<sensitive>"): the secret stays.
  got["spec"].as_object()["displayName"] = "Alice's notebook";
  Resp put = alice_->Put(Instance(), got);
  ASSERT_EQ(put.status, 200) << put.raw;
  // The same plaintext again changes nothing (no new resourceVersion).
  std::string rv2 = put.meta("resourceVersion");
  Resp same =
      alice_->Patch(Instance(), json::object{{"spec", {{"variables", {{"hf_token", kSecret}}}}}});
  ASSERT_EQ(same.status, 200) << same.raw;
  EXPECT_EQ(same.meta("resourceVersion"), rv2);
  EXPECT_NE(rv, rv2);
  ExpectNowhere(kSecret);
}

TEST_F(SecretsTest, LastAppliedConfigurationCarriesNoSecret) {
  // What client-side `kubectl apply` sends: the whole manifest, also as an annotation.
  json::object manifest{
      {"apiVersion", "paas.gantry.dev/v1"},
      {"kind", "ComputeInstance"},
      {"metadata", json::object{{"name", "applied-nb"}, {"namespace", "ml"}}},
      {"spec", json::object{{"profileRef", {{"name", "prof"}}},
                            {"variables", {{"hf_token", kSecret}, {"image", "jax"}}}}}};
  json::object sent = manifest;
  sent["metadata"].as_object()["annotations"] =
      json::object{{"kubectl.kubernetes.io/last-applied-configuration", json::serialize(manifest)}};
  Resp r = alice_->Post(NsPath("ml", "computeinstances"), sent);
  ASSERT_EQ(r.status, 201) << r.raw;
  EXPECT_THAT(r.raw, Not(HasSubstr(kSecret)));
  Resp got = bob_->Get(Instance("applied-nb"));
  std::string applied(got.obj()
                          .at("metadata")
                          .at("annotations")
                          .at("kubectl.kubernetes.io/last-applied-configuration")
                          .as_string());
  json::value parsed = json::parse(applied);
  EXPECT_EQ(parsed.at("spec").at("variables").at("hf_token"), "<sensitive>");
  EXPECT_EQ(parsed.at("spec").at("variables").at("image"), "jax");  // the rest is kept
  // Applying the same manifest again (kubectl sends the new annotation with the plaintext).
  Resp again = alice_->Put(Instance("applied-nb"), sent);
  ASSERT_EQ(again.status, 200) << again.raw;
  EXPECT_EQ(again.meta("resourceVersion"), r.meta("resourceVersion"));
  ExpectNowhere(kSecret);
}

TEST_F(SecretsTest, SensitiveDefaultsAreSealedAndReachTheDriver) {
  Resp tmpl = bob_->Get(NsPath("ml", "environmenttemplates", "nb"));
  ASSERT_EQ(tmpl.status, 200) << tmpl.raw;
  EXPECT_THAT(tmpl.raw, Not(HasSubstr(kDefaultSecret)));
  EXPECT_THAT(tmpl.raw, HasSubstr("<sensitive>"));
  Resp revs = bob_->Get(NsPath("ml", "environmenttemplates", "nb") + "/revisions");
  EXPECT_THAT(revs.raw, Not(HasSubstr(kDefaultSecret)));
  // Re-sending what was shown keeps the sealed default: no new revision.
  json::object shown = tmpl.obj();
  Resp put = api().Put(NsPath("ml", "environmenttemplates", "nb"), shown);
  ASSERT_EQ(put.status, 200) << put.raw;
  EXPECT_EQ(put.obj().at("status").at("revision"), 1);
  // The default reaches the driver in plaintext: the program greps for it on stdin.
  Resp dep = alice_->Post(Instance() + "/deploy", json::object{});
  ASSERT_EQ(dep.status, 202) << dep.raw;
  std::string phase;
  for (int i = 0; i < 2400 && phase != "Success" && phase != "Failed"; ++i) {
    phase = std::string(api().Get(Instance()).obj().at("status").at("phase").as_string());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling, not a deadline
  }
  EXPECT_EQ(phase, "Success") << api().Get(Instance()).raw;
  ExpectNowhere(kDefaultSecret);
}

TEST_F(SecretsTest, InstancesPerUserHoldsThroughAutoCreateAndUnderRaces) {
  ASSERT_EQ(api()
                .Patch(ClusterPath("projects", "ml"),
                       json::object{{"spec", {{"quota", {{"instancesPerUser", 3}}}}}})
                .status,
            200);
  // alice has one; bob races eight creates for three places.
  std::atomic<int> created{0}, refused{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      Api as(gantryd_->base_url(), bob_token_);
      Resp r =
          as.Post(NsPath("ml", "computeinstances"),
                  json::object{{"metadata", json::object{{"name", "bob-" + std::to_string(i)}}},
                               {"spec", json::object{{"profileRef", {{"name", "prof"}}}}}});
      if (r.status == 201) ++created;
      if (r.status == 403) ++refused;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(created.load(), 3);
  EXPECT_EQ(refused.load(), 5);
  // A service instance whose profile auto-creates compute counts that compute instance too.
  api().MustCreate(
      NsPath("ml", "serviceprofiles"),
      json::object{
          {"metadata", json::object{{"name", "jupyter"}}},
          {"spec", json::object{{"serviceType", "notebook"},
                                {"templateRef", {{"name", "nb"}}},
                                {"autoCreateCompute", {{"profileRef", {{"name", "prof"}}}}}}}});
  Resp si = bob_->Post(NsPath("ml", "serviceinstances"),
                       json::object{{"metadata", json::object{{"name", "bob-svc"}}},
                                    {"spec", json::object{{"profileRef", {{"name", "jupyter"}}}}}});
  EXPECT_TRUE(si.IsStatus(403, "Forbidden")) << si.raw;
  EXPECT_THAT(si.message(), HasSubstr("allows 3 compute instances per user and bob already has 3"));
  Resp si2 =
      alice_->Post(NsPath("ml", "serviceinstances"),
                   json::object{{"metadata", json::object{{"name", "alice-svc"}}},
                                {"spec", json::object{{"profileRef", {{"name", "jupyter"}}}}}});
  EXPECT_EQ(si2.status, 201) << si2.raw;
}

}  // namespace
}  // namespace gantry::testing
