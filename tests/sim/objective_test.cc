// The shared objective (sim/objective.h) and estimates (sim/estimates.h): the order every search ranks by, the
// penalised time the environments reward, the per-op memory estimates, and what counts as a graph to place.
#include <gtest/gtest.h>

#include "sim/estimates.h"
#include "sim/objective.h"
#include "tests/testing/sim_fixtures.h"

namespace devplace {
namespace {

using testing::FixedRateCost;
using testing::MakeDevice;
using testing::MakeOp;

TEST(StepCost, FittingStepsRankBeforeOutOfMemoryOnesWhateverTheirTime) {
  const StepCost fast{1e-3, false, 0.0}, slow{10.0, false, 0.0};
  const StepCost near{1e-4, true, 0.01}, far{1e-5, true, 2.0}, far_slow{1.0, true, 2.0};
  EXPECT_LT(fast, slow);
  EXPECT_LT(slow, near);  // 10 s that fit beat 0.1 ms that does not
  EXPECT_LT(near, far);   // less overage first, even when slower
  EXPECT_LT(far, far_slow);
  EXPECT_FALSE(fast < fast);
  EXPECT_FALSE(far_slow < far);
}

TEST(StepCost, PenalisedTimeAddsTheFactorTimesTheReferenceTimesOnePlusOverage) {
  EXPECT_EQ((StepCost{2e-3, false, 0.0}.Penalised(3e-3, 5.0)), 2e-3);
  EXPECT_DOUBLE_EQ((StepCost{2e-3, true, 0.5}.Penalised(3e-3, 5.0)), 2e-3 + 5.0 * 3e-3 * 1.5);
  EXPECT_EQ((StepCost{2e-3, true, 0.5}.Penalised(3e-3, 0.0)), 2e-3);
}

TEST(StepCost, OverageSumsEachDevicesShareOverItsCapacity) {
  // a's 4,000-byte output on d0 (1,000 bytes: 3,000 over), b's 2,000 bytes on d1 (1,000 bytes: 1,000 over), c's
  // 400 bytes fit on d2.
  TopologyBuilder tb("small");
  for (const char* name : {"d0", "d1", "d2"}) tb.add_device(MakeDevice(name, 1000));
  tb.add_bidirectional_link(0, 1, 1e9, 1e-6, "link");
  tb.add_bidirectional_link(1, 2, 1e9, 1e-6, "link");
  tb.add_bidirectional_link(0, 2, 1e9, 1e-6, "link");
  Expected<Topology> built = std::move(tb).Build();
  ASSERT_TRUE(built.ok()) << built.error().message;
  const Topology topology = std::move(*built);
  GraphBuilder gb("three");
  gb.add_op(MakeOp("a", 1e6, {1000}));
  gb.add_op(MakeOp("b", 1e6, {500}));
  gb.add_op(MakeOp("c", 1e6, {100}));
  const Graph graph = std::move(gb).Build().value();
  Expected<SimResult> r = Simulate(graph, topology, Strategy::FromPlacement({0, 1, 2}), FixedRateCost());
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(r->oom);
  EXPECT_DOUBLE_EQ(OverageFraction(*r, topology), 3.0 + 1.0);
  const StepCost cost = CostOf(*r, topology);
  EXPECT_TRUE(cost.oom);
  EXPECT_EQ(cost.step_time, r->step_time);
  EXPECT_DOUBLE_EQ(cost.overage, 4.0);

  Expected<SimResult> fits = Simulate(graph, testing::FullyConnected(3, 1e9, 1e-6),
                                      Strategy::FromPlacement({0, 1, 2}), FixedRateCost());
  ASSERT_TRUE(fits.ok());
  EXPECT_EQ(CostOf(*fits, testing::FullyConnected(3, 1e9, 1e-6)), (StepCost{fits->step_time, false, 0.0}));
}

TEST(Estimates, MemoryOfWholeAndSplitOps) {
  Op fc = MakeOp("fc", 1e6, {64, 256}, /*param_bytes=*/1000);
  fc.dims = {PartitionDim{DimKind::kSample, 0, 0, 64}, PartitionDim{DimKind::kParameter, 1, -1, 256}};
  const int64_t out = 64 * 256 * 4;
  // Weights, gradients and Adam's two moments, plus the forward output kept for the backward pass.
  EXPECT_EQ(OpMemoryEstimate(fc, 2.0), 4 * 1000 + out);
  EXPECT_EQ(OpMemoryEstimate(fc, 1.0), 3 * 1000 + out);
  Op grad = fc;
  grad.role = OpRole::kBackward;
  EXPECT_EQ(OpMemoryEstimate(grad, 2.0), 4 * 1000);  // backward outputs are short-lived
  EXPECT_EQ(OpPartMemoryEstimate(fc, OpConfig{{3}, {}}, 2.0), OpMemoryEstimate(fc, 2.0));
  // Split 4 ways along the batch: every part holds a replica of the weights and a quarter of the output.
  EXPECT_EQ(OpPartMemoryEstimate(fc, OpConfig{{0, 1, 2, 3}, {4, 1}}, 2.0), 4 * 1000 + out / 4);
  // Split along the parameter dimension: the weights are sharded too.
  EXPECT_EQ(OpPartMemoryEstimate(fc, OpConfig{{0, 1, 2, 3}, {1, 4}}, 2.0), 1000 + out / 4);
}

TEST(Estimates, ATrainingGraphNeedsAnOpThatComputesOrHoldsParameters) {
  const Graph empty = GraphBuilder("empty").Build().value();
  Status s = CheckTrainingGraph(empty);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "graph 'empty' has no ops");

  GraphBuilder inputs("inputs");
  inputs.add_op(MakeOp("x", 0.0));
  s = CheckTrainingGraph(std::move(inputs).Build().value());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("no op with FLOPs or parameters"), std::string::npos) << s.error().message;

  GraphBuilder one("one");
  one.add_op(MakeOp("y", 1e3));
  EXPECT_TRUE(CheckTrainingGraph(std::move(one).Build().value()).ok());
}

TEST(Simulate, RejectsAGraphWithoutOps) {
  const Graph empty = GraphBuilder("empty").Build().value();
  const Topology topology = testing::FullyConnected(2, 1e9, 1e-6);
  Expected<SimResult> r = Simulate(empty, topology, Strategy{}, FixedRateCost());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "graph 'empty' has no ops: nothing to simulate");
  EXPECT_FALSE(Simulator::Create(empty, topology, FixedRateCost()).ok());
  EXPECT_FALSE(DeltaSimulator::Create(empty, topology, Strategy{}, FixedRateCost()).ok());
}

}  // namespace
}  // namespace devplace
