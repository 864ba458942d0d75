// FastMeshLayout and the default mesh layouts: every axis's rings over fast links, never slower than id order.
#include "core/mesh_layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <initializer_list>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/device_order.h"
#include "core/mesh.h"
#include "core/topology_yaml.h"
#include "tests/core/test_topologies.h"

namespace devplace {
namespace {

using testing::InterleavedHosts;

Topology Preset(const std::string& name) {
  return ReadTopologyFile(DEVPLACE_SOURCE_DIR "/configs/topologies/" + name + ".yaml").value();
}

std::vector<DeviceId> Ids(int n) {
  std::vector<DeviceId> ids(static_cast<size_t>(n));
  std::iota(ids.begin(), ids.end(), 0);
  return ids;
}

std::vector<DeviceId> Layout(const Topology& t, const std::string& shorthand) {
  Expected<Mesh> mesh = MeshFromShorthand(shorthand, {}, t);
  EXPECT_TRUE(mesh.ok()) << mesh.error().message;
  return mesh.ok() ? mesh->devices : std::vector<DeviceId>{};
}

// Every mesh of `shapes` over `t` keeps its devices in id order.
void ExpectIdOrder(const Topology& t, std::initializer_list<const char*> shapes) {
  for (const char* shape : shapes) {
    SCOPED_TRACE(shape);
    const std::vector<DeviceId> layout = Layout(t, shape);
    EXPECT_EQ(layout, Ids(static_cast<int>(layout.size())));
  }
}

// Steps of the ring along `order` that do not take one direct NVLink.
int NonNvlinkSteps(const Topology& t, const std::vector<DeviceId>& order) {
  int slow = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    const auto route = t.route(order[i], order[(i + 1) % order.size()]);
    slow += route.size() != 1 || t.link(route[0]).kind != "nvlink";
  }
  return slow;
}

// The positions along axis `axis` of a row-major `shape` that share every other coordinate with position `first`.
std::vector<DeviceId> Group(const std::vector<int64_t>& shape, const std::vector<DeviceId>& devices, size_t axis,
                            int64_t first) {
  int64_t stride = 1;
  for (size_t a = axis + 1; a < shape.size(); ++a) stride *= shape[a];
  std::vector<DeviceId> group;
  for (int64_t k = 0; k < shape[axis]; ++k) group.push_back(devices[first + k * stride]);
  return group;
}

// The ring times by hand on a DGX-1 (64 MiB per device; every ring step one direct NVLink of 2 us): an axis of
// extent n over links of B bytes/s takes 2 (n - 1) (2 us + 64 MiB / n / B).
double Dgx1AxisTime(int n, double bandwidth) {
  return 2.0 * (n - 1) * (2e-6 + static_cast<double>(kMeshLayoutBytes) / n / bandwidth);
}

TEST(MeshAxisRingTimes, PricesEveryGroupOfAnAxisAtOnce) {
  const Topology dgx1 = Preset("dgx1-v100");
  // 2 x 4 in id order: rows 0-3 and 4-7 ring over 25 GB/s links at worst, columns (0, 4) ... are 50 GB/s NVLinks.
  const std::vector<double> times = MeshAxisRingTimes(dgx1, {2, 4}, Ids(8));
  ASSERT_EQ(times.size(), 2u);
  EXPECT_NEAR(times[0], Dgx1AxisTime(2, 50e9), 1e-12);
  EXPECT_NEAR(times[1], Dgx1AxisTime(4, 25e9), 1e-12);
  // The same as ConcurrentTransferTime of one step's sends (all rows at once), times 2 (n - 1).
  std::vector<Transfer> step;
  for (DeviceId d = 0; d < 8; ++d) step.push_back({d, (d / 4) * 4 + (d + 1) % 4, kMeshLayoutBytes / 4});
  EXPECT_NEAR(times[1], 6 * ConcurrentTransferTime(dgx1, step), 1e-12);
  // An axis of extent 1 costs nothing.
  EXPECT_EQ(MeshAxisRingTimes(dgx1, {1, 8}, Ids(8))[0], 0.0);
}

// FastMeshLayout searches only layouts with the first device at position 0: a cyclic shift along any axis keeps every
// axis's groups and their rings (rotated), so random layouts of the DGX-1 price the same shifted.
TEST(MeshAxisRingTimes, CyclicShiftsAlongAnAxisKeepTheTimes) {
  const Topology dgx1 = Preset("dgx1-v100");
  std::mt19937 rng(7);
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2, 4}, {4, 2}, {2, 2, 2}, {8}}) {
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<DeviceId> layout = Ids(8);
      std::shuffle(layout.begin(), layout.end(), rng);
      const std::vector<double> times = MeshAxisRingTimes(dgx1, shape, layout);
      for (size_t axis = 0; axis < shape.size(); ++axis) {
        int64_t stride = 1;
        for (size_t a = axis + 1; a < shape.size(); ++a) stride *= shape[a];
        std::vector<DeviceId> shifted(8);
        for (int64_t p = 0; p < 8; ++p) {
          const int64_t c = (p / stride) % shape[axis];
          shifted[p - c * stride + ((c + 1) % shape[axis]) * stride] = layout[p];
        }
        const std::vector<double> got = MeshAxisRingTimes(dgx1, shape, shifted);
        for (size_t a = 0; a < shape.size(); ++a) EXPECT_NEAR(got[a], times[a], 1e-12) << trial << " " << axis;
      }
    }
  }
}

