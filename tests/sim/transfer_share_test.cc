// One transfer per (tensor, destination device): a forward op's output read by k ops on another device crosses
// once, in full and delta simulation (docs/simulator.md, "One transfer per tensor and device").
#include <gtest/gtest.h>

#include <random>

#include "core/training_graph.h"
#include "sim/simulator.h"
#include "tests/testing/sim_fixtures.h"

namespace devplace {
namespace {

using testing::FixedRateCost;
using testing::MakeOp;

constexpr int64_t kRows = 256, kCols = 64;
constexpr int64_t kOutput = kRows * kCols * 4;  // f32

// A producer feeding `k` consumers, each with a sample dimension (rows) so that they can be split.
Graph Star(int k, bool half_read_last = false) {
  GraphBuilder b("star");
  Op u = MakeOp("u", 1e6, {kRows, kCols});
  u.dims = {PartitionDim{DimKind::kSample, 0, 0, kRows}};
  const OpId src = b.add_op(u);
  for (int i = 0; i < k; ++i) {
    std::string name = "v";
    name += std::to_string(i);
    Op v = MakeOp(name, 1e6, {kRows, kCols});
    v.dims = {PartitionDim{DimKind::kSample, 0, 0, kRows}};
    const OpId dst = b.add_op(v);
    b.add_edge(src, dst, half_read_last && i == k - 1 ? kOutput / 2 : -1);
  }
  return std::move(b).Build().value();
}

Strategy Placed(const std::vector<DeviceId>& devices) { return Strategy::FromPlacement(devices); }

int64_t LinkBytes(const SimResult& r) {
  int64_t total = 0;
  for (const LinkStats& l : r.links) total += l.bytes;
  return total;
}

SimResult Sim(const Graph& g, const Topology& t, const Strategy& s) {
  Expected<SimResult> r = Simulate(g, t, s, FixedRateCost());
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? std::move(r).value() : SimResult{};
}

TEST(TransferShare, KConsumersOnOneRemoteDeviceMoveTheTensorOnce) {
  const Topology topo = testing::FullyConnected(4, 10e9, 1e-6);
  for (int k : {1, 2, 5, 9}) {
    SCOPED_TRACE(::testing::Message() << "k = " << k);
    const Graph g = Star(k);
    std::vector<DeviceId> devices(static_cast<size_t>(k + 1), 1);
    devices[0] = 0;
    const SimResult r = Sim(g, topo, Placed(devices));
    EXPECT_EQ(r.num_tasks, k + 2);  // k + 1 compute tasks and one transfer
    EXPECT_EQ(r.bytes_moved, kOutput);
    EXPECT_EQ(LinkBytes(r), kOutput);
    // The same consumers spread over devices 1..3: one transfer per device used.
    for (int i = 1; i <= k; ++i) devices[i] = 1 + (i - 1) % 3;
    const int used = std::min(k, 3);
    const SimResult spread = Sim(g, topo, Placed(devices));
    EXPECT_EQ(spread.num_tasks, k + 1 + used);
    EXPECT_EQ(spread.bytes_moved, used * kOutput);
  }
}

TEST(TransferShare, MultiHopRoutesMoveOnceAndFeedEveryConsumerAfterTheLastSegment) {
  const Topology topo = testing::TwoHosts(2, 10e9, 2e-6);  // device 0 -> device 2 crosses the hosts' link
  SimOptions options;
  options.segment_bytes = kOutput / 4;
  options.keep_timeline = true;
  const Graph g = Star(3);
  const Expected<SimResult> r = Simulate(g, topo, Placed({0, 2, 2, 2}), FixedRateCost(), options);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->bytes_moved, kOutput);
  double last_hop_end = 0;
  for (const TimelineTask& t : r->timeline)
    if (t.kind == TimelineTask::Kind::kTransfer) last_hop_end = std::max(last_hop_end, t.end);
  for (const TimelineTask& t : r->timeline) {
    if (t.kind == TimelineTask::Kind::kCompute && t.op > 0) {
      EXPECT_GE(t.start, last_hop_end);
    }
  }
}

TEST(TransferShare, PartialReadsAndGradientsAreTensorsOfTheirOwn) {
  const Topology topo = testing::FullyConnected(4, 10e9, 1e-6);
  // A consumer that reads half the output needs another tensor (a slice or another output) than the others.
  const Graph partial = Star(3, /*half_read_last=*/true);
  EXPECT_EQ(Sim(partial, topo, Placed({0, 1, 1, 1})).bytes_moved, kOutput + kOutput / 2);
  // In a training graph, a backward op sends a different gradient along each edge (one per input of its forward
  // op), while the forward outputs its backward ops save cross once with the forward consumer's copy.
  GraphBuilder b("join");
  const OpId x = b.add_op(MakeOp("x", 1e6, {kRows, kCols}, 4096));
  const OpId y = b.add_op(MakeOp("y", 1e6, {kRows, kCols}, 4096));
  const OpId z = b.add_op(MakeOp("z", 1e6, {kRows, kCols}));
  b.add_edge(x, z);
  b.add_edge(y, z);
  const Graph forward = std::move(b).Build().value();
  const Graph training = DeriveTrainingGraph(forward, TrainingOptions{}).value();
  std::vector<DeviceId> devices(static_cast<size_t>(training.num_ops()), 0);
  for (OpId o = 0; o < training.num_ops(); ++o) {
    const std::string& name = training.op(o).name;
    if (name.rfind("z", 0) == 0) devices[o] = 1;  // z and z/grad on device 1, the rest on device 0
  }
  const SimResult r = Sim(training, topo, Placed(devices));
  // x and y each cross once to device 1 (read by z and saved for z/grad); z/grad sends two gradients back.
  EXPECT_EQ(r.bytes_moved, 4 * kOutput);
}

TEST(TransferShare, AnUpdateConsumerGetsItsOwnTransferAndTheOtherConsumerStillWaits) {
  // A forward op read by an update op (edge 0) and a forward op (edge 1) on one remote device: the update op's
  // edge is not shared (core/tensor_sharing.h), so each edge moves the output and the forward consumer starts
  // after its own transfer, in the general path (timeline) and the plain one alike.
  GraphBuilder b("update-reader");
  const OpId u = b.add_op(MakeOp("u", 1e6, {kRows, kCols}));
  Op w = MakeOp("w", 1e6, {kRows, kCols});
  w.role = OpRole::kUpdate;
  const OpId wid = b.add_op(w);
  const OpId v = b.add_op(MakeOp("v", 1e6, {kRows, kCols}));
  b.add_edge(u, wid);
  b.add_edge(u, v);
  const Graph g = std::move(b).Build().value();
  const Topology topo = testing::FullyConnected(2, 10e9, 1e-6);
  SimOptions general;
  general.keep_timeline = true;
  const Expected<SimResult> r = Simulate(g, topo, Placed({0, 1, 1}), FixedRateCost(), general);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->bytes_moved, 2 * kOutput);
  double v_start = -1, v_transfer_end = -1;
  for (const TimelineTask& t : r->timeline) {
    if (t.kind == TimelineTask::Kind::kCompute && t.op == v) v_start = t.start;
    if (t.kind == TimelineTask::Kind::kTransfer && t.consumer == v) v_transfer_end = t.end;
  }
  ASSERT_GE(v_transfer_end, 0);
  EXPECT_GE(v_start, v_transfer_end);
  const SimResult plain = Sim(g, topo, Placed({0, 1, 1}));
  EXPECT_EQ(plain.bytes_moved, r->bytes_moved);
  EXPECT_EQ(plain.step_time, r->step_time);
}

