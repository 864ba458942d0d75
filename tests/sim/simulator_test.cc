// Hand-checked timings: chains, transfers, link contention, multi-hop pipelining, collectives, partitioning.
#include <gtest/gtest.h>

#include <cmath>

#include "core/topology_yaml.h"
#include "sim/objective.h"
#include "sim/simulator.h"
#include "sim/trace.h"
#include "tests/testing/sim_fixtures.h"

namespace devplace {
namespace {

using testing::FixedRateCost;
using testing::MakeDevice;
using testing::MakeOp;

template <class T>
T Ok(Expected<T> e) {
  EXPECT_TRUE(e.ok()) << (e.ok() ? "" : e.error().message);
  return std::move(e).value();
}

Strategy Place(std::vector<DeviceId> devices) { return Strategy::FromPlacement(devices); }

constexpr double kMs = 1e-3;

TEST(Simulator, ChainOnOneDeviceTakesTheSumOfOpTimes) {
  GraphBuilder b("chain");
  OpId a = b.add_op(MakeOp("a", 1e6)), x = b.add_op(MakeOp("b", 2e6)), c = b.add_op(MakeOp("c", 3e6));
  b.add_edge(a, x);
  b.add_edge(x, c);
  const Graph g = Ok(std::move(b).Build());
  const Topology t = testing::FullyConnected(2, 1e9, 5e-6);
  const SimResult r = Ok(Simulate(g, t, Place({0, 0, 0}), FixedRateCost()));
  EXPECT_NEAR(r.step_time, 6 * kMs, 1e-15);
  EXPECT_EQ(r.bytes_moved, 0);
  EXPECT_NEAR(r.devices[0].busy_seconds, 6 * kMs, 1e-12);
  EXPECT_NEAR(r.devices[0].utilisation, 1.0, 1e-9);
  EXPECT_EQ(r.devices[1].busy_seconds, 0.0);
  EXPECT_EQ(r.critical_path, (std::vector<OpId>{a, x, c}));
  EXPECT_EQ(r.num_tasks, 3);
}

TEST(Simulator, OneTransferAddsLatencyPlusBytesOverBandwidth) {
  GraphBuilder b("pair");
  OpId a = b.add_op(MakeOp("a", 1e6, {250000})), c = b.add_op(MakeOp("c", 2e6));
  b.add_edge(a, c);  // 1e6 bytes
  const Graph g = Ok(std::move(b).Build());
  const Topology t = testing::FullyConnected(2, 1e9, 5e-6);
  const SimResult r = Ok(Simulate(g, t, Place({0, 1}), FixedRateCost()));
  EXPECT_NEAR(r.step_time, 1 * kMs + 5e-6 + 1e6 / 1e9 + 2 * kMs, 1e-15);
  EXPECT_EQ(r.bytes_moved, 1000000);
  EXPECT_EQ(r.num_tasks, 3);
  int64_t link_bytes = 0;
  for (const LinkStats& l : r.links) link_bytes += l.bytes;
  EXPECT_EQ(link_bytes, 1000000);
}

// Over a link of kind "memcpy" (CPU cores sharing memory: the consuming core copies) a transfer occupies the
// destination device for latency + bytes / bandwidth, after the op already running there; over another kind it
// runs on the link, overlapping that op.
TEST(Simulator, MemcpyLinksCopyOnTheDestinationDevice) {
  GraphBuilder b("copy");
  const OpId a = b.add_op(MakeOp("a", 1e6, {250000})), c = b.add_op(MakeOp("c", 2e6));
  b.add_op(MakeOp("x", 3e6));  // on device 1, ready at once, still running when a's output could arrive
  b.add_edge(a, c);            // 1e6 bytes
  const Graph g = Ok(std::move(b).Build());
  for (const std::string kind : {"memcpy", "pcie"}) {
    const Topology t = Ok(TopologyFromYaml(
        "name: two\ndevices:\n  - {name: \"d{i}\", count: 2, kind: cpu, host: h, peak_tflops: 1, "
        "memory_bandwidth_gbs: 10, memory_gib: 1}\nlinks:\n  - {between: [d0, d1], bandwidth_gbs: 1, latency_us: 5, "
        "kind: " + kind + "}\n",
        "two.yaml"));
    const SimResult r = Ok(Simulate(g, t, Place({0, 1, 1}), FixedRateCost()));
    if (kind == "memcpy") {
      EXPECT_NEAR(r.step_time, 3 * kMs + 5e-6 + 1e6 / 1e9 + 2 * kMs, 1e-12);
      EXPECT_NEAR(r.devices[1].busy_seconds, 5 * kMs + 5e-6 + 1e6 / 1e9, 1e-12);
    } else {
      EXPECT_NEAR(r.step_time, 5 * kMs, 1e-12);
      EXPECT_NEAR(r.devices[1].busy_seconds, 5 * kMs, 1e-12);
    }
  }
}

// a, b -> c with 4 ms transfers each: through one link they serialise, over two links they overlap.
TEST(Simulator, TransfersSharingALinkSerialiseAndDisjointOnesOverlap) {
  GraphBuilder b("join");
  OpId a = b.add_op(MakeOp("a", 1e6, {1000000})), x = b.add_op(MakeOp("b", 1e6, {1000000}));
  OpId c = b.add_op(MakeOp("c", 1e6));
  b.add_edge(a, c);
  b.add_edge(x, c);
  const Graph g = Ok(std::move(b).Build());
  const double lat = 2e-6;
  const SimResult shared = Ok(Simulate(g, testing::FullyConnected(2, 1e9, lat), Place({0, 0, 1}), FixedRateCost()));
  // a ends at 1 ms, its transfer runs 1-5 ms; b ends at 2 ms but waits for the link: 5-9 ms.
  EXPECT_NEAR(shared.step_time, 9 * kMs + lat + 1 * kMs, 1e-15);
  const SimResult disjoint =
      Ok(Simulate(g, testing::FullyConnected(3, 1e9, lat), Place({0, 2, 1}), FixedRateCost()));
  EXPECT_NEAR(disjoint.step_time, 5 * kMs + lat + 1 * kMs, 1e-15);
}

Topology ThroughSwitch(double bandwidth, double latency) {
  TopologyBuilder b("switched");
  b.add_device(MakeDevice("d0"));
  b.add_device(MakeDevice("d1"));
  const NodeId sw = b.add_switch({"sw", "h0"});
  b.add_bidirectional_link(0, sw, bandwidth, latency, "pcie");
  b.add_bidirectional_link(1, sw, bandwidth, latency, "pcie");
  return *std::move(b).Build();
}

TEST(Simulator, TwoHopRoutePipelinesBySegment) {
  GraphBuilder b("hop");
  OpId a = b.add_op(MakeOp("a", 1e6, {1000000})), c = b.add_op(MakeOp("c", 1e6));
  b.add_edge(a, c);  // 4e6 bytes
  const Graph g = Ok(std::move(b).Build());
  const Topology t = ThroughSwitch(1e9, 1e-6);
  SimOptions options;
  options.segment_bytes = 1000000;  // 4 segments
  const SimResult piped = Ok(Simulate(g, t, Place({0, 1}), FixedRateCost(), options));
  // 4 segments of 1 ms through 2 hops: (4 + 1) ms, plus both hops' latency.
  EXPECT_NEAR(piped.step_time, 1 * kMs + 5 * kMs + 2e-6 + 1 * kMs, 1e-15);
  EXPECT_EQ(piped.num_tasks, 2 + 4 * 2);
  EXPECT_EQ(piped.bytes_moved, 4000000);
  options.max_segments = 1;  // store and forward
  const SimResult whole = Ok(Simulate(g, t, Place({0, 1}), FixedRateCost(), options));
  EXPECT_NEAR(whole.step_time, 1 * kMs + 8 * kMs + 2e-6 + 1 * kMs, 1e-15);
}

// A backward op replicated on p devices all-reduces its weight gradient (n bytes) over a uniform ring (the
// neighbour links i -> i+1 of a fully connected machine): 2(p-1) steps of alpha + (n/p)/B after the compute.
TEST(Simulator, RingAllReduceMatchesTheClosedForm) {
  for (int p : {2, 3, 4, 8}) {
    const double alpha = 3e-6, bandwidth = 20e9;
    const int64_t n = int64_t{6000000} * p;
    GraphBuilder b("allreduce");
    Op grad = MakeOp("f/grad", 1e6 * p, {static_cast<int64_t>(p), 4});
    grad.role = OpRole::kBackward;
    grad.forward_op = std::string("f");  // not a bare literal: GCC 12 warns falsely (-Wrestrict)
    grad.dims.push_back({DimKind::kSample, 0, 0, p});
    b.add_op(grad);  // op 0: its parts start first on their devices
    b.add_op(MakeOp("f", 1e3, {static_cast<int64_t>(p), 4}, n));
    const Graph g = Ok(std::move(b).Build());
    const Topology t = testing::FullyConnected(p, bandwidth, alpha);
    Strategy s = Strategy::AllOn(2, 0);
    s.configs[0].degrees = {p};
    s.configs[0].devices.clear();
    for (int i = 0; i < p; ++i) s.configs[0].devices.push_back(i);
    const SimResult r = Ok(Simulate(g, t, s, FixedRateCost()));
    const double compute = 1e6 * 1e-9;
    const double expected = compute + 2 * (p - 1) * alpha + 2.0 * (p - 1) / p * static_cast<double>(n) / bandwidth;
    EXPECT_NEAR(r.step_time / expected, 1.0, 1e-9) << "p = " << p;
    EXPECT_EQ(r.bytes_moved, 2 * (p - 1) * p * (n / p)) << "p = " << p;
  }
}

TEST(Simulator, PartitionedConsumersReceiveTheirSlices) {
  GraphBuilder b("split");
  OpId a = b.add_op(MakeOp("a", 1e6, {8, 1000}));  // 32000 bytes
  Op c = MakeOp("c", 2e6, {8, 1000});
  c.dims.push_back({DimKind::kSample, 0, 0, 8});
  OpId cid = b.add_op(c);
  b.add_edge(a, cid);
  const Graph g = Ok(std::move(b).Build());
  const Topology t = testing::FullyConnected(3, 1e9, 1e-6);
  Strategy s = Strategy::AllOn(2, 0);
  s.configs[1] = OpConfig{{1, 2}, {2}};
  const SimResult r = Ok(Simulate(g, t, s, FixedRateCost()));
  EXPECT_EQ(r.bytes_moved, 32000);
  EXPECT_NEAR(r.step_time, 1 * kMs + 1e-6 + 16000 / 1e9 + 1 * kMs, 1e-15);  // halves move in parallel
  s.configs[1] = OpConfig{{0, 1}, {2}};
  const SimResult local = Ok(Simulate(g, t, s, FixedRateCost()));
  EXPECT_EQ(local.bytes_moved, 16000);  // the half on the producer's device does not move
}

// Copies (an op replicated over a mesh axis): every copy computes on its own device, and a reader takes each region
// from the copy on its own device, else from one copy only.
TEST(Simulator, CopiesRunOnEveryDeviceAndReadersUseOneCopy) {
  GraphBuilder b("copies");
  OpId a = b.add_op(MakeOp("a", 1e6, {8, 1000}));  // 32000 bytes
  OpId c = b.add_op(MakeOp("c", 2e6, {8, 1000}));
  b.add_edge(a, c);
  const Graph g = Ok(std::move(b).Build());
  const Topology t = testing::FullyConnected(3, 1e9, 1e-6);
  Strategy s = Strategy::AllOn(2, 0);
  s.configs[a] = OpConfig{{0, 1}, {}};
  s.configs[c] = OpConfig{{0, 1}, {}};
  const SimResult local = Ok(Simulate(g, t, s, FixedRateCost()));
  EXPECT_EQ(local.bytes_moved, 0);
  EXPECT_NEAR(local.step_time, 3 * kMs, 1e-15);
  EXPECT_EQ(local.devices[0].num_tasks, 2);
  EXPECT_EQ(local.devices[1].num_tasks, 2);
  EXPECT_NEAR(local.devices[1].busy_seconds, 3 * kMs, 1e-12);  // full FLOPs on every copy
  s.configs[c] = OpConfig{{1}, {}};
  EXPECT_EQ(Ok(Simulate(g, t, s, FixedRateCost())).bytes_moved, 0);
  s.configs[c] = OpConfig{{2}, {}};
  const SimResult remote = Ok(Simulate(g, t, s, FixedRateCost()));
  EXPECT_EQ(remote.bytes_moved, 32000);  // from one copy, not from both
  EXPECT_NEAR(remote.step_time, 1 * kMs + 1e-6 + 32000 / 1e9 + 2 * kMs, 1e-15);
}

// A weight's data replicas all-reduce its gradient in every copy, the copies' rings side by side.
TEST(Simulator, EveryCopyAllReducesAmongItsReplicas) {
  const double alpha = 3e-6, bandwidth = 20e9;
  const int64_t n = 12000000;
  GraphBuilder b("copies_allreduce");
  Op grad = MakeOp("f/grad", 2e6, {2, 4});
  grad.role = OpRole::kBackward;
  grad.forward_op = std::string("f");
  grad.dims.push_back({DimKind::kSample, 0, 0, 2});
  b.add_op(grad);
  b.add_op(MakeOp("f", 1e3, {2, 4}, n));
  const Graph g = Ok(std::move(b).Build());
  const Topology t = testing::FullyConnected(4, bandwidth, alpha);
  Strategy s = Strategy::AllOn(2, 0);
  s.configs[0] = OpConfig{{0, 1, 2, 3}, {2}};  // parts {0, 1} and their copies {2, 3}
  const SimResult r = Ok(Simulate(g, t, s, FixedRateCost()));
  const double expected = 1e6 * 1e-9 + 2 * alpha + static_cast<double>(n) / bandwidth;
  EXPECT_NEAR(r.step_time / expected, 1.0, 1e-9);
  EXPECT_EQ(r.bytes_moved, 2 * 2 * 2 * (n / 2));  // two rings of two steps, two members each
}

// A sharded weight update reads only its shard of the weight gradient.
TEST(Simulator, ShardedUpdatePartsReadOnlyTheirShardOfTheGradient) {
  const int64_t n = 8000000;
  GraphBuilder b("update");
  OpId f = b.add_op(MakeOp("f", 1e3, {4, 4}, n));
  Op grad = MakeOp("f/grad", 1e6, {4, 4});
  grad.role = OpRole::kBackward;
  grad.forward_op = std::string("f");
  OpId gid = b.add_op(grad);
  Op update = MakeOp("f/update", 1e6, {n / 4});
  update.role = OpRole::kUpdate;
  update.forward_op = std::string("f");
  update.dims.push_back({DimKind::kParameter, 0, 0, n / 4});
  OpId uid = b.add_op(update);
  b.add_edge(f, gid);
  b.add_edge(gid, uid, n);
  const Graph g = Ok(std::move(b).Build());
  const Topology t = testing::FullyConnected(4, 1e9, 1e-6);
  Strategy s = Strategy::AllOn(3, 0);
  s.configs[uid] = OpConfig{{0, 1, 2, 3}, {4}};
  EXPECT_EQ(Ok(Simulate(g, t, s, FixedRateCost())).bytes_moved, 3 * n / 4);  // three remote quarters
  s.configs[uid] = OpConfig{{0, 1, 2, 3}, {}};  // a full update on every device (copies)
  EXPECT_EQ(Ok(Simulate(g, t, s, FixedRateCost())).bytes_moved, 3 * n);
}

TEST(Simulator, ReductionPartsReduceScatterTheirPartialSums) {
  GraphBuilder b("reduce");
  Op m = MakeOp("m", 4e6, {4, 1000});  // 16000 bytes of partial sums per part
  m.dims.push_back({DimKind::kReduction, -1, 1, 2});
  b.add_op(m);
  const Graph g = Ok(std::move(b).Build());
  const Topology t = testing::FullyConnected(2, 1e9, 1e-6);
  Strategy s;
  s.configs.push_back(OpConfig{{0, 1}, {2}});
  const SimResult r = Ok(Simulate(g, t, s, FixedRateCost()));
  // Each part computes half the FLOPs (2 ms), then one step: each sends half its box (8000 bytes).
  EXPECT_EQ(r.bytes_moved, 16000);
  EXPECT_NEAR(r.step_time, 2 * kMs + 1e-6 + 8000 / 1e9, 1e-15);
}

TEST(Simulator, RejectsStrategiesThatDoNotFit) {
  GraphBuilder b("two");
  b.add_op(MakeOp("a", 1e6));
  b.add_op(MakeOp("b", 1e6));
  const Graph g = Ok(std::move(b).Build());
  const Topology t = testing::FullyConnected(2, 1e9, 1e-6);
  Expected<SimResult> r = Simulate(g, t, Strategy::AllOn(1, 0), FixedRateCost());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("1 op configs"), std::string::npos) << r.error().message;
  Strategy s = Strategy::AllOn(2, 0);
  s.configs[1].devices = {5};
  r = Simulate(g, t, s, FixedRateCost());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "op 'b': device 5 is not in topology 'full2' (2 devices)");
  s.configs[1].devices = {1, 1};
  r = Simulate(g, t, s, FixedRateCost());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "op 'b': device 'd1' is listed twice");
}

