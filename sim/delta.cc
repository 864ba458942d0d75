// DeltaSimulator: rebuilds the task groups a config change touches and re-times only what the change reaches.
//
// The full simulation dequeues tasks in increasing (ready, key) order (every task ends strictly after it is
// ready, so a successor is always ready later than its predecessor). The delta run produces the same order by
// merging two streams: A, the previous run's order from the first position a change can affect, whose tasks keep
// their times as long as nothing they depend on changed; and B, a heap of "dirty" tasks (new, or with a changed
// predecessor or resource) keyed by their new (ready, key). A dirty task blocks its successors until it has been
// re-timed; a clean task at A's head passes unchanged when its resource is free at the same moment as before.
// The run stops early once no dirty task is left, every resource is free at the same moment as in the previous
// run at the same point, and no changed or removed task lies ahead: the rest of the schedule is then unchanged.
#include <algorithm>
#include <unordered_set>

#include "sim/full_run.h"
#include "sim/memory_profile.h"
#include "sim/simulator.h"

namespace devplace {
namespace {
constexpr int32_t kSnapshotEvery = 64;
enum : uint8_t { kClean = 0, kDirty = 1, kDone = 2 };
}  // namespace

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
  int64_t retimed = 0;

  // Derived state, rebuilt by Reindex after every run.
  std::vector<int32_t> pos;                 // position of each task in run.timing.order
  std::vector<double> snap_free;            // free time of each resource before position k * kSnapshotEvery
  std::vector<int32_t> snap_last;
  std::vector<sim::MemoryProfile> memory;   // per device
  std::vector<int64_t> dynamic_peak;        // per device
  std::vector<double> mem_alloc, mem_free;  // registered interval of each task's buffer
  int32_t live_tasks = 0;

  // Scratch, sized to the task count.
  std::vector<uint8_t> state;
  std::vector<int32_t> blocked;
  std::vector<uint32_t> version;
  std::vector<double> saved_end;
  std::vector<uint8_t> mark;
  std::vector<uint8_t> registered;          // the task's buffer is in `memory`
  std::vector<double> saved_ready, saved_start;
  std::vector<int32_t> prev_order;
  uint32_t next_version = 1;

  void FullRebuild();
  void RebuildMemory();
  void Reindex(int32_t from);
  void GrowScratch();
  void LoadResourceState(const std::vector<int32_t>& order, int32_t position, std::vector<double>* free,
                         std::vector<int32_t>* last, bool old_values) const;
  void Apply(const std::vector<std::pair<OpId, OpConfig>>& changes);
  void RegisterBuffer(int32_t t);
  void UnregisterBuffer(int32_t t);
};

void DeltaSimulator::Impl::GrowScratch() {
  const size_t n = static_cast<size_t>(run.tg.num_tasks());
  state.resize(n, kClean);
  blocked.resize(n, 0);
  version.resize(n, 0);
  saved_end.resize(n, 0.0);
  mark.resize(n, 0);
  registered.resize(n, 0);
  saved_ready.resize(n, 0.0);
  saved_start.resize(n, 0.0);
  pos.resize(n, -1);
  mem_alloc.resize(n, 0.0);
  mem_free.resize(n, 0.0);
}

void DeltaSimulator::Impl::RegisterBuffer(int32_t t) {
  const sim::TaskGraph& tg = run.tg;
  mem_alloc[t] = run.timing.start[t];
  mem_free[t] = sim::BufferFree(tg, run.timing, t);
  sim::MemoryProfile& m = memory[tg.mem_device[t]];
  m.Insert({mem_alloc[t], 1, t, tg.mem_bytes[t]});
  m.Insert({mem_free[t], 0, t, -tg.mem_bytes[t]});
  registered[t] = 1;
}

void DeltaSimulator::Impl::UnregisterBuffer(int32_t t) {
  const sim::TaskGraph& tg = run.tg;
  sim::MemoryProfile& m = memory[tg.mem_device[t]];
  m.Erase({mem_alloc[t], 1, t, tg.mem_bytes[t]});
  m.Erase({mem_free[t], 0, t, -tg.mem_bytes[t]});
  registered[t] = 0;
}

