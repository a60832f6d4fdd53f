// Signed webhooks from the durable outbox (issue 20, docs/webhooks.md), through a real
// gantryd and a real HTTP receiver on 127.0.0.1 (receiver.h): bad input, secrecy of the
// secret, signatures, retries after 500s and after a hang (same X-Gantry-Delivery), a hung
// receiver that holds up nothing else, a stopped receiver, kill -9 of gantryd with
// undelivered entries, and two replicas that send each delivery once.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "common/test_process.h"
#include "common/tls_files.h"
#include "engine_fixture.h"
#include "receiver.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;

constexpr char kSecret[] = "s3cr3t-hmac-key";

json::object WebhookObject(const std::string& name, const std::string& url,
                           json::array events = {"PhaseChanged"},
                           const std::string& format = "json",
                           const std::string& secret = kSecret) {
  return {{"apiVersion", "paas.gantry.dev/v1"},
          {"kind", "Webhook"},
          {"metadata", {{"name", name}}},
          {"spec", {{"url", url}, {"events", events}, {"secret", secret}, {"format", format}}}};
}

class WebhooksTest : public EngineTest {
 protected:
  std::vector<std::string> Args() override {
    auto args = EngineTest::Args();
    for (const char* a :
         {"--webhook-allow-private", "--webhook-timeout-ms", "2000", "--webhook-backoff-ms", "50"})
      args.push_back(a);
    return args;
  }
  void SetUp() override {
    EngineTest::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    ASSERT_GT(receiver_.Start(), 0);
    CreateStandardProfile();
  }
  void TearDown() override {
    receiver_.Stop();
    EngineTest::TearDown();
  }
  void CreateHook(const std::string& name = "hook", const std::string& format = "json") {
    api().MustCreate(NsPath("default", "webhooks"),
                     WebhookObject(name, receiver_.url(), {"PhaseChanged"}, format));
  }
  void DeployToSuccess(const std::string& name) {
    api().CreateInstance("default", name, "std");
    ASSERT_EQ(Action(name, "deploy").status, 202);
    WaitPhase(name, "Success");
  }
  // True once a delivery telling `name` reached phase Success was answered 200.
  static bool Delivered(const std::vector<Received>& got, const std::string& name) {
    for (const auto& r : got) {
      auto v = json::parse(r.body);
      if (r.answered == 200 && Str(v.as_object(), "object.name") == name &&
          Str(v.as_object(), "phase") == "Success")
        return true;
    }
    return false;
  }
  std::vector<json::object> Deliveries() {
    Resp r = api().Get(NsPath("default", "webhookdeliveries"));
    EXPECT_EQ(r.status, 200) << r.raw;
    std::vector<json::object> out;
    for (const auto& i : r.obj().at("items").as_array()) out.push_back(i.as_object());
    return out;
  }
  Receiver receiver_;
};

TEST_F(WebhooksTest, RefusesBadInputWith422) {
  const std::string path = NsPath("default", "webhooks");
  struct Case {
    json::object obj;
    std::string field;
  } cases[] = {
      {WebhookObject("a", "ftp://example.com/x"), "spec.url"},
      {WebhookObject("b", "http://user:pw@example.com/x"), "spec.url"},
      {WebhookObject("c", "not a url"), "spec.url"},
      {WebhookObject("d", receiver_.url(), {"PhaseChanged", "NoSuchEvent"}), "spec.events[1]"},
      {WebhookObject("e", receiver_.url(), {"PhaseChanged"}, "json", ""), "spec.secret"},
      {WebhookObject("f", receiver_.url(), {}), "spec.events"},
      {WebhookObject("g", receiver_.url(), {"PhaseChanged"}, "xml"), "spec.format"},
  };
  for (const auto& c : cases) {
    Resp r = api().Post(path, c.obj);
    EXPECT_TRUE(r.IsStatus(422, "Invalid")) << r.raw;
    EXPECT_FALSE(r.cause_message(c.field).empty()) << c.field << ": " << r.raw;
    EXPECT_EQ(r.raw.find("user:pw"), std::string::npos) << "a credential is echoed: " << r.raw;
  }
}

