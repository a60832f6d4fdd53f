// Receiver URL rules and the signature (webhook_spec.h, http_post.h).
#include "webhooks/webhook_spec.h"

#include <gtest/gtest.h>

#include "webhooks/http_post.h"

namespace gantry::webhooks {
namespace {

TEST(WebhookSpec, PrivateAddresses) {
  for (const char* ip : {"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254",
                         "0.0.0.0", "::1", "fe80::1", "fd00::1", "::ffff:127.0.0.1", "100.64.0.1"})
    EXPECT_TRUE(IsPrivateAddress(ip)) << ip;
  for (const char* ip : {"8.8.8.8", "172.32.0.1", "2001:4860:4860::8888", "not-an-ip"})
    EXPECT_FALSE(IsPrivateAddress(ip)) << ip;
}

TEST(WebhookSpec, ParsesReceivers) {
  auto r = ParseReceiver("http://hooks.example.com:8080/in?x=1");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->host, "hooks.example.com");
  EXPECT_EQ(r->port, "8080");
  EXPECT_EQ(r->target, "/in?x=1");
  EXPECT_FALSE(r->tls);
  auto v6 = ParseReceiver("https://[2001:db8::1]/");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "2001:db8::1");
  EXPECT_EQ(v6->port, "443");
  EXPECT_FALSE(ParseReceiver("ftp://example.com/").ok());
  EXPECT_FALSE(ParseReceiver("http://user:pw@example.com/").ok());
  EXPECT_FALSE(ParseReceiver("example.com/x").ok());
}

TEST(WebhookSpec, ValidateCauses) {
  SetAllowPrivate(false);
  std::vector<FieldCause> causes;
  ValidateWebhookSpec(
      boost::json::parse(
          R"({"url":"http://127.0.0.1:9/x","events":["PhaseChanged","PhaseChanged"]})")
          .as_object(),
      &causes);
  ASSERT_EQ(causes.size(), 2u);
  EXPECT_EQ(causes[0].field, "spec.url");
  EXPECT_NE(causes[0].message.find("--webhook-allow-private"), std::string::npos);
  EXPECT_EQ(causes[1].field, "spec.events[1]");
  causes.clear();
  SetAllowPrivate(true);
  ValidateWebhookSpec(
      boost::json::parse(R"({"url":"http://127.0.0.1:9/x","events":[]})").as_object(), &causes);
  ASSERT_EQ(causes.size(), 1u);
  EXPECT_EQ(causes[0].field, "spec.events");
  SetAllowPrivate(false);
}

TEST(WebhookSpec, SignatureIsHmacSha256) {
  // RFC 4231 test case 2.
  EXPECT_EQ(Signature("Jefe", "what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

}  // namespace
}  // namespace gantry::webhooks
