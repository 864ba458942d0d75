#include "core/topology.h"

#include <filesystem>
#include <vector>

#include <gtest/gtest.h>

#include "core/topology_yaml.h"

namespace devplace {
namespace {

Device Gpu(const std::string& name) {
  return Device{.name = name, .kind = "v100", .host = "h", .peak_flops_f32 = 15.7e12, .peak_flops_f16 = 125e12,
                .memory_bandwidth = 900e9, .memory_bytes = int64_t{16} << 30};
}

TEST(Topology, RoutesPreferTheFastPathAndPassOnlyThroughSwitches) {
  TopologyBuilder b("t");
  DeviceId g0 = b.add_device(Gpu("g0")), g1 = b.add_device(Gpu("g1")), g2 = b.add_device(Gpu("g2"));
  NodeId sw = b.add_switch(Switch{"pcie", "h"});
  b.add_bidirectional_link(g0, g1, 25e9, 2e-6, "nvlink");  // direct NVLink between g0 and g1 only
  b.add_bidirectional_link(g1, g2, 25e9, 2e-6, "nvlink");
  for (DeviceId g : {g0, g1, g2}) b.add_bidirectional_link(g, sw, 12e9, 1.5e-6, "pcie");
  Expected<Topology> t = std::move(b).Build();
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->route(g0, g1).size(), 1u);
  EXPECT_EQ(t->link(t->route(g0, g1)[0]).kind, "nvlink");
  // g0 -> g2 must not hop through device g1: it goes over the PCIe switch.
  ASSERT_EQ(t->route(g0, g2).size(), 2u);
  EXPECT_EQ(t->link(t->route(g0, g2)[0]).dst, sw);
  EXPECT_TRUE(t->route(g1, g1).empty());
  EXPECT_DOUBLE_EQ(t->transfer_time_estimate(g0, g1, 25000), 2e-6 + 1e-6);
  EXPECT_DOUBLE_EQ(t->transfer_time_estimate(g0, g2, 12000), 3e-6 + 1e-6);
  EXPECT_DOUBLE_EQ(PeakFlops(t->device(g0), DType::kF16), 125e12);
  EXPECT_DOUBLE_EQ(PeakFlops(t->device(g0), DType::kF32), 15.7e12);
}

// Transfers started together share the links of their routes: the busiest link's bytes set the time.
TEST(Topology, ConcurrentTransfersAddUpOnSharedLinksAndOverlapOnDisjointOnes) {
  TopologyBuilder b("star");
  DeviceId g0 = b.add_device(Gpu("g0")), g1 = b.add_device(Gpu("g1")), g2 = b.add_device(Gpu("g2"));
  NodeId sw = b.add_switch(Switch{"pcie", "h"});
  for (DeviceId g : {g0, g1, g2}) b.add_bidirectional_link(g, sw, 1e9, 1e-6, "pcie");
  Expected<Topology> t = std::move(b).Build();
  ASSERT_TRUE(t.ok()) << t.error().message;
  // A broadcast from g0 sends both copies over g0's uplink: 2 MB at 1 GB/s, plus two hops' latency.
  const std::vector<Transfer> broadcast = {{g0, g1, 1'000'000}, {g0, g2, 1'000'000}};
  EXPECT_DOUBLE_EQ(ConcurrentTransferTime(*t, broadcast), 2e-6 + 2e-3);
  // A gather into g0 shares the switch's link down to g0.
  const std::vector<Transfer> gather = {{g1, g0, 1'000'000}, {g2, g0, 500'000}};
  EXPECT_DOUBLE_EQ(ConcurrentTransferTime(*t, gather), 2e-6 + 1.5e-3);
  // g1 -> g2 and g2 -> g1 use different directed links: they overlap.
  const std::vector<Transfer> swap = {{g1, g2, 1'000'000}, {g2, g1, 1'000'000}};
  EXPECT_DOUBLE_EQ(ConcurrentTransferTime(*t, swap), 2e-6 + 1e-3);
  EXPECT_DOUBLE_EQ(ConcurrentTransferTime(*t, swap), t->transfer_time_estimate(g1, g2, 1'000'000));
  // Nothing moves: a device to itself, no bytes, no transfers.
  const std::vector<Transfer> idle = {{g1, g1, 1'000'000}, {g0, g2, 0}};
  EXPECT_EQ(ConcurrentTransferTime(*t, idle), 0.0);
  EXPECT_EQ(ConcurrentTransferTime(*t, {}), 0.0);
}

TEST(Topology, RejectsUnreachableDevicesAndZeroBandwidth) {
  {
    TopologyBuilder b("islands");
    DeviceId a = b.add_device(Gpu("a")), c = b.add_device(Gpu("c"));
    b.add_link(Link{a, c, 1e9, 0, "pcie"});  // one direction only
    Expected<Topology> t = std::move(b).Build();
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().message,
              "device 'a' is unreachable from device 'c' (add links so every device can reach every other)");
  }
  {
    TopologyBuilder b("zero");
    DeviceId a = b.add_device(Gpu("a")), c = b.add_device(Gpu("c"));
    b.add_bidirectional_link(a, c, 0, 0, "pcie");
    Expected<Topology> t = std::move(b).Build();
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().message, "link a -> c: bandwidth must be > 0");
  }
  {
    TopologyBuilder b("nomem");
    Device d = Gpu("a");
    d.memory_bytes = 0;
    b.add_device(d);
    Expected<Topology> t = std::move(b).Build();
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().message, "device 'a': memory capacity must be > 0");
  }
}

// Every shipped preset loads, routes every pair, and matches the figures its comments cite.
TEST(Topology, EveryPresetLoads) {
  int presets = 0;
  for (const auto& entry : std::filesystem::directory_iterator(DEVPLACE_SOURCE_DIR "/configs/topologies")) {
    Expected<Topology> t = ReadTopologyFile(entry.path().string());
    ASSERT_TRUE(t.ok()) << t.error().message;
    for (DeviceId a = 0; a < t->num_devices(); ++a)
      for (DeviceId b = 0; b < t->num_devices(); ++b) EXPECT_EQ(t->route(a, b).empty(), a == b);
    ++presets;
  }
  EXPECT_GE(presets, 6);
  Topology dgx1 = ReadTopologyFile(DEVPLACE_SOURCE_DIR "/configs/topologies/dgx1-v100.yaml").value();
  EXPECT_EQ(dgx1.num_devices(), 8);
  EXPECT_DOUBLE_EQ(dgx1.device(0).peak_flops_f32, 15.7e12);
  // Every V100 uses 6 NVLinks: 150 GB/s out of each GPU.
  for (DeviceId g = 0; g < 8; ++g) {
    double nvlink_out = 0;
    for (const Link& l : dgx1.links())
      if (l.src == g && l.kind == "nvlink") nvlink_out += l.bandwidth;
    EXPECT_DOUBLE_EQ(nvlink_out, 150e9) << "gpu" << g;
  }
  Topology cluster = ReadTopologyFile(DEVPLACE_SOURCE_DIR "/configs/topologies/p100-4x4-ib.yaml").value();
  EXPECT_EQ(cluster.num_devices(), 16);
  EXPECT_EQ(cluster.device(5).host, "node1");
  DeviceId g0 = cluster.find_device("gpu0"), g4 = cluster.find_device("gpu4");
  bool crosses_ib = false;
  for (LinkId l : cluster.route(g0, g4)) crosses_ib |= cluster.link(l).kind == "infiniband";
  EXPECT_TRUE(crosses_ib);
}

}  // namespace
}  // namespace devplace