TEST_F(WebhooksTest, TheSecretIsNeverReturnedAndSurvivesAnUpdate) {
  json::object hook = WebhookObject("hook", receiver_.url());
  hook["metadata"].as_object()["annotations"] = {
      {"kubectl.kubernetes.io/last-applied-configuration", json::serialize(hook)}};
  Resp created = api().Post(NsPath("default", "webhooks"), hook);
  ASSERT_EQ(created.status, 201) << created.raw;
  Resp got = api().Get(NsPath("default", "webhooks", "hook"));
  EXPECT_EQ(got.raw.find(kSecret), std::string::npos) << got.raw;
  EXPECT_EQ(Str(got.obj(), "spec.secret"), "<sensitive>");
  // Sending back what GET showed keeps the secret: deliveries are still signed with it.
  json::object back = got.obj();
  back["spec"].as_object()["events"] = json::array{"PhaseChanged", "ExpiresSoon"};
  Resp put = api().Put(NsPath("default", "webhooks", "hook"), back);
  ASSERT_EQ(put.status, 200) << put.raw;
  // So do a merge patch, a JSON patch and a server-side apply that leave it alone: each is
  // applied to the stored object, whose ciphertext spec.secret keeps (these were 422
  // FieldValueForbidden before KindTraits::sealed_field).
  const std::string hook_path = NsPath("default", "webhooks", "hook");
  Resp merged = api().Patch(hook_path, json::object{{"spec", {{"description", "merge"}}}});
  ASSERT_EQ(merged.status, 200) << merged.raw;
  Resp patched = api().Call("PATCH", hook_path,
                            R"([{"op":"replace","path":"/spec/description","value":"json"}])",
                            "application/json-patch+json");
  ASSERT_EQ(patched.status, 200) << patched.raw;
  Resp applied = api().Call("PATCH", hook_path + "?fieldManager=e2e&force=true",
                            R"({"apiVersion":"paas.gantry.dev/v1","kind":"Webhook",)"
                            R"("metadata":{"name":"hook"},"spec":{"description":"apply"}})",
                            "application/apply-patch+yaml");
  ASSERT_EQ(applied.status, 200) << applied.raw;
  for (const Resp* r : {&merged, &patched, &applied}) {
    EXPECT_EQ(Str(r->obj(), "spec.secret"), "<sensitive>") << r->raw;
    EXPECT_EQ(r->raw.find("sealed:"), std::string::npos) << r->raw;
  }
  // Ciphertext that is not this webhook's own stored secret is refused, and not quoted.
  json::object forged = api().Get(hook_path).obj();
  forged["spec"].as_object()["secret"] = "sealed:v2:AAAAforgedAAAA";
  Resp refused = api().Put(hook_path, forged);
  EXPECT_TRUE(refused.IsStatus(422, "Invalid")) << refused.raw;
  EXPECT_FALSE(refused.cause_message("spec.secret").empty()) << refused.raw;
  EXPECT_EQ(refused.raw.find("forged"), std::string::npos) << refused.raw;
  DeployToSuccess("web");
  ASSERT_TRUE(receiver_.WaitFor([](const auto& got) { return Delivered(got, "web"); }));
  for (const auto& r : receiver_.received())
    EXPECT_EQ(r.signature, ExpectedSignature(kSecret, r.body));
}

