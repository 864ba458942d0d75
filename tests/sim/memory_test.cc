// Memory model: hand-computed peaks, training-state bytes, OOM reporting.
#include <gtest/gtest.h>

#include "core/training_graph.h"
#include "sim/simulator.h"
#include "test_util.h"

namespace devplace {
namespace {

using testing::FixedRateCost;
using testing::MakeOp;

Graph Chain() {
  GraphBuilder b("chain");
  OpId a = b.add_op(MakeOp("a", 1e6, {1000}, 1000));  // 4000-byte output, 1000 bytes of weights
  OpId x = b.add_op(MakeOp("b", 1e6, {2000}));        // 8000
  OpId c = b.add_op(MakeOp("c", 1e6, {500}));         // 2000
  b.add_edge(a, x);
  b.add_edge(x, c);
  return *std::move(b).Build();
}

TEST(Memory, PeakOfAChainIsTheLargestPairOfLiveActivations) {
  const Graph g = Chain();
  const Topology t = testing::FullyConnected(2, 1e9, 1e-6);
  const SimResult r = *Simulate(g, t, Strategy::AllOn(3, 0), FixedRateCost());
  // a's output lives until b ends; b's until c ends: peak = weights + max(4000 + 8000, 8000 + 2000).
  EXPECT_EQ(r.devices[0].static_bytes, 1000);
  EXPECT_EQ(r.devices[0].peak_bytes, 1000 + 12000);
  EXPECT_EQ(r.devices[1].peak_bytes, 0);
  EXPECT_FALSE(r.oom);
}

TEST(Memory, TransferBuffersCountOnTheReceiver) {
  const Graph g = Chain();
  const Topology t = testing::FullyConnected(2, 1e9, 1e-6);
  const SimResult r = *Simulate(g, t, Strategy::FromPlacement({0, 1, 1}), FixedRateCost());
  // d0: weights + a's output (alive until its transfer ends). d1: the received copy of a's output (4000)
  // until b ends, b's output (8000), then c's (2000) while b's is alive.
  EXPECT_EQ(r.devices[0].peak_bytes, 1000 + 4000);
  EXPECT_EQ(r.devices[1].peak_bytes, 4000 + 8000);
}

TEST(Memory, TrainingStateIsWeightsGradientsAndOptimizerState) {
  GraphBuilder b("one");
  b.add_op(MakeOp("w", 1e6, {10}, 4096));
  const Graph g = *DeriveTrainingGraph(*std::move(b).Build());
  ASSERT_EQ(g.num_ops(), 3);  // forward, backward, update
  const Topology t = testing::FullyConnected(2, 1e9, 1e-6);
  SimOptions options;
  const SimResult adam = *Simulate(g, t, Strategy::AllOn(3, 1), FixedRateCost(), options);
  EXPECT_EQ(adam.devices[1].static_bytes, 4096 * 4);  // weights + gradients + 2 x optimizer state
  options.optimizer_state_factor = 1.0;
  const SimResult momentum = *Simulate(g, t, Strategy::AllOn(3, 1), FixedRateCost(), options);
  EXPECT_EQ(momentum.devices[1].static_bytes, 4096 * 3);
}

TEST(Memory, OutOfMemoryNamesTheDeviceAndTheOverage) {
  const Graph g = Chain();
  TopologyBuilder b("small");
  b.add_device(testing::MakeDevice("big"));
  b.add_device(testing::MakeDevice("tiny", 10000));
  b.add_bidirectional_link(0, 1, 1e9, 1e-6, "pcie");
  const Topology t = *std::move(b).Build();
  const SimResult r = *Simulate(g, t, Strategy::AllOn(3, 1), FixedRateCost());
  EXPECT_TRUE(r.oom);
  EXPECT_EQ(r.devices[1].overage_bytes, 13000 - 10000);
  ASSERT_EQ(r.oom_messages.size(), 1u);
  EXPECT_NE(r.oom_messages[0].find("device 'tiny'"), std::string::npos) << r.oom_messages[0];
  EXPECT_EQ(r.devices[0].overage_bytes, 0);
}

}  // namespace
}  // namespace devplace