// Registers every live buffer afresh: events per device, frees before allocations and each group in task order,
// then a stable sort by time gives the profile's (time, kind, task) order.
void DeltaSimulator::Impl::RebuildMemory() {
  const sim::TaskGraph& tg = run.tg;
  const int32_t d = tg.num_devices;
  std::vector<std::vector<sim::MemoryProfile::Event>> frees(static_cast<size_t>(d)), allocs(static_cast<size_t>(d));
  for (int32_t t = 0; t < tg.num_tasks(); ++t) {
    registered[t] = 0;
    if (!tg.alive[t] || tg.mem_bytes[t] == 0) continue;
    mem_alloc[t] = run.timing.start[t];
    mem_free[t] = sim::BufferFree(tg, run.timing, t);
    registered[t] = 1;
    allocs[tg.mem_device[t]].push_back({mem_alloc[t], 1, t, tg.mem_bytes[t]});
    frees[tg.mem_device[t]].push_back({mem_free[t], 0, t, -tg.mem_bytes[t]});
  }
  memory.resize(static_cast<size_t>(d));
  dynamic_peak.assign(static_cast<size_t>(d), 0);
  std::vector<sim::MemoryProfile::Event> scratch;
  for (int32_t k = 0; k < d; ++k) {
    std::vector<sim::MemoryProfile::Event>& events = frees[k];
    events.insert(events.end(), allocs[k].begin(), allocs[k].end());
    sim::RadixSort(&events, &scratch, [](const sim::MemoryProfile::Event& e) { return sim::TimeKey(e.time); });
    memory[k].AssignSorted(std::move(events));
    dynamic_peak[k] = memory[k].Peak();
  }
}

void DeltaSimulator::Impl::FullRebuild() {
  run.Run(builder, engine, strategy, graph);
  live_tasks = run.tg.num_tasks();
  state.clear();
  blocked.clear();
  version.clear();
  saved_end.clear();
  mark.clear();
  registered.clear();
  saved_ready.clear();
  saved_start.clear();
  pos.clear();
  mem_alloc.clear();
  mem_free.clear();
  GrowScratch();
  RebuildMemory();
  Reindex(0);
}

// Recomputes positions, resource snapshots, resource predecessors and last ends from order position `from` on.
void DeltaSimulator::Impl::Reindex(int32_t from) {
  const sim::TaskGraph& tg = run.tg;
  const int32_t n = static_cast<int32_t>(run.timing.order.size());
  const int32_t r = tg.num_resources;
  const int32_t first_snap = from / kSnapshotEvery;
  const size_t snaps = static_cast<size_t>(n / kSnapshotEvery + 1);
  snap_free.resize(snaps * r);
  snap_last.resize(snaps * r);
  std::vector<double> free;
  std::vector<int32_t> last;
  if (first_snap == 0) {
    free.assign(static_cast<size_t>(r), 0.0);
    last.assign(static_cast<size_t>(r), -1);
  } else {
    free.assign(snap_free.begin() + static_cast<std::ptrdiff_t>(first_snap) * r,
                snap_free.begin() + static_cast<std::ptrdiff_t>(first_snap + 1) * r);
    last.assign(snap_last.begin() + static_cast<std::ptrdiff_t>(first_snap) * r,
                snap_last.begin() + static_cast<std::ptrdiff_t>(first_snap + 1) * r);
  }
  for (int32_t i = first_snap * kSnapshotEvery; i < n; ++i) {
    if (i % kSnapshotEvery == 0) {
      std::copy(free.begin(), free.end(), snap_free.begin() + static_cast<std::ptrdiff_t>(i / kSnapshotEvery) * r);
      std::copy(last.begin(), last.end(), snap_last.begin() + static_cast<std::ptrdiff_t>(i / kSnapshotEvery) * r);
    }
    const int32_t t = run.timing.order[i];
    const int32_t res = tg.resource[t];
    pos[t] = i;
    if (i >= from) run.timing.res_prev[t] = last[res];
    free[res] = run.timing.end[t];
    last[res] = t;
  }
  if (n % kSnapshotEvery == 0) {
    std::copy(free.begin(), free.end(), snap_free.begin() + static_cast<std::ptrdiff_t>(n / kSnapshotEvery) * r);
    std::copy(last.begin(), last.end(), snap_last.begin() + static_cast<std::ptrdiff_t>(n / kSnapshotEvery) * r);
  }
  for (int32_t k = 0; k < r; ++k) run.last_end[k] = last[k] >= 0 ? free[k] : -1.0;
  run.last_task = last;
}

