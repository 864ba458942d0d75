// DeltaSimulator queries (StepTimeIf): a change is built and swept like one that is kept, then its step is read
// from the sweep and the task graph is put back as it was. The layout of the order (slots, indexes) is only
// written by Place, which a query skips, so undoing the task graph, the strategy and the totals is enough.
#include <algorithm>

#include "sim/delta_impl.h"

namespace devplace {

using sim::kClean;
using sim::kDirty;
using sim::Time;

Time DeltaSimulator::Impl::StepTicks() const {
  Time step = 0;
  for (int32_t r = 0; r < run.tg.num_resources; ++r) {
    const int32_t t = run.last_task[r];
    if (t >= 0) step = std::max(step, End(t) + run.tg.resource_delay[r]);
  }
  return step;
}

void DeltaSimulator::Impl::SaveGroups(const std::vector<int32_t>& rebuilt_groups) {
  const sim::TaskGraph& tg = run.tg;
  undo.tasks = tg.num_tasks();
  undo.deps = tg.dep_from.size();
  undo.outs = tg.out_tasks.size();
  undo.succ_pool = tg.succ_pool.size();
  undo.pred_pool = tg.pred_pool.size();
  undo.groups.clear();
  undo.out_begin.clear();
  for (int32_t g : rebuilt_groups) {
    undo.groups.push_back(
        {g, tg.group_task_begin[g], tg.group_task_count[g], tg.group_dep_begin[g], tg.group_dep_count[g]});
    if (g < graph.num_ops()) undo.out_begin.emplace_back(g, tg.out_begin[g]);
  }
  undo.lists.clear();
  undo.entries.clear();
}

void DeltaSimulator::Impl::SaveList(int32_t t, uint8_t pred) {
  const sim::TaskGraph& tg = run.tg;
  const std::vector<int32_t>& pool = pred ? tg.pred_pool : tg.succ_pool;
  const int32_t off = pred ? tg.pred_off[t] : tg.succ_off[t];
  const int32_t cnt = pred ? tg.pred_cnt[t] : tg.succ_cnt[t];
  const int32_t room = pred ? pred_room[t] : succ_room[t];
  undo.lists.push_back({t, pred, off, cnt, room, static_cast<int32_t>(undo.entries.size())});
  undo.entries.insert(undo.entries.end(), pool.begin() + off, pool.begin() + off + cnt);
}

void DeltaSimulator::Impl::Rollback(std::span<const std::pair<OpId, OpConfig>> old_configs) {
  sim::TaskGraph& tg = run.tg;
  const sim::ApplyScratch& sc = scratch;
  // Adjacency: the patched lists get their entries back where they were (a list that moved left its old place
  // untouched but for the entries it dropped there), and what the change appended to the pools goes.
  for (const sim::QueryUndo::List& l : undo.lists) {
    std::vector<int32_t>& pool = l.pred ? tg.pred_pool : tg.succ_pool;
    std::copy_n(undo.entries.begin() + l.saved, l.cnt, pool.begin() + l.off);
    (l.pred ? tg.pred_off : tg.succ_off)[l.task] = l.off;
    (l.pred ? tg.pred_cnt : tg.succ_cnt)[l.task] = l.cnt;
    (l.pred ? pred_room : succ_room)[l.task] = l.room;
  }
  tg.succ_pool.resize(undo.succ_pool);
  tg.pred_pool.resize(undo.pred_pool);
  // Groups, dependencies and output entries as they were; the change's tasks go, the removed ones come back.
  for (const sim::QueryUndo::Group& g : undo.groups) {
    tg.group_task_begin[g.group] = g.task_begin;
    tg.group_task_count[g.group] = g.task_count;
    tg.group_dep_begin[g.group] = g.dep_begin;
    tg.group_dep_count[g.group] = g.dep_count;
  }
  for (const auto& [op, begin] : undo.out_begin) tg.out_begin[op] = begin;
  tg.dep_from.resize(undo.deps);
  tg.dep_to.resize(undo.deps);
  tg.out_tasks.resize(undo.outs);
  live_tasks -= tg.num_tasks() - undo.tasks;
  tg.TruncateTasks(undo.tasks);
  run.timing.res_prev.resize(static_cast<size_t>(undo.tasks));
  for (int32_t t : sc.removed) tg.alive[t] = 1;
  live_tasks += static_cast<int32_t>(sc.removed.size());
  run.totals = undo.totals;
  for (int32_t d = 0; d < tg.num_devices; ++d) run.static_bytes[d] -= sc.new_static[d] - sc.old_static[d];
  for (const auto& [op, config] : old_configs) strategy.configs[op] = config;
}

Time DeltaSimulator::Impl::QueryStep(const std::vector<Time>& free, bool stopped, int32_t cut, Time shift) const {
  // A resource's last task ends at `free` (every task lasts at least a tick, so 0 means it runs none), unless
  // the sweep stopped early and the resource still has unsettled tasks: those come after its settled ones, in
  // their previous order and shifted, so its previous last task is one of them and ends `shift` later.
  const sim::TaskGraph& tg = run.tg;
  Time step = 0;
  for (int32_t r = 0; r < tg.num_resources; ++r) {
    Time end = free[r];
    if (stopped) {
      const int32_t t = run.last_task[r];
      if (t >= 0 && (pos[t] >= cut ? state[t] == kClean || state[t] == kDirty : state[t] == kDirty))
        end = End(t) + shift;
    }
    if (end > 0) step = std::max(step, end + tg.resource_delay[r]);
  }
  return step;
}

}  // namespace devplace
