// Indexes over the delta simulator's current dequeue order: positions, resource links and snapshots, and the
// earliest and binding predecessor of each position, kept up to date after every change.
#include <algorithm>

#include "sim/delta_impl.h"

namespace devplace {

using sim::kClean;
using sim::kSnapshotEvery;
using sim::Time;

void DeltaSimulator::Impl::GrowScratch() {
  const size_t n = static_cast<size_t>(run.tg.num_tasks());
  state.resize(n, kClean);
  blocked.resize(n, 0);
  version.resize(n, 0);
  saved_ready.resize(n, 0);
  saved_start.resize(n, 0);
  saved_end.resize(n, 0);
  mark.resize(n, 0);
  pos.resize(n, -1);
  res_next.resize(n, -1);
}

Status DeltaSimulator::Impl::FullRebuild() {
  if (Status s = run.Run(builder, engine, strategy, {}); !s) return s;
  live_tasks = run.tg.num_tasks();
  for (auto* v : {&state, &mark}) v->clear();
  for (auto* v : {&blocked, &pos, &res_next}) v->clear();
  for (auto* v : {&saved_ready, &saved_start, &saved_end}) v->clear();
  version.clear();
  GrowScratch();
  res_first.assign(static_cast<size_t>(run.tg.num_resources), -1);
  Reindex(0);
  return Status::Ok();
}

// Recomputes positions, resource links and snapshots, resource predecessors and last ends from order position
// `from` on. When block_new >= 0, the order from block_new on is the previous order from block_old on, unchanged
// (a shifted rest): its resource links stay, and its predecessor entries move with it (tasks marked in `mark`,
// whose predecessors changed, are indexed afresh).
void DeltaSimulator::Impl::Reindex(int32_t from, int32_t block_new, int32_t block_old) {
  const sim::TaskGraph& tg = run.tg;
  const int32_t n = static_cast<int32_t>(run.timing.order.size());
  const int32_t r = tg.num_resources;
  const int32_t first_snap = from / kSnapshotEvery;
  const size_t snaps = static_cast<size_t>(n / kSnapshotEvery + 1);
  snap_free.resize(snaps * r);
  snap_last.resize(snaps * r);
  std::vector<Time> free(static_cast<size_t>(r), 0);
  std::vector<int32_t> last(static_cast<size_t>(r), -1);
  if (first_snap > 0) {
    std::copy_n(snap_free.begin() + static_cast<std::ptrdiff_t>(first_snap) * r, r, free.begin());
    std::copy_n(snap_last.begin() + static_cast<std::ptrdiff_t>(first_snap) * r, r, last.begin());
  }
  for (int32_t k = 0; k < r; ++k) {
    if (last[k] >= 0) res_next[last[k]] = -1;
    else res_first[k] = -1;
  }
  const int32_t shift = block_new - block_old;
  std::vector<int32_t> old_min, old_bind;  // the block's entries in the previous order
  if (block_new >= 0) {
    old_min.assign(min_pred_at.begin() + block_old, min_pred_at.begin() + block_old + (n - block_new));
    old_bind.assign(bind_at.begin() + block_old, bind_at.begin() + block_old + (n - block_new));
  }
  min_pred_at.resize(static_cast<size_t>(n));
  bind_at.resize(static_cast<size_t>(n));
  std::vector<uint8_t> linked(static_cast<size_t>(r), 0);  // the block's first task on the resource is linked
  // Earliest predecessor position and binding predecessor position of the task at position i.
  auto index_preds = [&](int32_t t, int32_t i) {
    int32_t earliest = tg.pred_cnt[t] == 0 ? -1 : i, bind = -1;
    Time best = -1;
    for (int32_t k = 0; k < tg.pred_cnt[t]; ++k) {
      const int32_t p = tg.pred_pool[tg.pred_off[t] + k];
      earliest = std::min(earliest, pos[p]);
      const Time arrival = run.timing.end[p] + tg.resource_delay[tg.resource[p]];
      if (arrival > best || (arrival == best && pos[p] > bind)) {
        best = arrival;
        bind = pos[p];
      }
    }
    min_pred_at[i] = earliest;
    bind_at[i] = bind;
  };
  const int32_t stop = block_new >= 0 ? block_new : n;
  for (int32_t i = first_snap * kSnapshotEvery; i < n; ++i) {
    if (i % kSnapshotEvery == 0) {
      std::copy(free.begin(), free.end(), snap_free.begin() + static_cast<std::ptrdiff_t>(i / kSnapshotEvery) * r);
      std::copy(last.begin(), last.end(), snap_last.begin() + static_cast<std::ptrdiff_t>(i / kSnapshotEvery) * r);
    }
    const int32_t t = run.timing.order[i];
    const int32_t res = tg.resource[t];
    pos[t] = i;
    if (i < stop) {
      index_preds(t, i);
      run.timing.res_prev[t] = last[res];
      if (last[res] >= 0) res_next[last[res]] = t;
      else res_first[res] = t;
      res_next[t] = -1;
    } else {
      if (!linked[res]) {
        linked[res] = 1;
        run.timing.res_prev[t] = last[res];
        if (last[res] >= 0) res_next[last[res]] = t;
        else res_first[res] = t;
      }
      // Predecessors in the block moved with it, those before `from` stayed; others: recompute below (-2).
      const int32_t v = old_min[i - block_new], b = old_bind[i - block_new];
      const bool recompute = mark[t] || (v >= from && v < block_old) || (b >= from && b < block_old);
      min_pred_at[i] = recompute ? -2 : v >= block_old ? v + shift : v;
      bind_at[i] = b >= block_old ? b + shift : b;
    }
    free[res] = run.timing.end[t];
    last[res] = t;
  }
  // Block entries whose earliest predecessor was in the re-simulated part: recompute (every position is known).
  for (int32_t i = stop; i < n; ++i)
    if (min_pred_at[i] == -2) index_preds(run.timing.order[i], i);
  if (n % kSnapshotEvery == 0) {
    std::copy(free.begin(), free.end(), snap_free.begin() + static_cast<std::ptrdiff_t>(n / kSnapshotEvery) * r);
    std::copy(last.begin(), last.end(), snap_last.begin() + static_cast<std::ptrdiff_t>(n / kSnapshotEvery) * r);
  }
  for (int32_t k = 0; k < r; ++k) run.last_end[k] = last[k] >= 0 ? free[k] : -1;
  run.last_task = last;
}

// Resource state (free time and last task) just before position `position` of `order`, from the snapshots.
void DeltaSimulator::Impl::LoadResourceState(const std::vector<int32_t>& order, int32_t position,
                                             std::vector<Time>* free, std::vector<int32_t>* last) const {
  const int32_t r = run.tg.num_resources;
  const int32_t s = position / kSnapshotEvery;
  free->assign(snap_free.begin() + static_cast<std::ptrdiff_t>(s) * r,
               snap_free.begin() + static_cast<std::ptrdiff_t>(s + 1) * r);
  last->assign(snap_last.begin() + static_cast<std::ptrdiff_t>(s) * r,
               snap_last.begin() + static_cast<std::ptrdiff_t>(s + 1) * r);
  for (int32_t i = s * kSnapshotEvery; i < position; ++i) {
    const int32_t t = order[i];
    (*free)[run.tg.resource[t]] = run.timing.end[t];
    (*last)[run.tg.resource[t]] = t;
  }
}

}  // namespace devplace