// DGX-1 "8": the FastRingOrder ring, all NVLink; id order crosses PCIe/QPI twice (3 -> 4, 7 -> 0).
TEST(MeshLayout, Dgx1EightRingsOverNvlink) {
  const Topology dgx1 = Preset("dgx1-v100");
  EXPECT_EQ(NonNvlinkSteps(dgx1, Ids(8)), 2);
  const std::vector<DeviceId> ring = Layout(dgx1, "8");
  EXPECT_EQ(ring, FastRingOrder(dgx1, Ids(8)));
  EXPECT_EQ(ring, (std::vector<DeviceId>{0, 1, 2, 3, 7, 5, 6, 4}));
  EXPECT_EQ(NonNvlinkSteps(dgx1, ring), 0);
  EXPECT_LT(MeshAxisRingTimes(dgx1, {8}, ring)[0], MeshAxisRingTimes(dgx1, {8}, Ids(8))[0]);
  // A mesh with one long axis is that ring, whichever axis is long.
  EXPECT_EQ(Layout(dgx1, "1x8"), ring);
}

// DGX-1 2 x 4: id order already rings every row over NVLink (25 GB/s at worst) and pairs the columns over the 50 GB/s
// cross links. The only rows of 50 GB/s rings (0 3 7 4, 1 2 6 5) would leave the columns at 25 GB/s, slower than id
// order's, so id order stays.
TEST(MeshLayout, Dgx1TwoByFourKeepsIdOrder) {
  const Topology dgx1 = Preset("dgx1-v100");
  const std::vector<DeviceId> layout = Layout(dgx1, "2x4");
  EXPECT_EQ(layout, Ids(8));
  const std::vector<double> id = MeshAxisRingTimes(dgx1, {2, 4}, Ids(8)), got = MeshAxisRingTimes(dgx1, {2, 4}, layout);
  for (size_t a = 0; a < 2; ++a) EXPECT_LE(got[a], id[a]) << a;
}

// DGX-1 4 x 2: id order's columns {0 2 4 6}, {1 3 5 7} cross between the halves without NVLink. The 50 GB/s links form
// the rings 0 3 7 4 and 1 2 6 5; as columns, with rows (0 1), (3 2), (7 6), (4 5) on 25 GB/s NVLinks as id order's
// rows, every axis is as fast or faster: the first such layout in lexicographic order is 0 1 3 2 7 6 4 5.
TEST(MeshLayout, Dgx1FourByTwoPutsTheColumnsOnTheDoubleLinks) {
  const Topology dgx1 = Preset("dgx1-v100");
  const std::vector<DeviceId> layout = Layout(dgx1, "4x2");
  EXPECT_EQ(layout, (std::vector<DeviceId>{0, 1, 3, 2, 7, 6, 4, 5}));
  const std::vector<double> id = MeshAxisRingTimes(dgx1, {4, 2}, Ids(8)), got = MeshAxisRingTimes(dgx1, {4, 2}, layout);
  EXPECT_NEAR(got[0], Dgx1AxisTime(4, 50e9), 1e-12);
  EXPECT_NEAR(got[1], Dgx1AxisTime(2, 25e9), 1e-12);
  EXPECT_NEAR(id[1], got[1], 1e-12);
  EXPECT_GT(id[0], 5 * got[0]);  // id order's columns take two-hop routes that share links
  for (int64_t first : {0, 1}) EXPECT_EQ(NonNvlinkSteps(dgx1, Group({4, 2}, layout, 0, first)), 0);
  // 2 x 2 x 2: the middle axis pairs 0-3 and 1-2 (50 GB/s) instead of 0-2 and 1-3 (25 GB/s).
  EXPECT_EQ(Layout(dgx1, "2x2x2"), (std::vector<DeviceId>{0, 1, 3, 2, 4, 5, 7, 6}));
}

// k80-8-pcie (p2.8xlarge): two GPUs per PLX switch, two boards per socket, QPI between the sockets. Id order keeps
// 2 x 4's rows and 4 x 2's rows inside a socket over PCIe (no layout does better than one 12 GB/s hop at a time) and
// a row through QPI would be slower than id order's: every default layout stays in id order.
TEST(MeshLayout, K80KeepsIdOrder) {
  const Topology k80 = Preset("k80-8-pcie");
  ExpectIdOrder(k80, {"8", "2x4", "4x2", "2x2x2", "2x2"});
  // 2 x 4's columns (0, 4) ... all cross QPI (9 GB/s) at once: 2 x (8 us of route + 4 x 32 MiB / 9 GB/s).
  EXPECT_NEAR(MeshAxisRingTimes(k80, {2, 4}, Ids(8))[0], 2 * (8e-6 + 4 * (kMeshLayoutBytes / 2) / 9e9), 1e-12);
}

