// PortAllocator and the DNAT rules it skips: the ports parsed from `iptables -t nat -S` (as
// rootful Podman's netavark and Docker write them), and an allocator that never hands out a
// forwarded port even when nothing listens on it.
#include "drivers/local/port_allocator.h"

#include <cstdio>
#include <string>

#include "gtest/gtest.h"

namespace gantry::drivers::local {
namespace {

// Rules as this CI machine's netavark left them (the first container is long gone).
constexpr char kRules[] = R"(-P PREROUTING ACCEPT
-N NETAVARK-DN-1D8721804F16F
-N NETAVARK-HOSTPORT-DNAT
-A NETAVARK-DN-1D8721804F16F -s 10.88.0.0/16 -p tcp -m tcp --dport 20475 -j NETAVARK-HOSTPORT-SETMARK
-A NETAVARK-DN-1D8721804F16F -p tcp -m tcp --dport 20475 -j DNAT --to-destination 10.88.0.144:8888
-A NETAVARK-DN-1D8721804F16F -p tcp -m tcp --dport 17000:17002 -j DNAT --to-destination 10.88.0.7:8000-8002
-A NETAVARK-HOSTPORT-DNAT -p tcp -m tcp --dport 20475 -m comment --comment "dnat name: podman id: 6ef05" -j NETAVARK-DN-1D8721804F16F
-A DOCKER ! -i docker0 -p tcp -m tcp --dport 8080 -j DNAT --to-destination 172.17.0.2:80
-A DOCKER ! -i docker0 -p udp -m udp --dport 5353 -j DNAT --to-destination 172.17.0.3:53
-A POSTROUTING -s 10.88.0.0/16 -j NETAVARK-1D8721804F16F
)";

TEST(PortAllocatorTest, TheTcpPortsOfDnatRulesAreParsed) {
  EXPECT_EQ(ParseForwardedPorts(kRules), (std::set<int>{8080, 17000, 17001, 17002, 20475}));
  EXPECT_TRUE(ParseForwardedPorts("").empty());
  EXPECT_TRUE(
      ParseForwardedPorts("-A X -p tcp --dport nope -j DNAT\n-A X -p tcp -j DNAT\n").empty());
}

// The real iptables of this host, through RunProcess: the same ports as its output parsed
// (where iptables cannot run, not root, both are empty).
TEST(PortAllocatorTest, ThisHostsRulesAreRead) {
  std::string out;
  if (FILE* p = ::popen("iptables -t nat -S 2>/dev/null", "r")) {
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    if (::pclose(p) != 0) out.clear();
  }
  const std::set<int> read = ForwardedPorts();
  EXPECT_EQ(read, ParseForwardedPorts(out));
  std::printf("this host forwards %zu TCP ports with DNAT rules\n", read.size());
}

// Two neighbouring ports nothing on this host holds, for an allocator's range; 0 if none.
int FreePair() {
  for (int port = 42000; port < 43000; port += 2)
    if (PortAllocator::PortIsFree(port) && PortAllocator::PortIsFree(port + 1)) return port;
  return 0;
}

TEST(PortAllocatorTest, AForwardedPortIsNeverHandedOut) {
  const int first = FreePair();
  ASSERT_NE(first, 0);
  int asked = 0;
  PortAllocator ports(first, first + 1, [&] {
    ++asked;
    return std::set<int>{first};
  });
  for (int k = 0; k < 3; ++k) {
    auto got = ports.Allocate("w", {"http"});
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->at("http"), first + 1);
    ports.Release("w");
  }
  EXPECT_EQ(asked, 3);  // read at each allocation: rules come and go
  ASSERT_TRUE(ports.Allocate("a", {"http"}).ok());
  auto none = ports.Allocate("b", {"http"});
  EXPECT_EQ(none.status().code(), absl::StatusCode::kResourceExhausted) << none.status();
  EXPECT_TRUE(ports.Allocate("c", {}).ok());  // no port asked: the rules are not read
  EXPECT_EQ(asked, 5);
}

}  // namespace
}  // namespace gantry::drivers::local
