// DeltaSimulator's state (internal to sim/): shared by delta.cc (the incremental run) and delta_index.cc (the
// indexes over the current dequeue order).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "sim/full_run.h"
#include "sim/memory.h"
#include "sim/simulator.h"

namespace devplace {
namespace sim {
inline constexpr int32_t kSnapshotEvery = 64;
enum : uint8_t { kClean = 0, kDirty = 1, kDone = 2 };
}  // namespace sim

struct DeltaSimulator::Impl {
  Impl(const Graph& g, const Topology& t, Strategy s, CostModel c, SimOptions o)
      : graph(g), topology(t), strategy(std::move(s)), cost(std::move(c)), options(o),
        cache(g.num_ops(), t.num_devices()), builder(graph, topology, cost, options, &cache) {}

  const Graph& graph;
  const Topology& topology;
  Strategy strategy;
  CostModel cost;
  SimOptions options;
  sim::PlainCostCache cache;
  sim::TaskBuilder builder;
  sim::Engine engine;
  sim::FullRun run;
  mutable sim::PeakScratch peaks;  // memory peaks are computed on demand by result()
  int64_t retimed = 0;
  int32_t live_tasks = 0;

  // Derived from the current order by Reindex.
  std::vector<int32_t> pos;          // position of each task in run.timing.order
  std::vector<int32_t> res_next;     // the next task on the same resource in that order (-1: none)
  std::vector<int32_t> res_first;    // per resource, its first task (-1: none)
  std::vector<int32_t> min_pred_at;  // per position: the earliest position of that task's predecessors (-1: none)
  std::vector<int32_t> bind_at;      // per position: the position of the predecessor whose arrival made the task
                                     // ready (the latest position on ties; -1: none)
  std::vector<sim::Time> snap_free;       // free time of each resource before position k * kSnapshotEvery
  std::vector<int32_t> snap_last;

  // Scratch, sized to the task count.
  std::vector<uint8_t> state;
  std::vector<int32_t> blocked;
  std::vector<uint32_t> version;
  std::vector<sim::Time> saved_ready, saved_start, saved_end;
  std::vector<uint8_t> mark;
  std::vector<int32_t> prev_order;
  uint32_t next_version = 1;

  Status FullRebuild();
  void Reindex(int32_t from, int32_t block_new = -1, int32_t block_old = -1);
  void GrowScratch();
  void LoadResourceState(const std::vector<int32_t>& order, int32_t position, std::vector<sim::Time>* free,
                         std::vector<int32_t>* last) const;
  Status Apply(const std::vector<std::pair<OpId, OpConfig>>& changes);
};

}  // namespace devplace
