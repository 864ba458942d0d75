// The shape of a change to a schedule, for DeltaShape (sim_bench) and IterativeShape (env_bench): what a re-timing
// by lazily shifted subtrees of the binding forest, or by per-resource runs, would have to touch. Header-only,
// shared by the two benchmark programs; reads sim/'s internal full-run state.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#include "bench/thread_cpu_clock.h"
#include "core/graph.h"
#include "core/strategy.h"
#include "core/topology.h"
#include "sim/cost_model.h"
#include "sim/full_run.h"
#include "sim/simulator.h"
#include "sim/task_graph.h"

namespace devplace::bench {

// Full simulations with every time and binding parent recorded (Record::kAll), sharing one price cache.
class FullScheduler {
 public:
  // `graph`, `topology`, `cost` and `options` must outlive the scheduler.
  FullScheduler(const Graph& graph, const Topology& topology, const CostModel& cost, const SimOptions& options)
      : cache_(graph.num_ops(), topology.num_devices()), builder_(graph, topology, cost, options, &cache_) {}

  // The schedule of `strategy`; throws when it cannot be simulated (a benchmark's set-up error).
  sim::FullRun Run(const Strategy& strategy) {
    sim::FullRun run;
    if (Status s = run.Run(builder_, engine_, strategy, sim::Record::kAll); !s)
      throw std::runtime_error(s.error().message);
    return run;
  }

 private:
  sim::PlainCostCache cache_;
  sim::TaskBuilder builder_;
  sim::Engine engine_;
};

// Sorts `v` and returns the number of its pairs out of order (a bottom-up merge sort that counts as it merges).
inline int64_t SortCountingInversions(std::vector<int32_t>* v) {
  const size_t n = v->size();
  std::vector<int32_t> merged(n);
  int64_t inversions = 0;
  for (size_t width = 1; width < n; width *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * width) {
      const size_t mid = std::min(lo + width, n), hi = std::min(lo + 2 * width, n);
      size_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        if ((*v)[j] < (*v)[i]) {
          inversions += static_cast<int64_t>(mid - i);  // (*v)[j] comes before every element left of the half
          merged[k++] = (*v)[j++];
        } else {
          merged[k++] = (*v)[i++];
        }
      }
      while (i < mid) merged[k++] = (*v)[i++];
      while (j < hi) merged[k++] = (*v)[j++];
    }
    v->swap(merged);
  }
  return inversions;
}

// What a re-timing that knew the new order would at least spend: every task of `run` timed along its dequeue order
// with no ready queue (its ready time from its inputs' ends, its start from its resource's last end). Returns the
// pass's thread CPU seconds; throws when a time differs from the run's.
inline double OrderedRetimingSeconds(const sim::FullRun& run) {
  const sim::TaskGraph& tg = run.tg;
  std::vector<sim::Time> end(static_cast<size_t>(tg.num_tasks()));
  std::vector<sim::Time> free(static_cast<size_t>(tg.num_resources), 0);
  const double t0 = ThreadCpuClock::now();
  for (int32_t t : run.timing.order) {
    sim::Time ready = 0;
    for (int32_t j = 0; j < tg.pred_cnt[t]; ++j) {
      const int32_t p = tg.pred_pool[tg.pred_off[t] + j];
      ready = std::max(ready, end[p] + tg.resource_delay[tg.resource[p]]);
    }
    const int32_t r = tg.resource[t];
    end[t] = std::max(ready, free[r]) + tg.duration[t];
    free[r] = end[t];
  }
  const double seconds = ThreadCpuClock::now() - t0;
  for (int32_t t : run.timing.order)
    if (end[t] != run.timing.end[t]) throw std::runtime_error("ordered re-timing differs from the full run");
  return seconds;
}

// Sums over changes (divide by `changes` for means).
struct ShapeCounts {
  double changes = 0;
  double tasks = 0;          // tasks before the change
  double moved = 0;          // tasks whose start moved (matched by tie-break key, resource and duration)
  double binding_roots = 0;  // moved tasks whose binding parent is missing or moved by a different amount
  double resource_runs = 0;  // maximal runs of equal shift in each resource's new order
  double cross_edges = 0;    // inputs other than the binding parent that moved more than their task
  double tight_inner = 0;    // such inputs that moved as much as their task, with an old slack below the shift
  double order_breaks = 0;   // tasks that moved less than their binding parent
  double queue_swaps = 0;    // consecutive tasks of a resource's old order that run in the other order after
  // The dequeue order of all resources together (kept tasks only): consecutive tasks of the old order that run in
  // the other order after, and pairs of tasks (consecutive or not) that do.
  double order_descents = 0;
  double order_inversions = 0;
  double keeping_queues = 0;  // changes with no queue swap (every resource runs its kept tasks in the old order)