// Resource state just before order position `position` of the previous run. With old_values, tasks re-timed by
// the current delta run contribute the end they had before it.
void DeltaSimulator::Impl::LoadResourceState(const std::vector<int32_t>& order, int32_t position,
                                             std::vector<double>* free, std::vector<int32_t>* last,
                                             bool old_values) const {
  const int32_t r = run.tg.num_resources;
  const int32_t s = position / kSnapshotEvery;
  free->assign(snap_free.begin() + static_cast<std::ptrdiff_t>(s) * r,
               snap_free.begin() + static_cast<std::ptrdiff_t>(s + 1) * r);
  last->assign(snap_last.begin() + static_cast<std::ptrdiff_t>(s) * r,
               snap_last.begin() + static_cast<std::ptrdiff_t>(s + 1) * r);
  for (int32_t i = s * kSnapshotEvery; i < position; ++i) {
    const int32_t t = order[i];
    (*free)[run.tg.resource[t]] = old_values && state[t] == kDone ? saved_end[t] : run.timing.end[t];
    (*last)[run.tg.resource[t]] = t;
  }
}

namespace {

struct DeltaItem {
  double ready;
  uint64_t key;
  int32_t task;
  uint32_t version;
};
// std heap comparator: true when a comes after b (min-heap on (ready, key)).
bool After(const DeltaItem& a, const DeltaItem& b) {
  return a.ready > b.ready || (a.ready == b.ready && a.key > b.key);
}

template <class T>
void SortUnique(std::vector<T>* v) {
  std::sort(v->begin(), v->end());
  v->erase(std::unique(v->begin(), v->end()), v->end());
}

}  // namespace

