#include "core/graph.h"

#include <gtest/gtest.h>

#include "core/colocation.h"

namespace devplace {
namespace {

Op MakeOp(const std::string& name, std::vector<int64_t> shape = {4, 8}, double flops = 10) {
  Op op;
  op.name = name;
  op.type = "matmul";
  op.shape = std::move(shape);
  op.flops = flops;
  return op;
}

TEST(Graph, BuildsCsrAdjacencyAndTopologicalOrder) {
  GraphBuilder b("diamond");
  OpId a = b.add_op(MakeOp("a"));
  OpId c = b.add_op(MakeOp("c"));
  OpId bb = b.add_op(MakeOp("b"));
  OpId d = b.add_op(MakeOp("d"));
  b.add_edge(a, bb);
  b.add_edge(a, c, 7);
  b.add_edge(bb, d);
  b.add_edge(c, d);
  Expected<Graph> g = std::move(b).Build();
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->num_ops(), 4);
  EXPECT_EQ(g->num_edges(), 4);
  ASSERT_EQ(g->out_edges(a).size(), 2u);
  // Sorted by destination id: c (1) before b (2).
  EXPECT_EQ(g->edge(g->out_edges(a)[0]).dst, c);
  EXPECT_EQ(g->edge(g->out_edges(a)[0]).bytes, 7);
  EXPECT_EQ(g->edge(g->out_edges(a)[1]).bytes, 4 * 8 * 4);  // default: producer's output bytes
  EXPECT_EQ(g->in_edges(d).size(), 2u);
  EXPECT_EQ(g->topological_order(), (std::vector<OpId>{a, c, bb, d}));
  EXPECT_EQ(g->topological_rank(d), 3);
  EXPECT_EQ(g->find("b"), bb);
  EXPECT_EQ(g->find("zzz"), -1);
  EXPECT_DOUBLE_EQ(g->total_flops(), 40);
}

TEST(Graph, NamesEachOpsForwardOp) {
  GraphBuilder b("fwd");
  OpId f = b.add_op(MakeOp("f"));
  Op grad = MakeOp("f/grad");
  grad.role = OpRole::kBackward;
  grad.forward_op = "f";
  OpId g = b.add_op(grad);
  Op orphan = MakeOp("orphan/grad");
  orphan.role = OpRole::kBackward;
  orphan.forward_op = "gone";  // names no op of the graph
  OpId o = b.add_op(orphan);
  b.add_edge(f, g);
  Expected<Graph> graph = std::move(b).Build();
  ASSERT_TRUE(graph.ok()) << graph.error().message;
  EXPECT_EQ(graph->forward_op_of(g), f);
  EXPECT_EQ(graph->forward_op_of(f), -1);
  EXPECT_EQ(graph->forward_op_of(o), -1);
}

std::string BuildError(GraphBuilder b) {
  Expected<Graph> g = std::move(b).Build();
  return g.ok() ? "" : g.error().message;
}

TEST(Graph, RejectsCycleNamingAnOpOnIt) {
  GraphBuilder b;
  OpId x = b.add_op(MakeOp("x"));
  OpId y = b.add_op(MakeOp("y"));
  OpId z = b.add_op(MakeOp("z"));
  OpId w = b.add_op(MakeOp("w"));
  b.add_edge(w, x);
  b.add_edge(x, y);
  b.add_edge(y, z);
  b.add_edge(z, x);
  std::string err = BuildError(std::move(b));
  EXPECT_NE(err.find("cycle"), std::string::npos) << err;
  EXPECT_TRUE(err.find("'x'") != std::string::npos || err.find("'y'") != std::string::npos ||
              err.find("'z'") != std::string::npos)
      << err;
  EXPECT_EQ(err.find("'w'"), std::string::npos) << err;
}

TEST(Graph, RejectsBadInputWithTheOpName) {
  {
    GraphBuilder b;
    b.add_op(MakeOp("dup"));
    b.add_op(MakeOp("dup"));
    EXPECT_EQ(BuildError(std::move(b)), "op 'dup': duplicate op name");
  }
  {
    GraphBuilder b;
    b.add_op(MakeOp("neg", {4}, -1));
    EXPECT_NE(BuildError(std::move(b)).find("op 'neg': flops"), std::string::npos);
  }
  {
    GraphBuilder b;
    b.add_op(MakeOp("zero", {4, 0}));
    EXPECT_NE(BuildError(std::move(b)).find("op 'zero': shape[1]"), std::string::npos);
  }
  {
    GraphBuilder b;
    b.add_op(MakeOp("huge", {1 << 20, 1 << 20, 1 << 20}));
    EXPECT_NE(BuildError(std::move(b)).find("absurd"), std::string::npos);
  }
  {
    GraphBuilder b;
    b.add_op(MakeOp("absurd_flops", {4}, 1e30));
    EXPECT_NE(BuildError(std::move(b)).find("op 'absurd_flops'"), std::string::npos);
  }
  {
    GraphBuilder b;
    OpId a = b.add_op(MakeOp("a"));
    b.add_edge(a, 5);
    std::string err = BuildError(std::move(b));
    EXPECT_NE(err.find("from op 'a'"), std::string::npos) << err;
    EXPECT_NE(err.find("does not exist"), std::string::npos) << err;
  }
  {
    GraphBuilder b;
    OpId a = b.add_op(MakeOp("a"));
    OpId c = b.add_op(MakeOp("c"));
    b.add_edge(a, c);
    b.add_edge(a, c);
    EXPECT_EQ(BuildError(std::move(b)), "op 'a': duplicate edge to 'c'");
  }
  {
    GraphBuilder b;
    OpId a = b.add_op(MakeOp("a"));
    b.add_edge(a, a);
    EXPECT_EQ(BuildError(std::move(b)), "op 'a': has an edge to itself");
  }
  {
    GraphBuilder b;
    Op op = MakeOp("badim");
    op.dims.push_back(PartitionDim{DimKind::kSample, 0, 0, 5});  // shape[0] is 4
    b.add_op(op);
    EXPECT_NE(BuildError(std::move(b)).find("op 'badim': dims[0]: size 5 differs"), std::string::npos);
  }
}

TEST(Graph, DTypeAndRoleNamesRoundTrip) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64, DType::kI64, DType::kI32, DType::kI8,
                  DType::kBool}) {
    DType parsed;
    ASSERT_TRUE(ParseDType(ToString(t), &parsed));
    EXPECT_EQ(parsed, t);
  }
  DType unused;
  EXPECT_FALSE(ParseDType("f12", &unused));
  EXPECT_EQ(DTypeBytes(DType::kBF16), 2);
  OpRole role;
  ASSERT_TRUE(ParseOpRole("update", &role));
  EXPECT_EQ(role, OpRole::kUpdate);
}

}  // namespace
}  // namespace devplace

