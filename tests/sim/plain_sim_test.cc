// The op-graph simulation of plain placements (sim/plain_sim.h, what Simulator::Run and RunStepTime use for a
// strategy whose every op runs whole on one device) against the general task-graph path (taken with
// keep_timeline): every field of the result equal, over random graphs, placements, machines and segmentings.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/topology_yaml.h"
#include "sim/simulator.h"
#include "tests/testing/sim_fixtures.h"

namespace devplace {
namespace {

using testing::UniformInt;

// `prefix` followed by `n` (built without operator+ on a literal, which GCC 12 warns about wrongly).
std::string Named(const char* prefix, int64_t n) { return std::string(prefix).append(std::to_string(n)); }

Topology Preset(const std::string& name) {
  Expected<Topology> t = ReadTopologyFile(std::string(DEVPLACE_SOURCE_DIR) + "/configs/topologies/" + name);
  if (!t) throw std::runtime_error(t.error().message);
  return std::move(t).value();
}

// A random DAG of forward ops (so that transfers are shared per tensor) whose edges carry the full output, part of
// it, or nothing.
Graph RandomForwardGraph(uint64_t seed, int ops) {
  std::mt19937_64 rng(seed);
  GraphBuilder b(Named("dag", static_cast<int64_t>(seed)));
  for (int k = 0; k < ops; ++k) {
    const int64_t features = 64 << UniformInt(rng, 6);
    b.add_op(testing::MakeOp(Named("op", k), 1e5 * (1 + UniformInt(rng, 50)), {16, features},
                             UniformInt(rng, 2) ? 0 : 4096));
    std::vector<OpId> from;
    for (int f = UniformInt(rng, 4); f > 0 && k > 0; --f) {
      const OpId src = k - 1 - UniformInt(rng, std::min(k, 8));
      if (std::find(from.begin(), from.end(), src) != from.end()) continue;
      from.push_back(src);
      const int kind = UniformInt(rng, 4);
      b.add_edge(src, k, kind == 0 ? 0 : kind == 1 ? 1000 + UniformInt(rng, 5000) : -1);
    }
  }
  Expected<Graph> g = std::move(b).Build();
  if (!g) throw std::runtime_error(g.error().message);
  return std::move(g).value();
}

// Devices of a random placement: by runs of ops (as searches place groups), some runs scattered op by op.
Strategy RandomPlacement(const Graph& graph, int devices, std::mt19937_64& rng) {
  std::vector<DeviceId> device(static_cast<size_t>(graph.num_ops()));
  DeviceId current = 0;
  for (OpId o = 0; o < graph.num_ops(); ++o) {
    if (UniformInt(rng, 4) == 0) current = UniformInt(rng, devices);
    device[o] = UniformInt(rng, 3) == 0 ? UniformInt(rng, devices) : current;
  }
  return Strategy::FromPlacement(device);
}

// The plain path's result equals the general path's in every figure, and it records no timeline.
void ExpectSameResult(const SimResult& a, const SimResult& b) {
  testing::ExpectSameResult(a, b);
  EXPECT_TRUE(a.timeline.empty());
}

// Runs `strategy` on `sim` (which takes the plain path) and on the general path with `options` and a timeline,
// expects every figure equal (RunStepTime's step too) and returns the general path's result.
SimResult ExpectPlainEqualsGeneral(Simulator& sim, const Graph& graph, const Topology& topology,
                                   const Strategy& strategy, const CostModel& cost, SimOptions options) {
  options.keep_timeline = true;
  Expected<SimResult> expected = Simulate(graph, topology, strategy, cost, options);
  const Expected<SimResult> got = sim.Run(strategy);
  if (!expected.ok() || !got.ok()) {
    ADD_FAILURE() << (expected.ok() ? got.error().message : expected.error().message);
    return {};
  }
  ExpectSameResult(*got, *expected);
  EXPECT_EQ(*sim.RunStepTime(strategy), expected->step_time);
  return std::move(expected).value();
}

TEST(PlainSim, EqualsTheGeneralPathOnRandomGraphsAndPlacements) {
  // Every other machine with per-message and per-step link costs (a transfer's hops pay the message cost).
  const Topology topologies[] = {testing::FullyConnected(4, 50e9, 2e-6),
                                 testing::WithLinkCosts(testing::Star(5, 25e9, 1e-6), 3e-6, 5e-6, 20e9),
                                 testing::TwoHosts(3, 12e9, 3e-6),
                                 testing::WithLinkCosts(Preset("dgx1-v100.yaml"), 1.5e-6, 0.0),
                                 Preset("p100-4x4-ib.yaml"),
                                 testing::WithLinkCosts(Preset("cpu-local.yaml"), 4e-6, 2e-6)};
  int cases = 0, multi_segment = 0, critical_with_transfers = 0;
  for (uint64_t seed = 1; seed <= 36; ++seed) {
    std::mt19937_64 rng(seed);
    const Topology& topology = topologies[seed % 6];
    const Graph graph = seed % 2 ? testing::RandomTrainingGraph(seed, 40 + UniformInt(rng, 200))
                                 : RandomForwardGraph(seed, 30 + UniformInt(rng, 150));
    SimOptions options;
    if (seed % 3 == 0) {  // many uneven segments
      options.segment_bytes = 1 + UniformInt(rng, 3000);
      options.max_segments = 2 + UniformInt(rng, 12);
    }
    const CostModel cost = MakeAnalyticCostModel();
    Simulator sim = std::move(Simulator::Create(graph, topology, cost, options)).value();
    for (int p = 0; p < 4; ++p) {
      SCOPED_TRACE(Named("seed ", static_cast<int64_t>(seed)) + Named(", placement ", p));
      const Strategy strategy = RandomPlacement(graph, topology.num_devices(), rng);
      const SimResult expected = ExpectPlainEqualsGeneral(sim, graph, topology, strategy, cost, options);
      ++cases;
      int compute_on_path = static_cast<int>(expected.critical_path.size());
      critical_with_transfers += expected.critical_compute_seconds < expected.step_time && compute_on_path > 1;
      for (const TimelineTask& t : expected.timeline)
        if (t.kind == TimelineTask::Kind::kTransfer && t.bytes < graph.op(t.op).shape.back() * 4 * 16) {
          ++multi_segment;
          break;
        }
    }
  }
  EXPECT_EQ(cases, 144);
  EXPECT_GT(multi_segment, 20);            // segmented transfers were exercised
  EXPECT_GT(critical_with_transfers, 20);  // and critical paths through transfers and busy resources
}

TEST(PlainSim, TransfersOfManyKindsMatch) {
  // Transfers of one edge size between one device pair add the same totals, which the plain path sums per such
  // kind while there are at most 2^16 kinds and no more than edges; here every edge has its own size, 6,000 of
  // them on 5 devices (150,000 kinds), so each transfer's totals are added as it is planned.
  GraphBuilder b("sizes");
  for (int k = 0; k < 3001; ++k) b.add_op(testing::MakeOp(Named("op", k), 1e5 * (1 + k % 7), {16, 64}));
  for (int k = 1; k < 3001; ++k) {
    b.add_edge(k - 1, k, 1000 + 2 * k);
    if (k >= 3) b.add_edge(k - 3, k, 1001 + 2 * k);
  }
  const Graph graph = std::move(b).Build().value();
  const Topology topology = testing::WithLinkCosts(testing::Star(5, 25e9, 1e-6), 3e-6, 5e-6, 20e9);
  const CostModel cost = MakeAnalyticCostModel();
  Simulator sim = std::move(Simulator::Create(graph, topology, cost)).value();
  std::mt19937_64 rng(4);
  for (int p = 0; p < 2; ++p)
    ExpectPlainEqualsGeneral(sim, graph, topology, RandomPlacement(graph, topology.num_devices(), rng), cost, {});
}

TEST(PlainSim, MachinesWithManyHopClassesMatch) {
  // Hop prices are kept per edge size and (latency, bandwidth) class on machines with at most 8 classes; here six
  // devices, each on its own switch, the switches in a chain, and every link its own bandwidth and latency (11
  // classes), so each hop is priced from its link. Every route has three or more hops, and transfers are cut
  // into segments.
  TopologyBuilder b("classes");
  for (int d = 0; d < 6; ++d) b.add_device(testing::MakeDevice(Named("d", d)));
  for (int d = 0; d < 6; ++d) {
    const NodeId sw = b.add_switch({Named("sw", d), "h0"});
    b.add_bidirectional_link(d, sw, (10 + d) * 1e9, (1 + d) * 1e-6, "pcie");
    if (d > 0) b.add_bidirectional_link(sw - 1, sw, (20 + d) * 1e9, (0.5 + d) * 1e-6, "pcie");
  }
  Expected<Topology> built = std::move(b).Build();
  ASSERT_TRUE(built.ok()) << built.error().message;
  const Topology topology = std::move(built).value();
  SimOptions options;
  options.segment_bytes = 2000;
  options.max_segments = 6;
  const CostModel cost = MakeAnalyticCostModel();
  int segmented = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    std::mt19937_64 rng(seed);
    const Graph graph = seed % 2 ? testing::RandomTrainingGraph(seed, 120) : RandomForwardGraph(seed, 100);
    Simulator sim = std::move(Simulator::Create(graph, topology, cost, options)).value();
    for (int p = 0; p < 3; ++p) {
      SCOPED_TRACE(Named("seed ", static_cast<int64_t>(seed)) + Named(", placement ", p));
      const Strategy strategy = RandomPlacement(graph, topology.num_devices(), rng);
      const SimResult expected = ExpectPlainEqualsGeneral(sim, graph, topology, strategy, cost, options);
      std::map<std::tuple<OpId, OpId, int32_t>, int> pieces;  // per transfer and link: its segments
      for (const TimelineTask& t : expected.timeline)
        if (t.kind == TimelineTask::Kind::kTransfer) segmented += ++pieces[{t.op, t.consumer, t.resource}] == 2;
    }
  }
  EXPECT_GT(segmented, 100);  // transfer hops cut into segments
}

TEST(PlainSim, OutOfMemoryAndOneDeviceMatch) {
  // Devices of 1 MiB: every placement of this graph runs out of memory somewhere, also all on one device.
  const Graph graph = testing::RandomTrainingGraph(5, 200);
  TopologyBuilder b("tiny");
  for (int d = 0; d < 3; ++d) b.add_device(testing::MakeDevice(Named("d", d), int64_t{1} << 20));
  for (int i = 0; i < 3; ++i)
    for (int j = i + 1; j < 3; ++j) b.add_bidirectional_link(i, j, 10e9, 1e-6, "nvlink");
  Expected<Topology> tiny = std::move(b).Build();
  ASSERT_TRUE(tiny.ok()) << tiny.error().message;
  SimOptions general;
  general.keep_timeline = true;
  Simulator sim = std::move(Simulator::Create(graph, *tiny, MakeAnalyticCostModel())).value();
  std::mt19937_64 rng(9);
  for (int p = 0; p < 3; ++p) {
    const Strategy strategy =
        p == 0 ? Strategy::AllOn(graph.num_ops(), 1) : RandomPlacement(graph, 3, rng);
    const Expected<SimResult> expected = Simulate(graph, *tiny, strategy, MakeAnalyticCostModel(), general);
    ASSERT_TRUE(expected.ok()) << expected.error().message;
    EXPECT_TRUE(expected->oom);
    const Expected<SimResult> got = sim.Run(strategy);
    ASSERT_TRUE(got.ok()) << got.error().message;
    ExpectSameResult(*got, *expected);
  }
}

TEST(PlainSim, StepsBeyondOneWordHeapKeysMatch) {
  // A 2e6 s op among a few small ones: its consumers become ready more than 2^60 ticks after anything dequeued
  // before, beyond one-word heap keys of a 16-task graph, so the loop runs again with two-word keys.
  GraphBuilder b("long");
  for (int k = 0; k < 6; ++k) b.add_op(testing::MakeOp(Named("op", k), k == 2 ? 2e15 : 1e6, {256, 256}));
  for (int k = 1; k < 6; ++k) b.add_edge(k - 1, k);
  b.add_edge(0, 3);
  const Graph graph = std::move(b).Build().value();
  const Topology topology = testing::TwoHosts(2, 10e9, 2e-6);
  const CostModel cost = testing::FixedRateCost();
  SimOptions general;
  general.keep_timeline = true;
  Simulator sim = std::move(Simulator::Create(graph, topology, cost)).value();
  for (const std::vector<DeviceId>& devices : {std::vector<DeviceId>{0, 2, 1, 3, 0, 2}, {0, 0, 0, 1, 1, 1}}) {
    const Strategy strategy = Strategy::FromPlacement(devices);
    const Expected<SimResult> expected = Simulate(graph, topology, strategy, cost, general);
    ASSERT_TRUE(expected.ok()) << expected.error().message;
    EXPECT_GT(expected->step_time, 2e6);
    const Expected<SimResult> got = sim.Run(strategy);
    ASSERT_TRUE(got.ok()) << got.error().message;
    ExpectSameResult(*got, *expected);
    EXPECT_EQ(*sim.RunStepTime(strategy), expected->step_time);
  }
}

}  // namespace
}  // namespace devplace
