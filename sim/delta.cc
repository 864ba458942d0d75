// DeltaSimulator: rebuilds the task groups a config change touches and re-times only what the change reaches.
//
// The full simulation dequeues tasks in increasing (ready, key) order (every task lasts at least one tick, so a
// successor is always ready later than its predecessor). The delta run produces the same order by merging two
// streams: A, the previous run's order from the first slot a change can affect, whose tasks keep their times
// as long as nothing they depend on changed; and B, a heap of "dirty" tasks (new, or with a changed predecessor
// or resource) keyed by their new (ready, key). A dirty task blocks its successors until it has been re-timed; a
// clean task at A's head passes unchanged (and keeps its slot) when its resource is free at the same moment as
// before. The re-timed tasks then take slots next to where they now run in the order (Place, delta_index.cc).
// Long stretches of A that can only pass unchanged are jumped over (DeltaSweep::JumpTarget). When a change turns out
// to re-time most of what the merge passes, the merge stops and what is not yet settled is re-timed in one pass
// from the merge's state, which costs a fraction as much per task and stops at a shifted rest as the merge does:
// along the previous order where every resource keeps its order (DeltaSweep::RunOrdered, delta_ordered.cc, no
// ready queue, jumping over the stretches that only move), else by a plain event loop (DeltaSweep::RunDense) that
// takes in the clean tasks as it reaches them.
//
// The run stops early at a point where the rest of the schedule is provably the previous one shifted by a
// constant delta (0: unchanged): no new task is left, nothing settled lies ahead in the previous order, every
// resource's next task sees its resource free at the old moment + delta (or earlier than it is ready, in both
// runs), and every unsettled task's ready time is its old one + delta. Times are integers, so the shifted times
// are exactly those a full run computes; the shift is applied per chunk of slots. Memory peaks are computed when a
// result is asked for.
//
// Apply runs the steps of a DeltaSweep (delta_sweep.h), one method each: collect the changed ops, find the groups
// to rebuild, remove their old tasks, build the new ones, patch the adjacency and seed the sweep (this file); the
// sweep itself, with its jump target and shifted-rest check, is in delta_sweep.cc. A made change is then placed
// (Finish and Place, delta_index.cc); a query is rolled back (delta_query.cc).
#include <algorithm>

#include "sim/delta_sweep.h"