TEST(Simulator, ReusableSimulatorMatchesSimulate) {
  const Graph g = testing::RandomTrainingGraph(3, 40);
  const Topology t = testing::TwoHosts(2, 12e9, 3e-6);
  Simulator sim = Ok(Simulator::Create(g, t, MakeAnalyticCostModel()));
  std::mt19937_64 rng(9);
  for (int k = 0; k < 5; ++k) {
    const Strategy s = testing::RandomStrategy(g, 4, 0.3, rng);
    const SimResult a = Ok(sim.Run(s));
    const SimResult b = Ok(Simulate(g, t, s, MakeAnalyticCostModel()));
    EXPECT_EQ(a.step_time, b.step_time);
    EXPECT_EQ(Ok(sim.RunStepTime(s)), b.step_time);
    EXPECT_GT(b.step_time, 0);
    EXPECT_FALSE(b.critical_path.empty());
  }
}

// RunCost equals the cost of Run's result on plain and partitioned strategies, on machines where they fit and
// where some run out of memory (each case checks that both kinds occur).
TEST(Simulator, RunCostEqualsTheCostOfRun) {
  const Graph g = testing::RandomTrainingGraph(4, 60);
  const Topology roomy = testing::TwoHosts(2, 12e9, 3e-6);
  Simulator probe = Ok(Simulator::Create(g, roomy, MakeAnalyticCostModel()));
  const int64_t all_on_one = Ok(probe.Run(Strategy::AllOn(g.num_ops(), 0))).devices[0].peak_bytes;
  TopologyBuilder b("tight");
  for (const char* name : {"d0", "d1", "d2", "d3"}) b.add_device(testing::MakeDevice(name, all_on_one * 2 / 5));
  for (int d = 0; d < 4; ++d)
    for (int e = d + 1; e < 4; ++e) b.add_bidirectional_link(d, e, 12e9, 3e-6, "link");
  const Topology tight = std::move(b).Build().value();
  for (const Topology* t : {&roomy, &tight}) {
    Simulator sim = Ok(Simulator::Create(g, *t, MakeAnalyticCostModel()));
    std::mt19937_64 rng(31);
    int oom = 0, fits = 0;
    for (int k = 0; k < 12; ++k) {
      const Strategy s = k % 4 == 0 ? Strategy::AllOn(g.num_ops(), k % 3)
                                    : testing::RandomStrategy(g, 4, k % 2 == 0 ? 0.0 : 0.3, rng);
      const StepCost expected = CostOf(Ok(sim.Run(s)), *t);
      const StepCost cost = Ok(sim.RunCost(s));
      EXPECT_EQ(cost.step_time, expected.step_time) << t->name() << " " << k;
      EXPECT_EQ(cost.oom, expected.oom) << t->name() << " " << k;
      EXPECT_EQ(cost.overage, expected.overage) << t->name() << " " << k;
      (expected.oom ? oom : fits) += 1;
    }
    if (t == &tight) {
      EXPECT_GT(oom, 0);
    }
    EXPECT_GT(fits, 0) << t->name();
  }
  Strategy bad = Strategy::AllOn(g.num_ops(), 0);
  bad.configs[2].devices = {8};
  EXPECT_FALSE(probe.RunCost(bad).ok());
}

}  // namespace
}  // namespace devplace

