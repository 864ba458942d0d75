// The analytic model against a profiled table, per op type: hand-checked ratios and quantiles.
#include <gtest/gtest.h>

#include "sim/cost_error.h"
#include "tests/testing/sim_fixtures.h"

namespace devplace {
namespace {

// Four ops: two matmuls measured at twice the analytic estimate, one relu at half of it, one op not measured.
TEST(CostError, ReportsPerOpTypeErrorsOfTheAnalyticModelAgainstMeasurements) {
  GraphBuilder b("four");
  const char* types[] = {"matmul", "matmul", "relu", "softmax"};
  for (int i = 0; i < 4; ++i) {
    Op op = testing::MakeOp("op" + std::to_string(i), 1e6 * (i + 1), {64, 32});
    op.type = types[i];
    b.add_op(op);
  }
  for (int i = 0; i + 1 < 4; ++i) b.add_edge(i, i + 1);
  const Graph g = *std::move(b).Build();
  const Topology t = testing::FullyConnected(2, 1e9, 1e-6);
  const CostModel analytic = MakeAnalyticCostModel();
  const OpConfig whole{{0}, {}};
  CostTable table;
  const double factor[] = {2.0, 2.0, 0.5};
  for (OpId op = 0; op < 3; ++op) {
    const Op& o = g.op(op);
    table.entries.push_back({t.device(0).kind, o.type, o.role, o.dtype, o.shape, o.flops,
                             factor[op] * analytic.ComputeTime(g, op, whole, 0, t.device(0))});
  }
  Expected<std::vector<CostErrorRow>> rows = CompareAnalyticWithProfile(g, t, table, {});
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  ASSERT_EQ(rows->size(), 3u);  // matmul (the most measured time), relu, all
  const CostErrorRow& matmul = (*rows)[0];
  EXPECT_EQ(matmul.op_type, "matmul");
  EXPECT_EQ(matmul.ops, 2);
  EXPECT_NEAR(matmul.median_ratio, 0.5, 1e-12);
  EXPECT_NEAR(matmul.median_abs_error, 0.5, 1e-12);
  EXPECT_NEAR(matmul.measured_seconds, 2.0 * matmul.analytic_seconds, 1e-15);
  const CostErrorRow& relu = (*rows)[1];
  EXPECT_EQ(relu.op_type, "relu");
  EXPECT_NEAR(relu.median_ratio, 2.0, 1e-12);
  EXPECT_NEAR(relu.p90_abs_error, 1.0, 1e-12);
  const CostErrorRow& all = (*rows)[2];
  EXPECT_EQ(all.op_type, "all");
  EXPECT_EQ(all.ops, 3);  // the unmeasured softmax is left out
  EXPECT_NEAR(all.median_abs_error, 0.5, 1e-12);
  EXPECT_NEAR(all.p90_abs_error, 1.0, 1e-12);  // nearest rank: the 3rd of 3
  EXPECT_NEAR(all.median_ratio, 0.5, 1e-12);
}

TEST(CostError, RefusesATableThatMeasuresNoOpOfTheGraph) {
  GraphBuilder b("one");
  b.add_op(testing::MakeOp("a", 1e6, {8}));
  const Graph g = *std::move(b).Build();
  CostTable table;
  table.entries.push_back({"other-kind", "matmul", OpRole::kForward, DType::kF32, {8}, 1e6, 1e-3});
  Expected<std::vector<CostErrorRow>> rows =
      CompareAnalyticWithProfile(g, testing::FullyConnected(1, 1e9, 1e-6), table, {});
  ASSERT_FALSE(rows.ok());
  EXPECT_NE(rows.error().message.find("measures none"), std::string::npos);
}

}  // namespace
}  // namespace devplace