namespace devplace {
namespace {
using sim::Time;

template <class T>
void SortUnique(std::vector<T>* v) {
  std::sort(v->begin(), v->end());
  v->erase(std::unique(v->begin(), v->end()), v->end());
}

// Drops the entries of dead tasks from the adjacency list at pool[off, off + cnt).
void DropRemoved(const std::vector<uint8_t>& alive, std::vector<int32_t>& pool, int32_t off, int32_t& cnt) {
  int32_t kept = 0;
  for (int32_t k = 0; k < cnt; ++k)
    if (alive[pool[off + k]]) pool[off + kept++] = pool[off + k];
  cnt = kept;
}

// Appends v to the adjacency list at pool[off, off + cnt) with room for `room` entries; a full list moves to the
// end of the pool with room to spare.
void AppendEntry(std::vector<int32_t>& pool, int32_t& off, int32_t& cnt, int32_t& room, int32_t v) {
  if (cnt == room) {
    const int32_t moved_to = static_cast<int32_t>(pool.size());
    room = 2 * cnt + 4;
    pool.resize(pool.size() + static_cast<size_t>(room));
    std::copy_n(pool.begin() + off, cnt, pool.begin() + moved_to);
    off = moved_to;
  }
  pool[off + cnt++] = v;
}

}  // namespace

Status DeltaSimulator::Impl::Apply(std::span<const std::pair<OpId, OpConfig>> changes, Time* query_step) {
  retimed = 0;
  peaks_valid = false;
  risky_valid = false;
  DeltaSweep sweep(*this, query_step != nullptr);
  // A change just asked about (and nothing made since) needs no sweep: the query's outcome is placed.
  const bool replay = !query_step && memo.valid && memo.changes.Equals(changes);
  memo.valid = false;
  if (!sweep.CollectChanges(changes)) {
    if (query_step) *query_step = StepTicks();
    return Status::Ok();
  }
  sweep.FindGroups();
  sweep.RemoveOldTasks();
  if (Status s = sweep.BuildNewGroups(); !s) return s;
  sweep.PatchAdjacency();
  if (replay) {
    window.swap(memo.window);
    scratch.reindex.swap(memo.reindex);
    retimed = memo.retimed;
    Finish(memo.begin, memo.cut, memo.shift, nullptr);
    return Status::Ok();
  }
  sweep.Seed();
  sweep.Sweep();
  if (!query_step) {
    Finish(sweep.begin(), sweep.cut(), sweep.rest_shift(), sweep.last_before_cut());
    return Status::Ok();
  }
  // A query ends here: read the step, remember the outcome, then put everything back.
  *query_step = sweep.QueryStep();
  memo.valid = true;  // the lists are swapped in and assigned, so that both sides keep their capacity
  memo.changes.Assign(changes);
  memo.window.swap(window);
  memo.reindex.swap(scratch.reindex);
  memo.begin = sweep.begin();
  memo.cut = sweep.cut();
  memo.shift = sweep.rest_shift();
  memo.retimed = retimed;
  ResetStates(memo.window);
  for (int32_t t : scratch.removed) state[t] = sim::kClean;
  Rollback(sweep.old_configs());
  return Status::Ok();
}

bool DeltaSimulator::Impl::DeltaSweep::CollectChanges(std::span<const std::pair<OpId, OpConfig>> changes) {
  for (auto* v : {&sc.ops, &sc.edges, &sc.consumers, &sc.removed, &sc.patched, &sc.reindex, &sc.seeds,
                  &sc.processed_ahead, &sc.pending, &sc.used_res})
    v->clear();
  sc.heap.clear();
  sc.old_static.assign(static_cast<size_t>(tg.num_devices), 0);
  sc.new_static.assign(static_cast<size_t>(tg.num_devices), 0);
  std::vector<OpId>& ops = sc.ops;
  for (const auto& [op, config] : changes)
    if (!(m.strategy.configs[op] == config)) ops.push_back(op);
  SortUnique(&ops);
  if (ops.empty()) return false;
  if (query) m.undo.totals = m.run.totals;
  for (OpId op : ops) m.builder.AddStaticMemory(op, m.strategy.configs[op], &sc.old_static);
  sc.old_configs.Clear();
  for (OpId op : ops) sc.old_configs.Append(op, m.strategy.configs[op]);
  for (const auto& [op, config] : changes) m.strategy.configs[op] = config;
  for (OpId op : ops) m.builder.AddStaticMemory(op, m.strategy.configs[op], &sc.new_static);
  for (int32_t d = 0; d < tg.num_devices; ++d) m.run.static_bytes[d] += sc.new_static[d] - sc.old_static[d];
  return true;
}

void DeltaSimulator::Impl::DeltaSweep::AddSharers(int32_t edge, const OpConfig& old_config) {
  const Graph& graph = m.graph;
  const Edge& e = graph.edge(edge);
  auto changed = [&](OpId op) { return std::binary_search(sc.ops.begin(), sc.ops.end(), op); };
  if (e.bytes == 0 || graph.op(e.src).role != OpRole::kForward || changed(e.src)) return;
  const OpConfig& now = m.strategy.configs[e.dst];
  auto touched = [&](DeviceId d) {
    return std::find(old_config.devices.begin(), old_config.devices.end(), d) != old_config.devices.end() ||
           std::find(now.devices.begin(), now.devices.end(), d) != now.devices.end();
  };
  std::vector<int32_t>& first = sc.share_first;
  for (int32_t other : graph.out_edges(e.src)) {
    const Edge& x = graph.edge(other);
    if (other == edge || x.bytes != e.bytes || changed(x.dst)) continue;
    const OpConfig& cx = m.strategy.configs[x.dst];
    if (cx.num_parts() == 1) {
      const DeviceId d = cx.devices[0];
      if (!touched(d)) continue;
      if (first[d] < 0 || other < first[d]) first[d] = other;
    } else {
      if (std::none_of(cx.devices.begin(), cx.devices.end(), touched)) continue;
      sc.edges.push_back(other);
    }
    sc.consumers.push_back(x.dst);
  }
  for (const OpConfig* c : {&old_config, &now})
    for (DeviceId d : c->devices)
      if (first[d] >= 0) {
        sc.edges.push_back(first[d]);
        first[d] = -1;
      }
}

void DeltaSimulator::Impl::DeltaSweep::FindGroups() {
  const Graph& graph = m.graph;
  sc.share_first.assign(static_cast<size_t>(tg.num_devices), -1);
  for (size_t i = 0; i < sc.ops.size(); ++i) {
    const OpId op = sc.ops[i];
    for (int32_t e : graph.in_edges(op)) {
      sc.edges.push_back(e);
      AddSharers(e, old_configs()[i].second);
    }
    for (int32_t e : graph.out_edges(op)) {
      sc.edges.push_back(e);
      sc.consumers.push_back(graph.edge(e).dst);
    }
  }
  SortUnique(&sc.edges);
  SortUnique(&sc.consumers);
  sc.rebuilt_groups.assign(sc.ops.begin(), sc.ops.end());
  for (int32_t e : sc.edges) sc.rebuilt_groups.push_back(m.graph.num_ops() + e);
}

void DeltaSimulator::Impl::DeltaSweep::RemoveOldTasks() {
  for (int32_t g : sc.rebuilt_groups) {
    for (int32_t t = tg.group_task_begin[g]; t < tg.group_task_begin[g] + tg.group_task_count[g]; ++t) {
      tg.alive[t] = 0;
      sc.removed.push_back(t);
      m.run.totals.Add(tg, t, -1);
    }
  }
  m.live_tasks -= static_cast<int32_t>(sc.removed.size());
}

Status DeltaSimulator::Impl::DeltaSweep::BuildNewGroups() {
  first_new_ = tg.num_tasks();
  if (query) m.SaveGroups(sc.rebuilt_groups);
  for (OpId op : sc.ops) m.builder.AppendOpGroup(op, m.strategy.configs[op], &tg);
  for (int32_t e : sc.edges) m.builder.AppendEdgeGroup(e, m.strategy, &tg);
  num_tasks_ = tg.num_tasks();
  for (int32_t t = first_new_; t < num_tasks_; ++t) m.run.totals.Add(tg, t, +1);
  m.live_tasks += num_tasks_ - first_new_;
  if (Status s = sim::CheckHorizon(m.run.totals); !s) {
    if (query) {
      m.Rollback(old_configs());
      return s;
    }
    // Too long to simulate: go back to the previous strategy (a full rebuild) and report.
    for (const auto& [op, config] : old_configs()) m.strategy.configs[op] = config;
    if (Status rebuilt = m.FullRebuild(); !rebuilt) return rebuilt;
    return s;
  }
  m.run.timing.res_prev.resize(static_cast<size_t>(num_tasks_), -1);
  m.GrowScratch();
  for (int32_t t = first_new_; t < num_tasks_; ++t) m.pos[t] = -1;
  return Status::Ok();
}

void DeltaSimulator::Impl::DeltaSweep::PatchAdjacency() {
  // Every dependency that names a new task comes from a rebuilt group, and every one that named a removed task
  // went with it, so the lists of new tasks are built from the rebuilt groups' dependencies, and the lists of
  // surviving tasks that named a removed task or gain a dependency are patched: removed entries dropped, new
  // ones appended in place while there is room (a list that outgrows its room moves to the end of the pool with
  // room to spare). High-degree neighbours thus cost a pass over their own list, not over all their edges.
  // sc.patched: the surviving tasks whose successor (m.mark bit 1) or predecessor (bit 2) list changes.
  std::vector<uint8_t>& mark = m.mark;
  auto note = [&](int32_t t, uint8_t bit) {
    if (mark[t] == 0) sc.patched.push_back(t);
    mark[t] |= bit;
  };
  auto for_each_new_dep = [&](auto&& f) {
    for (int32_t g : sc.rebuilt_groups)
      for (int32_t k = tg.group_dep_begin[g]; k < tg.group_dep_begin[g] + tg.group_dep_count[g]; ++k)
        f(tg.dep_from[k], tg.dep_to[k]);
  };
  const int32_t first_new = first_new_, n = num_tasks_;
  for (int32_t x : sc.removed) {
    for (int32_t k = 0; k < tg.pred_cnt[x]; ++k)
      if (const int32_t p = tg.pred_pool[tg.pred_off[x] + k]; tg.alive[p]) note(p, 1);
    for (int32_t k = 0; k < tg.succ_cnt[x]; ++k)
      if (const int32_t q = tg.succ_pool[tg.succ_off[x] + k]; tg.alive[q]) note(q, 2);
  }
  for (int32_t t = first_new; t < n; ++t) tg.succ_cnt[t] = tg.pred_cnt[t] = 0;
  for_each_new_dep([&](int32_t a, int32_t b) {
    if (a >= first_new) ++tg.succ_cnt[a];
    else note(a, 1);
    if (b >= first_new) ++tg.pred_cnt[b];
    else note(b, 2);
  });
  for (int32_t t : sc.patched) {
    if (query && (mark[t] & 1)) m.SaveList(t, 0);
    if (query && (mark[t] & 2)) m.SaveList(t, 1);
    if (mark[t] & 1) DropRemoved(tg.alive, tg.succ_pool, tg.succ_off[t], tg.succ_cnt[t]);
    if (mark[t] & 2) {
      DropRemoved(tg.alive, tg.pred_pool, tg.pred_off[t], tg.pred_cnt[t]);
      sc.reindex.push_back(t);
    }
    mark[t] = 0;
  }
  for (int32_t t = first_new; t < n; ++t) {
    sc.reindex.push_back(t);
    tg.succ_off[t] = static_cast<int32_t>(tg.succ_pool.size());
    tg.pred_off[t] = static_cast<int32_t>(tg.pred_pool.size());
    tg.succ_pool.resize(tg.succ_pool.size() + static_cast<size_t>(tg.succ_cnt[t]));
    tg.pred_pool.resize(tg.pred_pool.size() + static_cast<size_t>(tg.pred_cnt[t]));
    m.succ_room[t] = tg.succ_cnt[t];
    m.pred_room[t] = tg.pred_cnt[t];
    tg.succ_cnt[t] = tg.pred_cnt[t] = 0;
  }
  for_each_new_dep([&](int32_t a, int32_t b) {
    AppendEntry(tg.succ_pool, tg.succ_off[a], tg.succ_cnt[a], m.succ_room[a], b);
    AppendEntry(tg.pred_pool, tg.pred_off[b], tg.pred_cnt[b], m.pred_room[b], a);
  });
}

void DeltaSimulator::Impl::DeltaSweep::Seed() {
  // The sweep starts at the first slot of the order that a removed task, a seed or a new task's predecessor
  // reaches.
  const int32_t first_new = first_new_;
  for (int32_t t = first_new; t < num_tasks_; ++t) sc.seeds.push_back(t);
  for (OpId v : sc.consumers) {
    if (std::binary_search(sc.ops.begin(), sc.ops.end(), v)) continue;
    for (int32_t p = 0; p < m.strategy.configs[v].num_parts(); ++p) {
      sc.seeds.push_back(tg.group_task_begin[v] + p);
      if (const int32_t gate = tg.gather_entry(v, p); gate >= 0) sc.seeds.push_back(gate);  // ZeRO-3 gathers
    }
  }
  const std::vector<int32_t>& pos = m.pos;
  slots_ = static_cast<int32_t>(m.slot_task.size());
  int32_t begin = slots_;
  for (int32_t t : sc.removed) {
    begin = std::min(begin, pos[t]);
    max_settled_ = std::max(max_settled_, pos[t]);
    m.state[t] = sim::kRemoved;
  }
  for (int32_t t : sc.seeds) {
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
  begin_ = begin;
}

}  // namespace devplace