TEST_F(WebhooksTest, SignedDeliveriesAndTheirHistory) {
  CreateHook("hook");
  CreateHook("chat", "slack");
  DeployToSuccess("web");
  ASSERT_TRUE(receiver_.WaitFor([](const auto& got) {
    return Delivered(got, "web") && std::any_of(got.begin(), got.end(), [](const Received& r) {
             return r.body.find("\"text\":") != std::string::npos &&
                    r.body.find("-> Success") != std::string::npos;
           });
  }));
  std::set<std::string> ids;
  for (const auto& r : receiver_.received()) {
    EXPECT_EQ(r.signature, ExpectedSignature(kSecret, r.body)) << r.body;
    EXPECT_EQ(r.event, "PhaseChanged");
    EXPECT_TRUE(ids.insert(r.delivery).second) << "sent twice: " << r.delivery;
  }
  // The history: one WebhookDelivery per receiver call, Delivered, and lastDelivery on the hook.
  ASSERT_TRUE(PollUntil([&] {
    auto ds = Deliveries();
    return ds.size() == ids.size() && std::all_of(ds.begin(), ds.end(), [](const auto& d) {
             return Str(d, "status.phase") == "Delivered";
           });
  }));
  json::object hook = api().Get(NsPath("default", "webhooks", "hook")).obj();
  EXPECT_EQ(Int(hook, "status.lastDelivery.code"), 200) << json::serialize(hook);
  EXPECT_EQ(Str(hook, "status.lastDelivery.error"), "");
  // Deliveries are read-only.
  EXPECT_EQ(api().Delete(NsPath("default", "webhookdeliveries", *ids.begin())).status, 405);
  // Counted: every delivery the receiver answered 200 is one delivered attempt.
  std::string metrics = api().Get("/metrics").raw;
  EXPECT_NE(metrics.find("gantry_webhook_deliveries_total{result=\"delivered\"} " +
                         std::to_string(ids.size())),
            std::string::npos)
      << metrics;
  // Webhook changes are audited (who, what); the secret is not in the record.
  ASSERT_EQ(api().Delete(NsPath("default", "webhooks", "chat")).status, 200);
  Resp audit = api().Get("/apis/paas.gantry.dev/v1/auditevents");
  ASSERT_EQ(audit.status, 200);
  std::set<std::string> verbs;
  for (const auto& e : audit.obj().at("items").as_array())
    if (Str(e.as_object(), "objectRef.resource") == "webhooks")
      verbs.insert(Str(e.as_object(), "verb") + " " + Str(e.as_object(), "objectRef.name"));
  EXPECT_EQ(verbs, (std::set<std::string>{"create hook", "create chat", "delete chat"}));
  EXPECT_EQ(audit.raw.find(kSecret), std::string::npos);
}

TEST_F(WebhooksTest, RetriesAfter500sWithTheSameDeliveryId) {
  CreateHook();
  receiver_.FailNext(3);
  DeployToSuccess("web");
  // Until every delivery the receiver saw was answered 200 once (retries come in any order).
  ASSERT_TRUE(receiver_.WaitFor([](const auto& got) {
    std::map<std::string, bool> ok;
    for (const auto& r : got) ok[r.delivery] = ok[r.delivery] || r.answered == 200;
    return Delivered(got, "web") &&
           std::all_of(ok.begin(), ok.end(), [](const auto& kv) { return kv.second; });
  }));
  std::map<std::string, std::vector<int>> by_id;
  for (const auto& r : receiver_.received()) by_id[r.delivery].push_back(r.answered);
  int retried = 0;
  for (const auto& [id, answers] : by_id) {
    EXPECT_GE(std::count(answers.begin(), answers.end(), 200), 1) << id;
    if (answers.size() > 1) ++retried;
  }
  EXPECT_GE(retried, 1);
  // Each delivery's history counts at least the attempts the receiver saw (an attempt that
  // timed out before its request was complete is counted by gantryd only), and ends Delivered.
  ASSERT_TRUE(PollUntil([&] {
    for (const auto& d : Deliveries()) {
      auto it = by_id.find(Str(d, "metadata.name"));
      if (it == by_id.end()) continue;
      if (Str(d, "status.phase") != "Delivered" ||
          Int(d, "status.attempts") < static_cast<int64_t>(it->second.size()))
        return false;
    }
    return true;
  }));
}

TEST_F(WebhooksTest, AHungReceiverTimesOutAndIsRetried) {
  CreateHook();
  receiver_.HangNext(1);
  DeployToSuccess("web");
  // The first request hangs; the sender gives up after --webhook-timeout-ms and sends the same
  // delivery again, which is answered.
  EXPECT_TRUE(receiver_.WaitFor([](const auto& got) {
    return !got.empty() && got.front().answered == 0 &&
           std::any_of(got.begin() + 1, got.end(), [&](const Received& r) {
             return r.delivery == got.front().delivery && r.answered == 200;
           });
  })) << "the hung delivery was not sent again with the same id";
  ASSERT_TRUE(PollUntil([&] {
    for (const auto& d : Deliveries())
      if (Str(d, "metadata.name") == receiver_.received().front().delivery)
        return Str(d, "status.phase") == "Delivered" && Int(d, "status.attempts") == 2;
    return false;
  }));
}