void DeltaSimulator::Impl::Apply(const std::vector<std::pair<OpId, OpConfig>>& changes) {
  sim::TaskGraph& tg = run.tg;
  sim::Timing& tm = run.timing;
  const int32_t num_ops = graph.num_ops();
  retimed = 0;

  // 1. The ops whose config changes, and the static memory they hold.
  std::vector<OpId> ops;
  std::vector<int64_t> old_static(static_cast<size_t>(tg.num_devices), 0), new_static = old_static;
  for (const auto& [op, config] : changes)
    if (!(strategy.configs[op] == config)) ops.push_back(op);
  SortUnique(&ops);
  if (ops.empty()) return;
  for (OpId op : ops) builder.AddStaticMemory(op, strategy.configs[op], &old_static);
  for (const auto& [op, config] : changes) strategy.configs[op] = config;
  for (OpId op : ops) builder.AddStaticMemory(op, strategy.configs[op], &new_static);
  for (int32_t d = 0; d < tg.num_devices; ++d) run.static_bytes[d] += new_static[d] - old_static[d];

  // 2. Groups to rebuild (the ops and their edges) and ops whose adjacency changes (the ops and their neighbours).
  std::vector<int32_t> edges, neighbours = ops, consumers;
  for (OpId op : ops) {
    for (int32_t e : graph.in_edges(op)) {
      edges.push_back(e);
      neighbours.push_back(graph.edge(e).src);
    }
    for (int32_t e : graph.out_edges(op)) {
      edges.push_back(e);
      neighbours.push_back(graph.edge(e).dst);
      consumers.push_back(graph.edge(e).dst);
    }
  }
  SortUnique(&edges);
  SortUnique(&neighbours);
  SortUnique(&consumers);

  // 3. Remove the old tasks of the rebuilt groups.
  std::vector<int32_t> removed;
  auto remove_group = [&](int32_t g) {
    for (int32_t t = tg.group_task_begin[g]; t < tg.group_task_begin[g] + tg.group_task_count[g]; ++t) {
      tg.alive[t] = 0;
      removed.push_back(t);
      run.totals.Add(tg, t, -1);
      if (registered[t]) UnregisterBuffer(t);
    }
  };
  for (OpId op : ops) remove_group(op);
  for (int32_t e : edges) remove_group(num_ops + e);
  live_tasks -= static_cast<int32_t>(removed.size());

  // 4. Build the new groups.
  const int32_t first_new = tg.num_tasks();
  for (OpId op : ops) builder.AppendOpGroup(op, strategy.configs[op], &tg);
  for (int32_t e : edges) builder.AppendEdgeGroup(e, strategy, &tg);
  const int32_t n = tg.num_tasks();
  for (int32_t t = first_new; t < n; ++t) run.totals.Add(tg, t, +1);
  live_tasks += n - first_new;
  tm.ready.resize(static_cast<size_t>(n), 0.0);
  tm.start.resize(static_cast<size_t>(n), 0.0);
  tm.end.resize(static_cast<size_t>(n), 0.0);
  tm.res_prev.resize(static_cast<size_t>(n), -1);
  GrowScratch();

  // 5. Adjacency of the new tasks and of the neighbours' tasks, appended to the pools.
  std::vector<int32_t> relisted;
  for (OpId w : neighbours)
    for (int32_t t = tg.group_task_begin[w]; t < tg.group_task_begin[w] + tg.group_task_count[w]; ++t)
      relisted.push_back(t);
  for (int32_t t = first_new; t < n; ++t)
    if (tg.key[t] >> 32 >= static_cast<uint64_t>(num_ops)) relisted.push_back(t);
  for (int32_t t : relisted) {
    mark[t] = 1;
    tg.succ_cnt[t] = 0;
    tg.pred_cnt[t] = 0;
  }
  std::vector<int32_t> scan;
  for (OpId w : neighbours) {
    scan.push_back(w);
    for (int32_t e : graph.in_edges(w)) scan.push_back(num_ops + e);
    for (int32_t e : graph.out_edges(w)) scan.push_back(num_ops + e);
  }
  SortUnique(&scan);
  auto for_each_dep = [&](auto&& f) {
    for (int32_t g : scan)
      for (int32_t k = tg.group_dep_begin[g]; k < tg.group_dep_begin[g] + tg.group_dep_count[g]; ++k)
        f(tg.dep_from[k], tg.dep_to[k]);
  };
  for_each_dep([&](int32_t a, int32_t b) {
    if (mark[a]) ++tg.succ_cnt[a];
    if (mark[b]) ++tg.pred_cnt[b];
  });
  for (int32_t t : relisted) {
    tg.succ_off[t] = static_cast<int32_t>(tg.succ_pool.size());
    tg.pred_off[t] = static_cast<int32_t>(tg.pred_pool.size());
    tg.succ_pool.resize(tg.succ_pool.size() + static_cast<size_t>(tg.succ_cnt[t]));
    tg.pred_pool.resize(tg.pred_pool.size() + static_cast<size_t>(tg.pred_cnt[t]));
    tg.succ_cnt[t] = 0;
    tg.pred_cnt[t] = 0;
  }
  for_each_dep([&](int32_t a, int32_t b) {
    if (mark[a]) tg.succ_pool[tg.succ_off[a] + tg.succ_cnt[a]++] = b;
    if (mark[b]) tg.pred_pool[tg.pred_off[b] + tg.pred_cnt[b]++] = a;
  });
  for (int32_t t : relisted) mark[t] = 0;

  // 6. Seeds: new tasks and the consumers' compute tasks (their predecessors changed). The sweep starts at the
  // first position of the previous order that a removed task, a seed or a new task's predecessor reaches.
  std::vector<int32_t> seeds;
  for (int32_t t = first_new; t < n; ++t) seeds.push_back(t);
  for (OpId v : consumers) {
    if (std::binary_search(ops.begin(), ops.end(), v)) continue;
    for (int32_t p = 0; p < strategy.configs[v].num_parts(); ++p) seeds.push_back(tg.group_task_begin[v] + p);
  }
  prev_order.swap(tm.order);
  const int32_t old_n = static_cast<int32_t>(prev_order.size());
  int32_t begin = old_n;
  int32_t max_anomaly = -1;
  for (int32_t t : removed) {
    begin = std::min(begin, pos[t]);
    max_anomaly = std::max(max_anomaly, pos[t]);
  }
  for (int32_t t : seeds) {
    if (t < first_new) {
      begin = std::min(begin, pos[t]);
      continue;
    }
    if (tg.pred_cnt[t] == 0) begin = 0;
    int32_t latest = -1;
    for (int32_t k = 0; k < tg.pred_cnt[t]; ++k) {
      const int32_t p = tg.pred_pool[tg.pred_off[t] + k];
      if (p < first_new) latest = std::max(latest, pos[p]);
    }
    if (latest >= 0) begin = std::min(begin, latest + 1);
  }

  // 7. The merged sweep.
  std::vector<double> free;
  std::vector<int32_t> last;
  LoadResourceState(prev_order, begin, &free, &last, false);
  tm.order.assign(prev_order.begin(), prev_order.begin() + begin);
  std::vector<DeltaItem> heap;
  std::vector<int32_t> touched, mem_touched;
  int32_t dirty_pending = 0;
  const int32_t* succ = tg.succ_pool.data();
  const int32_t* pred = tg.pred_pool.data();

  auto mark_dirty = [&](int32_t x) {
    state[x] = kDirty;
    ++dirty_pending;
    touched.push_back(x);
    if (x < first_new) {
      saved_ready[x] = tm.ready[x];
      saved_start[x] = tm.start[x];
      saved_end[x] = tm.end[x];
    }
    for (int32_t k = 0; k < tg.succ_cnt[x]; ++k) ++blocked[succ[tg.succ_off[x] + k]];
  };
  auto push = [&](int32_t x) {
    double ready = 0;
    for (int32_t k = 0; k < tg.pred_cnt[x]; ++k) {
      const int32_t p = pred[tg.pred_off[x] + k];
      ready = std::max(ready, tm.end[p] + tg.resource_delay[tg.resource[p]]);
    }
    version[x] = next_version++;
    heap.push_back({ready, tg.key[x], x, version[x]});
    std::push_heap(heap.begin(), heap.end(), After);
  };
  auto process = [&](int32_t x, double ready) {
    const int32_t r = tg.resource[x];
    const double start = std::max(ready, free[r]);
    const double end = sim::EndOf(start, tg.duration[x]);
    const bool is_new = x >= first_new;
    const bool end_changed = is_new || end != saved_end[x];
    const bool changed = end_changed || start != saved_start[x] || ready != saved_ready[x];
    tm.ready[x] = ready;
    tm.start[x] = start;
    tm.end[x] = end;
    tm.res_prev[x] = last[r];
    free[r] = end;
    last[r] = x;
    tm.order.push_back(x);
    state[x] = kDone;
    --dirty_pending;
    ++retimed;
    if (changed) {
      if (!is_new) max_anomaly = std::max(max_anomaly, pos[x]);
      mem_touched.push_back(x);
    }
    if (end_changed)
      for (int32_t k = 0; k < tg.pred_cnt[x]; ++k) mem_touched.push_back(pred[tg.pred_off[x] + k]);
    for (int32_t k = 0; k < tg.succ_cnt[x]; ++k) {
      const int32_t s = succ[tg.succ_off[x] + k];
      if (end_changed && state[s] == kClean) mark_dirty(s);
      if (--blocked[s] == 0 && state[s] == kDirty) push(s);
    }
  };

  for (int32_t t : seeds)
    if (state[t] == kClean) mark_dirty(t);
  for (int32_t t : seeds)
    if (blocked[t] == 0) push(t);

  int32_t i = begin;
  int32_t since_check = kSnapshotEvery;
  bool stopped = false;
  std::vector<double> old_free;
  std::vector<int32_t> old_last;
  while (true) {
    while (i < old_n && (!tg.alive[prev_order[i]] || state[prev_order[i]] != kClean)) ++i;
    while (!heap.empty()) {
      const DeltaItem& top = heap.front();
      if (top.version == version[top.task] && state[top.task] == kDirty && blocked[top.task] == 0) break;
      std::pop_heap(heap.begin(), heap.end(), After);
      heap.pop_back();
    }
    const bool has_a = i < old_n;
    if (!has_a && heap.empty()) break;
    if (!heap.empty()) {
      const DeltaItem& top = heap.front();
      const int32_t c = has_a ? prev_order[i] : -1;
      if (!has_a || top.ready < tm.ready[c] || (top.ready == tm.ready[c] && top.key < tg.key[c])) {
        const DeltaItem item = top;
        std::pop_heap(heap.begin(), heap.end(), After);
        heap.pop_back();
        process(item.task, item.ready);
        continue;
      }
    }
    const int32_t c = prev_order[i++];
    if (blocked[c] > 0) {
      mark_dirty(c);  // a predecessor is re-timed after c's old ready time, so c moves later
      continue;
    }
    const int32_t r = tg.resource[c];
    if (std::max(tm.ready[c], free[r]) != tm.start[c]) {
      mark_dirty(c);
      process(c, tm.ready[c]);
      continue;
    }
    tm.res_prev[c] = last[r];
    free[r] = tm.end[c];
    last[r] = c;
    tm.order.push_back(c);
    if (dirty_pending == 0 && i > max_anomaly && ++since_check >= kSnapshotEvery) {
      since_check = 0;
      LoadResourceState(prev_order, i, &old_free, &old_last, true);
      if (old_free == free) {
        stopped = true;
        break;
      }
    }
  }
  if (stopped) tm.order.insert(tm.order.end(), prev_order.begin() + i, prev_order.end());

  // 8. Memory: re-register the buffers whose interval may have moved.
  for (int32_t t : relisted) mem_touched.push_back(t);
  size_t buffers = 0;
  for (int32_t t : mem_touched) {
    if (mark[t] || !tg.alive[t] || tg.mem_bytes[t] == 0) continue;
    mark[t] = 1;
    mem_touched[buffers++] = t;
  }
  mem_touched.resize(buffers);
  for (int32_t t : mem_touched) mark[t] = 0;
  if (buffers * 16 > static_cast<size_t>(live_tasks)) {
    RebuildMemory();  // cheaper than moving many events one by one
  } else {
    for (int32_t t : mem_touched) {
      if (registered[t]) UnregisterBuffer(t);
      RegisterBuffer(t);
    }
    for (int32_t d = 0; d < tg.num_devices; ++d) dynamic_peak[d] = memory[d].Peak();
  }

  for (int32_t t : touched) {
    state[t] = kClean;
    for (int32_t k = 0; k < tg.succ_cnt[t]; ++k) blocked[succ[tg.succ_off[t] + k]] = 0;
  }
  Reindex(begin);

  // Garbage from replaced groups grows with every change; rebuild from scratch once it outweighs the live graph.
  if (tg.num_tasks() > 2 * live_tasks + 4096 ||
      tg.succ_pool.size() > 3 * static_cast<size_t>(live_tasks) + 16384)
    FullRebuild();
}