namespace devplace {
namespace {

// Two unrolled layers: x0 -> a0 -> b0 -> x1 -> a1 -> b1, a* in layer "a" (colocated weights), b* in layer "b",
// and an op without a layer. Layers are numbered as the groups, in topological order, first reach them.
TEST(GroupLayerIndex, LayersInDataFlowOrderAndLayerlessGroupsAlone) {
  GraphBuilder b("unrolled");
  auto op = [&](const std::string& name, const std::string& layer, const std::string& colocation) {
    Op o = MakeOp(name);
    o.layer = layer;
    o.colocation = colocation;
    return b.add_op(std::move(o));
  };
  const OpId x0 = op("x0", "", ""), a0 = op("a0", "a", "wa"), b0 = op("b0", "b", ""), x1 = op("x1", "", "");
  const OpId a1 = op("a1", "a", "wa"), b1 = op("b1", "b", "");
  b.add_edge(x0, a0);
  b.add_edge(a0, b0);
  b.add_edge(b0, x1);
  b.add_edge(x1, a1);
  b.add_edge(a1, b1);
  Expected<Graph> g = std::move(b).Build();
  ASSERT_TRUE(g.ok()) << g.error().message;
  const OpGroups groups = ColocationGroups(*g);
  const std::vector<int32_t> layer = GroupLayerIndex(*g, groups);
  ASSERT_EQ(layer.size(), static_cast<size_t>(groups.num_groups()));
  auto of = [&](OpId o) { return layer[groups.group_of_op[o]]; };
  EXPECT_EQ(of(x0), 0);
  EXPECT_EQ(of(a0), 1);
  EXPECT_EQ(of(a1), 1);  // one group with a0
  EXPECT_EQ(of(b0), 2);
  EXPECT_EQ(of(b1), 2);  // its own group, the same layer
  EXPECT_EQ(of(x1), 3);  // no layer: a layer of its own
}

}  // namespace
}  // namespace devplace
