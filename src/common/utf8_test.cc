#include "common/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace gantry {
namespace {

TEST(Utf8, AcceptsValidText) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("kubectl"));
  EXPECT_TRUE(IsValidUtf8("Grüße, 東京, 🚀"));
  EXPECT_TRUE(IsValidUtf8("\xF4\x8F\xBF\xBF"));  // U+10FFFF
}

TEST(Utf8, RefusesWhatJsonReadersRefuse) {
  EXPECT_FALSE(IsValidUtf8("\xFF"));
  EXPECT_FALSE(IsValidUtf8("abc\x80"));
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));          // overlong "/"
  EXPECT_FALSE(IsValidUtf8("\xE0\x80\xAF"));      // overlong
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // surrogate U+D800
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xE6\x9D"));          // truncated
}

// IsValidUtf8 reads ASCII eight bytes at a time: a bad or multi-byte sequence at every offset
// around those words is still seen.
TEST(Utf8, SequencesAtEveryOffsetAroundEightByteWords) {
  for (size_t before = 0; before <= 17; ++before) {
    const std::string pad(before, 'a');
    EXPECT_TRUE(IsValidUtf8(pad + "\xE6\x9D\xB1" + pad)) << before;  // 東
    EXPECT_TRUE(IsValidUtf8(pad + "\xF0\x9F\x9A\x80")) << before;    // 🚀 at the end
    EXPECT_FALSE(IsValidUtf8(pad + "\xFF" + pad)) << before;
    EXPECT_FALSE(IsValidUtf8(pad + "\xE6\x9D")) << before;            // cut short at the end
    EXPECT_FALSE(IsValidUtf8(pad + "\xED\xA0\x80" + pad)) << before;  // a surrogate
  }
}

TEST(Utf8, ScrubReplacesEachInvalidByte) {
  EXPECT_EQ(ScrubUtf8("a\xFF"
                      "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(ScrubUtf8("ok"), "ok");
}

TEST(Utf8, FindsThePathOfTheFirstBadString) {
  boost::json::value v = {
      {"metadata", {{"name", "x"}, {"managedFields", {{{"manager", "\xFF"}}}}}}};
  EXPECT_EQ(FindInvalidUtf8(v), "metadata.managedFields[0].manager");
  boost::json::value fine = {{"a", {1, "b", {{"c", "ü"}}}}};
  EXPECT_EQ(FindInvalidUtf8(fine), std::nullopt);
  boost::json::object bad_key;
  bad_key["k\xFE"] = 1;
  boost::json::value bk = {{"labels", bad_key}};
  EXPECT_TRUE(FindInvalidUtf8(bk).has_value());
  ScrubUtf8(bk);
  EXPECT_EQ(FindInvalidUtf8(bk), std::nullopt);
}

}  // namespace
}  // namespace gantry
