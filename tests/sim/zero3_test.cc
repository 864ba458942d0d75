// ZeRO stage 3 (OpConfig::shard_weights, docs/simulator.md "ZeRO") in the simulator: weights, gradients and optimizer
// state sharded over the data axis, weights all-gathered before the forward and the backward op that use them (the
// gathered copy freed after the op), gradients reduce-scattered. Checked by hand on one dense layer, against the
// alpha-beta formulas on idle links, for contention, and on GPT against ZeRO-1 and plain data parallelism.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/sharding_io.h"
#include "core/topology_yaml.h"
#include "datasets/gpt.h"
#include "datasets/layers.h"
#include "sim/simulator.h"
#include "tests/testing/sim_fixtures.h"

namespace devplace {
namespace {

constexpr double kB = 10e9, kAlpha = 5e-6;
constexpr int64_t kWidth = 4096;
constexpr int64_t kP = kWidth * kWidth * 4;  // one dense layer's f32 weights: 64 MiB

// Data parallelism over 8 devices (the batch of input `x`), with `zero` appended to the spec.
Strategy DataParallel(const Graph& graph, const Topology& topology, const std::string& zero) {
  const std::string spec = "mesh: {shape: [8], axes: [data]}\nannotations: [{ops: x, spec: [data]}]\n" + zero;
  const ShardingRequest req = ShardingRequestFromYaml(spec, "spec.yaml", topology, {}).value();
  const ShardingPlan plan = PropagateSharding(graph, req.mesh, req.annotations, req.zero_axis).value();
  Strategy s = LowerSpecs(graph, plan.specs, req.mesh, req.weight_shard_axis()).value();
  EXPECT_TRUE(ValidateStrategy(s, graph, topology).ok());
  return s;
}

// `layers` dense layers of kWidth x kWidth weights (no bias) side by side on one input of 8 rows.
Graph DenseLayers(int layers) {
  LayerBuilder b("dense");
  const OpId x = b.Input("x", {8, kWidth});
  for (int i = 0; i < layers; ++i) b.Linear({x}, kWidth, false, "fc" + std::to_string(i));
  return std::move(b).BuildTraining().value();
}

SimResult SimulateStep(const Graph& graph, const Topology& topology, const Strategy& strategy) {
  SimOptions options;
  options.keep_timeline = true;
  Expected<SimResult> r = Simulate(graph, topology, strategy, MakeAnalyticCostModel(), options);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return std::move(r).value();
}

// Bytes of every forward and backward op's output (a bound of the activations alive at once before the updates).
int64_t OutputTotal(const Graph& graph) {
  int64_t total = 0;
  for (const Op& op : graph.ops())
    if (op.role != OpRole::kUpdate) total += OutputBytes(op);
  return total;
}

// Per device, weights P/8 + gradients P/8 + Adam's two moments 2P/8 held for the whole step, where ZeRO-1 holds
// P + P + 2P/8 and data parallelism 4P. The peak adds, in the backward op, the gathered rest of the weights (7P/8,
// freed when the op ends) and the full gradient before its reduce-scatter (7P/8), plus activations and ring buffers.
TEST(Zero3, ShardsWeightsGradientsAndOptimizerStateOverTheDataAxis) {
  const Graph g = DenseLayers(1);
  const Topology t = testing::FullyConnected(8, kB, kAlpha);
  const SimResult dp = SimulateStep(g, t, DataParallel(g, t, ""));
  const SimResult z1 = SimulateStep(g, t, DataParallel(g, t, "zero: data\n"));
  const SimResult z3 = SimulateStep(g, t, DataParallel(g, t, "zero: {axis: data, stage: 3}\n"));
  const int64_t activations = OutputTotal(g);
  ASSERT_LT(activations, kP / 64);
  for (int d = 0; d < 8; ++d) {
    EXPECT_EQ(dp.devices[d].static_bytes, 4 * kP) << d;
    EXPECT_EQ(z1.devices[d].static_bytes, 2 * kP + 2 * kP / 8) << d;
    EXPECT_EQ(z3.devices[d].static_bytes, 4 * kP / 8) << d;
    const int64_t transient = z3.devices[d].peak_bytes - z3.devices[d].static_bytes;
    EXPECT_GE(transient, 14 * kP / 8) << d;
    EXPECT_LE(transient, 14 * kP / 8 + 2 * kP / 8 + activations) << d;  // at most two ring receive buffers
    EXPECT_LT(z3.devices[d].peak_bytes, z1.devices[d].peak_bytes) << d;
    EXPECT_LT(z1.devices[d].peak_bytes, dp.devices[d].peak_bytes) << d;
  }
}

// Span of the collective steps of `ops` in `r` that start at `from` or later and end by `until`, from the first
// start to the last arrival.
double Span(const SimResult& r, const Topology& t, const std::vector<OpId>& ops, double from, double until) {
  double first = 1e30, last = -1;
  for (const TimelineTask& task : r.timeline) {
    if (task.kind != TimelineTask::Kind::kCollective || task.start < from || task.end > until ||
        std::find(ops.begin(), ops.end(), task.op) == ops.end())
      continue;
    first = std::min(first, task.start);
    last = std::max(last, task.end + t.link(task.resource - t.num_devices()).latency);
  }
  return last - first;
}

double ComputeStart(const SimResult& r, OpId op) {
  double start = 1e30;
  for (const TimelineTask& task : r.timeline)
    if (task.kind == TimelineTask::Kind::kCompute && task.op == op) start = std::min(start, task.start);
  return start;
}

// On idle links each ring is (n - 1)(alpha + S / (n B)) for the S = P bytes gathered or reduce-scattered: the forward
// op's all-gather, the backward op's all-gather before it computes and its reduce-scatter after.
TEST(Zero3, GathersAndReduceScattersMatchAlphaBetaOnIdleLinks) {
  const Graph g = DenseLayers(1);
  const Topology t = testing::FullyConnected(8, kB, kAlpha);
  const SimResult r = SimulateStep(g, t, DataParallel(g, t, "zero: {axis: data, stage: 3}\n"));
  const OpId fc = g.find("fc0"), grad = g.find("fc0/grad");
  ASSERT_GE(fc, 0);
  ASSERT_GE(grad, 0);
  const double formula = 7 * (kAlpha + static_cast<double>(kP / 8) / kB);
  const double backward = ComputeStart(r, grad);
  EXPECT_NEAR(Span(r, t, {fc}, 0, 1e30), formula, 1e-9);
  EXPECT_NEAR(Span(r, t, {grad}, 0, backward), formula, 1e-9);
  EXPECT_NEAR(Span(r, t, {grad}, backward, 1e30), formula, 1e-9);
  // Forward and backward gathers both move the shard: 7 steps of P/8 on each of the 8 ring links, and the
  // reduce-scatter as much again.
  int64_t bytes = 0;
  for (const LinkStats& link : r.links) bytes += link.bytes;
  EXPECT_EQ(bytes, 3 * 8 * 7 * (kP / 8));
}

// Two layers reading the same input gather at the same time over the same ring links and share them: together they
// take about twice as long as one alone (their bandwidth terms add up).
TEST(Zero3, GathersContendForLinks) {
  const Topology t = testing::FullyConnected(8, kB, kAlpha);
  const Graph one = DenseLayers(1), two = DenseLayers(2);
  const SimResult r1 = SimulateStep(one, t, DataParallel(one, t, "zero: {axis: data, stage: 3}\n"));
  const SimResult r2 = SimulateStep(two, t, DataParallel(two, t, "zero: {axis: data, stage: 3}\n"));
  const double alone = Span(r1, t, {one.find("fc0")}, 0, 1e30);
  const double both = Span(r2, t, {two.find("fc0"), two.find("fc1")}, 0, 1e30);
  const double bandwidth_term = 7 * static_cast<double>(kP / 8) / kB;
  EXPECT_NEAR(alone, bandwidth_term + 7 * kAlpha, 1e-9);
  EXPECT_GE(both, 2 * bandwidth_term);
  EXPECT_LE(both, 2 * bandwidth_term + 14 * kAlpha + 1e-9);
}

// GPT on dgx-h100 with the shipped specs: under ZeRO-3 every device holds 4/8 of the parameter bytes for the whole
// step (weights, gradients and Adam's two moments, each over 8), and the peaks order ZeRO-3 < ZeRO-1 < DP.
TEST(Zero3, GptPeaksOrderZero3BelowZero1BelowDataParallel) {
  const Topology t = ReadTopologyFile(DEVPLACE_SOURCE_DIR "/configs/topologies/dgx-h100.yaml").value();
  LayerBuilder b("gpt");
  BuildGpt(b, GptConfig{2, 256, 8, 64, 512, 8});
  const Graph g = std::move(b).BuildTraining().value();
  auto shipped = [&](const std::string& file) {
    const ShardingRequest req =
        ReadShardingRequestFile(DEVPLACE_SOURCE_DIR "/configs/sharding/" + file, t, {}).value();
    const ShardingPlan plan = PropagateSharding(g, req.mesh, req.annotations, req.zero_axis).value();
    const Strategy s = LowerSpecs(g, plan.specs, req.mesh, req.weight_shard_axis()).value();
    EXPECT_TRUE(ValidateStrategy(s, g, t).ok()) << file;
    return SimulateStep(g, t, s);
  };
  const SimResult dp = shipped("data-parallel.yaml"), z1 = shipped("zero.yaml"), z3 = shipped("zero3.yaml");
  const double params = static_cast<double>(g.total_param_bytes());
  for (int d = 0; d < 8; ++d) {
    EXPECT_NEAR(static_cast<double>(z3.devices[d].static_bytes), 4.0 * params / 8, g.num_ops()) << d;
    EXPECT_LT(z3.devices[d].peak_bytes, z1.devices[d].peak_bytes) << d;
    EXPECT_LT(z1.devices[d].peak_bytes, dp.devices[d].peak_bytes) << d;
  }
  EXPECT_GT(z3.step_time, z1.step_time);  // the gathers cost time
}

}  // namespace
}  // namespace devplace
