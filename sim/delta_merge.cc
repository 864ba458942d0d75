// Laying a large change out (internal to sim/): the merged new order written from the change's first chunk up to
// where the rest of the schedule can keep its slots (DeltaSimulator::Impl::LayoutMerged, LayoutBetween).
#include <algorithm>

#include "sim/delta_impl.h"

namespace devplace {

using sim::kChunkBits;
using sim::Time;

void DeltaSimulator::Impl::LayoutMerged(int32_t begin, int32_t cut, Time shift, int32_t removed_last) {
  // A window task follows every task that kept its slot before its `after` (PlaceWindow's merge); the window's
  // tasks are in their new order and their `after` never decreases. Nothing before `begin` changed (every window
  // task comes after it and had its previous slot, if any, from it on; so did the removed tasks): the layout is
  // rewritten from the chunk that holds `begin` up to a chunk boundary `to` after which every task keeps its slot
  // and moves by `shift` (its chunks' shift grows by it): `to` lies past the cut, past every window task's merge
  // position and previous slot and every removed task's slot, and far enough that a ninth of the rewritten slots
  // stay holes; when no such boundary exists, the rest of the layout is laid out afresh.
  const int32_t from = (begin >> kChunkBits) << kChunkBits;
  const int32_t slots = static_cast<int32_t>(slot_task.size());
  laid.clear();
  int32_t need = std::max(std::min(cut, slots), removed_last + 1);
  int32_t added = 0;  // new tasks: in the window, never placed
  // A window task's previous slot is emptied (it lies in the stretch rewritten below, which every window task's
  // does), so that the merge passes over it and a task it feeds sees that it moved.
  for (const Placement& q : window) {
    state[q.task] = sim::kClean;  // (Finish left the window's states to this pass)
    const int32_t previous = pos[q.task];
    if (previous >= 0) slot_task[previous] = -1;
    need = std::max(need, std::max(q.after, previous) + 1);
    added += previous < 0;
  }
  for (int32_t t : scratch.reindex) mark[t] = 1;
  // The tasks whose predecessor entries are indexed afresh below: every window task, and (listed in to_index) a
  // kept task whose predecessor list changed (`reindex`) or that a window task feeds. Any other kept task's
  // predecessors are kept tasks, which keep their order, so its earliest one stands; so does its binding one: a
  // kept task before the cut and its predecessors kept their times, and one from the cut on runs `shift` later,
  // which the shift check proved (a binding predecessor before the cut that was not re-timed fails it, and for
  // shift < 0 nothing before the cut arrives later than the task's new ready time), so its binding predecessor
  // lies from the cut on and moved by `shift` too, and any other arriving as late comes before it.
  to_index.clear();
  const sim::TaskGraph& tg = run.tg;
  auto entries_stand = [&](int32_t t) {
    if (mark[t]) return false;
    const int32_t* p = tg.pred_pool.data() + tg.pred_off[t];
    for (int32_t k = 0; k < tg.pred_cnt[t]; ++k)
      if (pos[p[k]] < 0 || slot_task[pos[p[k]]] != p[k]) return false;  // a window task (new, or its slot emptied)
    return true;
  };
  constexpr int32_t kChunk = int32_t{1} << kChunkBits;
  int32_t to = std::min(slots, (need + kChunk - 1) / kChunk * kChunk);
  // The window read through locals (`laid` grows, which the compiler cannot tell apart from `window`). The layout
  // merges it with the kept tasks collected here, each with the number of window tasks before it (j: those whose
  // `after` lies at or before its slot).
  const Placement* const w = window.data();
  const size_t w_size = window.size();
  size_t j = 0;
  for (int32_t s = from;;) {
    for (; s < to; ++s) {
      const int32_t t = slot_task[s];
      if (t < 0) continue;
      while (j < w_size && w[j].after <= s) ++j;
      const Time o = Shift(s) + (s >= cut ? shift : 0);
      laid.push_back({t, static_cast<int32_t>(j), slot_ready[s] + o, slot_start[s] + o, slot_end[s] + o});
      if (!entries_stand(t)) to_index.push_back(t);
    }
    while (j < w_size && w[j].after < to) ++j;
    const int32_t count = static_cast<int32_t>(laid.size() + j);
    if (to == slots || count + count / 8 <= to - from) break;
    to = std::min(slots, to + kChunk);
  }
  for (int32_t t : scratch.reindex) mark[t] = 0;
  if (to == slots) {
    LayoutFrom(from, window);
  } else {
    LayoutBetween(from, to, shift, window);
    StaleChunksBetween(from, to);
  }
  placed += added;
  // Every slot's times are final now (the rewritten chunks' shift is 0).
  auto end_of = [this](int32_t, int32_t slot) { return slot_end[slot] + Shift(slot); };
  // The tasks before `from` have their predecessors before it too: their entries stand.
  for (const Placement& q : window) IndexPredsBy(q.task, end_of);
  for (int32_t t : to_index) IndexPredsBy(t, end_of);
  if (to == slots) return;
  // The tasks after `to` moved by `shift` with their slots kept; as in the rewritten stretch, their entries stand
  // unless a window task feeds them or their predecessor lists changed (`reindex`). Those are indexed afresh (once
  // each) and lower their chunks' bounds to the new entries. They are found from the window's successors, or, when
  // the rest is shorter than the window, by a pass over the rest for the tasks with a predecessor before `to`
  // (their earliest one tells).
  auto reindex = [&](int32_t t) {
    if (pos[t] < to || mark[t]) return;
    mark[t] = 1;
    reindexed.push_back(t);
    IndexPredsBy(t, end_of);
    const int32_t c = pos[t] >> kChunkBits;
    chunk_min_pred[c] = std::min(chunk_min_pred[c], SlotOf(min_pred[t]));
    chunk_min_bind[c] = std::min(chunk_min_bind[c], SlotOf(bind_pred[t]));
  };
  reindexed.clear();
  if (window.size() < static_cast<size_t>(slots - to)) {
    for (const Placement& q : window) {
      const int32_t* succ = tg.succ_pool.data() + tg.succ_off[q.task];
      for (int32_t k = 0; k < tg.succ_cnt[q.task]; ++k) reindex(succ[k]);
    }
  } else {
    for (int32_t s = to; s < slots; ++s) {
      const int32_t t = slot_task[s];
      if (t >= 0 && min_pred[t] >= 0 && pos[min_pred[t]] < to) reindex(t);
    }
  }
  for (int32_t t : scratch.reindex) reindex(t);
  for (int32_t t : reindexed) mark[t] = 0;
}

void DeltaSimulator::Impl::StaleChunksBetween(int32_t from, int32_t to) {
  const auto in = [from, to](int32_t slot) { return slot >= from && slot < to; };
  for (int32_t c = from >> kChunkBits; c < (to >> kChunkBits); ++c) TouchChunk(c);
  for (int32_t c = to >> kChunkBits; c < static_cast<int32_t>(chunk_min_pred.size()); ++c)
    if (in(chunk_min_pred[c]) || in(chunk_min_bind[c])) TouchChunk(c);
}

void DeltaSimulator::Impl::LayoutBetween(int32_t from, int32_t to, Time shift, std::span<const Placement> merged) {
  const sim::TaskGraph& tg = run.tg;
  const int32_t n = static_cast<int32_t>(laid.size() + merged.size());
  std::fill(slot_task.begin() + from, slot_task.begin() + to, -1);  // the holes' other entries are unread
  for (int32_t c = from >> kChunkBits; c < (to >> kChunkBits); ++c) chunk_shift[c] = 0;
  for (size_t c = static_cast<size_t>(to >> kChunkBits); c < chunk_shift.size(); ++c) chunk_shift[c] += shift;
  // The tasks spread evenly over the slots (the holes between them are room for later changes). The arrays are
  // written through locals: the push onto a resource's list could alias their vectors for the compiler, which
  // then reloaded each of them for every task.
  const int64_t span = to - from;
  int32_t* const task_at = slot_task.data();
  int32_t* const slot_of = pos.data();
  Time* const ready_at = slot_ready.data();
  Time* const start_at = slot_start.data();
  Time* const end_at = slot_end.data();
  ForEachLaid(merged, [&](int32_t k, const Placement& q) {
    const int32_t s = from + static_cast<int32_t>(static_cast<int64_t>(k) * span / n);
    task_at[s] = q.task;
    slot_of[q.task] = s;
    ready_at[s] = q.ready;
    start_at[s] = q.start;
    end_at[s] = q.end;
    res_added[SetSlotOwner(s, q.task)].push_back(s);
  });
  // Each resource's slot list: its entries from `from` until `to` replaced by the new ones, relinked from the
  // entry before them to the first kept entry after them.
  for (int32_t r = 0; r < tg.num_resources; ++r) {
    sim::SlotList& v = res_slots[r];
    std::vector<int32_t>& add = res_added[r];
    int32_t* lo = std::lower_bound(v.begin(), v.end(), from);
    int32_t* hi = std::lower_bound(lo, v.end(), to);
    if (lo == hi && add.empty()) continue;
    const size_t first = static_cast<size_t>(lo - v.begin());
    v.Replace(first, static_cast<size_t>(hi - v.begin()), add);
    const size_t last = std::min(first + add.size(), v.size() - 1);
    for (size_t x = std::max<size_t>(first, 1); x <= last; ++x) LinkEntries(v, x);
    CloseResourceEnds(r);
    add.clear();
  }
}

int32_t DeltaSimulator::Impl::SpreadPacked(int32_t begin, int32_t end) {
  // [from, to): the whole chunks over [begin, end), and as many after them as it takes for a share of its slots to
  // be holes (at most kSpreadMaxChunks more), so that the holes of the stretch after a packed one are shared with it.
  // Whole chunks only: their shifts are folded into the times written.
  constexpr int32_t kChunk = int32_t{1} << kChunkBits;
  const int32_t from = (begin >> kChunkBits) << kChunkBits;
  const int32_t last = std::min(static_cast<int32_t>(slot_task.size()) / kChunk * kChunk,
                                (end + kChunk - 1) / kChunk * kChunk + sim::kSpreadMaxChunks * kChunk);
  if (last <= from) return from;
  spread.clear();
  int32_t to = from;
  while (to < last) {
    for (const int32_t chunk_end = to + kChunk; to < chunk_end; ++to) {
      const int32_t t = slot_task[to];
      if (t < 0 || pos[t] != to) continue;
      const Time o = Shift(to);
      spread.push_back({t, to, slot_ready[to] + o, slot_start[to] + o, slot_end[to] + o});
    }
    const int32_t n = static_cast<int32_t>(spread.size());
    if (to >= end && n + n / sim::kSpreadHoleDivisor <= to - from) break;
  }
  std::fill(slot_task.begin() + from, slot_task.begin() + to, -1);
  for (int32_t c = from >> kChunkBits; c < (to >> kChunkBits); ++c) {
    chunk_shift[c] = 0;
    TouchChunk(c);  // bounds recomputed when next read
  }
  // Each task's entry in its resource's slot list is rewritten where it is: a resource's tasks keep their order,
  // so its entries in [from, to) stay in place and keep their links.
  const int64_t span = to - from, n = static_cast<int64_t>(spread.size());
  for (int64_t k = 0; k < n; ++k) {
    const Placement& q = spread[static_cast<size_t>(k)];
    const int32_t s = from + static_cast<int32_t>(k * span / n);
    slot_task[s] = q.task;
    pos[q.task] = s;
    slot_ready[s] = q.ready;
    slot_start[s] = q.start;
    slot_end[s] = q.end;
    const int32_t r = SetSlotOwner(s, q.task);
    sim::SlotList& v = res_slots[r];
    int32_t& x = spread_cursor[r];
    if (x < 0) {
      x = static_cast<int32_t>(std::lower_bound(v.begin(), v.end(), q.after) - v.begin());
      spread_touched.push_back(r);
    }
    v[x++] = s;
  }
  for (int32_t r : spread_touched) spread_cursor[r] = -1;
  spread_touched.clear();
  // A later chunk's bound that named a slot in [from, to) is lowered to `from` (its task's predecessor still lies
  // there, in the same order).
  for (size_t c = static_cast<size_t>(to >> kChunkBits); c < chunk_min_pred.size(); ++c) {
    if (chunk_min_pred[c] >= from && chunk_min_pred[c] < to) chunk_min_pred[c] = from;
    if (chunk_min_bind[c] >= from && chunk_min_bind[c] < to) chunk_min_bind[c] = from;
  }
  return to;
}

void DeltaSimulator::Impl::SpreadChains() {
  // A chain: displaced tasks in a row, each taken from a slot at most a chunk after the one before it went to.
  constexpr int32_t kChunk = int32_t{1} << kChunkBits;
  spread_chains.clear();
  for (size_t first = 0, i = 1; i <= displaced.size(); ++i) {
    if (i < displaced.size() && displaced[i].after <= pos[displaced[i - 1].task] + kChunk) continue;
    if (i - first > static_cast<size_t>(sim::kSpreadChain))
      spread_chains.emplace_back(displaced[first].after, pos[displaced[i - 1].task] + 1);
    first = i;
  }
  int32_t spread_to = 0;
  for (const auto& [begin, end] : spread_chains)
    if (begin >= spread_to) spread_to = SpreadPacked(begin, end);
}

}  // namespace devplace