namespace devplace {
namespace {

TEST(Trace, HasATrackPerDeviceAndLinkAndAnEventPerTask) {
  GraphBuilder b("pair");
  OpId a = b.add_op(testing::MakeOp("a", 1e6, {250000})), c = b.add_op(testing::MakeOp("c", 2e6));
  b.add_edge(a, c);
  const Graph g = *std::move(b).Build();
  const Topology t = testing::FullyConnected(2, 1e9, 5e-6);
  SimOptions options;
  const SimResult plain = *Simulate(g, t, Strategy::FromPlacement({0, 1}), testing::FixedRateCost(), options);
  EXPECT_FALSE(ChromeTraceJson(plain, g, t).ok());
  options.keep_timeline = true;
  const SimResult r = *Simulate(g, t, Strategy::FromPlacement({0, 1}), testing::FixedRateCost(), options);
  ASSERT_EQ(r.timeline.size(), 3u);
  Expected<std::string> json = ChromeTraceJson(r, g, t);
  ASSERT_TRUE(json.ok());
  EXPECT_NE(json->find("\"name\":\"a -> c\""), std::string::npos);
  EXPECT_NE(json->find("\"name\":\"d0 -> d1 (nvlink)\""), std::string::npos);
  EXPECT_NE(json->find("\"dur\":1000.0"), std::string::npos);  // a: 1 ms in microseconds
  const std::string path = ::testing::TempDir() + "/trace.json";
  ASSERT_TRUE(WriteChromeTrace(r, g, t, path).ok());
}

}  // namespace
}  // namespace devplace

