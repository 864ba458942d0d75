// Shared checks for generated training graphs (families and zoo tests).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "core/graph.h"

namespace devplace::testing {

// Field-by-field equality of two graphs (ops in id order, edges in order).
inline void ExpectSameGraph(const Graph& a, const Graph& b) {
  ASSERT_EQ(a.name(), b.name());
  ASSERT_EQ(a.num_ops(), b.num_ops());
  ASSERT_EQ(a.num_edges(), b.num_edges());
  for (OpId i = 0; i < a.num_ops(); ++i) {
    const Op& x = a.op(i);
    const Op& y = b.op(i);
    ASSERT_EQ(x.name, y.name);
    ASSERT_EQ(x.type, y.type);
    ASSERT_EQ(x.layer, y.layer);
    ASSERT_EQ(x.role, y.role);
    ASSERT_EQ(x.shape, y.shape);
    ASSERT_EQ(x.param_bytes, y.param_bytes);
    ASSERT_EQ(x.flops, y.flops);
    ASSERT_EQ(x.colocation, y.colocation);
    ASSERT_EQ(x.dims.size(), y.dims.size());
  }
  for (int32_t e = 0; e < a.num_edges(); ++e) {
    ASSERT_EQ(a.edge(e).src, b.edge(e).src);
    ASSERT_EQ(a.edge(e).dst, b.edge(e).dst);
    ASSERT_EQ(a.edge(e).bytes, b.edge(e).bytes);
  }
}

// A training graph: a DAG in its topological order, forward/backward/update ops, every backward and update op
// tied to an existing forward op and colocated with it, exactly one update per parameter-owning forward op.
inline void ExpectWellFormedTrainingGraph(const Graph& g) {
  ASSERT_GT(g.num_ops(), 0);
  ASSERT_EQ(static_cast<int32_t>(g.topological_order().size()), g.num_ops());
  for (const Edge& e : g.edges()) ASSERT_LT(g.topological_rank(e.src), g.topological_rank(e.dst));
  int32_t owners = 0;
  bool has_loss = false;
  for (const Op& op : g.ops()) {
    if (op.role == OpRole::kForward) {
      if (op.param_bytes > 0) ++owners;
      if (op.type.find("loss") != std::string::npos || op.type == "softmax_cross_entropy") has_loss = true;
      ASSERT_FALSE(op.shape.empty()) << op.name;
      continue;
    }
    const OpId f = g.find(op.forward_op);
    ASSERT_GE(f, 0) << op.name;
    ASSERT_EQ(g.op(f).role, OpRole::kForward);
    ASSERT_EQ(g.op(f).colocation, op.colocation) << op.name;
  }
  EXPECT_TRUE(has_loss);
  EXPECT_GT(g.count_role(OpRole::kBackward), 0);
  EXPECT_EQ(g.count_role(OpRole::kUpdate), owners);
}

// Sum of the FLOPs of the forward ops.
inline double ForwardFlops(const Graph& g) {
  double total = 0;
  for (const Op& op : g.ops())
    if (op.role == OpRole::kForward) total += op.flops;
  return total;
}

}  // namespace devplace::testing