TEST(TransferShare, SplitConsumersSharePerRegion) {
  const Topology topo = testing::FullyConnected(4, 10e9, 1e-6);
  const Graph g = Star(3);
  Strategy s = Placed({0, 1, 1, 1});
  const OpConfig split{{1, 2}, {2}};  // rows halved: part 0 on device 1, part 1 on device 2
  s.configs[1] = split;
  s.configs[2] = split;
  // Device 1 receives the first half once (v0 and v1's first parts) and the whole output once (v2); device 2 the
  // second half once.
  const SimResult r = Sim(g, topo, s);
  EXPECT_EQ(r.bytes_moved, kOutput / 2 + kOutput + kOutput / 2);
  // A split producer (rows halved on devices 0 and 3): each part's rows cross once to each device that reads
  // them. The first half goes to device 1 once (v0 and v1's first parts, and v2, which reads everything), the
  // second half to device 2 (v0 and v1's second parts) and to device 1 (v2).
  s.configs[0] = OpConfig{{0, 3}, {2}};
  EXPECT_EQ(Sim(g, topo, s).bytes_moved, 3 * (kOutput / 2));
}

TEST(TransferShare, AlignedUnevenSplitsMoveEachPartsOwnRowsOnce) {
  // Ten rows in three parts (3, 3 and 4 rows) at both ends of two edges carrying the same tensor: consumer part q
  // reads producer part q's rows and nothing else, once per device however many consumers read them there.
  constexpr int64_t kFew = 10, kBytes = kFew * kCols * 4;
  GraphBuilder b("uneven");
  auto split_op = [](const std::string& name) {
    Op o = MakeOp(name, 1e6, {kFew, kCols});
    o.dims = {PartitionDim{DimKind::kSample, 0, 0, kFew}};
    return o;
  };
  const OpId u = b.add_op(split_op("u"));
  b.add_edge(u, b.add_op(split_op("v0")));
  b.add_edge(u, b.add_op(split_op("v1")));
  const Graph g = std::move(b).Build().value();
  const Topology topo = testing::FullyConnected(4, 10e9, 1e-6);
  Strategy s = Placed({0, 0, 0});
  s.configs[0] = OpConfig{{0, 1, 2}, {3}};
  s.configs[1] = s.configs[2] = OpConfig{{1, 2, 3}, {3}};  // every part one device further on
  const SimResult r = Sim(g, topo, s);
  EXPECT_EQ(r.bytes_moved, kBytes * 3 / 10 + kBytes * 3 / 10 + kBytes * 4 / 10);
  EXPECT_EQ(r.num_tasks, 9 + 3);  // three parts of three ops, one transfer per producer part
  // On the producer's own devices nothing moves.
  s.configs[1] = s.configs[2] = s.configs[0];
  EXPECT_EQ(Sim(g, topo, s).bytes_moved, 0);
  // v1 split the other way round: its parts 0 and 2 read rows no v0 part reads on their devices.
  s.configs[1] = OpConfig{{1, 2, 3}, {3}};
  s.configs[2] = OpConfig{{3, 2, 1}, {3}};
  EXPECT_EQ(Sim(g, topo, s).bytes_moved, 2 * (kBytes * 3 / 10 + kBytes * 3 / 10 + kBytes * 4 / 10) -
                                             (kBytes * 3 / 10));  // only the middle rows (1 -> 2) are shared
}

