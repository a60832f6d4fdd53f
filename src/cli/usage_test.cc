// `gantry usage`'s printing (cli/usage.h) of a UsageReport as the server returns it.
#include "cli/usage.h"

#include <boost/json.hpp>

#include "gtest/gtest.h"

namespace gantry::cli {
namespace {

namespace json = boost::json;

json::object Report() {
  return json::parse(R"({"kind":"UsageReport","spec":{"groupBy":["project","gpuType"]},
    "status":{"currency":"USD","rows":[
      {"project":"ml","gpuType":"h100","gpuSeconds":7200.0,"cpuCoreSeconds":0,
       "memoryGiBSeconds":0,"cost":5.0},
      {"project":"a,b","gpuType":"","gpuSeconds":1800.5,"cpuCoreSeconds":3600.0,
       "memoryGiBSeconds":0,"cost":0.25}],
     "totals":{"gpuSeconds":9000.5,"cost":5.25}}})")
      .as_object();
}

TEST(UsageText, TableWithGpuHoursCostAndATotal) {
  std::string text = UsageText(Report(), false);
  EXPECT_NE(text.find("PROJECT"), std::string::npos) << text;
  EXPECT_NE(text.find("GPU-HOURS"), std::string::npos) << text;
  EXPECT_NE(text.find("COST (USD)"), std::string::npos) << text;
  EXPECT_NE(text.find("2.00"), std::string::npos) << text;  // 7200 s
  EXPECT_NE(text.find("TOTAL"), std::string::npos) << text;
  EXPECT_NE(text.find("5.25"), std::string::npos) << text;
}

TEST(UsageText, CsvHasTheServersColumnsAndQuotes) {
  EXPECT_EQ(UsageText(Report(), true),
            "project,gpuType,gpuSeconds,cpuCoreSeconds,memoryGiBSeconds,cost,currency\r\n"
            "ml,h100,7200.000,0.000,0.000,5.000000,USD\r\n"
            "\"a,b\",,1800.500,3600.000,0.000,0.250000,USD\r\n");
}

}  // namespace
}  // namespace gantry::cli