// dgx-h100: every pair of GPUs meets on the NVSwitch at the same speed, so every layout ties and id order stays.
TEST(MeshLayout, NvswitchKeepsIdOrder) {
  const Topology h100 = Preset("dgx-h100");
  ExpectIdOrder(h100, {"8", "2x4", "4x2", "2x2x2", "4"});
}

// p100-4x4-ib: ids run host by host, so id order already puts 4 x 4's rows on the hosts (NVLink rings) and its
// columns cross the hosts once per step (each host's InfiniBand port carries one send of each column): the layouts
// keep it. With the hosts dealt round-robin over the ids, id order's 8 x 2 pairs devices of two hosts in every row
// and its columns cross hosts at every step; the layout pairs the NVLinked devices of one host in every row and
// runs each column through the hosts in turn, as fast as id order on the preset.
TEST(MeshLayout, RowsStayOnAHostAndColumnsVisitTheHostsInTurn) {
  const Topology p100 = Preset("p100-4x4-ib");
  ExpectIdOrder(p100, {"16", "4x4", "2x8", "8x2", "2x4"});
  const Topology interleaved = InterleavedHosts();
  const std::vector<DeviceId> layout = Layout(interleaved, "8x2");
  ASSERT_EQ(std::set<DeviceId>(layout.begin(), layout.end()).size(), 16u);
  for (int64_t row = 0; row < 8; ++row) {
    const std::vector<DeviceId> pair = Group({8, 2}, layout, 1, row * 2);
    EXPECT_EQ(interleaved.device(pair[0]).host, interleaved.device(pair[1]).host) << row;
    EXPECT_EQ(NonNvlinkSteps(interleaved, pair), 0) << row;
  }
  for (int64_t column = 0; column < 2; ++column) {
    const std::vector<DeviceId> ring = Group({8, 2}, layout, 0, column);
    int crossings = 0;
    for (size_t i = 0; i < ring.size(); ++i)
      crossings += interleaved.device(ring[i]).host != interleaved.device(ring[(i + 1) % ring.size()]).host;
    EXPECT_EQ(crossings, 4) << column;
  }
  const std::vector<double> got = MeshAxisRingTimes(interleaved, {8, 2}, layout),
                            preset = MeshAxisRingTimes(p100, {8, 2}, Ids(16)),
                            id = MeshAxisRingTimes(interleaved, {8, 2}, Ids(16));
  for (size_t a = 0; a < 2; ++a) {
    EXPECT_NEAR(got[a], preset[a], 1e-12) << a;
    EXPECT_LT(got[a], id[a]) << a;
  }
}

// Every built-in topology, every mesh of up to three axes over its first devices: a permutation of them, no axis
// slower than in id order, the same layout whatever order the devices come in.
TEST(MeshLayout, NeverSlowerThanIdOrderOnAnyPreset) {
  for (const auto& entry : std::filesystem::directory_iterator(DEVPLACE_SOURCE_DIR "/configs/topologies")) {
    const Topology t = ReadTopologyFile(entry.path().string()).value();
    const int n = t.num_devices();
    std::vector<std::vector<int64_t>> shapes;
    for (int64_t a = 1; a <= n; ++a)
      for (int64_t b = 1; a * b <= n; ++b)
        for (int64_t c = 1; a * b * c <= n; ++c) shapes.push_back({a, b, c});
    for (const std::vector<int64_t>& shape : shapes) {
      const int64_t size = shape[0] * shape[1] * shape[2];
      if (size < 2 || (size > 8 && size != n && size % 4 != 0)) continue;  // every small mesh, larger host multiples
      SCOPED_TRACE(t.name() + " " + FormatShape(shape));
      const std::vector<DeviceId> layout = DefaultMeshDevices(t, shape);
      std::vector<DeviceId> sorted = layout;
      std::sort(sorted.begin(), sorted.end());
      ASSERT_EQ(sorted, Ids(static_cast<int>(size)));
      const std::vector<double> got = MeshAxisRingTimes(t, shape, layout), id = MeshAxisRingTimes(t, shape, sorted);
      for (size_t a = 0; a < shape.size(); ++a) EXPECT_LE(got[a], id[a] * (1 + 1e-9)) << a;
      std::vector<DeviceId> reversed(sorted.rbegin(), sorted.rend());
      EXPECT_EQ(FastMeshLayout(t, shape, reversed), layout);
    }
  }
}

}  // namespace
}  // namespace devplace
