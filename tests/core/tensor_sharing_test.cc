// The tensor-sharing rule (core/tensor_sharing.h): which edges carry one tensor to one place, on hand-made graphs
// and, against the rule written out edge by edge, on random graphs and placements.
#include "core/tensor_sharing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace devplace {
namespace {

Op MakeOp(const std::string& name, OpRole role = OpRole::kForward) {
  Op op;
  op.name = name;
  op.type = "matmul";
  op.shape = {4, 8};  // 128 bytes of f32
  op.flops = 10;
  op.role = role;
  return op;
}

// `prefix` followed by `n` (built without operator+ on a literal, which GCC 12 warns about wrongly).
std::string Named(const char* prefix, int64_t n) { return std::string(prefix).append(std::to_string(n)); }

Graph Build(GraphBuilder b) {
  Expected<Graph> g = std::move(b).Build();
  if (!g) throw std::runtime_error(g.error().message);
  return std::move(g).value();
}

TEST(TensorSharing, ConsumersOnOnePlaceShareTheSmallestEdge) {
  GraphBuilder b("star");
  const OpId u = b.add_op(MakeOp("u"));
  for (int i = 0; i < 5; ++i) b.add_op(MakeOp(Named("v", i)));
  for (OpId v = 1; v <= 5; ++v) b.add_edge(u, v);
  const Graph g = Build(std::move(b));
  // v0, v1 on place 1, v2 and v4 on place 2, v3 with u on place 0.
  EXPECT_EQ(CarrierEdges(g, std::vector<int32_t>{0, 1, 1, 2, 0, 2}), (std::vector<int32_t>{0, 0, 2, -1, 2}));
  EXPECT_TRUE(SameTensor(g, 0, 4));
  EXPECT_TRUE(SharesTensor(g, 3));  // whether it crosses is the placement's business
}

TEST(TensorSharing, TheSmallestEdgeIdCarriesNotTheFirstInTheOutList) {
  GraphBuilder b("order");
  const OpId u = b.add_op(MakeOp("u"));
  const OpId a = b.add_op(MakeOp("a"));
  const OpId c = b.add_op(MakeOp("c"));
  b.add_edge(u, c);  // edge 0, listed after edge 1 (out-lists are sorted by consumer)
  b.add_edge(u, a);  // edge 1
  const Graph g = Build(std::move(b));
  ASSERT_EQ(g.out_edges(u)[0], 1);
  EXPECT_EQ(CarrierEdges(g, std::vector<int32_t>{0, 1, 1}), (std::vector<int32_t>{0, 0}));
}

TEST(TensorSharing, DifferentBytesAndEmptyEdgesAreSeparate) {
  GraphBuilder b("slices");
  const OpId u = b.add_op(MakeOp("u"));
  for (int i = 0; i < 5; ++i) b.add_op(MakeOp(Named("v", i)));
  b.add_edge(u, 1);       // the whole output
  b.add_edge(u, 2, 64);   // a slice
  b.add_edge(u, 3, 64);   // the same slice
  b.add_edge(u, 4, 0);    // nothing
  b.add_edge(u, 5, 0);    // nothing
  const Graph g = Build(std::move(b));
  EXPECT_EQ(CarrierEdges(g, std::vector<int32_t>{0, 1, 1, 1, 1, 1}), (std::vector<int32_t>{0, 1, 1, -1, -1}));
  EXPECT_FALSE(SameTensor(g, 0, 1));
  EXPECT_FALSE(SharesTensor(g, 3));
  EXPECT_FALSE(SameTensor(g, 3, 4));
}

TEST(TensorSharing, GradientsAndUpdateConsumersAreTensorsOfTheirOwn) {
  GraphBuilder b("roles");
  const OpId u = b.add_op(MakeOp("u"));
  const OpId v = b.add_op(MakeOp("v"));
  const OpId w = b.add_op(MakeOp("w", OpRole::kUpdate));
  const OpId g1 = b.add_op(MakeOp("g1", OpRole::kBackward));
  const OpId x = b.add_op(MakeOp("x", OpRole::kBackward));
  const OpId y = b.add_op(MakeOp("y", OpRole::kBackward));
  b.add_edge(u, w);  // edge 0: into an update op, same bytes and place as edge 1
  b.add_edge(u, v);  // edge 1
  b.add_edge(g1, x);  // edges 2, 3: a backward op's gradients
  b.add_edge(g1, y);
  const Graph g = Build(std::move(b));
  EXPECT_EQ(CarrierEdges(g, std::vector<int32_t>{0, 1, 1, 0, 1, 1}), (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_FALSE(SharesTensor(g, 0));
  EXPECT_FALSE(SameTensor(g, 0, 1));
  EXPECT_FALSE(SameTensor(g, 2, 3));
}

// The rule edge by edge: the smallest edge carrying the same tensor across to the same place.
std::vector<int32_t> ByDefinition(const Graph& g, const std::vector<int32_t>& place) {
  std::vector<int32_t> carrier(static_cast<size_t>(g.num_edges()), -1);
  for (int32_t e = 0; e < g.num_edges(); ++e) {
    const Edge& edge = g.edge(e);
    if (place[edge.src] == place[edge.dst] || edge.bytes == 0) continue;
    carrier[e] = e;
    for (int32_t f = 0; f < e; ++f)
      if (SameTensor(g, e, f) && place[g.edge(f).dst] == place[edge.dst]) {
        carrier[e] = f;
        break;
      }
  }
  return carrier;
}

TEST(TensorSharing, RandomGraphsFollowTheRuleAndAssignIsReusable) {
  std::mt19937_64 rng(7);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  for (int round = 0; round < 40; ++round) {
    GraphBuilder b("random");
    const int ops = 20 + pick(40);
    for (int k = 0; k < ops; ++k) {
      const int role = pick(6);
      b.add_op(MakeOp(Named("op", k), role < 4 ? OpRole::kForward : role == 4 ? OpRole::kBackward
                                                                                        : OpRole::kUpdate));
      std::vector<OpId> from;
      for (int f = pick(5); f > 0 && k > 0; --f) {
        const OpId src = k - 1 - pick(std::min(k, 6));
        if (std::find(from.begin(), from.end(), src) != from.end()) continue;
        from.push_back(src);
        const int kind = pick(4);
        b.add_edge(src, k, kind == 0 ? 0 : kind == 1 ? 16 * (1 + pick(2)) : -1);
      }
    }
    const Graph g = Build(std::move(b));
    TensorCarriers carriers(g);
    for (int placement = 0; placement < 5; ++placement) {
      const int places = 1 + pick(4);
      std::vector<int32_t> place(static_cast<size_t>(ops));
      for (int32_t& p : place) p = pick(places);
      carriers.Assign(place, places);
      std::vector<int32_t> carrier(static_cast<size_t>(g.num_edges()));
      for (int32_t e = 0; e < g.num_edges(); ++e)
        carrier[e] = carriers.carrier(e, place[g.edge(e).src] != place[g.edge(e).dst]);
      ASSERT_EQ(carrier, ByDefinition(g, place)) << "round " << round << ", placement " << placement;
    }
  }
}

}  // namespace
}  // namespace devplace
