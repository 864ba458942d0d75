// A delta simulator that has made a sequence of changes before makes it again without allocating: its scratch,
// task graph, slot arrays and price cache keep their capacity across changes and rebuilds. Counted with a
// replacement of the global operator new (tests/testing/allocation_count.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "core/topology_yaml.h"
#include "datasets/families.h"
#include "sim/objective.h"
#include "sim/simulator.h"
#include "tests/testing/sim_fixtures.h"
#include "tests/testing/allocation_count.h"

namespace devplace {
namespace {

Topology Dgx1() {
  return ReadTopologyFile(std::string(DEVPLACE_SOURCE_DIR) + "/configs/topologies/dgx1-v100.yaml").value();
}

// One round: `moves` made in turn, each first asked about (as a search does) and then made, and followed by the
// reads an environment step makes (step time, the OOM check and penalty); then undone in reverse order. Returns
// the allocations made by the round.
int64_t Round(DeltaSimulator& delta, const std::vector<std::pair<OpId, OpConfig>>& moves,
              const std::vector<std::pair<OpId, OpConfig>>& before, double* sink) {
  const int64_t at_start = testing::ThreadAllocations();
  for (const auto& change : moves) {
    Expected<double> asked = delta.StepTimeIf({&change, 1});
    if (!asked.ok()) ADD_FAILURE() << "query failed";
    *sink += asked.ok() ? *asked : 0.0;
    if (!delta.SetConfigs({&change, 1}).ok()) ADD_FAILURE() << "change failed";
    *sink += delta.step_time() + static_cast<double>(delta.step_cost().oom);
  }
  for (size_t k = before.size(); k-- > 0;) {
    if (!delta.SetConfigs({&before[k], 1}).ok()) ADD_FAILURE() << "undo failed";
    *sink += delta.step_time();
  }
  return testing::ThreadAllocations() - at_start;
}

TEST(DeltaAllocation, RepeatedChangesDoNotAllocate) {
  FamilyOptions options;
  options.target_ops = 1000;
  for (const char* family : {"nmt", "transformer"}) {
    const Graph graph = GenerateFamilyMember(family, 7, options).value();
    const Topology topology = Dgx1();
    std::mt19937_64 rng(11);
    const Strategy start = testing::RandomStrategy(graph, topology.num_devices(), 0.0, rng);
    DeltaSimulator delta = DeltaSimulator::Create(graph, topology, start, CostModel(), SimOptions()).value();
    std::vector<std::pair<OpId, OpConfig>> moves, before;
    Strategy walked = start;
    for (int k = 0; k < 200; ++k) {
      const OpId op = testing::UniformInt(rng, graph.num_ops());
      before.emplace_back(op, walked.configs[op]);
      moves.emplace_back(op, OpConfig{{testing::UniformInt(rng, topology.num_devices())}, {}});
      walked.configs[op] = moves.back().second;
    }
    double sink = 0;
    // The first rounds grow the lists to what these changes need (and fill the price cache; the room kept for
    // garbage settles over the first compactions, which come every round or two; a resource's slot-edit lists grow
    // to the most moves a change makes there, which depends on where earlier changes left holes: transformer's
    // settle in the fifth round since the ordered pass jumps over stretches, in the fourth before); later rounds
    // only reuse them.
    const int64_t first = Round(delta, moves, before, &sink);
    EXPECT_GT(first, 0) << family << ": the count sees the simulator's allocations";
    for (int round = 1; round < 5; ++round) (void)Round(delta, moves, before, &sink);
    for (int round = 5; round < 8; ++round)
      EXPECT_EQ(Round(delta, moves, before, &sink), 0) << family << ", round " << round;
    EXPECT_EQ(delta.strategy(), start);
    EXPECT_GT(sink, 0);
  }
}

}  // namespace
}  // namespace devplace