namespace devplace {
namespace {

// Device 0 a default test device, device 1 one that computes at 1 MFLOP/s, over PCIe.
Topology FastAndSlowDevice() {
  TopologyBuilder tb("slow");
  tb.add_device(testing::MakeDevice("fast"));
  Device slow = testing::MakeDevice("slow");
  slow.peak_flops_f32 = slow.peak_flops_f16 = 1e6;
  tb.add_device(slow);
  tb.add_bidirectional_link(0, 1, 1e9, 1e-6, "pcie");
  return *std::move(tb).Build();
}

// A step longer than the simulator's integer-time horizon is an error, not an overflow; a delta change that
// would cause one is rejected and leaves the previous strategy in place.
TEST(Simulator, RejectsStepsBeyondTheTimeHorizon) {
  GraphBuilder b("huge");
  b.add_op(testing::MakeOp("small", 1e6));
  b.add_op(testing::MakeOp("huge", 1e17));
  const Graph g = *std::move(b).Build();
  const Topology t = FastAndSlowDevice();
  const CostModel cost = MakeAnalyticCostModel();
  Expected<SimResult> r = Simulate(g, t, Strategy::FromPlacement({0, 1}), cost);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("limit"), std::string::npos) << r.error().message;
  Expected<DeltaSimulator> delta = DeltaSimulator::Create(g, t, Strategy::AllOn(2, 0), cost);
  ASSERT_TRUE(delta.ok());
  const double before = delta->step_time();
  Expected<double> asked = delta->StepTimeIf(1, OpConfig{{1}, {}});  // a query is refused the same way
  ASSERT_FALSE(asked.ok());
  EXPECT_NE(asked.error().message.find("limit"), std::string::npos) << asked.error().message;
  EXPECT_EQ(delta->strategy().configs[1].devices[0], 0);
  EXPECT_EQ(delta->step_time(), before);
  EXPECT_FALSE(delta->SetConfig(1, OpConfig{{1}, {}}).ok());
  EXPECT_EQ(delta->strategy().configs[1].devices[0], 0);
  EXPECT_EQ(delta->step_time(), before);
  EXPECT_EQ(delta->StepTimeIf(0, OpConfig{{1}, {}}).value(),
            Simulate(g, t, Strategy::FromPlacement({1, 0}), cost)->step_time);
  EXPECT_TRUE(delta->SetConfig(0, OpConfig{{1}, {}}).ok());  // still usable
  EXPECT_EQ(delta->step_time(), Simulate(g, t, delta->strategy(), cost)->step_time);
}

// SetConfigs makes several ops' changes in parts of ops near each other in the order, the latest part first:
// when a later part would run past the horizon, the parts already made are undone and the strategy is as before.
// StepTimeIf asks the same way (the parts but the earliest made, that one asked about, the made ones undone), so
// a query of such a change is refused and one of a change that fits is answered, the simulator left as it was.
TEST(Simulator, UndoesTheMadePartsOfAChangeBeyondTheTimeHorizon) {
  GraphBuilder b("huge-chain-small");
  const OpId huge = b.add_op(testing::MakeOp("huge", 1e17));
  OpId last = huge;
  for (int i = 0; i < 400; ++i) {  // far more tasks than one part spans (the queries below are asked by parts)
    const OpId next = b.add_op(testing::MakeOp("step" + std::to_string(i), 1e3));
    b.add_edge(last, next);
    last = next;
  }
  const OpId small = b.add_op(testing::MakeOp("small", 1e6));
  b.add_edge(last, small);  // small runs last: its change is made first, in a part of its own
  const Graph g = *std::move(b).Build();
  const Topology t = FastAndSlowDevice();
  const CostModel cost = MakeAnalyticCostModel();
  Expected<DeltaSimulator> delta = DeltaSimulator::Create(g, t, Strategy::AllOn(g.num_ops(), 0), cost);
  ASSERT_TRUE(delta.ok());
  delta->set_parts_queries(DeltaSimulator::PartsQueries::kByParts);
  const double before = delta->step_time();
  const std::vector<std::pair<OpId, OpConfig>> both{{huge, OpConfig{{1}, {}}}, {small, OpConfig{{1}, {}}}};
  const Status made = delta->SetConfigs(both);
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.error().message.find("limit"), std::string::npos) << made.error().message;
  EXPECT_EQ(delta->strategy().configs[huge].devices[0], 0);
  EXPECT_EQ(delta->strategy().configs[small].devices[0], 0);  // made first, then undone
  EXPECT_EQ(delta->step_time(), before);
  EXPECT_TRUE(delta->CheckIndexes().ok());
  const Expected<double> refused = delta->StepTimeIf(both);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("limit"), std::string::npos) << refused.error().message;
  EXPECT_EQ(delta->strategy().configs[small].devices[0], 0);
  EXPECT_EQ(delta->step_time(), before);
  EXPECT_TRUE(delta->CheckIndexes().ok());
  const OpId first_step = huge + 1;  // the first op of the chain: a part of its own, far before `small`
  const std::vector<std::pair<OpId, OpConfig>> apart{{first_step, OpConfig{{1}, {}}}, {small, OpConfig{{1}, {}}}};
  Strategy moved = delta->strategy();
  for (const auto& [op, config] : apart) moved.configs[op] = config;
  const Expected<double> answer = delta->StepTimeIf(apart);
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  EXPECT_EQ(*answer, Simulate(g, t, moved, cost)->step_time);
  EXPECT_NE(*answer, before);
  EXPECT_EQ(delta->strategy().configs[first_step].devices[0], 0);
  EXPECT_EQ(delta->strategy().configs[small].devices[0], 0);
  EXPECT_EQ(delta->step_time(), before);
  EXPECT_TRUE(delta->CheckIndexes().ok());
  ASSERT_TRUE(delta->SetConfigs(apart).ok());
  EXPECT_EQ(delta->step_time(), *answer);
  const std::vector<std::pair<OpId, OpConfig>> back{{first_step, OpConfig{{0}, {}}}, {small, OpConfig{{0}, {}}}};
  ASSERT_TRUE(delta->SetConfigs(back).ok());
  EXPECT_EQ(delta->step_time(), before);
  // The small op alone moves (one part), and a change naming it twice keeps its last config.
  const std::vector<std::pair<OpId, OpConfig>> twice{{small, OpConfig{{1}, {}}}, {small, OpConfig{{0}, {}}}};
  ASSERT_TRUE(delta->SetConfigs(twice).ok());
  EXPECT_EQ(delta->strategy().configs[small].devices[0], 0);
  EXPECT_EQ(delta->step_time(), before);
  ASSERT_TRUE(delta->SetConfig(small, OpConfig{{1}, {}}).ok());
  EXPECT_EQ(delta->step_time(), Simulate(g, t, delta->strategy(), cost)->step_time);
}

}  // namespace
}  // namespace devplace
