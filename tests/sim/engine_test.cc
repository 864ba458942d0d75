// The event loop's heap keys: one-word keys (re-based as time moves on, or given up for two-word keys when a
// ready time lies too far ahead) must give exactly what two-word keys give; and the lighter record levels must
// leave the same per-resource ends and, where kept, the same times.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "sim/engine.h"
#include "tests/testing/sim_fixtures.h"

namespace devplace::sim {
namespace {

// A random task DAG: `n` tasks on `resources` resources (the first half with a latency), each with up to three
// predecessors among the earlier tasks; durations up to 2^max_bits ticks, and one task of 2^long_bits ticks when
// long_bits > 0.
TaskGraph RandomTasks(uint64_t seed, int32_t n, int32_t resources, int max_bits, int long_bits) {
  std::mt19937_64 rng(seed);
  TaskGraph tg;
  tg.num_devices = resources / 2;
  tg.num_resources = resources;
  for (int32_t r = 0; r < resources; ++r)
    tg.resource_delay.push_back(r < resources / 2 ? 0 : static_cast<Time>(rng() % 1000));
  std::vector<std::vector<int32_t>> succ(static_cast<size_t>(n)), pred(static_cast<size_t>(n));
  for (int32_t t = 0; t < n; ++t) {
    tg.resource.push_back(testing::UniformInt(rng, resources));
    tg.duration.push_back(1 + static_cast<Time>(rng() >> (64 - max_bits)));
    tg.alive.push_back(1);
    const int32_t preds = t == 0 ? 0 : testing::UniformInt(rng, 4);
    for (int32_t k = 0; k < preds; ++k) {
      const int32_t p = testing::UniformInt(rng, t);
      succ[p].push_back(t);
      pred[t].push_back(p);
    }
  }
  if (long_bits > 0) tg.duration[static_cast<size_t>(n / 3)] = Time{1} << long_bits;
  for (int32_t t = 0; t < n; ++t) {
    tg.succ_off.push_back(static_cast<int32_t>(tg.succ_pool.size()));
    tg.succ_cnt.push_back(static_cast<int32_t>(succ[t].size()));
    tg.succ_pool.insert(tg.succ_pool.end(), succ[t].begin(), succ[t].end());
    tg.pred_off.push_back(static_cast<int32_t>(tg.pred_pool.size()));
    tg.pred_cnt.push_back(static_cast<int32_t>(pred[t].size()));
    tg.pred_pool.insert(tg.pred_pool.end(), pred[t].begin(), pred[t].end());
  }
  return tg;
}

void ExpectSameTiming(const Timing& a, const Timing& b) {
  EXPECT_EQ(a.ready, b.ready);
  EXPECT_EQ(a.start, b.start);
  EXPECT_EQ(a.end, b.end);
  EXPECT_EQ(a.res_prev, b.res_prev);
  EXPECT_EQ(a.order, b.order);
  EXPECT_EQ(a.crit_prev, b.crit_prev);
}

TEST(Engine, OneWordKeysMatchTwoWordKeys) {
  // 2,000 tasks: 11 id bits leave 53 bits (about 2.5 hours in ticks) above the base; tasks of up to 2^47 ticks
  // in chains push times well past that, so the one-word run re-bases.
  int rebased_runs = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const TaskGraph tg = RandomTasks(seed, 2000, 6, seed % 2 ? 47 : 30, 0);
    Engine engine;
    Timing packed, wide;
    engine.Run(tg, &packed, Record::kAll, KeyMode::kAuto);
    EXPECT_FALSE(engine.last_wide());
    rebased_runs += engine.last_rebases() > 0;
    const std::vector<Time> packed_ends = engine.last_end();
    engine.Run(tg, &wide, Record::kAll, KeyMode::kWide);
    EXPECT_TRUE(engine.last_wide());
    ExpectSameTiming(packed, wide);
    EXPECT_EQ(packed_ends, engine.last_end());
    EXPECT_EQ(packed.order.size(), 2000u);
  }
  EXPECT_GE(rebased_runs, 5);
}

TEST(Engine, FallsBackToTwoWordKeysWhenAReadyTimeIsTooFarAhead) {
  // One task of 2^56 ticks: its successors become ready further above the last dequeued time than 53 bits hold.
  const TaskGraph tg = RandomTasks(7, 2000, 6, 30, 56);
  Engine engine;
  Timing packed, wide;
  engine.Run(tg, &packed, Record::kAll, KeyMode::kAuto);
  EXPECT_TRUE(engine.last_wide());
  engine.Run(tg, &wide, Record::kAll, KeyMode::kWide);
  ExpectSameTiming(packed, wide);
}

TEST(Engine, LighterRecordsKeepTheSameEnds) {
  const TaskGraph tg = RandomTasks(3, 3000, 8, 40, 0);
  Engine engine;
  Timing all, times, none;
  engine.Run(tg, &all, Record::kAll);
  const std::vector<Time> ends = engine.last_end();
  const std::vector<int32_t> lasts = engine.last_task();
  engine.Run(tg, &times, Record::kTimes);
  EXPECT_EQ(times.start, all.start);
  EXPECT_EQ(times.end, all.end);
  EXPECT_EQ(times.crit_prev, all.crit_prev);
  EXPECT_TRUE(times.order.empty());
  EXPECT_EQ(engine.last_end(), ends);
  engine.Run(tg, &none, Record::kStepOnly);
  EXPECT_TRUE(none.end.empty());
  EXPECT_EQ(engine.last_end(), ends);
  EXPECT_EQ(engine.last_task(), lasts);
}

}  // namespace
}  // namespace devplace::sim