// Every attempt hangs until --webhook-timeout-ms: meanwhile the API answers and the engine
// deploys, while no delivery has been answered yet (the senders are threads of their own).
TEST_F(WebhooksTest, AHungReceiverHoldsNeitherTheApiNorTheEngine) {
  CreateHook();
  receiver_.HangNext(1000);
  DeployToSuccess("first");
  ASSERT_TRUE(receiver_.WaitFor([](const auto& got) { return !got.empty(); }));
  for (int i = 0; i < 3; ++i) DeployToSuccess("more-" + std::to_string(i));
  for (int i = 0; i < 20; ++i) api().CreateInstance("default", "idle-" + std::to_string(i), "std");
  for (const auto& r : receiver_.received()) EXPECT_EQ(r.answered, 0) << r.delivery;
  for (const auto& d : Deliveries()) EXPECT_NE(Str(d, "status.phase"), "Delivered");
}

TEST_F(WebhooksTest, AStoppedReceiverGetsEverythingWhenItIsBack) {
  CreateHook();
  receiver_.Stop();
  DeployToSuccess("web");
  ASSERT_TRUE(PollUntil([&] {
    json::object hook = api().Get(NsPath("default", "webhooks", "hook")).obj();
    return !Str(hook, "status.lastDelivery.error").empty();
  }));
  auto pending = Deliveries();
  ASSERT_FALSE(pending.empty());
  ASSERT_GT(receiver_.Start(), 0);
  ASSERT_TRUE(receiver_.WaitFor([&](const auto& got) {
    std::set<std::string> ids;
    for (const auto& r : got)
      if (r.answered == 200) ids.insert(r.delivery);
    for (const auto& d : pending)
      if (!ids.count(Str(d, "metadata.name"))) return false;
    return true;
  }));
}

TEST_F(WebhooksTest, Kill9LosesNoneAndARestartSendsWithTheSameIds) {
  CreateHook();
  receiver_.Stop();
  DeployToSuccess("web");
  auto before = Deliveries();
  ASSERT_FALSE(before.empty());
  gantryd_->Kill9();
  ASSERT_TRUE(gantryd_->Restart().ok());
  Reconnect();
  ASSERT_GT(receiver_.Start(), 0);
  ASSERT_TRUE(receiver_.WaitFor([&](const auto& got) {
    std::set<std::string> ids;
    for (const auto& r : got)
      if (r.answered == 200) ids.insert(r.delivery);
    for (const auto& d : before)
      if (!ids.count(Str(d, "metadata.name"))) return false;
    return true;
  }));
  for (const auto& r : receiver_.received())
    EXPECT_EQ(r.signature, ExpectedSignature(kSecret, r.body));
}

// Two gantryd replicas on one PostgreSQL database send each delivery once: the one that
// leases it (docs/webhooks.md, "Several replicas").
class TwoReplicaWebhooksTest : public TwoReplicaTest<WebhooksTest> {};

TEST_F(TwoReplicaWebhooksTest, EachDeliveryIsSentOnce) {
  CreateHook("hook");
  CreateHook("chat", "slack");
  for (int i = 0; i < 4; ++i) DeployToSuccess("web-" + std::to_string(i));
  std::vector<json::object> deliveries;
  ASSERT_TRUE(PollUntil([&] {
    deliveries = Deliveries();
    return !deliveries.empty() &&
           std::all_of(deliveries.begin(), deliveries.end(),
                       [](const auto& d) { return Str(d, "status.phase") == "Delivered"; });
  }));
  std::map<std::string, int> sent;
  for (const auto& r : receiver_.received()) ++sent[r.delivery];
  EXPECT_EQ(sent.size(), deliveries.size());
  for (const auto& d : deliveries)
    EXPECT_EQ(sent[Str(d, "metadata.name")], 1) << json::serialize(d);
}

// --webhook-delivery-retention: ended deliveries are deleted once older than it.
class RetentionTest : public WebhooksTest {
 protected:
  std::vector<std::string> Args() override {
    auto args = WebhooksTest::Args();
    args.insert(args.end(), {"--webhook-delivery-retention", "2s"});
    return args;
  }
};

