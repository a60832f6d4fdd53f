#include "common/secrets.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace gantry {
namespace {

std::unique_ptr<SecretBox> Box() {
  std::string dir =
      std::filesystem::temp_directory_path() / ("gantry-secrets-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto box = SecretBox::Open(dir + "/secret.key");
  EXPECT_TRUE(box.ok()) << box.status();
  return *std::move(box);
}

TEST(SecretBox, UnsealsOnlyForTheContextItWasSealedFor) {
  auto box = Box();
  std::string ctx = SealContext("ComputeInstance", "ml", "alice-nb", "uid-1", "variables/hf_token");
  std::string sealed = box->Seal("hf_secret", ctx);
  EXPECT_TRUE(sealed.starts_with(kSealedPrefix));
  EXPECT_EQ(sealed.find("hf_secret"), std::string::npos);
  auto plain = box->Unseal(sealed, ctx);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(*plain, "hf_secret");
  // Another variable, another instance of the same name, another project: all refused.
  for (const std::string& other :
       {SealContext("ComputeInstance", "ml", "alice-nb", "uid-1", "variables/image"),
        SealContext("ComputeInstance", "ml", "alice-nb", "uid-2", "variables/hf_token"),
        SealContext("ComputeInstance", "ml", "bob-nb", "uid-3", "variables/hf_token"),
        SealContext("ComputeInstance", "other", "alice-nb", "uid-1", "variables/hf_token")}) {
    auto refused = box->Unseal(sealed, other);
    EXPECT_FALSE(refused.ok()) << other;
    EXPECT_EQ(refused.status().message().find("hf_secret"), std::string::npos);
  }
}

TEST(SecretBox, EachSealIsFreshAndDamageIsRefused) {
  auto box = Box();
  EXPECT_NE(box->Seal("x", "c"), box->Seal("x", "c"));
  std::string sealed = box->Seal("x", "c");
  sealed.back() = sealed.back() == 'A' ? 'B' : 'A';
  EXPECT_FALSE(box->Unseal(sealed, "c").ok());
  EXPECT_FALSE(box->Unseal("sealed:v2:!!!", "c").ok());
  EXPECT_FALSE(box->Unseal("plain", "c").ok());
  EXPECT_TRUE(SecretBox::IsSealed("sealed:v1:abc"));
  EXPECT_TRUE(SecretBox::IsLegacy("sealed:v1:abc"));
}

}  // namespace
}  // namespace gantry
