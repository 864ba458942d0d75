// DeltaSimulator: rebuilds the task groups a config change touches and re-times only what the change reaches.
//
// The full simulation dequeues tasks in increasing (ready, key) order (every task lasts at least one tick, so a
// successor is always ready later than its predecessor). The delta run produces the same order by merging two
// streams: A, the previous run's order from the first slot a change can affect, whose tasks keep their times
// as long as nothing they depend on changed; and B, a heap of "dirty" tasks (new, or with a changed predecessor
// or resource) keyed by their new (ready, key). A dirty task blocks its successors until it has been re-timed; a
// clean task at A's head passes unchanged (and keeps its slot) when its resource is free at the same moment as
// before. The re-timed tasks then take slots next to where they now run in the order (Place, delta_index.cc).
// Long stretches of A that can only pass unchanged are jumped over (jump_target).
//
// The run stops early at a point where the rest of the schedule is provably the previous one shifted by a
// constant delta (0: unchanged): no new task is left, nothing settled lies ahead in the previous order, every
// resource's next task sees its resource free at the old moment + delta (or earlier than it is ready, in both
// runs), and every unsettled task's ready time is its old one + delta. Times are integers, so the shifted times
// are exactly those a full run computes; the shift is applied per chunk of slots. Memory peaks are computed when a
// result is asked for.
#include <algorithm>

#include "sim/delta_impl.h"

