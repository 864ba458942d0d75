#include "core/training_graph.h"

#include <gtest/gtest.h>

namespace devplace {
namespace {

// A 3-op MLP: input x [32, 100] -> fc1 (matmul 100x50 + bias) [32, 50] -> relu [32, 50]. Worked by hand.
Graph Mlp() {
  GraphBuilder b("mlp");
  Op x{.name = "x", .type = "input", .layer = "input", .shape = {32, 100}};
  Op fc{.name = "fc1", .type = "matmul", .layer = "fc1", .shape = {32, 50}};
  fc.param_bytes = (100 * 50 + 50) * 4;
  fc.flops = 2.0 * 32 * 100 * 50;
  Op relu{.name = "relu", .type = "relu", .layer = "fc1", .shape = {32, 50}};
  relu.flops = 32 * 50;
  OpId ix = b.add_op(x), ifc = b.add_op(fc), ir = b.add_op(relu);
  b.add_edge(ix, ifc);
  b.add_edge(ifc, ir);
  return std::move(b).Build().value();
}

int64_t EdgeBytes(const Graph& g, const std::string& src, const std::string& dst) {
  OpId s = g.find(src), d = g.find(dst);
  for (int32_t e : g.out_edges(s))
    if (g.edge(e).dst == d) return g.edge(e).bytes;
  return -1;
}

TEST(TrainingGraph, DerivesBackwardAndUpdateOpsOfAnMlpByHand) {
  Graph fwd = Mlp();
  Expected<Graph> t = DeriveTrainingGraph(fwd);
  ASSERT_TRUE(t.ok()) << t.error().message;
  const Graph& g = *t;
  // x has no parameters and no inputs: no gradient. fc1 and relu get one each; fc1 gets an update.
  EXPECT_EQ(g.num_ops(), 3 + 2 + 1);
  EXPECT_EQ(g.count_role(OpRole::kBackward), 2);
  EXPECT_EQ(g.count_role(OpRole::kUpdate), 1);
  EXPECT_EQ(g.find("x/grad"), -1);
  // Ids: forward ops unchanged, then backward in reverse topological order, then updates.
  EXPECT_EQ(g.find("relu/grad"), 3);
  EXPECT_EQ(g.find("fc1/grad"), 4);
  EXPECT_EQ(g.find("fc1/update"), 5);

  const Op& fc_grad = g.op(g.find("fc1/grad"));
  EXPECT_EQ(fc_grad.role, OpRole::kBackward);
  EXPECT_DOUBLE_EQ(fc_grad.flops, 2 * 2.0 * 32 * 100 * 50);  // input and weight gradients
  EXPECT_DOUBLE_EQ(g.op(g.find("relu/grad")).flops, 32 * 50);  // no parameters: 1x
  const Op& update = g.op(g.find("fc1/update"));
  EXPECT_DOUBLE_EQ(update.flops, 10.0 * (100 * 50 + 50));
  EXPECT_EQ(update.forward_op, "fc1");

  // Colocation: each forward op with its backward and update ops.
  EXPECT_EQ(g.op(g.find("fc1")).colocation, "fc1");
  EXPECT_EQ(fc_grad.colocation, "fc1");
  EXPECT_EQ(update.colocation, "fc1");
  EXPECT_EQ(g.op(g.find("relu/grad")).colocation, "relu");

  const int64_t act = 32 * 50 * 4;
  // Edges: 2 forward + 2 saved outputs (f -> f/grad) + 2 saved inputs + 1 gradient (relu/grad -> fc1/grad)
  // + 1 weight gradient.
  EXPECT_EQ(g.num_edges(), 8);
  EXPECT_EQ(EdgeBytes(g, "relu/grad", "fc1/grad"), act);
  EXPECT_EQ(EdgeBytes(g, "fc1", "relu/grad"), act);  // relu's saved input
  EXPECT_EQ(EdgeBytes(g, "relu", "relu/grad"), act);  // relu's saved output
  EXPECT_EQ(EdgeBytes(g, "x", "fc1/grad"), 32 * 100 * 4);
  EXPECT_EQ(EdgeBytes(g, "fc1/grad", "fc1/update"), (100 * 50 + 50) * 4);
  EXPECT_EQ(EdgeBytes(g, "fc1/grad", "x"), -1);  // x needs no gradient
  // Gradients flow backwards: relu/grad comes before fc1/grad in topological order.
  EXPECT_LT(g.topological_rank(g.find("relu/grad")), g.topological_rank(g.find("fc1/grad")));
}

TEST(TrainingGraph, RejectsGraphsThatAreAlreadyTrainingGraphs) {
  Graph t = DeriveTrainingGraph(Mlp()).value();
  Expected<Graph> again = DeriveTrainingGraph(t);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message.find("role is backward"), std::string::npos);
}

TEST(TrainingGraph, KeepsAnExistingColocationGroup) {
  GraphBuilder b;
  Op a{.name = "a", .type = "lstm", .shape = {2}, .param_bytes = 8, .flops = 1, .colocation = "layer0"};
  Op c{.name = "c", .type = "lstm", .shape = {2}, .flops = 1, .colocation = "layer0"};
  b.add_edge(b.add_op(a), b.add_op(c));
  Graph g = DeriveTrainingGraph(std::move(b).Build().value()).value();
  EXPECT_EQ(g.op(g.find("c/grad")).colocation, "layer0");
  EXPECT_EQ(g.op(g.find("a/update")).colocation, "layer0");
}

}  // namespace
}  // namespace devplace
