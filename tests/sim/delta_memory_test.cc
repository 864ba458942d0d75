// The delta simulator's memory peaks, which it keeps from change to change for the devices that may run out of
// memory (DeltaSimulator::step_cost, oom), equal a full simulation's after every change: group moves made in parts,
// queries of one and of several ops, undone changes, partitioned configs with copies, compactions and relayouts.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/topology_yaml.h"
#include "datasets/families.h"
#include "sim/objective.h"
#include "sim/simulator.h"
#include "tests/testing/sim_fixtures.h"

namespace devplace {
namespace {

// `topology` with `bytes` of memory on every device.
Topology WithMemory(const Topology& topology, int64_t bytes) {
  TopologyBuilder b(topology.name());
  for (Device d : topology.devices()) {
    d.memory_bytes = bytes;
    b.add_device(std::move(d));
  }
  for (const Switch& s : topology.switches()) b.add_switch(s);
  for (const Link& l : topology.links()) b.add_link(l);
  return std::move(b).Build().value();
}

// The step cost (step time, whether a device overflows, and by how much: every overflowing device's peak) and the
// OOM flag of `delta` against a full simulation of its strategy; counts the checks and the overflowing ones.
void ExpectSameCost(const DeltaSimulator& delta, const Graph& graph, const Topology& topology, const CostModel& cost,
                    const std::string& what, int* checks, int* oom_checks) {
  const Expected<SimResult> full = Simulate(graph, topology, delta.strategy(), cost);
  ASSERT_TRUE(full.ok()) << full.error().message;
  const StepCost kept = delta.step_cost(), expected = CostOf(*full, topology);
  ASSERT_EQ(kept.step_time, expected.step_time) << what;
  ASSERT_EQ(kept.oom, expected.oom) << what;
  ASSERT_EQ(kept.overage, expected.overage) << what;
  ASSERT_EQ(delta.oom(), full->oom) << what;
  const Status indexes = delta.CheckIndexes();  // the kept buffers among them
  ASSERT_TRUE(indexes.ok()) << what << ": " << indexes.error().message;
  ++*checks;
  *oom_checks += full->oom;
}

// The ops of each group: a forward op, then its backward and update ops (as the iterative environment moves them).
std::vector<std::vector<OpId>> Groups(const Graph& graph) {
  std::vector<std::vector<OpId>> groups;
  std::vector<int32_t> group_of(static_cast<size_t>(graph.num_ops()), -1);
  for (OpId op : graph.topological_order())
    if (graph.op(op).role == OpRole::kForward) {
      group_of[op] = static_cast<int32_t>(groups.size());
      groups.push_back({op});
    }
  for (OpId op = 0; op < graph.num_ops(); ++op)
    if (graph.op(op).role != OpRole::kForward) groups[group_of[graph.find(graph.op(op).forward_op)]].push_back(op);
  return groups;
}

// An iterative episode on a family graph started on one GPU that cannot hold it: every group moved in turn to a
// random GPU (made in parts), every other move asked about first, every fifth move undone after its check.
void CheckEpisode(const char* family, uint64_t seed, double memory_share) {
  FamilyOptions options;
  options.target_ops = 1500;
  const Expected<Graph> graph = GenerateFamilyMember(family, seed, options);
  ASSERT_TRUE(graph.ok()) << graph.error().message;
  const Topology dgx1 =
      ReadTopologyFile(std::string(DEVPLACE_SOURCE_DIR) + "/configs/topologies/dgx1-v100.yaml").value();
  const CostModel cost = MakeAnalyticCostModel();
  const Strategy start = Strategy::FromPlacement(std::vector<DeviceId>(static_cast<size_t>(graph->num_ops()), 0));
  // Memory for `memory_share` of the first GPU's peak when it holds everything: it overflows until enough groups
  // have moved, and GPUs that receive many groups overflow later.
  const int64_t peak = Simulate(*graph, dgx1, start, cost)->devices[0].peak_bytes;
  const Topology topology = WithMemory(dgx1, static_cast<int64_t>(static_cast<double>(peak) * memory_share));
  const int devices = topology.num_devices();
  Expected<DeltaSimulator> delta = DeltaSimulator::Create(*graph, topology, start, cost);
  ASSERT_TRUE(delta.ok()) << delta.error().message;
  std::mt19937_64 rng(seed);
  int checks = 0, oom_checks = 0, steps = 0;
  for (const std::vector<OpId>& group : Groups(*graph)) {
    const std::string what = std::string(family) + " step " + std::to_string(steps);
    const OpConfig moved{{static_cast<DeviceId>(testing::UniformInt(rng, devices))}, {}};
    std::vector<std::pair<OpId, OpConfig>> changes, undo;
    for (OpId op : group) {
      changes.emplace_back(op, moved);
      undo.emplace_back(op, delta->strategy().configs[op]);
    }
    if (steps % 2 == 1) {
      ASSERT_TRUE(delta->StepTimeIf(changes).ok());
    }
    ASSERT_TRUE(delta->SetConfigs(changes).ok());
    ExpectSameCost(*delta, *graph, topology, cost, what, &checks, &oom_checks);
    if (steps % 5 == 4) {
      ASSERT_TRUE(delta->SetConfigs(undo).ok());
      ExpectSameCost(*delta, *graph, topology, cost, what + " undone", &checks, &oom_checks);
    }
    ++steps;
    if (::testing::Test::HasFailure()) return;
  }
  // Both kinds of strategy occur (the peaks decide the cost of the first kind).
  EXPECT_GE(oom_checks, checks / 10) << family;
  EXPECT_LE(oom_checks, checks * 9 / 10) << family;
}

TEST(DeltaSimulatorMemory, KeptPeaksEqualFullSimulationOverIterativeEpisodes) {
  CheckEpisode("nmt", 5, 0.75);
  CheckEpisode("transformer", 6, 0.75);
  CheckEpisode("lstmlm", 7, 0.68);
}

// Random single-op changes, partitioned and copied configs among them, on a small machine whose devices hold as
// much as the first strategy needs on its fullest device; a query about another op before each change, every other
// change undone.
TEST(DeltaSimulatorMemory, KeptPeaksEqualFullSimulationOnRandomChanges) {
  const Graph graph = testing::RandomTrainingGraph(17, 90);
  const CostModel cost = MakeAnalyticCostModel();
  const Topology wide = testing::FullyConnected(4, 50e9, 2e-6);
  std::mt19937_64 rng(17);
  const Strategy start = testing::RandomStrategy(graph, 4, 0.3, rng);
  const Expected<SimResult> first = Simulate(graph, wide, start, cost);
  ASSERT_TRUE(first.ok());
  int64_t most = 0;
  for (const auto& d : first->devices) most = std::max(most, d.peak_bytes);
  const Topology topology = WithMemory(wide, most * 11 / 10);
  Expected<DeltaSimulator> delta = DeltaSimulator::Create(graph, topology, start, cost);
  ASSERT_TRUE(delta.ok()) << delta.error().message;
  int checks = 0, oom_checks = 0;
  for (int k = 0; k < 400; ++k) {
    const std::string what = "change " + std::to_string(k);
    const OpId op = testing::UniformInt(rng, graph.num_ops());
    const OpId other = (op + 1) % graph.num_ops();
    ASSERT_TRUE(delta->StepTimeIf(other, testing::RandomConfig(graph, other, 4, 0.3, rng)).ok());
    const OpConfig old = delta->strategy().configs[op];
    ASSERT_TRUE(delta->SetConfig(op, testing::RandomConfig(graph, op, 4, 0.3, rng)).ok());
    ExpectSameCost(*delta, graph, topology, cost, what, &checks, &oom_checks);
    if (k % 2 == 0) {
      ASSERT_TRUE(delta->SetConfig(op, old).ok());
      ExpectSameCost(*delta, graph, topology, cost, what + " undone", &checks, &oom_checks);
    }
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GE(oom_checks, checks / 10);
  EXPECT_LE(oom_checks, checks * 9 / 10);
}

}  // namespace
}  // namespace devplace
