// FastRingOrder: rings over fast links, ties kept in id order, deterministic whatever the input order.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "core/device_order.h"
#include "core/topology_yaml.h"
#include "tests/core/test_topologies.h"

namespace devplace {
namespace {

using testing::InterleavedHosts;

// n >= 5 devices on one PCIe switch (slow), plus fast direct links along the ring 0 2 4 ... 1 3 5 ... (even ids up,
// then odd ids up): id order is the slowest ring, so the fast one has to be found.
Topology ShuffledRing(int n) {
  TopologyBuilder b("shuffled");
  for (int d = 0; d < n; ++d)
    b.add_device(Device{.name = "gpu" + std::to_string(d), .kind = "v100", .peak_flops_f32 = 15.7e12,
                        .memory_bandwidth = 900e9, .memory_bytes = int64_t{16} << 30});
  const NodeId sw = b.add_switch(Switch{"pcie", "h"});
  for (int d = 0; d < n; ++d) b.add_bidirectional_link(d, sw, 2e9, 5e-6, "pcie");
  std::vector<int> ring;
  for (int d = 0; d < n; d += 2) ring.push_back(d);
  for (int d = 1; d < n; d += 2) ring.push_back(d);
  for (int i = 0; i < n; ++i) b.add_bidirectional_link(ring[i], ring[(i + 1) % n], 50e9, 2e-6, "nvlink");
  return std::move(b).Build().value();
}

void ExpectDirectRing(const Topology& t, const std::vector<DeviceId>& order, size_t n) {
  ASSERT_EQ(order.size(), n);
  EXPECT_EQ(std::set<DeviceId>(order.begin(), order.end()).size(), n);
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(t.route(order[i], order[(i + 1) % n]).size(), 1u) << i;
}

int SlowSteps(const Topology& t, const std::vector<DeviceId>& order) {
  int slow = 0;
  for (size_t i = 0; i < order.size(); ++i) slow += t.route(order[i], order[(i + 1) % order.size()]).size() > 1;
  return slow;
}

// Steps of the ring along `order` whose two devices are on different hosts.
int HostCrossings(const Topology& t, const std::vector<DeviceId>& order) {
  int crossings = 0;
  for (size_t i = 0; i < order.size(); ++i)
    crossings += t.device(order[i]).host != t.device(order[(i + 1) % order.size()]).host;
  return crossings;
}

// The per-byte time of one step of the ring along `order` (every device sending to the next at once).
double RingSecondsPerByte(const Topology& t, const std::vector<DeviceId>& order) {
  LinkLoadMeter meter(t, order);
  std::vector<std::pair<size_t, size_t>> pairs;
  for (size_t i = 0; i < order.size(); ++i) pairs.push_back({i, (i + 1) % order.size()});
  return meter.SecondsPerByte(pairs);
}

TEST(FastRingOrder, FindsTheFastRingUpToEightDevices) {
  for (int n : {5, 6, 8}) {  // exhaustive search; 5 and 6 are not powers of two
    SCOPED_TRACE(n);
    const Topology t = ShuffledRing(n);
    std::vector<DeviceId> ids, reversed;
    for (int d = 0; d < n; ++d) ids.push_back(d);
    reversed.assign(ids.rbegin(), ids.rend());
    // Id order crosses the switch (two hops) somewhere; the result never does.
    EXPECT_GT(SlowSteps(t, ids), 0);
    const std::vector<DeviceId> order = FastRingOrder(t, ids);
    ExpectDirectRing(t, order, static_cast<size_t>(n));
    EXPECT_EQ(FastRingOrder(t, reversed), order);
  }
}

TEST(FastRingOrder, Dgx1RingsAreAllNvlink) {
  const Topology dgx1 = ReadTopologyFile(DEVPLACE_SOURCE_DIR "/configs/topologies/dgx1-v100.yaml").value();
  EXPECT_EQ(FastRingOrder(dgx1, {0, 1, 2, 3, 4, 5, 6, 7}), (std::vector<DeviceId>{0, 1, 2, 3, 7, 5, 6, 4}));
  EXPECT_EQ(FastRingOrder(dgx1, {3, 1}), (std::vector<DeviceId>{1, 3}));
  // Within a DGX-1 half every pair has NVLink, some of them two: the ring takes the doubled ones.
  EXPECT_EQ(FastRingOrder(dgx1, {3, 2, 1, 0}), (std::vector<DeviceId>{0, 1, 3, 2}));
}

// Beyond 8 devices (local search): the cheapest ring visits the hosts in turn, crossing each host boundary once, so
// one step's busiest link is the PCIe link of the device that leaves a host (1 / 12 GB/s per byte, one send on each
// InfiniBand port at 12.5 GB/s); id order on the interleaved machine puts four sends on every port (4 / 12.5 GB/s).
TEST(FastRingOrder, VisitsTheHostsInTurnBeyondEightDevices) {
  const Topology p100 = ReadTopologyFile(DEVPLACE_SOURCE_DIR "/configs/topologies/p100-4x4-ib.yaml").value();
  const Topology interleaved = InterleavedHosts();
  std::vector<DeviceId> ids(16);
  for (DeviceId d = 0; d < 16; ++d) ids[d] = d;
  EXPECT_EQ(HostCrossings(interleaved, ids), 16);
  EXPECT_DOUBLE_EQ(RingSecondsPerByte(interleaved, ids), 4 / 12.5e9);
  for (const Topology* t : {&p100, &interleaved}) {
    SCOPED_TRACE(t->name());
    const std::vector<DeviceId> order = FastRingOrder(*t, ids);
    ASSERT_EQ(std::set<DeviceId>(order.begin(), order.end()).size(), 16u);
    EXPECT_EQ(HostCrossings(*t, order), 4);
    EXPECT_DOUBLE_EQ(RingSecondsPerByte(*t, order), 1 / 12e9);
    for (size_t i = 0; i < order.size(); ++i) {  // within a host: the direct NVLink
      if (t->device(order[i]).host == t->device(order[(i + 1) % order.size()]).host) {
        EXPECT_EQ(t->route(order[i], order[(i + 1) % order.size()]).size(), 1u) << i;
      }
    }
    EXPECT_EQ(FastRingOrder(*t, {ids.rbegin(), ids.rend()}), order);
  }
  // Five hosts of four V100s on 10 Gb/s Ethernet (20 devices, not a power of two): five crossings.
  const Topology eth = ReadTopologyFile(DEVPLACE_SOURCE_DIR "/configs/topologies/v100-5x4-eth.yaml").value();
  std::vector<DeviceId> twenty(20);
  for (DeviceId d = 0; d < 20; ++d) twenty[d] = d;
  EXPECT_EQ(HostCrossings(eth, FastRingOrder(eth, twenty)), 5);
}

}  // namespace
}  // namespace devplace
