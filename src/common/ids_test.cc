// NewUid: RFC 4122 version-4 UUIDs, lowercase, never repeated, on one thread or many.
#include "common/ids.h"

#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace gantry {
namespace {

bool IsV4Uuid(const std::string& s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash != (s[i] == '-')) return false;
    if (!dash && !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
  }
  return s[14] == '4' && std::string("89ab").find(s[19]) != std::string::npos;
}

TEST(NewUidTest, IsALowercaseVersion4Uuid) {
  for (int i = 0; i < 100; ++i) {
    std::string uid = NewUid();
    EXPECT_TRUE(IsV4Uuid(uid)) << uid;
  }
}

TEST(NewUidTest, NeverRepeatsAcrossThreads) {
  std::mutex mu;
  std::set<std::string> seen;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      std::vector<std::string> mine;
      for (int i = 0; i < 5000; ++i) mine.push_back(NewUid());  // past many refills
      std::lock_guard lock(mu);
      seen.insert(mine.begin(), mine.end());
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(seen.size(), 20000u);
}

TEST(NewUidTest, EveryHexDigitAppearsInEveryRandomPosition) {
  // A stuck or zeroed byte (a pool handed out twice after sodium_memzero) would show as a
  // position that holds one digit only.
  std::vector<std::set<char>> digits(36);
  for (int i = 0; i < 2000; ++i) {
    std::string uid = NewUid();
    for (size_t p = 0; p < uid.size(); ++p) digits[p].insert(uid[p]);
  }
  for (size_t p = 0; p < 36; ++p) {
    if (p == 8 || p == 13 || p == 18 || p == 23 || p == 14) {
      EXPECT_EQ(digits[p].size(), 1u) << p;
    } else if (p == 19) {
      EXPECT_EQ(digits[p].size(), 4u);  // the variant: 8, 9, a, b
    } else {
      EXPECT_EQ(digits[p].size(), 16u) << p;
    }
  }
}

}  // namespace
}  // namespace gantry