namespace devplace {
namespace {
using sim::Time;
using sim::kClean;
using sim::kDirty;
using sim::kDone;
using sim::DeltaItem;

template <class T>
void SortUnique(std::vector<T>* v) {
  std::sort(v->begin(), v->end());
  v->erase(std::unique(v->begin(), v->end()), v->end());
}

}  // namespace

Status DeltaSimulator::Impl::Apply(const std::vector<std::pair<OpId, OpConfig>>& changes, Time* query_step) {
  sim::TaskGraph& tg = run.tg;
  sim::Timing& tm = run.timing;
  const int32_t num_ops = graph.num_ops();
  retimed = 0;

  // 1. The ops whose config changes, and the static memory they hold.
  sim::ApplyScratch& sc = scratch;
  std::vector<OpId>& ops = sc.ops;
  std::vector<int64_t>& old_static = sc.old_static;
  std::vector<int64_t>& new_static = sc.new_static;
  for (auto* v : {&ops, &sc.edges, &sc.consumers, &sc.removed, &sc.patched, &sc.reindex, &sc.seeds, &sc.dirty_list,
                  &sc.processed_ahead, &sc.pending, &sc.used_res})
    v->clear();
  sc.heap.clear();
  old_static.assign(static_cast<size_t>(tg.num_devices), 0);
  new_static.assign(static_cast<size_t>(tg.num_devices), 0);
  for (const auto& [op, config] : changes)
    if (!(strategy.configs[op] == config)) ops.push_back(op);
  SortUnique(&ops);
  // A change just asked about (and nothing made since) needs no sweep: the query's outcome is placed.
  const bool replay = !query_step && memo.valid && memo.changes == changes;
  memo.valid = false;
  if (ops.empty()) {
    if (query_step) *query_step = StepTicks();
    return Status::Ok();
  }
  if (query_step) undo.totals = run.totals;
  for (OpId op : ops) builder.AddStaticMemory(op, strategy.configs[op], &old_static);
  std::vector<std::pair<OpId, OpConfig>> old_configs;
  for (OpId op : ops) old_configs.emplace_back(op, strategy.configs[op]);
  for (const auto& [op, config] : changes) strategy.configs[op] = config;
  for (OpId op : ops) builder.AddStaticMemory(op, strategy.configs[op], &new_static);
  for (int32_t d = 0; d < tg.num_devices; ++d) run.static_bytes[d] += new_static[d] - old_static[d];

  // 2. Groups to rebuild (the ops and their edges) and the consumers of the ops' outputs.
  std::vector<int32_t>& edges = sc.edges;
  std::vector<int32_t>& consumers = sc.consumers;
  for (OpId op : ops) {
    for (int32_t e : graph.in_edges(op)) edges.push_back(e);
    for (int32_t e : graph.out_edges(op)) {
      edges.push_back(e);
      consumers.push_back(graph.edge(e).dst);
    }
  }
  SortUnique(&edges);
  SortUnique(&consumers);
  std::vector<int32_t>& rebuilt_groups = sc.rebuilt_groups;
  rebuilt_groups.assign(ops.begin(), ops.end());
  for (int32_t e : edges) rebuilt_groups.push_back(num_ops + e);

  // 3. Remove the old tasks of the rebuilt groups.
  std::vector<int32_t>& removed = sc.removed;
  auto remove_group = [&](int32_t g) {
    for (int32_t t = tg.group_task_begin[g]; t < tg.group_task_begin[g] + tg.group_task_count[g]; ++t) {
      tg.alive[t] = 0;
      removed.push_back(t);
      run.totals.Add(tg, t, -1);
    }
  };
  for (OpId op : ops) remove_group(op);
  for (int32_t e : edges) remove_group(num_ops + e);
  live_tasks -= static_cast<int32_t>(removed.size());

  // 4. Build the new groups.
  const int32_t first_new = tg.num_tasks();
  if (query_step) SaveGroups(rebuilt_groups);
  for (OpId op : ops) builder.AppendOpGroup(op, strategy.configs[op], &tg);
  for (int32_t e : edges) builder.AppendEdgeGroup(e, strategy, &tg);
  const int32_t n = tg.num_tasks();
  for (int32_t t = first_new; t < n; ++t) run.totals.Add(tg, t, +1);
  live_tasks += n - first_new;
  if (Status s = sim::CheckHorizon(run.totals); !s) {
    if (query_step) {
      Rollback(old_configs);
      return s;
    }
    // Too long to simulate: go back to the previous strategy (a full rebuild) and report.
    for (const auto& [op, config] : old_configs) strategy.configs[op] = config;
    if (Status rebuilt = FullRebuild(); !rebuilt) return rebuilt;
    return s;
  }
  tm.res_prev.resize(static_cast<size_t>(n), -1);
  GrowScratch();
  for (int32_t t = first_new; t < n; ++t) pos[t] = -1;

  // 5. Adjacency. Every dependency that names a new task comes from a rebuilt group, and every one that named a
  // removed task went with it, so the lists of new tasks are built from the rebuilt groups' dependencies, and the
  // lists of surviving tasks that named a removed task or gain a dependency are patched: removed entries dropped,
  // new ones appended in place while there is room (a list that outgrows its room moves to the end of the pool
  // with room to spare). High-degree neighbours thus cost a pass over their own list, not over all their edges.
  // Surviving tasks whose successor (mark bit 1) or predecessor (bit 2) list changes; tasks whose predecessor
  // lists changed (new ones included), indexed afresh.
  std::vector<int32_t>& patched = sc.patched;
  std::vector<int32_t>& reindex = sc.reindex;
  auto note = [&](int32_t t, uint8_t bit) {
    if (mark[t] == 0) patched.push_back(t);
    mark[t] |= bit;
  };
  for (int32_t x : removed) {
    for (int32_t k = 0; k < tg.pred_cnt[x]; ++k)
      if (const int32_t p = tg.pred_pool[tg.pred_off[x] + k]; tg.alive[p]) note(p, 1);
    for (int32_t k = 0; k < tg.succ_cnt[x]; ++k)
      if (const int32_t q = tg.succ_pool[tg.succ_off[x] + k]; tg.alive[q]) note(q, 2);
  }
  auto for_each_new_dep = [&](auto&& f) {
    for (int32_t g : rebuilt_groups)
      for (int32_t k = tg.group_dep_begin[g]; k < tg.group_dep_begin[g] + tg.group_dep_count[g]; ++k)
        f(tg.dep_from[k], tg.dep_to[k]);
  };
  for (int32_t t = first_new; t < n; ++t) tg.succ_cnt[t] = tg.pred_cnt[t] = 0;
  for_each_new_dep([&](int32_t a, int32_t b) {
    if (a >= first_new) ++tg.succ_cnt[a];
    else note(a, 1);
    if (b >= first_new) ++tg.pred_cnt[b];
    else note(b, 2);
  });
  auto drop_removed = [&](std::vector<int32_t>& pool, int32_t off, int32_t& cnt) {
    int32_t kept = 0;
    for (int32_t k = 0; k < cnt; ++k)
      if (tg.alive[pool[off + k]]) pool[off + kept++] = pool[off + k];
    cnt = kept;
  };
  for (int32_t t : patched) {
    if (query_step && (mark[t] & 1)) SaveList(t, 0);
    if (query_step && (mark[t] & 2)) SaveList(t, 1);
    if (mark[t] & 1) drop_removed(tg.succ_pool, tg.succ_off[t], tg.succ_cnt[t]);
    if (mark[t] & 2) {
      drop_removed(tg.pred_pool, tg.pred_off[t], tg.pred_cnt[t]);
      reindex.push_back(t);
    }
    mark[t] = 0;
  }
  for (int32_t t = first_new; t < n; ++t) {
    reindex.push_back(t);
    tg.succ_off[t] = static_cast<int32_t>(tg.succ_pool.size());
    tg.pred_off[t] = static_cast<int32_t>(tg.pred_pool.size());
    tg.succ_pool.resize(tg.succ_pool.size() + static_cast<size_t>(tg.succ_cnt[t]));
    tg.pred_pool.resize(tg.pred_pool.size() + static_cast<size_t>(tg.pred_cnt[t]));
    succ_room[t] = tg.succ_cnt[t];
    pred_room[t] = tg.pred_cnt[t];
    tg.succ_cnt[t] = tg.pred_cnt[t] = 0;
  }
  auto append_entry = [](std::vector<int32_t>& pool, int32_t& off, int32_t& cnt, int32_t& room, int32_t v) {
    if (cnt == room) {
      const int32_t moved_to = static_cast<int32_t>(pool.size());
      room = 2 * cnt + 4;
      pool.resize(pool.size() + static_cast<size_t>(room));
      std::copy_n(pool.begin() + off, cnt, pool.begin() + moved_to);
      off = moved_to;
    }
    pool[off + cnt++] = v;
  };
  for_each_new_dep([&](int32_t a, int32_t b) {
    append_entry(tg.succ_pool, tg.succ_off[a], tg.succ_cnt[a], succ_room[a], b);
    append_entry(tg.pred_pool, tg.pred_off[b], tg.pred_cnt[b], pred_room[b], a);
  });

  if (replay) {
    window.swap(memo.window);
    reindex.swap(memo.reindex);
    retimed = memo.retimed;
    return Finish(memo.begin, memo.cut, memo.shift);
  }

  // 6. Seeds: new tasks and the consumers' compute tasks (their predecessors changed). The sweep starts at the
  // first slot of the order that a removed task, a seed or a new task's predecessor reaches.
  std::vector<int32_t>& seeds = sc.seeds;
  for (int32_t t = first_new; t < n; ++t) seeds.push_back(t);
  for (OpId v : consumers) {
    if (std::binary_search(ops.begin(), ops.end(), v)) continue;
    for (int32_t p = 0; p < strategy.configs[v].num_parts(); ++p) seeds.push_back(tg.group_task_begin[v] + p);
  }
  const int32_t slots = static_cast<int32_t>(slot_task.size());
  int32_t begin = slots;
  int32_t max_settled = -1;  // largest slot of a removed or re-timed task
  for (int32_t t : removed) {
    begin = std::min(begin, pos[t]);
    max_settled = std::max(max_settled, pos[t]);
    state[t] = sim::kRemoved;
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

  // 7. The merged sweep. Stream A is the order from `begin` on (slots, skipping holes); times of tasks not yet
  // re-timed are their previous ones (Ready/Start/End), of re-timed ones (state kDone) in cur_*.
  // The resources that run tasks (the others need no checks), and the cursor.
  std::vector<int32_t>& used_res = sc.used_res;
  {
    std::vector<uint8_t>& used = sc.used;
    used.resize(static_cast<size_t>(tg.num_resources));
    for (int32_t r = 0; r < tg.num_resources; ++r) used[r] = res_first[r] >= 0;
    for (int32_t t = first_new; t < n; ++t) used[tg.resource[t]] = 1;
    for (int32_t r = 0; r < tg.num_resources; ++r)
      if (used[r]) used_res.push_back(r);
  }
  int32_t i = begin;
  std::vector<Time>& free = sc.free;
  std::vector<int32_t>& last = sc.last;
  // free: when each resource is free, as the sweep goes; last: per resource, the last task of the previous order
  // before the cursor (so that the next one, res_next, is the first the sweep has not reached).
  LoadResourceState(begin, used_res, &free, &last);
  window.clear();
  int32_t after = begin;  // 1 + the slot of the last task passed unchanged (a task re-timed now comes after it)
  sim::QuadHeap<DeltaItem>& heap = sc.heap;
  std::vector<int32_t>& dirty_list = sc.dirty_list;        // every task marked dirty
  // Old tasks re-timed while still ahead of the cursor (jump_target drops those the cursor has passed).
  std::vector<int32_t>& processed_ahead = sc.processed_ahead;
  std::vector<int32_t>& pending = sc.pending;  // dirty tasks, some since re-timed (shifted_rest drops those)
  // Per resource: the latest previous slot of a task re-timed so far (-1: none).
  std::vector<int32_t>& processed_last = sc.processed_last;
  processed_last.assign(static_cast<size_t>(tg.num_resources), -1);
  int32_t new_pending = n - first_new;
  Time shift = 0;  // end shift of the last re-timed old task whose end moved
  const int32_t* succ = tg.succ_pool.data();
  const int32_t* pred = tg.pred_pool.data();
  auto end_now = [&](int32_t x) { return state[x] == kDone ? cur_end[x] : End(x); };
  auto append = [&](int32_t x, Time ready, Time start, Time end) {
    cur_end[x] = end;
    window.push_back({x, after, ready, start, end});
  };

  bool heap_changed = true;  // whether the heap's top may have become stale since it was last checked
  auto mark_dirty = [&](int32_t x) {
    heap_changed = true;
    state[x] = kDirty;
    dirty_list.push_back(x);
    pending.push_back(x);
    for (int32_t k = 0; k < tg.succ_cnt[x]; ++k) ++blocked[succ[tg.succ_off[x] + k]];
  };
  auto push = [&](int32_t x) {
    Time ready = 0;
    for (int32_t k = 0; k < tg.pred_cnt[x]; ++k) {
      const int32_t p = pred[tg.pred_off[x] + k];
      ready = std::max(ready, end_now(p) + tg.resource_delay[tg.resource[p]]);
    }
    version[x] = next_version++;
    heap.push({ready, tg.key[x], x, version[x]});
    heap_changed = true;
  };
  auto process = [&](int32_t x, Time ready) {
    heap_changed = true;
    const int32_t r = tg.resource[x];
    const Time start = std::max(ready, free[r]);
    const Time end = start + tg.duration[x];
    const bool is_new = x >= first_new;
    const Time old_end = is_new ? 0 : End(x);
    const bool end_changed = is_new || end != old_end;
    append(x, ready, start, end);
    free[r] = end;
    state[x] = kDone;
    ++retimed;
    if (is_new) {
      --new_pending;
    } else {
      max_settled = std::max(max_settled, pos[x]);
      if (pos[x] >= i) processed_ahead.push_back(x);
      processed_last[r] = std::max(processed_last[r], pos[x]);
      if (end_changed) shift = end - old_end;
    }
    // A clean successor keeps its ready time, and stays clean, when x did not bind it and now arrives no later.
    const Time arrival = end + tg.resource_delay[r];
    for (int32_t k = 0; k < tg.succ_cnt[x]; ++k) {
      const int32_t s = succ[tg.succ_off[x] + k];
      if (end_changed && state[s] == kClean && (is_new || bind_pred[s] == x || arrival > Ready(s))) mark_dirty(s);
      if (--blocked[s] == 0 && state[s] == kDirty) push(s);
    }
  };

  // Whether every unsettled task (dirty, or clean at slot >= i) will run exactly `delta` later than in the
  // previous run (see the comment at the top of the file).
  auto settled = [&](int32_t x, int32_t i) {
    return state[x] == kDone || (state[x] == kClean && pos[x] < i);
  };
  auto ready_matches = [&](int32_t u, int32_t i, Time delta) {
    Time ready = 0;
    for (int32_t k = 0; k < tg.pred_cnt[u]; ++k) {
      const int32_t p = pred[tg.pred_off[u] + k];
      const Time arrival = end_now(p) + tg.resource_delay[tg.resource[p]];
      ready = std::max(ready, settled(p, i) ? arrival : arrival + delta);
    }
    return ready == Ready(u) + delta;
  };
  // Per resource: its earliest pending task in the current check (valid where pending_stamp is the check's).
  std::vector<int32_t>& pending_first = sc.pending_first;
  std::vector<uint32_t>& pending_stamp = sc.pending_stamp;
  pending_first.assign(static_cast<size_t>(tg.num_resources), -1);
  pending_stamp.assign(static_cast<size_t>(tg.num_resources), 0);
  uint32_t stamp = 0;
  int32_t failed_res = used_res.empty() ? -1 : used_res[0];  // the resource that failed the last check
  int32_t failed_task = -1;  // the task that failed the last scan of the clean tasks ahead
  auto shifted_rest = [&](int32_t i, Time delta) {
    if (new_pending > 0 || max_settled >= i) return false;
    ++stamp;
    size_t kept = 0;
    for (int32_t x : pending) {
      if (state[x] != kDirty) continue;
      pending[kept++] = x;
      const int32_t r = tg.resource[x];
      if (pending_stamp[r] != stamp || pos[x] < pos[pending_first[r]]) {
        pending_stamp[r] = stamp;
        pending_first[r] = x;
      }
    }
    pending.resize(kept);
    // Whether r's first unsettled task (its earliest dirty one, or its first at slot >= i) finds r as before.
    auto resource_shifted = [&](int32_t r) {
      int32_t u = last[r] >= 0 ? res_next[last[r]] : res_first[r];
      if (pending_stamp[r] == stamp && (u < 0 || pos[pending_first[r]] < pos[u])) u = pending_first[r];
      if (u < 0) return true;
      // Nothing on r re-timed from u's previous slot on, and everything after u on r before slot i unsettled.
      if (processed_last[r] > pos[u]) return false;
      for (int32_t x = u; x >= 0 && pos[x] < i; x = res_next[x])
        if (state[x] != kDirty) return false;
      const int32_t p = tm.res_prev[u];
      const Time prev_end = p >= 0 ? End(p) : 0;
      const bool same = free[r] == prev_end + delta;
      const bool idle = prev_end <= Ready(u) && free[r] <= Ready(u) + delta;
      return same || idle;
    };
    // A resource that failed the last check usually fails this one too: try it first.
    if (failed_res >= 0 && !resource_shifted(failed_res)) return false;
    for (int32_t r : used_res) {
      if (r != failed_res && !resource_shifted(r)) {
        failed_res = r;
        return false;
      }
    }
    for (int32_t x : pending)
      if (!ready_matches(x, i, delta)) return false;
    if (delta == 0) return true;  // clean tasks' ready times are unchanged (see process)
    // Clean tasks from i on with a predecessor before i (or none): their ready time must move by delta too.
    // Their binding predecessor (ties bind to the later slot) decides most cases without looking further: a
    // settled one before i that was not re-timed keeps its arrival, which was the old ready time, so the task
    // cannot move by delta; one from i on moves by delta, which is enough when delta > 0, and when delta < 0 if nothing
    // settled arrives later than the old ready time + delta (bounded by `latest`, the latest settled arrival).
    // Otherwise check exactly. Chunks whose tasks all pass are skipped.
    Time latest = 0;
    if (delta < 0)
      for (int32_t r : used_res) latest = std::max(latest, free[r] + tg.resource_delay[r]);
    // Whether clean task t (at a slot from i on) keeps the rest from being shifted.
    auto task_fails = [&](int32_t t) {
      if (SlotOf(min_pred[t]) >= i || state[t] != kClean) return false;
      const int32_t b = bind_pred[t];
      if (SlotOf(b) < i) return b < 0 || state[b] == kClean || !ready_matches(t, i, delta);
      return delta < 0 && Ready(t) + delta < latest && !ready_matches(t, i, delta);
    };
    // The task that failed the last scan usually fails this one too (the scan would stop there or earlier).
    if (failed_task >= 0 && pos[failed_task] >= i && task_fails(failed_task)) return false;
    for (int32_t k = i; k < slots;) {
      if ((k & ((1 << sim::kChunkBits) - 1)) == 0) {
        const int32_t c = k >> sim::kChunkBits;
        if (chunk_stale[c]) RefreshChunk(c);
        if (chunk_min_pred[c] >= i ||
            (chunk_min_bind[c] >= i && (delta > 0 || chunk_min_ready[c] + chunk_shift[c] + delta >= latest))) {
          k += 1 << sim::kChunkBits;
          continue;
        }
      }
      const int32_t t = slot_task[k++];
      if (t >= 0 && task_fails(t)) {
        failed_task = t;
        return false;
      }
    }
    return true;
  };

  // The first slot from i on at which the sweep could do anything but pass clean tasks unchanged: the first
  // task that is not clean (dirty, re-timed from a later slot, or removed) or that a dirty task blocks, the first
  // task the heap's top comes before (every task still to be timed comes after it: each is in the heap or waits
  // for one that is), and on each resource the first task at or after i unless it finds its resource free as
  // before. Every clean task before that point passes unchanged (its inputs and, from the first task on each
  // resource on, its resource are as before), so the sweep can jump there.
  auto jump_target = [&](int32_t i) {
    int32_t j = slots;
    size_t kept = 0;
    for (int32_t x : pending) {
      if (state[x] != kDirty) continue;
      pending[kept++] = x;
      if (pos[x] >= i) j = std::min(j, pos[x]);
      for (int32_t k = 0; k < tg.succ_cnt[x]; ++k) {
        const int32_t y = succ[tg.succ_off[x] + k];
        if (state[y] == kClean && pos[y] >= i) j = std::min(j, pos[y]);
      }
    }
    pending.resize(kept);
    for (int32_t x : removed)
      if (pos[x] >= i) j = std::min(j, pos[x]);
    kept = 0;
    for (int32_t x : processed_ahead) {
      if (pos[x] < i) continue;
      processed_ahead[kept++] = x;
      j = std::min(j, pos[x]);
    }
    processed_ahead.resize(kept);
    if (!heap.empty()) {  // the first slot whose task comes after the heap's top, by binary search
      const DeltaItem& top = heap.top();
      int32_t lo = i, hi = j;
      while (lo < hi) {
        int32_t m = lo + (hi - lo) / 2;
        while (m < hi && slot_task[m] < 0) ++m;
        if (m == hi) {
          hi = lo + (hi - lo) / 2;
          continue;
        }
        const int32_t c = slot_task[m];
        const Time ready_c = slot_ready[m] + Shift(m);
        if (top.ready < ready_c || (top.ready == ready_c && top.key < tg.key[c])) hi = m;
        else lo = m + 1;
      }
      j = lo;
    }
    if (j - i < 2 * (1 << sim::kChunkBits)) return -1;  // not worth it
    for (int32_t r : used_res) {
      const int32_t u = last[r] >= 0 ? res_next[last[r]] : res_first[r];
      if (u >= 0 && pos[u] < j && std::max(Ready(u), free[r]) != Start(u)) j = pos[u];
    }
    return j;
  };
  // Moves the sweep from i to j (jump_target): the resources take the state the passed tasks leave.
  // Only resources with a task in [i, j) change; their last task before j is found in their slot lists.
  auto jump = [&](int32_t j) {
    for (int32_t r : used_res) {
      const int32_t x = last[r] >= 0 ? res_next[last[r]] : res_first[r];  // r's first task from the cursor on
      if (x < 0 || pos[x] >= j) continue;
      const std::vector<int32_t>& v = res_slots[r];
      const int32_t y = slot_task[*(std::lower_bound(v.begin(), v.end(), j) - 1)];
      last[r] = y;
      free[r] = End(y);
      after = std::max(after, pos[y] + 1);
    }
  };

  for (int32_t t : seeds)
    if (state[t] == kClean) mark_dirty(t);
  for (int32_t t : seeds)
    if (blocked[t] == 0) push(t);

  int32_t since_check = 0, check_every = 16;
  // Whether to check for a shifted rest at the next step. Besides the periodic checks (with the jumps), a change
  // often becomes a shift of the rest right at the start, after a jump, after the cursor passes tasks that are not
  // clean, or after a task is re-timed for a resource conflict, and may stop being one a few steps later.
  bool check_now = true;
  bool shifted = false;
  while (true) {
    while (i < slots && (slot_task[i] < 0 || state[slot_task[i]] != kClean)) {
      if (slot_task[i] >= 0) {
        last[slot_res[i]] = slot_task[i];
        check_now = true;
      }
      ++i;
    }
    while (heap_changed && !heap.empty()) {
      const DeltaItem& top = heap.top();
      if (top.version == version[top.task] && state[top.task] == kDirty && blocked[top.task] == 0) break;
      heap.pop();
    }
    heap_changed = false;
    const bool has_a = i < slots;
    if (!has_a && heap.empty()) break;
    const bool periodic = ++since_check >= check_every;
    if ((check_now || periodic) && new_pending == 0 && max_settled < i) {
      check_now = false;
      if (shifted_rest(i, shift)) {
        shifted = true;
        break;
      }
    }
    if (periodic) {
      since_check = 0;
      check_every = std::min(2 * check_every, 1 << 20);
      if (const int32_t j = jump_target(i); j > i) {
        jump(j);
        i = j;
        check_every = 16;
        check_now = true;
        continue;
      }
    }
    const int32_t c = has_a ? slot_task[i] : -1;
    const Time shift_c = has_a ? Shift(i) : 0;  // c's times: stored + the shift of its slot's chunk
    const Time ready = has_a ? slot_ready[i] + shift_c : 0;
    if (!heap.empty()) {
      const DeltaItem& top = heap.top();
      if (!has_a || top.ready < ready || (top.ready == ready && top.key < tg.key[c])) {
        const DeltaItem item = top;
        heap.pop();
        heap_changed = true;
        process(item.task, item.ready);
        continue;
      }
    }
    const int32_t r = slot_res[i];
    last[r] = c;
    if (blocked[c] > 0) {
      ++i;
      mark_dirty(c);  // a predecessor is re-timed after c's old ready time, so c moves later
      continue;
    }
    if (std::max(ready, free[r]) != slot_start[i] + shift_c) {
      ++i;
      mark_dirty(c);
      process(c, ready);
      check_now = true;
      continue;
    }
    free[r] = slot_end[i] + shift_c;
    ++i;
    after = i;  // c passes unchanged and keeps its slot
  }
  if (shifted) {
    // The unsettled tasks keep their previous order and times + shift: the dirty ones behind the cursor first
    // (by previous slot), then the order from the cursor on (nothing there is settled), which stays in place.
    std::vector<int32_t>& behind = sc.behind;
    behind.clear();
    for (int32_t x : dirty_list)
      if (state[x] == kDirty && pos[x] < i) behind.push_back(x);
    std::sort(behind.begin(), behind.end(), [&](int32_t a, int32_t b) { return pos[a] < pos[b]; });
    for (int32_t x : behind) append(x, Ready(x) + shift, Start(x) + shift, End(x) + shift);
    for (int32_t x : dirty_list)
      if (state[x] == kDirty && pos[x] >= i) reindex.push_back(x);  // their predecessors moved
  }
  const int32_t cut = shifted ? i : slots;  // the rest of the order, from here on, moves by rest_shift
  const Time rest_shift = shifted ? shift : 0;
  if (query_step) {  // a query ends here: read the step, remember the outcome, then put everything back
    *query_step = QueryStep(free, shifted, i, shift);
    memo.valid = true;  // the lists are swapped in and assigned, so that both sides keep their capacity
    memo.changes = changes;
    memo.window.swap(window);
    memo.reindex.swap(reindex);
    memo.begin = begin;
    memo.cut = cut;
    memo.shift = rest_shift;
    memo.retimed = retimed;
    ResetStates();
    for (int32_t t : removed) state[t] = kClean;
    Rollback(old_configs);
    return Status::Ok();
  }
  return Finish(begin, cut, rest_shift);
}

}  // namespace devplace
