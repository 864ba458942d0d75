// The event loop's heap keys: one-word keys (re-based as time moves on, or given up for two-word keys when a
// ready time lies too far ahead) must give exactly what two-word keys give; and the lighter record levels must
// leave the same per-resource ends and, where kept, the same times; and a run stored in schedule order keeps its
// tasks, times and order.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

#include "sim/engine.h"
#include "sim/full_run.h"
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

// Storing a fresh run's groups in schedule order (what the delta simulator does after every rebuild) keeps every
// task's key, record, dependencies and times and the dequeue order (compared by key), and lays the groups out
// contiguously in the order of their first dequeued tasks.
TEST(FullRun, StoringInScheduleOrderKeepsTasksTimesAndOrder) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 6; ++round) {
    const Graph graph = testing::RandomTrainingGraph(100 + round, 40);
    const Topology topology = testing::TwoHosts(2, 1e9, 2e-6);
    const CostModel cost = testing::FixedRateCost();
    const SimOptions options;
    PlainCostCache cache(graph.num_ops(), topology.num_devices());
    TaskBuilder builder(graph, topology, cost, options, &cache);
    Engine engine;
    const Strategy strategy = testing::RandomStrategy(graph, topology.num_devices(), round % 2 ? 0.5 : 0.0, rng);
    FullRun before, after;
    ASSERT_TRUE(before.Run(builder, engine, strategy, Record::kAll).ok());
    ASSERT_TRUE(after.Run(builder, engine, strategy, Record::kAll).ok());
    after.StoreInScheduleOrder();
    const TaskGraph &a = before.tg, &b = after.tg;
    ASSERT_EQ(a.num_tasks(), b.num_tasks());
    // Old id of each new id, through the (unchanged, unique) keys.
    std::map<uint64_t, int32_t> by_key;
    for (int32_t t = 0; t < a.num_tasks(); ++t) by_key[a.key[t]] = t;
    std::vector<int32_t> old_of(static_cast<size_t>(b.num_tasks()));
    for (int32_t t = 0; t < b.num_tasks(); ++t) old_of[t] = by_key.at(b.key[t]);
    auto keys_of = [](const TaskGraph& tg, const std::vector<int32_t>& pool, int32_t off, int32_t cnt) {
      std::vector<uint64_t> keys;
      for (int32_t k = 0; k < cnt; ++k) keys.push_back(tg.key[pool[off + k]]);
      return keys;
    };
    bool moved = false;
    for (int32_t t = 0; t < b.num_tasks(); ++t) {
      const int32_t o = old_of[t];
      moved |= o != t;
      EXPECT_EQ(b.resource[t], a.resource[o]);
      EXPECT_EQ(b.duration[t], a.duration[o]);
      EXPECT_EQ(b.kind[t], a.kind[o]);
      EXPECT_EQ(b.op[t], a.op[o]);
      EXPECT_EQ(b.consumer[t], a.consumer[o]);
      EXPECT_EQ(b.mem_bytes[t], a.mem_bytes[o]);
      EXPECT_EQ(b.mem_device[t], a.mem_device[o]);
      EXPECT_EQ(keys_of(b, b.succ_pool, b.succ_off[t], b.succ_cnt[t]),
                keys_of(a, a.succ_pool, a.succ_off[o], a.succ_cnt[o]));
      EXPECT_EQ(keys_of(b, b.pred_pool, b.pred_off[t], b.pred_cnt[t]),
                keys_of(a, a.pred_pool, a.pred_off[o], a.pred_cnt[o]));
      EXPECT_EQ(after.timing.start[t], before.timing.start[o]);
      EXPECT_EQ(after.timing.end[t], before.timing.end[o]);
      EXPECT_EQ(after.timing.ready[t], before.timing.ready[o]);
      const int32_t rp = after.timing.res_prev[t];
      EXPECT_EQ(rp < 0 ? -1 : old_of[rp], before.timing.res_prev[o]);
    }
    EXPECT_TRUE(moved) << "round " << round << ": the schedule order differs from the build order";
    for (size_t g = 0; g < b.out_tasks.size(); ++g)
      EXPECT_EQ(b.out_tasks[g] < 0 ? -1 : old_of[b.out_tasks[g]], a.out_tasks[g]);
    ASSERT_EQ(after.timing.order.size(), before.timing.order.size());
    for (size_t k = 0; k < after.timing.order.size(); ++k)
      EXPECT_EQ(b.key[after.timing.order[k]], a.key[before.timing.order[k]]);
    for (size_t r = 0; r < after.last_task.size(); ++r)
      EXPECT_EQ(after.last_task[r] < 0 ? -1 : old_of[after.last_task[r]], before.last_task[r]);
    // Groups contiguous, in the order of their first dequeued tasks.
    std::vector<int32_t> group_of(static_cast<size_t>(b.num_tasks()), -1);
    for (size_t g = 0; g < b.group_task_begin.size(); ++g)
      for (int32_t k = 0; k < b.group_task_count[g]; ++k) {
        ASSERT_EQ(group_of[b.group_task_begin[g] + k], -1);
        group_of[b.group_task_begin[g] + k] = static_cast<int32_t>(g);
      }
    int32_t last_begin = -1;
    std::vector<uint8_t> seen(b.group_task_begin.size(), 0);
    for (int32_t t : after.timing.order) {
      const int32_t g = group_of[t];
      if (seen[g]) continue;
      seen[g] = 1;
      EXPECT_GT(b.group_task_begin[g], last_begin);
      last_begin = b.group_task_begin[g];
    }
  }
}

}  // namespace
}  // namespace devplace::sim
