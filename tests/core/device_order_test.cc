// FastRingOrder: rings over fast links, ties kept in id order, deterministic whatever the input order.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "core/device_order.h"
#include "core/topology_yaml.h"

namespace devplace {
namespace {

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

}  // namespace
}  // namespace devplace