TEST_F(RetentionTest, DeliveredDeliveriesArePrunedAfterTheRetention) {
  CreateHook();
  DeployToSuccess("web");
  ASSERT_TRUE(receiver_.WaitFor([](const auto& got) { return Delivered(got, "web"); }));
  EXPECT_TRUE(PollUntil([&] { return Deliveries().empty(); }));
  // The webhook keeps what its last delivery did.
  json::object hook = api().Get(NsPath("default", "webhooks", "hook")).obj();
  EXPECT_EQ(Int(hook, "status.lastDelivery.code"), 200) << json::serialize(hook);
}

// https:// receivers: the receiver serves a self-signed certificate for 127.0.0.1. gantryd
// trusts it through --webhook-ca-file and delivers signed; without the flag (the system's CAs)
// every attempt fails at the handshake, and the webhook says why.
class HttpsWebhooksTest : public WebhooksTest {
 protected:
  virtual bool TrustTheReceiver() { return true; }
  std::vector<std::string> Args() override {
    auto args = WebhooksTest::Args();
    if (TrustTheReceiver()) args.insert(args.end(), {"--webhook-ca-file", dir_ + "/tls.crt"});
    return args;
  }
  void SetUp() override {
    dir_ = MakeTempDir("gantry-hooktls");
    ASSERT_FALSE(dir_.empty());
    absl::Status made =
        EnsureSelfSignedCertificate(dir_ + "/tls.crt", dir_ + "/tls.key", {"127.0.0.1"});
    ASSERT_TRUE(made.ok()) << made;
    ASSERT_TRUE(receiver_.UseTls(dir_ + "/tls.crt", dir_ + "/tls.key"));
    WebhooksTest::SetUp();
  }
  void TearDown() override {
    WebhooksTest::TearDown();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string dir_;
};

TEST_F(HttpsWebhooksTest, ATrustedReceiverGetsSignedDeliveries) {
  ASSERT_EQ(receiver_.url().rfind("https://", 0), 0u) << receiver_.url();
  CreateHook();
  DeployToSuccess("web");
  ASSERT_TRUE(receiver_.WaitFor([](const auto& got) { return Delivered(got, "web"); }));
  for (const auto& r : receiver_.received())
    EXPECT_EQ(r.signature, ExpectedSignature(kSecret, r.body)) << r.body;
  EXPECT_EQ(receiver_.failed_handshakes(), 0);
  EXPECT_TRUE(PollUntil([&] {
    return Int(api().Get(NsPath("default", "webhooks", "hook")).obj(),
               "status.lastDelivery.code") == 200;
  }));
}

class UntrustedHttpsWebhooksTest : public HttpsWebhooksTest {
 protected:
  bool TrustTheReceiver() override { return false; }
};

TEST_F(UntrustedHttpsWebhooksTest, AnUntrustedCertificateFailsTheAttemptSayingSo) {
  CreateHook();
  DeployToSuccess("web");
  json::object hook;
  EXPECT_TRUE(PollUntil([&] {
    hook = api().Get(NsPath("default", "webhooks", "hook")).obj();
    return !Str(hook, "status.lastDelivery.error").empty();
  }));
  EXPECT_NE(Str(hook, "status.lastDelivery.error").find("TLS handshake with 127.0.0.1 failed"),
            std::string::npos)
      << json::serialize(hook);
  EXPECT_NE(Str(hook, "status.lastDelivery.error").find("certificate"), std::string::npos)
      << json::serialize(hook);
  EXPECT_TRUE(receiver_.received().empty());
  EXPECT_GT(receiver_.failed_handshakes(), 0);
}

// Without --webhook-allow-private a receiver on loopback is refused.
class PrivateReceiversTest : public GantrydTest {};

TEST_F(PrivateReceiversTest, LoopbackNeedsTheFlag) {
  for (const char* url : {"http://127.0.0.1:9/x", "http://localhost/x", "http://[::1]/x",
                          "http://169.254.169.254/latest/meta-data"}) {
    Resp r = api().Post(NsPath("default", "webhooks"), WebhookObject("a", url));
    EXPECT_TRUE(r.IsStatus(422, "Invalid")) << r.raw;
    EXPECT_NE(r.cause_message("spec.url").find("--webhook-allow-private"), std::string::npos)
        << r.raw;
  }
}

}  // namespace
}  // namespace gantry::testing
