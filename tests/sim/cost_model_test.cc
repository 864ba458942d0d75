// Cost models: the analytic roofline, overrides, the profiled table with fallback, and the JSON reader.
#include <gtest/gtest.h>

#include "sim/cost_model.h"
#include "sim/estimates.h"
#include "sim/simulator.h"
#include "tests/testing/sim_fixtures.h"

namespace devplace {
namespace {

PartWork Work(const Op& op, double flops, int64_t bytes) {
  PartWork w;
  w.op = &op;
  w.shape = op.shape;
  w.flops = flops;
  w.bytes_accessed = bytes;
  return w;
}

TEST(AnalyticCost, IsTheRooflinePlusLaunchOverhead) {
  const Device d = testing::MakeDevice("d");  // 1e12 FLOP/s, 1e11 B/s
  const Op op = testing::MakeOp("m", 0);
  const CostModel cost = MakeAnalyticCostModel();
  // Compute-bound: 1e9 / (1e12 * 0.5) = 2 ms.
  EXPECT_NEAR(cost.Cost(Work(op, 1e9, 1000), d).seconds, 5e-6 + 2e-3, 1e-15);
  // Memory-bound: 7e8 bytes / (1e11 * 0.7) = 10 ms.
  EXPECT_NEAR(cost.Cost(Work(op, 1e6, 700000000), d).seconds, 5e-6 + 1e-2, 1e-15);
  EXPECT_FALSE(cost.Cost(Work(op, 1e9, 0), d).fallback);
}

TEST(AnalyticCost, MostSpecificRuleWins) {
  AnalyticCostOptions o;
  o.rules.push_back({"", "test", 0.25, -1, -1});      // the device kind
  o.rules.push_back({"matmul", "", 1.0, -1, 0.0});    // the op type
  o.rules.push_back({"matmul", "test", -1, -1, 1e-6});  // both
  const CostModel cost = MakeAnalyticCostModel(o);
  const Device d = testing::MakeDevice("d");
  Op relu = testing::MakeOp("r", 0);
  relu.type = "relu";
  Op matmul = relu;
  matmul.type = "matmul";
  EXPECT_NEAR(cost.Cost(Work(relu, 1e9, 0), d).seconds, 5e-6 + 1e9 / (1e12 * 0.25), 1e-15);
  EXPECT_NEAR(cost.Cost(Work(matmul, 1e9, 0), d).seconds, 1e-6 + 1e9 / 1e12, 1e-15);
  o.compute_efficiency = 1.5;
  EXPECT_FALSE(ValidateAnalyticCostOptions(o).ok());
}

TEST(ProfiledCost, UsesMeasuredTimesAndCountsFallbacks) {
  GraphBuilder b("two");
  Op a = testing::MakeOp("a", 1e6, {64, 32});
  a.type = "matmul";
  b.add_op(a);
  b.add_op(testing::MakeOp("b", 1e6, {16}));
  b.add_edge(0, 1);
  const Graph g = *std::move(b).Build();
  const Topology t = testing::FullyConnected(2, 1e9, 1e-6);
  CostTable table;
  table.entries.push_back({"test", "matmul", OpRole::kForward, DType::kF32, {64, 32}, 1e6, 0.25});
  table.entries.push_back({"test", "matmul", OpRole::kForward, DType::kF32, {64, 32}, 2e6, 0.5});  // other FLOPs
  const CostModel cost = MakeProfiledCostModel(table);
  const SimResult r = *Simulate(g, t, Strategy::AllOn(2, 0), cost);
  EXPECT_EQ(r.cost_fallbacks, 1);  // "b" has no entry
  const double b_time = MakeAnalyticCostModel().ComputeTime(g, 1, OpConfig{{0}, {}}, 0, t.device(0));
  EXPECT_NEAR(r.step_time, 0.25 + b_time, 1e-12);
  EXPECT_EQ(cost.ComputeTime(g, 0, OpConfig{{0}, {}}, 0, t.device(0)), 0.25);
}

// EstimateOps prices each op's work once per device: the same seconds as ComputeTime of the whole op on that
// device, for the analytic model and for a profiled table (measured entries and fallbacks), on a machine of two
// device kinds.
TEST(Estimates, EveryOpOnEveryDeviceCostsItsWholeComputeTime) {
  TopologyBuilder tb("two-kinds");
  tb.add_device(testing::MakeDevice("slow"));
  Device fast = testing::MakeDevice("fast");
  fast.kind = "fast";
  fast.peak_flops_f32 = fast.peak_flops_f16 = 3e12;
  fast.memory_bandwidth = 4e11;
  tb.add_device(fast);
  tb.add_bidirectional_link(0, 1, 1e10, 1e-6, "nvlink");
  const Topology t = *std::move(tb).Build();
  const Graph g = testing::RandomTrainingGraph(3, 40);
  CostTable table;  // the first op measured on the slow kind, everything else from the analytic fallback
  const Op& first = g.op(0);
  table.entries.push_back({"test", first.type, first.role, first.dtype, first.shape, first.flops, 0.125});
  for (const CostModel& cost : {MakeAnalyticCostModel(), MakeProfiledCostModel(table)}) {
    const OpEstimates e = EstimateOps(g, t, cost, 0.5);
    int differ = 0;
    for (OpId op = 0; op < g.num_ops(); ++op) {
      for (DeviceId d = 0; d < 2; ++d)
        EXPECT_EQ(e.time(op, d), cost.ComputeTime(g, op, OpConfig{{d}, {}}, 0, t.device(d))) << g.op(op).name;
      differ += e.time(op, 0) != e.time(op, 1) ? 1 : 0;
      EXPECT_EQ(e.memory_bytes[op], OpMemoryEstimate(g.op(op), 0.5));
    }
    EXPECT_GT(differ, g.num_ops() / 2);
  }
  EXPECT_EQ(EstimateOps(g, t, MakeProfiledCostModel(table), 0.5).time(0, 0), 0.125);
}

TEST(CostTableJson, RoundTripsAndRejectsBadInput) {
  CostTable table;
  table.analytic.compute_efficiency = 0.75;
  table.analytic.launch_overhead = 4e-6;
  table.analytic.rules.push_back({"conv2d", "v100", 0.5, -1, -1});
  table.entries.push_back({"v100", "conv2d", OpRole::kBackward, DType::kF16, {32, 64, 56, 56}, 3.5e9, 1.25e-3});
  const std::string text = CostTableToJson(table);
  Expected<CostTable> back = CostTableFromJson(text, "c.json");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->analytic.compute_efficiency, 0.75);
  EXPECT_NEAR(back->analytic.launch_overhead, 4e-6, 1e-18);
  EXPECT_EQ(back->analytic.rules, table.analytic.rules);
  ASSERT_EQ(back->entries.size(), 1u);
  EXPECT_EQ(back->entries[0].shape, table.entries[0].shape);
  EXPECT_EQ(back->entries[0].role, OpRole::kBackward);
  EXPECT_EQ(back->entries[0].seconds, 1.25e-3);

  auto error_of = [](const std::string& json) {
    Expected<CostTable> t = CostTableFromJson(json, "c.json");
    return t.ok() ? std::string("(accepted)") : t.error().message;
  };
  const std::string head = R"({"format": "devplace.costs", "version": 1, )";
  EXPECT_NE(error_of(head + R"("entries": [{"device_kind": "v100", "op_type": "x", "shape": [2], "flops": 1,
      "seconds": 1, "colour": 3}]})").find("c.json: entries[0].colour: unknown field"), std::string::npos);
  EXPECT_NE(error_of(head + R"("entries": [{"device_kind": "v100", "op_type": "x", "shape": [2], "flops": 1,
      "seconds": 0}]})").find("c.json: entries[0].seconds: must be > 0"), std::string::npos);
  EXPECT_NE(error_of(head + R"("analytic": {"memory_efficiency": 2}, "entries": []})")
                .find("c.json: analytic.memory_efficiency"), std::string::npos);
  EXPECT_NE(error_of(R"({"format": "other", "version": 1, "entries": []})").find("c.json: format"),
            std::string::npos);
  EXPECT_NE(error_of("{").find("c.json"), std::string::npos);
}

}  // namespace
}  // namespace devplace
