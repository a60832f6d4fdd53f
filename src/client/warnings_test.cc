// Warning headers as gantryd and the Kubernetes API server send them (client/warnings.h).
#include "client/warnings.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gantry::client {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(ParseWarningsTest, OneOrSeveralWithEscapes) {
  EXPECT_THAT(ParseWarnings(R"(299 - "guarantees are overcommitted")"),
              ElementsAre("guarantees are overcommitted"));
  EXPECT_THAT(ParseWarnings(R"(299 - "a, with a comma", 299 - "say \"b\" \\ c")"),
              ElementsAre("a, with a comma", R"(say "b" \ c)"));
  EXPECT_THAT(ParseWarnings(R"(299 gantryd "x" "Wed, 02 Dec 2026 10:00:00 GMT", 299 - "y")"),
              ElementsAre("x", "y"));
}

TEST(ParseWarningsTest, WhatDoesNotParseEndsTheList) {
  EXPECT_THAT(ParseWarnings(""), IsEmpty());
  EXPECT_THAT(ParseWarnings("299 -"), IsEmpty());
  EXPECT_THAT(ParseWarnings(R"(299 - "unclosed)"), IsEmpty());
  EXPECT_THAT(ParseWarnings(R"(299 - "kept", garbage)"), ElementsAre("kept"));
}

}  // namespace
}  // namespace gantry::client
