// Memory model: hand-computed peaks, training-state bytes, OOM reporting, and the peak computation against a
// naive sweep.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "core/training_graph.h"
#include "sim/memory.h"
#include "sim/simulator.h"
#include "tests/testing/sim_fixtures.h"

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

namespace devplace {
namespace {

// The straightforward peak: every buffer's allocation and free sorted by (time, frees first), summed per device.
std::vector<int64_t> NaivePeaks(const sim::TaskGraph& tg, const sim::Timing& timing) {
  std::vector<std::vector<std::pair<uint64_t, int64_t>>> events(static_cast<size_t>(tg.num_devices));
  for (int32_t t = 0; t < tg.num_tasks(); ++t) {
    if (tg.mem_bytes[t] == 0 || !tg.alive[t]) continue;
    auto& e = events[tg.mem_device[t]];
    e.emplace_back(static_cast<uint64_t>(sim::BufferFree(tg, timing, t)) << 1, -tg.mem_bytes[t]);
    e.emplace_back((static_cast<uint64_t>(timing.start[t]) << 1) | 1, tg.mem_bytes[t]);
  }
  std::vector<int64_t> peaks;
  for (auto& e : events) {
    std::sort(e.begin(), e.end());
    int64_t cur = 0, peak = 0;
    for (const auto& [key, delta] : e) peak = std::max(peak, cur += delta);
    peaks.push_back(peak);
  }
  return peaks;
}

// Memory peaks on synthetic timelines made to stress the bucketed computation: clustered and tied times, dead
// tasks, a device without buffers, wide and narrow time ranges; the last cases have enough tasks (150k-400k) for
// the bucket count to reach its cap, so that buckets hold many events each. Both forms: events kept (Add) and two
// passes (Count, Bound, Keep).
TEST(Memory, BucketedPeaksEqualTheNaiveSweep) {
  std::mt19937_64 rng(17);
  sim::PeakScratch scratch;  // reused across cases, as the simulator does
  for (int c = 0; c < 304; ++c) {
    sim::TaskGraph tg;
    sim::Timing timing;
    tg.num_devices = 1 + testing::UniformInt(rng, 8);
    const int32_t n = c >= 300 ? 150000 + testing::UniformInt(rng, 250000)
                               : 1 + testing::UniformInt(rng, c < 200 ? 64 : 3000);
    const int64_t span = int64_t{1} << (1 + testing::UniformInt(rng, 50));
    const int32_t clusters = 1 + testing::UniformInt(rng, 4);
    const int32_t spare = tg.num_devices > 1 ? testing::UniformInt(rng, tg.num_devices) : -1;  // holds nothing
    for (int32_t t = 0; t < n; ++t) {
      // Times within a few clusters; a quarter of them rounded to a coarse grid so that many coincide.
      const int64_t centre = span / clusters * testing::UniformInt(rng, clusters);
      int64_t start = centre + static_cast<int64_t>(testing::Uniform(rng) * static_cast<double>(span / 64 + 1));
      if (testing::UniformInt(rng, 4) == 0) start &= ~int64_t{0xff};
      timing.start.push_back(start);
      timing.end.push_back(start + 1 + testing::UniformInt(rng, 1000));
      int32_t device = testing::UniformInt(rng, tg.num_devices);
      if (device == spare) device = (device + 1) % tg.num_devices;
      tg.mem_device.push_back(device);
      tg.mem_bytes.push_back(testing::UniformInt(rng, 5) == 0 ? 0 : 1 + testing::UniformInt(rng, 1 << 20));
      tg.alive.push_back(testing::UniformInt(rng, 10) != 0);
    }
    for (int32_t t = 0; t < n; ++t) {
      tg.succ_off.push_back(static_cast<int32_t>(tg.succ_pool.size()));
      const int32_t fan = testing::UniformInt(rng, 4);
      for (int32_t k = 0; k < fan; ++k) tg.succ_pool.push_back(testing::UniformInt(rng, n));
      tg.succ_cnt.push_back(fan);
      tg.resource.push_back(0);
    }
    sim::Time max_end = 0;
    for (int32_t t = 0; t < n; ++t) max_end = std::max(max_end, timing.end[t]);
    const std::vector<int64_t> naive = NaivePeaks(tg, timing);
    ASSERT_EQ(scratch.DynamicPeaks(tg, timing, max_end), naive) << "case " << c;
    // The two-pass form without kept events (the plain simulator's): Count each buffer, Bound, then Keep each
    // again, here in the opposite order.
    sim::PeakScratch two_pass;
    two_pass.Begin(tg.num_devices, n, max_end, false);
    for (int32_t t = 0; t < n; ++t)
      if (tg.mem_bytes[t] != 0 && tg.alive[t])
        two_pass.Count(tg.mem_device[t], timing.start[t], sim::BufferFree(tg, timing, t), tg.mem_bytes[t]);
    two_pass.Bound();
    for (int32_t t = n - 1; t >= 0; --t)
      if (tg.mem_bytes[t] != 0 && tg.alive[t])
        two_pass.Keep(tg.mem_device[t], timing.start[t], sim::BufferFree(tg, timing, t), tg.mem_bytes[t]);
    ASSERT_EQ(two_pass.Finish(), naive) << "case " << c << ", two passes";
  }
}

}  // namespace
}  // namespace devplace