DeltaSimulator::DeltaSimulator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DeltaSimulator::DeltaSimulator(DeltaSimulator&&) noexcept = default;
DeltaSimulator& DeltaSimulator::operator=(DeltaSimulator&&) noexcept = default;
DeltaSimulator::~DeltaSimulator() = default;

Expected<DeltaSimulator> DeltaSimulator::Create(const Graph& graph, const Topology& topology, Strategy strategy,
                                                CostModel cost, SimOptions options) {
  if (Status s = ValidateSimOptions(options); !s) return s.error();
  if (Status s = sim::CheckGraph(graph); !s) return s.error();
  if (Status s = sim::CheckStrategy(graph, topology, strategy); !s) return s.error();
  auto impl = std::make_unique<Impl>(graph, topology, std::move(strategy), std::move(cost), options);
  impl->FullRebuild();
  return DeltaSimulator(std::move(impl));
}

Status DeltaSimulator::SetConfig(OpId op, const OpConfig& config) {
  const std::pair<OpId, OpConfig> change{op, config};
  return SetConfigs({&change, 1});
}

Status DeltaSimulator::SetConfigs(std::span<const std::pair<OpId, OpConfig>> changes) {
  for (const auto& [op, config] : changes) {
    if (op < 0 || op >= impl_->graph.num_ops())
      return Error{"op id " + std::to_string(op) + " is not in graph '" + impl_->graph.name() + "'"};
    if (Status s = sim::CheckConfig(impl_->graph, impl_->topology, op, config); !s) return s;
  }
  impl_->Apply(std::vector<std::pair<OpId, OpConfig>>(changes.begin(), changes.end()));
  return Status::Ok();
}

const Strategy& DeltaSimulator::strategy() const { return impl_->strategy; }

double DeltaSimulator::step_time() const {
  const sim::TaskGraph& tg = impl_->run.tg;
  double step = 0;
  for (int32_t r = 0; r < tg.num_resources; ++r)
    if (impl_->run.last_end[r] >= 0) step = std::max(step, impl_->run.last_end[r] + tg.resource_delay[r]);
  return step;
}

SimResult DeltaSimulator::result() const {
  const Impl& m = *impl_;
  return sim::Assemble(m.topology, m.run.tg, m.run.timing, m.run.totals, m.run.last_end, m.run.last_task,
                       m.run.static_bytes, m.dynamic_peak, m.options);
}

int64_t DeltaSimulator::last_retimed_tasks() const { return impl_->retimed; }

}  // namespace devplace
