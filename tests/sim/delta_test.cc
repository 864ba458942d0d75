// Delta simulation equals full simulation, bit for bit, over many random single-op changes.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/partition.h"
#include "core/topology_yaml.h"
#include "core/training_graph.h"
#include "datasets/families.h"
#include "sim/simulator.h"
#include "tests/testing/sim_fixtures.h"

namespace devplace {
namespace {

using testing::RandomConfig;
using testing::RandomStrategy;
using testing::ExpectSameResult;
using testing::RandomTrainingGraph;

// An "nmt" family training graph of about `ops` ops, and the DGX-1 (8 V100s) it is placed on.
Expected<Graph> NmtGraph(int ops, uint64_t seed) {
  FamilyOptions options;
  options.target_ops = ops;
  return GenerateFamilyMember("nmt", seed, options);
}
Topology Dgx1() {
  return ReadTopologyFile(std::string(DEVPLACE_SOURCE_DIR) + "/configs/topologies/dgx1-v100.yaml").value();
}

// The topological order cut into `devices` equal blocks.
Strategy Contiguous(const Graph& graph, int devices) {
  std::vector<DeviceId> placement(static_cast<size_t>(graph.num_ops()));
  const auto& order = graph.topological_order();
  for (size_t k = 0; k < order.size(); ++k) placement[order[k]] = static_cast<DeviceId>(k * devices / order.size());
  return Strategy::FromPlacement(placement);
}

// The delta simulator's incremental layout and indexes equal a fresh computation from its current layout (a stale
// entry may not change a result until later changes read it).
void ExpectIndexesHold(const DeltaSimulator& delta, const std::string& what) {
  const Status indexes = delta.CheckIndexes();
  EXPECT_TRUE(indexes.ok()) << what << ": " << (indexes.ok() ? "" : indexes.error().message);
}

// Asks about moving the next op to the next device (never made), asks for the step time `config` on `op` would
// give, sets it, and checks all three against full simulations (every tenth change, the whole result);
// even-numbered changes are then undone, as a search undoes rejected proposals.
void ChangeCheckAndUndoEven(DeltaSimulator& delta, const Graph& graph, const Topology& topology, const CostModel& cost,
                            OpId op, const OpConfig& config, int k) {
  const OpId other = (op + 1) % graph.num_ops();
  Strategy asked = delta.strategy();
  asked.configs[other] = {{static_cast<DeviceId>((asked.configs[other].devices[0] + 1) % topology.num_devices())}, {}};
  Expected<double> other_query = delta.StepTimeIf(other, asked.configs[other]);
  ASSERT_TRUE(other_query.ok()) << other_query.error().message;
  ASSERT_EQ(*other_query, Simulate(graph, topology, asked, cost)->step_time) << "query of another op " << k;
  const OpConfig old = delta.strategy().configs[op];
  Expected<double> query = delta.StepTimeIf(op, config);
  ASSERT_TRUE(query.ok()) << query.error().message;
  ASSERT_TRUE(delta.SetConfig(op, config).ok());
  Expected<SimResult> full = Simulate(graph, topology, delta.strategy(), cost);
  ASSERT_TRUE(full.ok()) << full.error().message;
  ASSERT_EQ(delta.step_time(), full->step_time) << "change " << k;
  ASSERT_EQ(*query, full->step_time) << "query " << k;
  if (k % 10 == 0) ExpectSameResult(delta.result(), *full, "change " + std::to_string(k));
  ExpectIndexesHold(delta, "change " + std::to_string(k));
  if (k % 2 == 0 && !::testing::Test::HasFailure()) {
    ASSERT_TRUE(delta.SetConfig(op, old).ok());
    ExpectIndexesHold(delta, "undo of change " + std::to_string(k));
  }
}

struct Case {
  const char* name;
  uint64_t seed;
  int ops;
  Topology topology;
  double p_partition;
  int changes;
};

TEST(DeltaSimulator, EqualsFullSimulationOnRandomChanges) {
  std::vector<Case> cases;
  cases.push_back({"plain/fully-connected", 1, 60, testing::FullyConnected(4, 50e9, 2e-6), 0.0, 300});
  cases.push_back({"plain/two-hosts", 2, 80, testing::TwoHosts(2, 12e9, 3e-6), 0.0, 250});
  cases.push_back({"partitioned/star", 3, 40, testing::Star(4, 25e9, 1e-6), 0.3, 250});
  cases.push_back({"partitioned/two-hosts", 4, 40, testing::TwoHosts(2, 12e9, 3e-6), 0.3, 250});
  int total = 0;
  for (const Case& c : cases) {
    const Graph graph = RandomTrainingGraph(c.seed, c.ops);
    const CostModel cost = MakeAnalyticCostModel();
    std::mt19937_64 rng(c.seed * 7919);
    const int devices = c.topology.num_devices();
    Strategy initial = RandomStrategy(graph, devices, c.p_partition, rng);
    Expected<DeltaSimulator> delta = DeltaSimulator::Create(graph, c.topology, initial, cost);
    ASSERT_TRUE(delta.ok()) << delta.error().message;
    int64_t retimed = 0;
    for (int k = 0; k < c.changes; ++k) {
      const OpId op = testing::UniformInt(rng, graph.num_ops());
      const OpConfig config = RandomConfig(graph, op, devices, c.p_partition, rng);
      Expected<double> query = delta->StepTimeIf(op, config);
      ASSERT_TRUE(query.ok()) << query.error().message;
      ASSERT_TRUE(delta->SetConfig(op, config).ok());
      retimed += delta->last_retimed_tasks();
      Expected<SimResult> full = Simulate(graph, c.topology, delta->strategy(), cost);
      ASSERT_TRUE(full.ok()) << full.error().message;
      ASSERT_EQ(*query, full->step_time) << c.name << " query " << k;
      ExpectSameResult(delta->result(), *full, std::string(c.name) + " change " + std::to_string(k));
      ASSERT_EQ(delta->step_time(), full->step_time);
      ExpectIndexesHold(*delta, std::string(c.name) + " change " + std::to_string(k));
      ASSERT_EQ(delta->oom(), full->oom);
      if (::testing::Test::HasFailure()) return;
      ++total;
    }
    // The delta run re-times a fraction of the tasks, not all of them every time.
    EXPECT_LT(retimed, static_cast<int64_t>(c.changes) * delta->result().num_tasks) << c.name;
  }
  EXPECT_GE(total, 1000);
}

// `config` run as 1, 2 or 4 copies (as far as the devices go), the copies on further devices in random order.
OpConfig WithCopies(OpConfig config, int num_devices, std::mt19937_64& rng) {
  const int parts = config.num_parts();
  const int copies = std::min(1 << testing::UniformInt(rng, 3), num_devices / parts);
  std::vector<DeviceId> rest;
  for (DeviceId d = 0; d < num_devices; ++d)
    if (std::find(config.devices.begin(), config.devices.end(), d) == config.devices.end()) rest.push_back(d);
  for (int i = static_cast<int>(rest.size()) - 1; i > 0; --i) std::swap(rest[i], rest[testing::UniformInt(rng, i + 1)]);
  config.devices.insert(config.devices.end(), rest.begin(), rest.begin() + (copies - 1) * parts);
  return config;
}

// Copies (ops replicated over a mesh axis): their compute tasks, per-copy gradient rings and nearest-copy reads
// change like any other group.
TEST(DeltaSimulator, EqualsFullSimulationWithCopies) {
  std::vector<Case> cases;
  cases.push_back({"copies/star", 5, 40, testing::Star(4, 25e9, 1e-6), 0.4, 200});
  cases.push_back({"copies/two-hosts", 6, 40, testing::TwoHosts(2, 12e9, 3e-6), 0.4, 200});
  for (const Case& c : cases) {
    const Graph graph = RandomTrainingGraph(c.seed, c.ops);
    const CostModel cost = MakeAnalyticCostModel();
    std::mt19937_64 rng(c.seed * 104729);
    const int devices = c.topology.num_devices();
    Strategy initial = RandomStrategy(graph, devices, c.p_partition, rng);
    for (OpConfig& config : initial.configs) config = WithCopies(config, devices, rng);
    Expected<DeltaSimulator> delta = DeltaSimulator::Create(graph, c.topology, initial, cost);
    ASSERT_TRUE(delta.ok()) << delta.error().message;
    int with_copies = 0;
    for (int k = 0; k < c.changes; ++k) {
      const OpId op = testing::UniformInt(rng, graph.num_ops());
      const OpConfig config = WithCopies(RandomConfig(graph, op, devices, c.p_partition, rng), devices, rng);
      int64_t parts = 1;
      for (int32_t d : config.degrees) parts *= d;
      with_copies += config.num_parts() > parts ? 1 : 0;
      ChangeCheckAndUndoEven(*delta, graph, c.topology, cost, op, config, k);
      if (::testing::Test::HasFailure()) return;
    }
    EXPECT_GT(with_copies, c.changes / 4) << c.name;
  }
}

// ZeRO-3 (shard_weights on ops holding weights): the weight all-gathers hang off the op's in-edges (their first sends
// wait for the op's inputs) and gradients are reduce-scattered; a change to either end of an edge re-times them.
TEST(DeltaSimulator, EqualsFullSimulationWithShardedWeights) {
  std::vector<Case> cases;
  cases.push_back({"zero3/star", 7, 40, testing::Star(4, 25e9, 1e-6), 0.5, 200});
  cases.push_back({"zero3/two-hosts", 8, 40, testing::TwoHosts(2, 12e9, 3e-6), 0.5, 200});
  for (const Case& c : cases) {
    const Graph graph = RandomTrainingGraph(c.seed, c.ops);
    const CostModel cost = MakeAnalyticCostModel();
    std::mt19937_64 rng(c.seed * 15485863);
    const int devices = c.topology.num_devices();
    auto holds_weights = [&](OpId op) {
      const Op& o = graph.op(op);
      const OpId f = o.role == OpRole::kBackward ? graph.find(o.forward_op) : op;
      return o.role != OpRole::kUpdate && f >= 0 && graph.op(f).param_bytes > 0;
    };
    auto random_config = [&](OpId op) {
      OpConfig config = WithCopies(RandomConfig(graph, op, devices, c.p_partition, rng), devices, rng);
      config.shard_weights = holds_weights(op) && testing::UniformInt(rng, 4) > 0;
      return config;
    };
    Strategy initial = RandomStrategy(graph, devices, c.p_partition, rng);
    for (OpId op = 0; op < graph.num_ops(); ++op) initial.configs[op] = random_config(op);
    Expected<DeltaSimulator> delta = DeltaSimulator::Create(graph, c.topology, initial, cost);
    ASSERT_TRUE(delta.ok()) << delta.error().message;
    int gathering = 0;
    for (int k = 0; k < c.changes; ++k) {
      const OpId op = testing::UniformInt(rng, graph.num_ops());
      const OpConfig config = random_config(op);
      gathering += config.shard_weights && Layout(graph.op(op), config).replicas > 1 ? 1 : 0;
      ChangeCheckAndUndoEven(*delta, graph, c.topology, cost, op, config, k);
      if (::testing::Test::HasFailure()) return;
    }
    EXPECT_GT(gathering, c.changes / 20) << c.name;
  }
}

// Larger graphs span many chunks of the delta simulator's order layout (shifts applied per chunk, chunk-level
// skips in the shift check, re-timed tasks moving across chunks). Changes alternate with moving the op back, as
// a search does, on a contiguous and a random placement.
TEST(DeltaSimulator, EqualsFullSimulationOnLargerGraphs) {
  const Graph graph = RandomTrainingGraph(21, 700);
  const CostModel cost = MakeAnalyticCostModel();
  const Topology topologies[] = {testing::FullyConnected(8, 50e9, 2e-6), testing::TwoHosts(4, 12e9, 3e-6)};
  int total = 0;
  for (int c = 0; c < 2; ++c) {
    const Topology& topology = topologies[c];
    const int devices = topology.num_devices();
    std::mt19937_64 rng(31 + c);
    std::vector<DeviceId> placement(static_cast<size_t>(graph.num_ops()));
    const auto& order = graph.topological_order();
    for (size_t k = 0; k < order.size(); ++k)
      placement[order[k]] = c == 0 ? static_cast<DeviceId>(k * devices / order.size())
                                   : testing::UniformInt(rng, devices);
    Expected<DeltaSimulator> delta =
        DeltaSimulator::Create(graph, topology, Strategy::FromPlacement(placement), cost);
    ASSERT_TRUE(delta.ok()) << delta.error().message;
    for (int k = 0; k < 120; ++k) {
      const OpId op = testing::UniformInt(rng, graph.num_ops());
      const OpConfig old = delta->strategy().configs[op];
      ASSERT_TRUE(delta->SetConfig(op, RandomConfig(graph, op, devices, 0.1, rng)).ok());
      Expected<SimResult> full = Simulate(graph, topology, delta->strategy(), cost);
      ASSERT_TRUE(full.ok()) << full.error().message;
      ExpectSameResult(delta->result(), *full, "placement " + std::to_string(c) + " change " + std::to_string(k));
      ASSERT_EQ(delta->step_time(), full->step_time);
      ExpectIndexesHold(*delta, "placement " + std::to_string(c) + " change " + std::to_string(k));
      if (::testing::Test::HasFailure()) return;
      if (k % 2 == 0) {
        ASSERT_TRUE(delta->SetConfig(op, old).ok());
      }
      ++total;
    }
  }
  EXPECT_EQ(total, 240);
}

// Changes that reach most of the schedule (an op early in it moved on a random placement, where every device
// waits for the others) re-time the rest in one pass, and those that re-time most of it are not placed slot by
// slot: the new order is written out whole and laid out afresh.
// Made and undone, alternately with changes that re-time little, on a graph of several thousand tasks.
TEST(DeltaSimulator, EqualsFullSimulationWhenAChangeRetimesMostOfTheSchedule) {
  const Expected<Graph> graph = NmtGraph(2000, 42);
  ASSERT_TRUE(graph.ok()) << graph.error().message;
  const Topology topology = Dgx1();
  const int devices = topology.num_devices();
  const CostModel cost = MakeAnalyticCostModel();
  // Each forward op on a random device, its backward and update ops with it.
  std::mt19937_64 rng(41);
  std::vector<DeviceId> placement(static_cast<size_t>(graph->num_ops()));
  for (OpId op = 0; op < graph->num_ops(); ++op)
    if (graph->op(op).role == OpRole::kForward) placement[op] = testing::UniformInt(rng, devices);
  for (OpId op = 0; op < graph->num_ops(); ++op)
    if (graph->op(op).role != OpRole::kForward) placement[op] = placement[graph->find(graph->op(op).forward_op)];
  Expected<DeltaSimulator> delta = DeltaSimulator::Create(*graph, topology, Strategy::FromPlacement(placement), cost);
  ASSERT_TRUE(delta.ok()) << delta.error().message;
  const int64_t tasks = delta->result().num_tasks;
  int large = 0;
  for (int k = 0; k < 200; ++k) {
    const OpId op = testing::UniformInt(rng, graph->num_ops());
    const OpConfig old = delta->strategy().configs[op];
    const int64_t dense_before = delta->sweep_counts().dense;
    ASSERT_TRUE(delta->SetConfig(op, RandomConfig(*graph, op, devices, 0.0, rng)).ok());
    large += delta->sweep_counts().dense > dense_before;
    Expected<SimResult> full = Simulate(*graph, topology, delta->strategy(), cost);
    ASSERT_TRUE(full.ok()) << full.error().message;
    ExpectSameResult(delta->result(), *full, "change " + std::to_string(k));
    ExpectIndexesHold(*delta, "change " + std::to_string(k));
    if (::testing::Test::HasFailure()) return;
    if (k % 3 == 0) {
      ASSERT_TRUE(delta->SetConfig(op, old).ok());
      ExpectIndexesHold(*delta, "undo of change " + std::to_string(k));
      ASSERT_EQ(delta->step_time(), Simulate(*graph, topology, delta->strategy(), cost)->step_time);
    }
  }
  // Changes large enough that their sweep went over to a one-pass re-timing of the rest (29 when counted so; 11
  // re-timed more than a quarter of the tasks before the ordered pass jumped over stretches that only move).
  EXPECT_GE(large, 20) << "of " << tasks << " tasks";
}

// The iterative environment's episode: every op starts on one GPU, then each forward op in turn moves with its
// backward and update ops (one change of several ops) to a random GPU, made in parts of nearby ops (SetConfigs'
// parts). Every other move is asked about first (StepTimeIf), and the simulator must be as it was after the query.
// Early moves shift the rest of a schedule serialised on the first GPU; later ones re-time much of a scattered one,
// so merged layouts that keep the shifted tail after the cut (LayoutMerged's kept tasks, re-indexed where their
// inputs moved) occur throughout.
TEST(DeltaSimulator, EqualsFullSimulationOverAnIterativeEpisode) {
  const Expected<Graph> graph = NmtGraph(2000, 43);
  ASSERT_TRUE(graph.ok()) << graph.error().message;
  const Topology topology = Dgx1();
  const int devices = topology.num_devices();
  const CostModel cost = MakeAnalyticCostModel();
  std::vector<std::vector<OpId>> groups;  // a forward op, then its backward and update ops
  std::vector<int32_t> group_of(static_cast<size_t>(graph->num_ops()), -1);
  for (OpId op : graph->topological_order())
    if (graph->op(op).role == OpRole::kForward) {
      group_of[op] = static_cast<int32_t>(groups.size());
      groups.push_back({op});
    }
  for (OpId op = 0; op < graph->num_ops(); ++op)
    if (graph->op(op).role != OpRole::kForward) groups[group_of[graph->find(graph->op(op).forward_op)]].push_back(op);
  Expected<DeltaSimulator> delta = DeltaSimulator::Create(
      *graph, topology, Strategy::FromPlacement(std::vector<DeviceId>(static_cast<size_t>(graph->num_ops()), 0)), cost);
  ASSERT_TRUE(delta.ok()) << delta.error().message;
  std::mt19937_64 rng(43);
  int steps = 0;
  // Every third group keeps the test short; the moves still spread the ops over the whole schedule.
  for (size_t g = 0; g < groups.size(); g += 3, ++steps) {
    const OpConfig moved{{static_cast<DeviceId>(testing::UniformInt(rng, devices))}, {}};
    std::vector<std::pair<OpId, OpConfig>> changes;
    for (OpId op : groups[g]) changes.emplace_back(op, moved);
    const bool asked = steps % 2 == 1;
    const double before = delta->step_time();
    const Expected<double> answer = asked ? delta->StepTimeIf(changes) : Expected<double>(0.0);
    ASSERT_TRUE(answer.ok());
    if (asked) {
      ASSERT_EQ(delta->step_time(), before) << "query at step " << steps;
      ExpectIndexesHold(*delta, "query at step " + std::to_string(steps));
    }
    ASSERT_TRUE(delta->SetConfigs(changes).ok());
    const Expected<SimResult> full = Simulate(*graph, topology, delta->strategy(), cost);
    ASSERT_TRUE(full.ok()) << full.error().message;
    if (asked) {
      ASSERT_EQ(*answer, full->step_time) << "step " << steps;
    }
    ASSERT_EQ(delta->step_time(), full->step_time) << "step " << steps;
    ASSERT_EQ(delta->oom(), full->oom) << "step " << steps;
    if (steps % 10 == 0) ExpectSameResult(delta->result(), *full, "step " + std::to_string(steps));
    ExpectIndexesHold(*delta, "step " + std::to_string(steps));
    if (::testing::Test::HasFailure()) return;
  }
}

// Changes to ops far apart in the order, as a group move is on a large graph: StepTimeIf asks about them by parts
// (every part but the earliest made, that one asked about; the parts it made stay until the next call, which
// undoes them unless it makes the same change), whole, or as the measured costs say (a mix of both). On a chain
// of 2,000 ops, first on one GPU, each step moves two or three ops from the first tenth and one from the last
// tenth to random GPUs and asks about it; the answer must equal a full simulation of the changed strategy. Then,
// in turn: the simulator is read (it must be as before the query); the change is made at once (from the query's
// parts and outcome); another change is asked about first; another change is made.
class FarApartQueries : public ::testing::TestWithParam<DeltaSimulator::PartsQueries> {};

TEST_P(FarApartQueries, EqualFullSimulationAndLeaveTheSimulatorAsItWas) {
  constexpr int kOps = 2000;  // the first and last tenths' ops fall in parts of their own (kSamePartSlots)
  GraphBuilder b("long-chain");
  std::mt19937_64 rng(5);
  for (int i = 0; i < kOps; ++i) {
    const int64_t bytes = 1000 * (1 + testing::UniformInt(rng, 1000));
    b.add_op(testing::MakeOp("op" + std::to_string(i), 1e6 * (1 + testing::UniformInt(rng, 100)), {bytes}));
    if (i > 0) b.add_edge(i - 1, i);
  }
  const Graph graph = *std::move(b).Build();
  const Topology topology = Dgx1();
  const CostModel cost = MakeAnalyticCostModel();
  Expected<DeltaSimulator> delta =
      DeltaSimulator::Create(graph, topology, Strategy::AllOn(graph.num_ops(), 0), cost);
  ASSERT_TRUE(delta.ok()) << delta.error().message;
  delta->set_parts_queries(GetParam());
  auto far_apart = [&](int step) {
    auto device = [&] {
      return OpConfig{{static_cast<DeviceId>(testing::UniformInt(rng, topology.num_devices()))}, {}};
    };
    const OpId early = testing::UniformInt(rng, kOps / 10), late = kOps - 1 - testing::UniformInt(rng, kOps / 10);
    std::vector<std::pair<OpId, OpConfig>> changes{{late, device()}, {early, device()}};
    if (step % 3 == 0) changes.emplace_back(early + 1, device());
    return changes;
  };
  auto changed = [](Strategy strategy, const std::vector<std::pair<OpId, OpConfig>>& changes) {
    for (const auto& [op, config] : changes) strategy.configs[op] = config;
    return strategy;
  };
  for (int step = 0; step < 48; ++step) {
    const std::vector<std::pair<OpId, OpConfig>> changes = far_apart(step);
    const Strategy before = delta->strategy();
    const double before_step = delta->step_time();
    const Expected<SimResult> full = Simulate(graph, topology, changed(before, changes), cost);
    ASSERT_TRUE(full.ok()) << full.error().message;
    const std::vector<std::pair<OpId, OpConfig>> other = far_apart(step + 1);
    const Expected<SimResult> other_full = Simulate(graph, topology, changed(before, other), cost);
    ASSERT_TRUE(other_full.ok()) << other_full.error().message;
    const Expected<double> answer = delta->StepTimeIf(changes);
    ASSERT_TRUE(answer.ok()) << answer.error().message;
    ASSERT_EQ(*answer, full->step_time) << "step " << step;
    const std::string where = "step " + std::to_string(step) + " (" + std::to_string(step % 4) + ")";
    switch (step % 4) {
      case 0:  // read: as before the query
        ASSERT_EQ(delta->step_time(), before_step) << where;
        for (const auto& [op, config] : changes) ASSERT_EQ(delta->strategy().configs[op], before.configs[op]);
        break;
      case 1:  // made at once
        ASSERT_TRUE(delta->SetConfigs(changes).ok());
        ASSERT_EQ(delta->step_time(), full->step_time) << where;
        for (const auto& [op, config] : changes) ASSERT_EQ(delta->strategy().configs[op], config);
        break;
      case 2: {  // another asked about
        const Expected<double> other_answer = delta->StepTimeIf(other);
        ASSERT_TRUE(other_answer.ok()) << other_answer.error().message;
        ASSERT_EQ(*other_answer, other_full->step_time) << where;
        ASSERT_EQ(delta->step_time(), before_step) << where;
        break;
      }
      default:  // another made
        ASSERT_TRUE(delta->SetConfigs(other).ok());
        ASSERT_EQ(delta->step_time(), other_full->step_time) << where;
    }
    ExpectIndexesHold(*delta, where);
    if (::testing::Test::HasFailure()) return;
  }
  ASSERT_TRUE(delta->StepTimeIf(far_apart(0)).ok());  // a new strategy after a query by parts
  ASSERT_TRUE(delta->SetStrategy(Strategy::AllOn(graph.num_ops(), 1)).ok());
  ExpectSameResult(delta->result(), *Simulate(graph, topology, delta->strategy(), cost), "end");
}

INSTANTIATE_TEST_SUITE_P(DeltaSimulator, FarApartQueries,
                         ::testing::Values(DeltaSimulator::PartsQueries::kByParts,
                                           DeltaSimulator::PartsQueries::kWhole,
                                           DeltaSimulator::PartsQueries::kMeasured),
                         [](const auto& info) {
                           switch (info.param) {
                             case DeltaSimulator::PartsQueries::kByParts: return std::string("ByParts");
                             case DeltaSimulator::PartsQueries::kWhole: return std::string("Whole");
                             default: return std::string("Measured");
                           }
                         });

// Every task's times, not only the aggregates: with the timeline kept, the delta simulator's timeline (its tasks
// in dequeue order) equals the full simulation's entry by entry after every change. A task shifted with the rest
// of the schedule while a settled input still binds it changes no aggregate until later changes build on it;
// this catches it where it happens (on plain and partitioned random graphs, and on nmt placed at random on the
// DGX-1, where some changes re-time most of the schedule and are laid out whole).
TEST(DeltaSimulator, EqualsFullSimulationTaskByTask) {
  SimOptions options;
  options.keep_timeline = true;
  const CostModel cost = MakeAnalyticCostModel();
  const Expected<Graph> nmt = NmtGraph(1000, 7);
  ASSERT_TRUE(nmt.ok()) << nmt.error().message;
  const Topology dgx1 = Dgx1();
  struct TimelineCase {
    const char* name;
    Graph graph;
    Topology topology;
    double p_partition;
    int changes;
  };
  std::vector<TimelineCase> cases;
  cases.push_back({"plain/fully-connected", RandomTrainingGraph(5, 60), testing::FullyConnected(4, 50e9, 2e-6), 0.0, 150});
  cases.push_back({"partitioned/two-hosts", RandomTrainingGraph(6, 40), testing::TwoHosts(2, 12e9, 3e-6), 0.3, 150});
  cases.push_back({"nmt/dgx1", *nmt, dgx1, 0.0, 60});
  for (const TimelineCase& c : cases) {
    std::mt19937_64 rng(17);
    const int devices = c.topology.num_devices();
    Expected<DeltaSimulator> delta = DeltaSimulator::Create(
        c.graph, c.topology, RandomStrategy(c.graph, devices, c.p_partition, rng), cost, options);
    ASSERT_TRUE(delta.ok()) << delta.error().message;
    for (int k = 0; k < c.changes; ++k) {
      const OpId op = testing::UniformInt(rng, c.graph.num_ops());
      ASSERT_TRUE(delta->SetConfig(op, RandomConfig(c.graph, op, devices, c.p_partition, rng)).ok());
      const Expected<SimResult> full = Simulate(c.graph, c.topology, delta->strategy(), cost, options);
      ASSERT_TRUE(full.ok()) << full.error().message;
      const SimResult mine = delta->result();
      ASSERT_EQ(mine.timeline.size(), full->timeline.size()) << c.name << " change " << k;
      for (size_t i = 0; i < mine.timeline.size(); ++i) {
        const TimelineTask &a = mine.timeline[i], &b = full->timeline[i];
        ASSERT_TRUE(a.kind == b.kind && a.op == b.op && a.consumer == b.consumer && a.part == b.part &&
                    a.resource == b.resource && a.bytes == b.bytes && a.start == b.start && a.end == b.end)
            << c.name << " change " << k << ": timeline entry " << i << " of op " << b.op << " at " << b.start
            << " - " << b.end << ", delta " << a.op << " at " << a.start << " - " << a.end;
      }
      ExpectIndexesHold(*delta, std::string(c.name) + " change " + std::to_string(k));
    }
  }
}

// oom() follows the memory model: a graph that only fits when spread out is OOM on one small device.
// A contiguous placement of a larger graph (2,283 ops) on two hosts, where the sweep jumps over long stretches of tasks that
// keep their times; among these changes are ones where a task in such a stretch waits for a dirty task that lies
// before the sweep (the jump must stop there) and ones where a resource's first task in the stretch finds its
// resource free at another time.
TEST(DeltaSimulator, EqualsFullSimulationWhereTheSweepJumps) {
  const Graph graph = RandomTrainingGraph(31, 847);
  const CostModel cost = MakeAnalyticCostModel();
  const Topology topology = testing::TwoHosts(4, 12e9, 3e-6);
  const int devices = topology.num_devices();
  std::mt19937_64 rng(31);
  Expected<DeltaSimulator> delta = DeltaSimulator::Create(graph, topology, Contiguous(graph, devices), cost);
  ASSERT_TRUE(delta.ok()) << delta.error().message;
  for (int k = 0; k < 140; ++k) {
    const OpId op = testing::UniformInt(rng, graph.num_ops());
    ChangeCheckAndUndoEven(*delta, graph, topology, cost, op, RandomConfig(graph, op, devices, 0.0, rng), k);
    if (::testing::Test::HasFailure()) return;
  }
}

// A hub op feeding every step of a chain, and a sink reading every step (like an attention memory and its
// gradient): changes near them patch long adjacency lists in place and move lists that outgrow their room;
// changes alternate with moving the op back, and every few changes move the hub or the sink itself.
TEST(DeltaSimulator, EqualsFullSimulationAroundHighDegreeOps) {
  GraphBuilder b("hub");
  Op hub_op = testing::MakeOp("hub", 4e6, {8, 64}, 4096);
  hub_op.dims = {{DimKind::kSample, 0, 0, 8}, {DimKind::kAttribute, 1, 1, 64}};
  const OpId hub = b.add_op(std::move(hub_op));
  std::vector<OpId> chain;
  for (int k = 0; k < 60; ++k) {
    Op op = testing::MakeOp("step" + std::to_string(k), 1e6 * (1 + k % 5), {8, 64}, k % 3 == 0 ? 8192 : 0);
    op.dims = {{DimKind::kSample, 0, 0, 8}, {DimKind::kAttribute, 1, 1, 64}};
    chain.push_back(b.add_op(std::move(op)));
    b.add_edge(hub, chain.back());
    if (k > 0) b.add_edge(chain[k - 1], chain[k]);
  }
  const OpId sink = b.add_op(testing::MakeOp("sink", 2e6, {8, 64}));
  for (OpId step : chain) b.add_edge(step, sink);
  const Graph graph = DeriveTrainingGraph(std::move(b).Build().value()).value();
  const Topology topology = testing::TwoHosts(2, 12e9, 3e-6);
  const int devices = topology.num_devices();
  const CostModel cost = MakeAnalyticCostModel();
  std::mt19937_64 rng(77);
  Expected<DeltaSimulator> delta = DeltaSimulator::Create(graph, topology, Contiguous(graph, devices), cost);
  ASSERT_TRUE(delta.ok()) << delta.error().message;
  const OpId hubs[] = {graph.find("hub"), graph.find("sink"), graph.find("hub/grad"), graph.find("sink/grad")};
  for (int k = 0; k < 300; ++k) {
    const OpId op = k % 4 == 0 ? hubs[(k / 4) % 4] : testing::UniformInt(rng, graph.num_ops());
    ASSERT_GE(op, 0);
    ChangeCheckAndUndoEven(*delta, graph, topology, cost, op, RandomConfig(graph, op, devices, 0.2, rng), k);
    if (::testing::Test::HasFailure()) return;
  }
}

// Members of the graph families (LSTM chains with attention hubs, transformer blocks, language models) on two
// machine presets, placed contiguously and at random: the structures the delta simulator meets in searches.
TEST(DeltaSimulator, EqualsFullSimulationOnFamilyGraphs) {
  const CostModel cost = MakeAnalyticCostModel();
  int total = 0;
  for (const char* family : {"nmt", "transformer", "ptb"}) {
    FamilyOptions options;
    options.target_ops = 600;
    const Expected<Graph> graph = GenerateFamilyMember(family, 3, options);
    ASSERT_TRUE(graph.ok()) << graph.error().message;
    for (const char* preset : {"dgx1-v100", "p100-4x4-ib"}) {
      const Topology topology =
          ReadTopologyFile(std::string(DEVPLACE_SOURCE_DIR) + "/configs/topologies/" + preset + ".yaml").value();
      const int devices = topology.num_devices();
      for (int random = 0; random < 2; ++random) {
        std::mt19937_64 rng(static_cast<uint64_t>(total + 1));
        const Strategy start =
            random ? RandomStrategy(*graph, devices, 0.0, rng) : Contiguous(*graph, devices);
        Expected<DeltaSimulator> delta = DeltaSimulator::Create(*graph, topology, start, cost);
        ASSERT_TRUE(delta.ok()) << delta.error().message;
        for (int k = 0; k < 40; ++k, ++total) {
          SCOPED_TRACE(std::string(family) + " on " + preset + (random ? ", random" : ", contiguous"));
          const OpId op = testing::UniformInt(rng, graph->num_ops());
          ChangeCheckAndUndoEven(*delta, *graph, topology, cost, op, RandomConfig(*graph, op, devices, 0.1, rng), k);
          if (::testing::Test::HasFailure()) return;
        }
      }
    }
  }
  EXPECT_EQ(total, 480);
}

}  // namespace
}  // namespace devplace
