// Overcommitted guarantees (model/scheduling.h): which GPU types sum above what this gantryd
// has, in words a person reads, and what each project is told.
#include "model/scheduling.h"

#include "gtest/gtest.h"

namespace gantry::model {
namespace {

TEST(OvercommittedGuaranteesTest, NamesEachTypeThatSumsAboveTheGpus) {
  const std::map<std::string, int64_t> four_h100{{"h100", 4}};
  EXPECT_TRUE(
      OvercommittedGuarantees({{"a", {{"h100", 2}}}, {"b", {{"h100", 2}}}}, four_h100).empty());
  auto over = OvercommittedGuarantees(
      {{"a", {{"h100", 3}}}, {"b", {{"h100", 3}, {"a100", 1}}}, {"c", {{"h100", 0}}}}, four_h100);
  ASSERT_EQ(over.size(), 2u);
  EXPECT_EQ(over["h100"],
            "guaranteedGpus of h100 sum to 6 over 2 projects (a 3, b 3) but the fleet has 4 "
            "h100 GPUs: not every guarantee can be kept at once");
  EXPECT_EQ(over["a100"],
            "guaranteedGpus of a100 sum to 1 over 1 project (b 1) but the fleet has 0 a100 "
            "GPUs: not every guarantee can be kept at once");
  EXPECT_TRUE(OvercommittedGuarantees({}, {}).empty());
}

TEST(OvercommittedGuaranteesTest, AProjectIsToldOnlyOfItsOwnTypes) {
  const std::map<std::string, std::string> over{{"h100", "h100 words"}, {"a100", "a100 words"}};
  EXPECT_EQ(OvercommitWords({{"h100", 1}}, over), "h100 words");
  EXPECT_EQ(OvercommitWords({{"a100", 2}, {"h100", 1}}, over), "a100 words; h100 words");
  EXPECT_EQ(OvercommitWords({{"l4", 1}}, over), "");
  EXPECT_EQ(OvercommitWords({{"h100", 0}}, over), "");
}

TEST(OvercommittedGuaranteesTest, GuaranteesOfReadsEachStoredProject) {
  const auto projects = std::vector<boost::json::object>{
      boost::json::parse(R"({"metadata":{"name":"a"},
                             "spec":{"quota":{"guaranteedGpus":{"h100":3,"l4":1}}}})")
          .as_object(),
      boost::json::parse(R"({"metadata":{"name":"b"},"spec":{}})").as_object()};
  const GuaranteesByProject want{{"a", {{"h100", 3}, {"l4", 1}}}, {"b", {}}};
  EXPECT_EQ(GuaranteesOf(projects), want);
}

}  // namespace
}  // namespace gantry::model