// Consumers of one producer join and leave shared transfers: every delta step equals a full simulation.
TEST(TransferShare, DeltaEqualsFullAsConsumersJoinAndLeave) {
  const Topology topo = testing::TwoHosts(2, 10e9, 2e-6);
  const Graph forward = Star(8);
  const Graph training = DeriveTrainingGraph(forward, TrainingOptions{}).value();
  std::mt19937_64 rng(7);
  for (const Graph* g : {&forward, &training}) {
    Strategy s = Placed(std::vector<DeviceId>(static_cast<size_t>(g->num_ops()), 0));
    Expected<DeltaSimulator> delta = DeltaSimulator::Create(*g, topo, s, FixedRateCost());
    ASSERT_TRUE(delta.ok());
    for (int k = 0; k < 300; ++k) {
      const OpId op = testing::UniformInt(rng, g->num_ops());
      const OpConfig config = testing::RandomConfig(*g, op, topo.num_devices(), 0.25, rng);
      Strategy asked = delta->strategy();
      asked.configs[op] = config;
      const SimResult full = Sim(*g, topo, asked);
      Expected<double> query = delta->StepTimeIf(op, config);
      ASSERT_TRUE(query.ok());
      ASSERT_EQ(*query, full.step_time) << "query " << k;
      ASSERT_TRUE(delta->SetConfig(op, config).ok());
      const SimResult got = delta->result();
      ASSERT_EQ(got.step_time, full.step_time) << "change " << k;
      ASSERT_EQ(got.bytes_moved, full.bytes_moved) << "change " << k;
      ASSERT_EQ(got.num_tasks, full.num_tasks) << "change " << k;
      ASSERT_EQ(LinkBytes(got), LinkBytes(full)) << "change " << k;
      for (size_t d = 0; d < got.devices.size(); ++d)
        ASSERT_EQ(got.devices[d].peak_bytes, full.devices[d].peak_bytes) << "change " << k << " device " << d;
      ASSERT_EQ(got.critical_path, full.critical_path) << "change " << k;
    }
  }
}

}  // namespace
}  // namespace devplace
