// DeltaSimulator's behaviour besides matching full simulation on random changes (delta_test.cc): its memory
// answers (oom, step_cost) against the full memory model, a hand-built case for the shift check, multi-op and no-op
// changes, queries that leave it as it was, bad changes rejected atomically, and a whole strategy set afresh.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "sim/objective.h"
#include "sim/simulator.h"
#include "tests/testing/sim_fixtures.h"

namespace devplace {
namespace {

using testing::ExpectSameResult;
using testing::RandomConfig;
using testing::RandomStrategy;
using testing::RandomTrainingGraph;

TEST(DeltaSimulator, OomMatchesTheFullMemoryModel) {
  const Graph graph = RandomTrainingGraph(5, 60);
  const CostModel cost = MakeAnalyticCostModel();
  int64_t total = 0;
  const Strategy all_on_0 = Strategy::AllOn(graph.num_ops(), 0);
  const Topology roomy = testing::FullyConnected(2, 50e9, 2e-6);
  total = Simulate(graph, roomy, all_on_0, cost)->devices[0].peak_bytes;
  TopologyBuilder b("small");
  b.add_device(testing::MakeDevice("d0", total * 3 / 4));
  b.add_device(testing::MakeDevice("d1", total * 3 / 4));
  b.add_bidirectional_link(0, 1, 50e9, 2e-6, "nvlink");
  const Topology small = std::move(b).Build().value();
  Expected<DeltaSimulator> delta = DeltaSimulator::Create(graph, small, all_on_0, cost);
  ASSERT_TRUE(delta.ok());
  EXPECT_TRUE(delta->oom());
  EXPECT_EQ(delta->oom(), delta->result().oom);
  std::vector<std::pair<OpId, OpConfig>> half;
  for (OpId op = 0; op < graph.num_ops(); op += 2) half.emplace_back(op, OpConfig{{1}, {}});
  ASSERT_TRUE(delta->SetConfigs(half).ok());
  EXPECT_EQ(delta->oom(), Simulate(graph, small, delta->strategy(), cost)->oom);
}

// oom() may answer from a bound (every buffer alive at once fits) before computing peaks. Thirty ops feeding one
// (no weights, so nothing but buffers): nearly every buffer is alive when the last op runs, so the peak is close to
// the bound, and random moves over devices of many sizes between them find OOM and fitting states, each decided as
// the full memory model decides it.
TEST(DeltaSimulator, OomFromTheBoundAndFromThePeaksMatchesTheFullModel) {
  GraphBuilder b("fan-in");
  std::vector<OpId> sources;
  for (int i = 0; i < 30; ++i) {
    std::string name = "s";
    name += std::to_string(i);
    sources.push_back(b.add_op(testing::MakeOp(name, 1e6)));
  }
  const OpId sink = b.add_op(testing::MakeOp("z", 1e6));
  for (OpId s : sources) b.add_edge(s, sink);
  const Graph graph = std::move(b).Build().value();
  const CostModel cost = MakeAnalyticCostModel();
  const int64_t all = 31 * OutputBytes(graph.op(sink));  // every output on one device
  std::mt19937_64 rng(5);
  int ooms = 0, fits = 0, one_fits = 0;
  for (int64_t room = all / 6; room <= all * 3 / 2; room += all / 12) {
    TopologyBuilder sized("sized");
    sized.add_device(testing::MakeDevice("d0", room));
    sized.add_device(testing::MakeDevice("d1", room));
    sized.add_bidirectional_link(0, 1, 50e9, 2e-6, "nvlink");
    const Topology topo = std::move(sized).Build().value();
    Expected<DeltaSimulator> moving = DeltaSimulator::Create(graph, topo, Strategy::AllOn(graph.num_ops(), 0), cost);
    ASSERT_TRUE(moving.ok());
    for (int k = 0; k < 30; ++k) {
      const OpId op = testing::UniformInt(rng, graph.num_ops());
      ASSERT_TRUE(moving->SetConfig(op, OpConfig{{testing::UniformInt(rng, 2)}, {}}).ok());
      const bool full = Simulate(graph, topo, moving->strategy(), cost)->oom;
      ASSERT_EQ(moving->oom(), full) << "room " << room << " change " << k;
      (full ? ooms : fits)++;
      // The cost from the peaks alone equals the cost from the whole result (the overage included).
      const StepCost from_peaks = CostOf(moving->step_time(), moving->device_peaks(), topo);
      const StepCost from_result = CostOf(moving->result(), topo);
      ASSERT_EQ(from_peaks.oom, from_result.oom);
      ASSERT_EQ(from_peaks.overage, from_result.overage);
      ASSERT_EQ(from_peaks.step_time, from_result.step_time);
      // And so does step_cost(), from the peaks of the devices that may overflow alone.
      const StepCost cost_now = moving->step_cost();
      ASSERT_EQ(cost_now.oom, from_result.oom);
      ASSERT_EQ(cost_now.overage, from_result.overage);
      ASSERT_EQ(cost_now.step_time, from_result.step_time);
      one_fits += full && cost_now.overage > 0 && (moving->device_peaks()[0] <= room || moving->device_peaks()[1] <= room);
    }
  }
  EXPECT_GT(ooms, 20);
  EXPECT_GT(fits, 20);
  EXPECT_GT(one_fits, 5);  // OOM states where one device fits, which step_cost() answers from its bound
}

// The shift check's first test (TaskFails) reads a fresh layout's earliest-predecessor entry: a clean task after
// the cut whose inputs all run after the cut moves with the rest. Here t has two inputs: p1, on t's own device,
// dequeued at the start but running long (it binds t), and the transfer of p2's output, which runs after the cut.
// Moving x delays its chain (y, p2, p2's transfer) by a constant, but t stays where p1 puts it. Naming the transfer
// as t's earliest predecessor (or any slot after the cut) would move t with the rest.
TEST(DeltaSimulator, ATaskBoundByAnInputSettledBeforeTheCutKeepsItsTime) {
  GraphBuilder b("late-join");
  const OpId s = b.add_op(testing::MakeOp("s", 1e9));
  const OpId x = b.add_op(testing::MakeOp("x", 1e9));
  const OpId y = b.add_op(testing::MakeOp("y", 1e9));
  const OpId p2 = b.add_op(testing::MakeOp("p2", 1e9));
  const OpId p1 = b.add_op(testing::MakeOp("p1", 1e12));
  const OpId t = b.add_op(testing::MakeOp("t", 1e9));
  for (auto [from, to] : {std::pair{s, x}, {x, y}, {y, p2}, {p2, t}, {p1, t}}) b.add_edge(from, to);
  const Graph graph = std::move(b).Build().value();
  const Topology topo = testing::FullyConnected(3, 10e9, 5e-6);
  const CostModel cost = MakeAnalyticCostModel();
  Expected<DeltaSimulator> delta = DeltaSimulator::Create(graph, topo, Strategy::FromPlacement({0, 0, 0, 0, 1, 1}), cost);
  ASSERT_TRUE(delta.ok());
  const double before = delta->step_time();
  for (DeviceId d : {2, 0, 2}) {  // (not device 1, where x would wait for p1)
    ASSERT_TRUE(delta->SetConfig(x, OpConfig{{d}, {}}).ok());
    const Expected<SimResult> full = Simulate(graph, topo, delta->strategy(), cost);
    ASSERT_TRUE(full.ok());
    ExpectSameResult(delta->result(), *full, "x on device " + std::to_string(d));
    EXPECT_EQ(delta->step_time(), before);  // p1 and t set the step wherever x runs
  }
}

TEST(DeltaSimulator, MultiOpChangesAndNoOpChanges) {
  const Graph graph = RandomTrainingGraph(11, 50);
  const Topology topo = testing::FullyConnected(4, 50e9, 2e-6);
  const CostModel cost = MakeAnalyticCostModel();
  std::mt19937_64 rng(5);
  Expected<DeltaSimulator> delta = DeltaSimulator::Create(graph, topo, Strategy::AllOn(graph.num_ops(), 0), cost);
  ASSERT_TRUE(delta.ok());
  for (int k = 0; k < 50; ++k) {
    std::vector<std::pair<OpId, OpConfig>> changes;
    for (int j = 0; j < 3; ++j) {
      const OpId op = testing::UniformInt(rng, graph.num_ops());
      changes.emplace_back(op, RandomConfig(graph, op, 4, 0.2, rng));
    }
    ASSERT_TRUE(delta->SetConfigs(changes).ok());
    ExpectSameResult(delta->result(), *Simulate(graph, topo, delta->strategy(), cost), "multi " + std::to_string(k));
  }
  const SimResult before = delta->result();
  ASSERT_TRUE(delta->SetConfig(0, delta->strategy().configs[0]).ok());
  EXPECT_EQ(delta->last_retimed_tasks(), 0);
  ExpectSameResult(delta->result(), before, "no-op change");
}

// Queries (StepTimeIf) equal a full simulation of the changed strategy and leave the simulator as it was: after
// many of them, single- and multi-op, partitioned or not, the result is the same and later changes still match.
TEST(DeltaSimulator, QueriesLeaveTheSimulatorAsItWas) {
  const Graph graph = RandomTrainingGraph(13, 120);
  const Topology topo = testing::TwoHosts(2, 12e9, 3e-6);
  const CostModel cost = MakeAnalyticCostModel();
  std::mt19937_64 rng(17);
  const int devices = topo.num_devices();
  Expected<DeltaSimulator> delta =
      DeltaSimulator::Create(graph, topo, RandomStrategy(graph, devices, 0.3, rng), cost);
  ASSERT_TRUE(delta.ok()) << delta.error().message;
  for (int round = 0; round < 5; ++round) {
    const SimResult before = delta->result();
    for (int k = 0; k < 40; ++k) {
      std::vector<std::pair<OpId, OpConfig>> changes;
      for (int j = 0; j < 1 + k % 3; ++j) {
        const OpId op = testing::UniformInt(rng, graph.num_ops());
        changes.emplace_back(op, RandomConfig(graph, op, devices, 0.3, rng));
      }
      Strategy changed = delta->strategy();
      for (const auto& [op, config] : changes) changed.configs[op] = config;
      Expected<double> query = delta->StepTimeIf(changes);
      ASSERT_TRUE(query.ok()) << query.error().message;
      ASSERT_EQ(*query, Simulate(graph, topo, changed, cost)->step_time) << "round " << round << " query " << k;
    }
    ExpectSameResult(delta->result(), before, "after the queries of round " + std::to_string(round));
    EXPECT_EQ(delta->StepTimeIf(0, delta->strategy().configs[0]).value(), before.step_time);  // no change
    const OpId op = testing::UniformInt(rng, graph.num_ops());
    ASSERT_TRUE(delta->SetConfig(op, RandomConfig(graph, op, devices, 0.3, rng)).ok());
    ExpectSameResult(delta->result(), *Simulate(graph, topo, delta->strategy(), cost),
                     "change after round " + std::to_string(round));
  }
  OpConfig bad;
  bad.devices = {9};
  const double before = delta->step_time();
  Expected<double> rejected = delta->StepTimeIf(3, bad);
  ASSERT_FALSE(rejected.ok());
  EXPECT_NE(rejected.error().message.find("device 9"), std::string::npos) << rejected.error().message;
  EXPECT_EQ(delta->step_time(), before);
}

TEST(DeltaSimulator, RejectsBadChangesAtomically) {
  const Graph graph = RandomTrainingGraph(12, 10);
  const Topology topo = testing::FullyConnected(2, 50e9, 2e-6);
  Expected<DeltaSimulator> delta =
      DeltaSimulator::Create(graph, topo, Strategy::AllOn(graph.num_ops(), 0), MakeAnalyticCostModel());
  ASSERT_TRUE(delta.ok());
  const double before = delta->step_time();
  OpConfig bad;
  bad.devices = {7};
  std::vector<std::pair<OpId, OpConfig>> changes = {{1, OpConfig{{1}, {}}}, {2, bad}};
  Status s = delta->SetConfigs(changes);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("device 7"), std::string::npos) << s.error().message;
  EXPECT_EQ(delta->strategy().configs[1].devices[0], 0);
  EXPECT_EQ(delta->step_time(), before);
}

// SetStrategy after changes and a query gives what a new simulator of that strategy gives, and later changes
// and queries still match full simulation; a bad strategy changes nothing.
TEST(DeltaSimulator, SetStrategyEqualsANewSimulator) {
  const Graph graph = RandomTrainingGraph(21, 150);
  const Topology topo = testing::TwoHosts(2, 12e9, 3e-6);
  const CostModel cost = MakeAnalyticCostModel();
  std::mt19937_64 rng(23);
  const int devices = topo.num_devices();
  Expected<DeltaSimulator> delta = DeltaSimulator::Create(graph, topo, RandomStrategy(graph, devices, 0.3, rng), cost);
  ASSERT_TRUE(delta.ok()) << delta.error().message;
  for (int round = 0; round < 4; ++round) {
    for (int k = 0; k < 30; ++k) {
      const OpId op = testing::UniformInt(rng, graph.num_ops());
      ASSERT_TRUE(delta->SetConfig(op, RandomConfig(graph, op, devices, 0.3, rng)).ok());
    }
    const OpId asked = testing::UniformInt(rng, graph.num_ops());
    ASSERT_TRUE(delta->StepTimeIf(asked, RandomConfig(graph, asked, devices, 0.3, rng)).ok());
    const Strategy next = RandomStrategy(graph, devices, round % 2 == 0 ? 0.0 : 0.3, rng);
    ASSERT_TRUE(delta->SetStrategy(next).ok());
    EXPECT_EQ(delta->strategy(), next);
    const std::string where = "round " + std::to_string(round);
    ExpectSameResult(delta->result(), DeltaSimulator::Create(graph, topo, next, cost)->result(), where);
    ExpectSameResult(delta->result(), *Simulate(graph, topo, next, cost), where);
    EXPECT_EQ(delta->last_retimed_tasks(), 0) << where;
    EXPECT_TRUE(delta->CheckIndexes().ok()) << where;
    Strategy changed = next;
    const OpId op = testing::UniformInt(rng, graph.num_ops());
    changed.configs[op] = RandomConfig(graph, op, devices, 0.3, rng);
    EXPECT_EQ(delta->StepTimeIf(op, changed.configs[op]).value(), Simulate(graph, topo, changed, cost)->step_time);
    ASSERT_TRUE(delta->SetConfig(op, changed.configs[op]).ok());
    ExpectSameResult(delta->result(), *Simulate(graph, topo, changed, cost), where + ", then a change");
  }
  const Strategy kept = delta->strategy();
  const double before = delta->step_time();
  Strategy bad = kept;
  bad.configs[4].devices = {9};
  const Status s = delta->SetStrategy(bad);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("device 9"), std::string::npos) << s.error().message;
  EXPECT_EQ(delta->strategy(), kept);
  EXPECT_EQ(delta->step_time(), before);
  bad.configs.pop_back();
  EXPECT_FALSE(delta->SetStrategy(bad).ok());
  EXPECT_EQ(delta->strategy(), kept);
}

}  // namespace
}  // namespace devplace
