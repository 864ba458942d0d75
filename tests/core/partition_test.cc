// Partition geometry shared by the simulator and the executor: box intersection, which copy of a part a reader
// reads, and which replica of a weight shard an update part reads its gradient from.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/partition.h"
#include "tests/testing/sim_fixtures.h"

namespace devplace {
namespace {

Box MakeBox(std::vector<int64_t> lo, std::vector<int64_t> hi) {
  Box b;
  b.rank = static_cast<int32_t>(lo.size());
  for (int32_t a = 0; a < b.rank; ++a) {
    b.lo[a] = lo[a];
    b.hi[a] = hi[a];
  }
  return b;
}

// An [8, 4] op split along a sample dim (axis 0) and a parameter dim (axis 1).
Op SplitOp() {
  Op op = testing::MakeOp("w", 1e6, {8, 4}, 1024);
  op.dims = {{DimKind::kSample, 0, 0, 8}, {DimKind::kParameter, 1, -1, 4}};
  return op;
}

TEST(Partition, IntersectionIsEmptyWhereBoxesDoNotMeet) {
  const Box i = Intersection(MakeBox({0, 2}, {4, 6}), MakeBox({2, 0}, {8, 3}));
  EXPECT_TRUE(SameBox(i, MakeBox({2, 2}, {4, 3})));
  EXPECT_EQ(Volume(i), 2);
  const Box none = Intersection(MakeBox({0, 0}, {2, 2}), MakeBox({3, 0}, {5, 2}));
  EXPECT_EQ(Volume(none), 0);
  EXPECT_EQ(none.hi[0], none.lo[0]);
  EXPECT_FALSE(SameBox(MakeBox({0}, {2}), MakeBox({0, 0}, {2, 1})));
  EXPECT_FALSE(SameBox(MakeBox({0, 0}, {2, 2}), MakeBox({0, 0}, {2, 1})));
}

TEST(Partition, PartsComputeAndNeedTheirSlices) {
  // [8, 4] split 2 x 2 (sample x parameter) with two copies: part 5 is copy 1 of distinct part 1 (sample 0,
  // parameter 1); a consumer reading it whole along the parameter axis (input_axis -1) needs rows 0-3 only.
  const Op op = SplitOp();
  const OpConfig c{{0, 1, 2, 3, 4, 5, 6, 7}, {2, 2}};
  for (int32_t part = 0; part < 8; ++part) {
    const Box computed = ComputedBox(op, c, part);
    const int64_t row = (part % 4) / 2 * 4, column = part % 2 * 2;
    EXPECT_TRUE(SameBox(computed, MakeBox({row, column}, {row + 4, column + 2}))) << part;
    const Box needed = NeededBox(op, c, part, op);
    EXPECT_TRUE(SameBox(needed, MakeBox({row, 0}, {row + 4, 4}))) << part;
  }
  // A producer of another rank: only the axes it has are sliced.
  const Op flat = testing::MakeOp("x", 1e6, {8}, 0);
  EXPECT_TRUE(SameBox(NeededBox(op, c, 3, flat), MakeBox({4}, {8})));
}

TEST(Partition, OpsWithManyDimsSliceAlike) {
  // 34 dims, all whole but the sample and parameter ones: the same parts as SplitOp's (the digit-by-digit path).
  Op wide = SplitOp();
  OpConfig c{{0, 1, 2, 3}, {2, 2}};
  for (int k = 0; k < 32; ++k) {
    wide.dims.push_back({DimKind::kAttribute, -1, -1, 1});
    c.degrees.push_back(1);
  }
  const OpConfig two{{0, 1, 2, 3}, {2, 2}};
  for (int32_t part = 0; part < 4; ++part) {
    EXPECT_TRUE(SameBox(ComputedBox(wide, c, part), ComputedBox(SplitOp(), two, part))) << part;
    EXPECT_TRUE(SameBox(NeededBox(wide, c, part, wide), NeededBox(SplitOp(), two, part, SplitOp()))) << part;
  }
}

TEST(Partition, PartsAlikeWhenEverySlicedExtentDivides) {
  // A [6, 4] producer feeding the [8, 4] op (sample axis 0 of both): 2 ways divide both, 4 ways only the op's.
  GraphBuilder b("alike");
  const OpId x = b.add_op(testing::MakeOp("x", 1e6, {6, 4}, 0));
  const OpId w = b.add_op(SplitOp());
  b.add_edge(x, w);
  const Graph g = std::move(b).Build().value();
  EXPECT_TRUE(PartsAlike(g, w, OpConfig{{0, 1, 2, 3}, {2, 2}}));
  EXPECT_FALSE(PartsAlike(g, w, OpConfig{{0, 1, 2, 3}, {4, 1}}));  // 6 rows in 4 slices: 1, 2, 1, 2
  EXPECT_FALSE(PartsAlike(g, w, OpConfig{{0, 1, 2, 3, 4, 5, 6, 7}, {1, 8}}));  // 4 columns in 8 slices
  EXPECT_NE(Volume(NeededBox(g.op(w), OpConfig{{0, 1, 2, 3}, {4, 1}}, 0, g.op(x))),
            Volume(NeededBox(g.op(w), OpConfig{{0, 1, 2, 3}, {4, 1}}, 1, g.op(x))));
}

// Property: over random training graphs and random configs (whose degrees divide the split dims' sizes), every
// part of an op that PartsAlike calls alike computes a box of part 0's extents and needs boxes of part 0's extents
// of each input.
TEST(Partition, AlikePartsHaveTheSameExtentsOnRandomGraphs) {
  std::mt19937_64 rng(5);
  int alike = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const Graph g = testing::RandomTrainingGraph(seed, 24);
    for (OpId op = 0; op < g.num_ops(); ++op) {
      const OpConfig c = testing::RandomConfig(g, op, 6, 1.0, rng);
      if (c.num_parts() < 2) continue;
      if (!PartsAlike(g, op, c)) continue;
      ++alike;
      const Op& o = g.op(op);
      auto extents = [](const Box& box) {
        std::vector<int64_t> e;
        for (int32_t a = 0; a < box.rank; ++a) e.push_back(box.hi[a] - box.lo[a]);
        return e;
      };
      for (int32_t p = 1; p < c.num_parts(); ++p) {
        EXPECT_EQ(extents(ComputedBox(o, c, p)), extents(ComputedBox(o, c, 0))) << o.name << " part " << p;
        for (int32_t e : g.in_edges(op)) {
          const Op& producer = g.op(g.edge(e).src);
          EXPECT_EQ(extents(NeededBox(o, c, p, producer)), extents(NeededBox(o, c, 0, producer)))
              << o.name << " part " << p << " input " << producer.name;
        }
      }
    }
  }
  EXPECT_GT(alike, 20);
}

TEST(Partition, ReadersReadTheNearestCopy) {
  // Two hosts of two devices: a route within a host is 2 links, across hosts 3.
  const Topology t = testing::TwoHosts(2, 1e9, 1e-6);
  const Op op = SplitOp();
  // Sample degree 2, two copies: distinct part 0 on d2 (copy 0) and d1 (copy 1), part 1 on d3 and d0.
  const OpConfig c{{2, 3, 1, 0}, {2, 1}};
  const PartLayout layout = Layout(op, c);
  ASSERT_EQ(layout.copies, 2);
  EXPECT_EQ(NearestCopy(t, c, layout, 0, 0), 2);  // d1 shares d0's host
  EXPECT_EQ(NearestCopy(t, c, layout, 1, 0), 3);  // the copy on d0 itself
  EXPECT_EQ(NearestCopy(t, c, layout, 1, 2), 1);  // d3 shares d2's host
  EXPECT_EQ(NearestCopy(t, c, layout, 0, 3), 0);  // d2 shares d3's host
  // Equally far copies: the lowest.
  const Topology mesh = testing::FullyConnected(4, 1e9, 1e-6);
  EXPECT_EQ(NearestCopy(mesh, c, layout, 0, 3), 0);
}

TEST(Partition, UpdatePartsReadAShardFromTheirDeviceElseTheLowestReplica) {
  const Op op = SplitOp();
  // Degrees 2 x 2 on d0..d3: two weight shards, each with two replicas.
  const OpConfig c{{0, 1, 2, 3}, {2, 2}};
  for (int32_t shard = 0; shard < 2; ++shard) {
    int32_t lowest = -1;
    for (int32_t p = 0; p < 4; ++p) {
      if (ShardIndex(op, c, p) != shard) continue;
      EXPECT_EQ(ShardSource(op, c, shard, c.devices[p]), p);  // the replica on the reader's own device
      if (lowest < 0 || ReplicaIndex(op, c, p) < ReplicaIndex(op, c, lowest)) lowest = p;
    }
    ASSERT_GE(lowest, 0);
    EXPECT_EQ(ReplicaIndex(op, c, lowest), 0);
    EXPECT_EQ(ShardSource(op, c, shard, 5), lowest);  // a device holding no part of the op
  }
  EXPECT_EQ(ShardSource(op, c, 2, 0), -1);  // no such shard
}

}  // namespace
}  // namespace devplace
