// A link's per-message and per-step costs (core/topology.h, docs/simulator.md "Per-message and per-step costs"),
// hand-checked: every hop of a transfer pays the message cost once, every hop of a collective step the step cost
// instead; a tensor read by k ops on another device crosses (and pays) once; delta equals full.
#include <gtest/gtest.h>

#include <random>

#include "core/topology_yaml.h"
#include "sim/collectives.h"
#include "sim/simulator.h"
#include "tests/testing/sim_fixtures.h"

namespace devplace {
namespace {

using testing::FixedRateCost;
using testing::MakeOp;

constexpr double kMs = 1e-3;
constexpr double kB = 10e9, kAlpha = 5e-6, kMessage = 300e-6, kStep = 40e-6;
constexpr int64_t kS = int64_t{64} << 20;

template <class T>
T Ok(Expected<T> e) {
  EXPECT_TRUE(e.ok()) << (e.ok() ? "" : e.error().message);
  return std::move(e).value();
}

std::vector<DeviceId> Members(int n) {
  std::vector<DeviceId> m;
  for (int i = 0; i < n; ++i) m.push_back(i);
  return m;
}

template <class F>
double CommTime(const Topology& topology, F build) {
  sim::TaskGraph tg;
  SimOptions options;
  sim::CommBuilder b(topology, options, &tg);
  build(b);
  b.Finish();
  sim::Engine engine;
  return Ok(b.Run(&engine));
}

TEST(LinkCosts, RingCollectivesPayTheStepCostPerStep) {
  for (int n : {2, 4, 8}) {
    const Topology t = testing::WithLinkCosts(testing::FullyConnected(n, kB, kAlpha), kMessage, kStep);
    const std::vector<sim::Ready> none(n);
    const double step = kAlpha + kStep + static_cast<double>(kS / n) / kB;
    EXPECT_NEAR(CommTime(t, [&](sim::CommBuilder& b) { b.AllReduce(Members(n), kS, none); }), 2 * (n - 1) * step,
                1e-9) << n;
    EXPECT_NEAR(CommTime(t, [&](sim::CommBuilder& b) { b.AllGather(Members(n), kS, none); }), (n - 1) * step, 1e-9)
        << n;
    EXPECT_NEAR(CommTime(t, [&](sim::CommBuilder& b) { b.ReduceScatter(Members(n), kS, none); }), (n - 1) * step,
                1e-9) << n;
    EXPECT_NEAR(CommTime(t, [&](sim::CommBuilder& b) { b.AllToAll(Members(n), kS, none); }), step, 1e-9) << n;
  }
  // With a step bandwidth, steps move their bytes at it; a plain send is a message, not a collective step.
  const double step_bandwidth = 3e9;
  const Topology t =
      testing::WithLinkCosts(testing::FullyConnected(2, kB, kAlpha), kMessage, kStep, step_bandwidth);
  EXPECT_NEAR(CommTime(t, [&](sim::CommBuilder& b) { b.AllReduce(Members(2), kS, {{}, {}}); }),
              2 * (kAlpha + kStep + static_cast<double>(kS / 2) / step_bandwidth), 1e-9);
  EXPECT_NEAR(CommTime(t, [&](sim::CommBuilder& b) { b.Send(0, 1, kS, {}); }),
              kAlpha + kMessage + static_cast<double>(kS) / kB, 1e-9);
}

// The placement task graph's gradient ring (a backward op replicated on p devices): 2(p-1) steps of
// alpha + step + (n/p)/B after the compute, as sim/collectives.h's ring.
TEST(LinkCosts, GradientAllReduceOfAReplicatedOpPaysPerStep) {
  for (int p : {2, 3, 4}) {
    const int64_t n = int64_t{6000000} * p;
    GraphBuilder b("allreduce");
    Op grad = MakeOp("f/grad", 1e6 * p, {static_cast<int64_t>(p), 4});
    grad.role = OpRole::kBackward;
    grad.forward_op = std::string("f");
    grad.dims.push_back({DimKind::kSample, 0, 0, p});
    b.add_op(grad);
    b.add_op(MakeOp("f", 1e3, {static_cast<int64_t>(p), 4}, n));
    const Graph g = Ok(std::move(b).Build());
    const Topology t = testing::WithLinkCosts(testing::FullyConnected(p, kB, kAlpha), kMessage, kStep);
    Strategy s = Strategy::AllOn(2, 0);
    s.configs[0].degrees = {p};
    s.configs[0].devices = Members(p);
    const SimResult r = Ok(Simulate(g, t, s, FixedRateCost()));
    const double expected =
        1e6 * 1e-9 + 2 * (p - 1) * (kAlpha + kStep + static_cast<double>(n / p) / kB);
    EXPECT_NEAR(r.step_time / expected, 1.0, 1e-9) << "p = " << p;
  }
}

// A tensor crossing a direct link pays the message cost once, and once only when k ops on the other device read
// it; over a "memcpy" link the message cost (like the latency) is the receiving core's time.
TEST(LinkCosts, ATransferPaysTheMessageCostOnce) {
  for (const std::string kind : {"pcie", "memcpy"}) {
    for (int k : {1, 3}) {
      SCOPED_TRACE(kind + " k = " + std::to_string(k));
      GraphBuilder b("fan");
      const OpId a = b.add_op(MakeOp("a", 1e6, {250000}));  // 1e6 bytes
      for (int i = 0; i < k; ++i) b.add_edge(a, b.add_op(MakeOp(std::string("c").append(std::to_string(i)), 2e6)));
      const Graph g = Ok(std::move(b).Build());
      const Topology t = Ok(TopologyFromYaml(
          "name: two\ndevices:\n  - {name: \"d{i}\", count: 2, kind: cpu, host: h, peak_tflops: 1, "
          "memory_bandwidth_gbs: 10, memory_gib: 1}\nlinks:\n  - {between: [d0, d1], bandwidth_gbs: 1, "
          "latency_us: 5, message_us: 300, step_us: 40, kind: " + kind + "}\n",
          "two.yaml"));
      std::vector<DeviceId> devices(static_cast<size_t>(k + 1), 1);
      devices[0] = 0;
      const SimResult r = Ok(Simulate(g, t, Strategy::FromPlacement(devices), FixedRateCost()));
      EXPECT_EQ(r.num_tasks, k + 2);
      EXPECT_NEAR(r.step_time, 1 * kMs + 5e-6 + 300e-6 + 1e6 / 1e9 + 2 * kMs * k, 1e-12);
      const double copy = kind == "memcpy" ? 5e-6 + 300e-6 + 1e6 / 1e9 : 0.0;
      EXPECT_NEAR(r.devices[1].busy_seconds, 2 * kMs * k + copy, 1e-12);
    }
  }
}

// Delta simulation stays exact with the costs set, on plain and partitioned strategies.
TEST(LinkCosts, DeltaEqualsFull) {
  const Topology topologies[] = {
      testing::WithLinkCosts(testing::FullyConnected(4, 50e9, 2e-6), 30e-6, 70e-6),
      testing::WithLinkCosts(testing::TwoHosts(2, 12e9, 3e-6), 500e-6, 90e-6, 2e9)};
  int checked = 0;
  for (const Topology& topology : topologies)
    for (double p_partition : {0.0, 0.3}) {
      const Graph graph = testing::RandomTrainingGraph(11 + checked, 50);
      const CostModel cost = MakeAnalyticCostModel();
      std::mt19937_64 rng(97 + checked);
      const int devices = topology.num_devices();
      Expected<DeltaSimulator> delta =
          DeltaSimulator::Create(graph, topology, testing::RandomStrategy(graph, devices, p_partition, rng), cost);
      ASSERT_TRUE(delta.ok()) << delta.error().message;
      for (int k = 0; k < 120; ++k) {
        const OpId op = testing::UniformInt(rng, graph.num_ops());
        const OpConfig config = testing::RandomConfig(graph, op, devices, p_partition, rng);
        const double query = Ok(delta->StepTimeIf(op, config));
        ASSERT_TRUE(delta->SetConfig(op, config).ok());
        const SimResult full = Ok(Simulate(graph, topology, delta->strategy(), cost));
        ASSERT_EQ(query, full.step_time) << topology.name() << " " << p_partition << " change " << k;
        ASSERT_EQ(delta->step_time(), full.step_time) << topology.name() << " " << p_partition << " change " << k;
      }
      ++checked;
    }
  EXPECT_EQ(checked, 4);
}

}  // namespace
}  // namespace devplace
