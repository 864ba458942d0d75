// AlignedCuts (core/cut_alignment.h) against the boxes it stands for (core/partition.h).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/cut_alignment.h"
#include "core/partition.h"
#include "tests/testing/sim_fixtures.h"

namespace devplace {
namespace {

// An [rows, 4] op with a sample dim (axis 0 in and out), an attribute dim (axis 1) and a reduction dim (no output
// axis, input axis 1).
Op RowOp(const std::string& name, int64_t rows) {
  Op op = testing::MakeOp(name, 1e6, {rows, 4});
  op.dims = {{DimKind::kSample, 0, 0, rows}, {DimKind::kAttribute, 1, 1, 4}, {DimKind::kReduction, -1, 1, 4}};
  return op;
}

TEST(CutAlignment, HandCheckedPairs) {
  const Op u = RowOp("u", 8), v = RowOp("v", 8);
  const OpConfig rows{{0, 1}, {2, 1, 1}};
  bool even = false;
  EXPECT_TRUE(AlignedCuts(u, rows, v, rows, &even));
  EXPECT_TRUE(even);
  EXPECT_TRUE(AlignedCuts(u, rows, v, OpConfig{{3, 2}, {2, 1, 1}}));      // other devices: the same cuts
  EXPECT_TRUE(AlignedCuts(u, OpConfig{{0, 1, 2, 3}, {2, 2, 1}}, v, OpConfig{{3, 2, 1, 0}, {2, 2, 1}}));
  EXPECT_FALSE(AlignedCuts(u, rows, v, OpConfig{{0, 1}, {1, 2, 1}}));     // the consumer cuts columns
  EXPECT_FALSE(AlignedCuts(u, rows, v, OpConfig{{0, 1, 2, 3}, {4, 1, 1}}));  // another degree
  EXPECT_FALSE(AlignedCuts(u, rows, v, OpConfig{{0, 1, 2, 3}, {2, 2, 1}}));  // the consumer cuts more
  EXPECT_FALSE(AlignedCuts(u, OpConfig{{0, 1, 2, 3}, {2, 1, 2}}, v, OpConfig{{0, 1, 2, 3}, {2, 1, 2}}));  // sums
  EXPECT_TRUE(AlignedCuts(u, OpConfig{{0}, {}}, v, OpConfig{{1}, {}}));   // whole at both ends
  // Ten rows in four parts (2, 3, 2, 3 rows): aligned, not even.
  const Op u10 = RowOp("u", 10), v10 = RowOp("v", 10);
  const OpConfig four{{0, 1, 2, 3}, {4, 1, 1}};
  EXPECT_TRUE(AlignedCuts(u10, four, v10, four, &even));
  EXPECT_FALSE(even);
}

// The consumer config that pairs each dim the producer config cuts, in order, with the next consumer dim reading
// the same axis (the same degree, the same number of parts on shuffled devices); the producer's config when none.
OpConfig PairedConfig(const Op& producer, const OpConfig& pc, const Op& consumer, std::mt19937_64& rng) {
  OpConfig c;
  c.degrees.assign(consumer.dims.size(), 1);
  size_t k = 0;
  for (size_t j = 0; j < pc.degrees.size(); ++j) {
    if (pc.degrees[j] == 1) continue;
    while (k < consumer.dims.size() &&
           (consumer.dims[k].input_axis != producer.dims[j].output_axis || consumer.dims[k].size < pc.degrees[j]))
      ++k;
    if (k == consumer.dims.size()) return pc;
    c.degrees[k++] = pc.degrees[j];
  }
  c.devices = pc.devices;
  std::shuffle(c.devices.begin(), c.devices.end(), rng);
  return c;
}

// Property: over random training graphs and configs, whenever AlignedCuts holds for an edge, every consumer part
// needs exactly producer part q % distinct's computed box, the producer's distinct boxes are disjoint and owned as
// computed, and `even` says whether every part's box holds the same share of the elements.
TEST(CutAlignment, AlignedEdgesNeedExactlyTheProducersBoxesOnRandomGraphs) {
  std::mt19937_64 rng(11);
  int cut = 0;  // aligned edges whose producer is cut
  for (uint64_t seed = 0; seed < 30; ++seed) {
    const Graph g = testing::RandomTrainingGraph(seed, 24);
    for (int32_t e = 0; e < g.num_edges(); ++e) {
      const Op& u = g.op(g.edge(e).src);
      const Op& v = g.op(g.edge(e).dst);
      const OpConfig pc = testing::RandomConfig(g, g.edge(e).src, 8, 0.9, rng);
      for (const OpConfig& cc : {PairedConfig(u, pc, v, rng), testing::RandomConfig(g, g.edge(e).dst, 8, 0.9, rng)}) {
        if (cc.degrees.size() != v.dims.size() && !cc.degrees.empty()) continue;  // the producer's, not v's
        bool even = false;
        if (!AlignedCuts(u, pc, v, cc, &even)) continue;
        const PartLayout layout = Layout(u, pc);
        ASSERT_EQ(layout.reduction, 1);
        if (layout.distinct > 1) ++cut;
        for (int32_t q = 0; q < cc.num_parts(); ++q)
          ASSERT_TRUE(SameBox(NeededBox(v, cc, q, u), ComputedBox(u, pc, q % layout.distinct)))
              << u.name << " -> " << v.name << " part " << q;
        for (int32_t p = 0; p < layout.distinct; ++p) {
          const Box box = ComputedBox(u, pc, p);
          ASSERT_TRUE(SameBox(OwnedBox(u, pc, p), box));
          if (even) {
            ASSERT_EQ(Volume(box) * layout.distinct, NumElements(u)) << u.name << " part " << p;
          }
          for (int32_t r = p + 1; r < layout.distinct; ++r) ASSERT_EQ(OverlapVolume(box, ComputedBox(u, pc, r)), 0);
        }
      }
    }
  }
  EXPECT_GT(cut, 200);
}

}  // namespace
}  // namespace devplace