  // Adds the change from `before` to `after` (full runs with every time recorded: Record::kAll).
  void Add(const sim::FullRun& before, const sim::FullRun& after) {
    const sim::TaskGraph& a = before.tg;
    const sim::TaskGraph& b = after.tg;
    const int32_t n = a.num_tasks();
    std::unordered_map<uint64_t, int32_t> by_key;
    by_key.reserve(static_cast<size_t>(b.num_tasks()) * 2);
    for (int32_t t = 0; t < b.num_tasks(); ++t) by_key.emplace(b.key[t], t);
    std::vector<int32_t> match(static_cast<size_t>(n), -1);
    std::vector<sim::Time> shift(static_cast<size_t>(n), 0);
    for (int32_t t = 0; t < n; ++t) {
      const auto it = by_key.find(a.key[t]);
      if (it == by_key.end() || b.resource[it->second] != a.resource[t] || b.duration[it->second] != a.duration[t])
        continue;
      match[t] = it->second;
      shift[t] = after.timing.start[it->second] - before.timing.start[t];
    }
    std::vector<std::vector<std::pair<sim::Time, int32_t>>> per_resource(static_cast<size_t>(b.num_resources));
    changes += 1;
    tasks += n;
    for (int32_t t = 0; t < n; ++t) {
      if (match[t] < 0 || shift[t] == 0) continue;
      moved += 1;
      per_resource[b.resource[match[t]]].emplace_back(after.timing.start[match[t]], t);
      const int32_t parent = before.timing.crit_prev[t];
      if (parent < 0 || match[parent] < 0 || shift[parent] != shift[t]) binding_roots += 1;
      if (parent >= 0 && match[parent] >= 0 && shift[t] < shift[parent]) order_breaks += 1;
      for (int32_t k = 0; k < a.pred_cnt[t]; ++k) {
        const int32_t p = a.pred_pool[a.pred_off[t] + k];
        if (p == parent || match[p] < 0) continue;
        if (shift[p] > shift[t]) cross_edges += 1;
        const sim::Time slack = before.timing.start[t] - before.timing.end[p] - a.resource_delay[a.resource[p]];
        if (shift[p] == shift[t] && slack < std::abs(shift[t])) tight_inner += 1;
      }
    }
    std::vector<int32_t> rank(static_cast<size_t>(b.num_tasks()), -1);
    for (size_t k = 0; k < after.timing.order.size(); ++k) rank[after.timing.order[k]] = static_cast<int32_t>(k);
    const double swaps_before = queue_swaps;
    for (int32_t t = 0; t < n; ++t) {
      const int32_t prev = before.timing.res_prev[t];
      if (prev >= 0 && match[t] >= 0 && match[prev] >= 0 && rank[match[t]] < rank[match[prev]]) queue_swaps += 1;
    }
    keeping_queues += queue_swaps == swaps_before;
    std::vector<int32_t> new_ranks;  // the kept tasks' new ranks in their old order
    for (int32_t t : before.timing.order)
      if (match[t] >= 0) new_ranks.push_back(rank[match[t]]);
    for (size_t i = 1; i < new_ranks.size(); ++i) order_descents += new_ranks[i] < new_ranks[i - 1];
    order_inversions += static_cast<double>(SortCountingInversions(&new_ranks));
    for (auto& list : per_resource) {
      std::sort(list.begin(), list.end());
      for (size_t i = 0; i < list.size(); ++i)
        if (i == 0 || shift[list[i].second] != shift[list[i - 1].second]) resource_runs += 1;
    }
  }

  // The means per change as benchmark counters.
  template <class State>
  void Report(State& state) const {
    const double per = std::max(1.0, changes);
    state.counters["changes"] = changes;
    state.counters["tasks"] = tasks / per;
    state.counters["moved"] = moved / per;
    state.counters["binding_roots"] = binding_roots / per;
    state.counters["resource_runs"] = resource_runs / per;
    state.counters["cross_edges"] = cross_edges / per;
    state.counters["tight_inner_edges"] = tight_inner / per;
    state.counters["order_breaks"] = order_breaks / per;
    state.counters["queue_swaps"] = queue_swaps / per;
    state.counters["order_descents"] = order_descents / per;
    state.counters["order_inversions"] = order_inversions / per;
    state.counters["keeping_queues_share"] = keeping_queues / per;
  }
};

}  // namespace devplace::bench
