// Collectives on idle links against their alpha-beta formulas (sim/collectives.h), and contention between them.
#include "sim/collectives.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/testing/sim_fixtures.h"

namespace devplace::sim {
namespace {

constexpr double kB = 10e9, kAlpha = 5e-6;
constexpr int64_t kS = int64_t{64} << 20;

std::vector<DeviceId> Members(int n) {
  std::vector<DeviceId> m;
  for (int i = 0; i < n; ++i) m.push_back(i);
  return m;
}

// Builds one collective with `build` on `topology` and returns its simulated time.
template <class F>
double Time(const Topology& topology, F build) {
  TaskGraph tg;
  SimOptions options;
  CommBuilder b(topology, options, &tg);
  build(b);
  b.Finish();
  Engine engine;
  Expected<double> t = b.Run(&engine);
  EXPECT_TRUE(t.ok());
  return t.ok() ? *t : -1;
}

TEST(Collectives, RingsMatchAlphaBeta) {
  for (int n : {2, 4, 8}) {
    const Topology t = testing::FullyConnected(n, kB, kAlpha);
    const std::vector<Ready> none(n);
    const double step = kAlpha + static_cast<double>(kS / n) / kB;
    EXPECT_NEAR(Time(t, [&](CommBuilder& b) { b.AllReduce(Members(n), kS, none); }), 2 * (n - 1) * step, 1e-9) << n;
    EXPECT_NEAR(Time(t, [&](CommBuilder& b) { b.AllGather(Members(n), kS, none); }), (n - 1) * step, 1e-9) << n;
    EXPECT_NEAR(Time(t, [&](CommBuilder& b) { b.ReduceScatter(Members(n), kS, none); }), (n - 1) * step, 1e-9) << n;
    EXPECT_NEAR(Time(t, [&](CommBuilder& b) { b.AllToAll(Members(n), kS, none); }), step, 1e-9) << n;
  }
}

TEST(Collectives, ChunkedBroadcastPipelines) {
  const int n = 4;  // root and three receivers
  const Topology t = testing::FullyConnected(n, kB, kAlpha);
  for (int chunks : {1, 8, 64}) {
    const double chunk = static_cast<double>(kS / chunks) / kB;
    const double expect = (chunks + n - 2) * chunk + (n - 1) * kAlpha;
    EXPECT_NEAR(Time(t, [&](CommBuilder& b) { b.Broadcast(0, {1, 2, 3}, kS, chunks, {}); }), expect, 1e-9) << chunks;
  }
  // Many chunks: close to one slice time, whatever the receiver count.
  const double one = static_cast<double>(kS) / kB;
  EXPECT_LT(Time(t, [&](CommBuilder& b) { b.Broadcast(0, {1, 2, 3}, kS, 256, {}); }), 1.02 * one + 3 * kAlpha);
}

// Two hosts of four devices: each host fully connected (bandwidth b1, latency a1); device i of host 0 joined to
// device i of host 1 (b2, a2), as with one NIC per GPU; a slower switch reaches every device.
Topology Rails(double b1, double a1, double b2, double a2) {
  TopologyBuilder b("rails");
  for (int i = 0; i < 8; ++i) {
    Device d = testing::MakeDevice(std::string("d").append(std::to_string(i)));
    d.host = i < 4 ? "h0" : "h1";
    b.add_device(d);
  }
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 4; ++i)
      for (int j = i + 1; j < 4; ++j) b.add_bidirectional_link(4 * h + i, 4 * h + j, b1, a1, "nvlink");
  for (int i = 0; i < 4; ++i) b.add_bidirectional_link(i, 4 + i, b2, a2, "infiniband");
  // Devices do not forward: a slower switch joins every device so that all pairs have a route.
  const NodeId fabric = b.add_switch({"fabric", "fabric"});
  for (int i = 0; i < 8; ++i) b.add_bidirectional_link(i, fabric, b2 / 10, a2, "ethernet");
  Expected<Topology> t = std::move(b).Build();
  EXPECT_TRUE(t.ok()) << t.error().message;
  return *t;
}

TEST(Collectives, HierarchicalAllReduceMatchesItsPhases) {
  const double b1 = 100e9, a1 = 2e-6, b2 = 5e9, a2 = 10e-6;
  const Topology t = Rails(b1, a1, b2, a2);
  const int k = 4, h = 2;
  const double expect = 2 * (k - 1) * (a1 + static_cast<double>(kS / k) / b1) +
                        2 * (h - 1) * (a2 + static_cast<double>(kS / k / h) / b2);
  const std::vector<Ready> none(8);
  EXPECT_NEAR(Time(t, [&](CommBuilder& b) { b.HierarchicalAllReduce(Members(8), kS, none); }), expect, 1e-9);
  // A flat ring over both hosts is slower here: it sends the whole tensor's share over the slow rails 2(n-1) times.
  EXPECT_GT(Time(t, [&](CommBuilder& b) { b.AllReduce(Members(8), kS, none); }), expect);
}

TEST(Collectives, ContendForLinks) {
  const int n = 4;
  const Topology t = testing::FullyConnected(n, kB, 0);
  const std::vector<Ready> none(n);
  const double one = Time(t, [&](CommBuilder& b) { b.AllReduce(Members(n), kS, none); });
  const double two = Time(t, [&](CommBuilder& b) {
    b.AllReduce(Members(n), kS, none);
    b.AllReduce(Members(n), kS, none);
  });
  EXPECT_NEAR(two, 2 * one, 1e-9);
  // The reverse ring uses the other link directions: no contention.
  std::vector<DeviceId> reverse = Members(n);
  std::reverse(reverse.begin(), reverse.end());
  const double both = Time(t, [&](CommBuilder& b) {
    b.AllReduce(Members(n), kS, none);
    b.AllReduce(reverse, kS, none);
  });
  EXPECT_NEAR(both, one, 1e-9);
}

TEST(Collectives, WaitsForInputs) {
  const Topology t = testing::FullyConnected(2, kB, 0);
  const double send = static_cast<double>(kS) / kB;
  // An all-gather whose member 1 gets its input from a send of kS first.
  const double total = Time(t, [&](CommBuilder& b) {
    const Ready in = b.Send(0, 1, kS, {});
    b.AllGather({0, 1}, kS, {{}, in});
  });
  EXPECT_NEAR(total, send + static_cast<double>(kS / 2) / kB, 1e-9);
}

}  // namespace
}  // namespace devplace::sim
