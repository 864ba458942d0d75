// The delta simulator's layout of the dequeue order (slots, chunk shifts) and the indexes over it: per-resource
// slot lists and links, and the earliest and binding predecessor of each slot, kept up to date after every change;
// and placing a swept change (Finish).
#include <algorithm>
#include <limits>

#include "sim/delta_impl.h"

namespace devplace {

using sim::kChunkBits;
using sim::kClean;
using sim::kDirty;
using sim::kNoSlot;
using sim::Time;

void DeltaSimulator::Impl::GrowScratch() {
  // Each array grows to the task count within room for task_room tasks (reserved once, so growing does not
  // allocate until the next compaction).
  const size_t n = static_cast<size_t>(run.tg.num_tasks()), room = std::max(n, static_cast<size_t>(task_room));
  const auto grow = [n, room](auto& v, auto fill) {
    sim::ReserveRoom(&v, room);
    v.resize(n, static_cast<typename std::decay_t<decltype(v)>::value_type>(fill));
  };
  grow(state, kClean);
  grow(blocked, 0);
  grow(version, 0);
  grow(cur_end, 0);
  grow(dense_ready, 0);
  grow(dense_entered, 0);
  grow(watch_first, -1);
  grow(watch_next, -1);
  grow(mark, 0);
  grow(moved, 0);
  grow(min_pred, -1);
  grow(bind_pred, -1);
  grow(pos, -1);
  grow(res_next, -1);
  grow(succ_room, 0);
  grow(pred_room, 0);
  sim::ReserveRoom(&to_index, room);  // each task once at most, as in reindexed
  sim::ReserveRoom(&reindexed, room);
}

Status DeltaSimulator::Impl::FullRebuild() {
  peaks_valid = false;
  risky_valid = false;
  if (Status s = run.Run(builder, engine, strategy, sim::Record::kAll); !s) return s;
  StoreAndLayOut();
  kept_peaks.Clear();
  return Status::Ok();
}

void DeltaSimulator::Impl::Compact() {
  sim::Timing& tm = run.timing;
  const size_t n = static_cast<size_t>(run.tg.num_tasks());
  for (auto* v : {&tm.ready, &tm.start, &tm.end}) {
    sim::ReserveLike(v, run.tg.duration);  // by task id, garbage included
    v->resize(n);
  }
  WriteTimes(tm);
  StoreAndLayOut();
  kept_peaks.Renumber(run.new_ids(), run.tg.num_tasks());  // the times are kept
}

void DeltaSimulator::Impl::StoreAndLayOut() {
  run.StoreInScheduleOrder();
  live_tasks = run.tg.num_tasks();
  retimed_since_compact = 0;
  // Room for the garbage a compaction allows (Finish) plus a change's worth, so that changes between compactions
  // do not allocate; grown by an eighth more when it grows, so that it settles while the live count varies.
  const size_t live = static_cast<size_t>(live_tasks);
  const size_t needed = sim::MostTasksBeforeCompaction(live) + live / 4;
  if (needed > static_cast<size_t>(task_room))
    task_room = static_cast<int32_t>(std::min<size_t>(needed + needed / 8, std::numeric_limits<int32_t>::max()));
  // The adjacency pools: up to the successor pool's bound in Finish, and a change's worth more.
  const size_t pool_room = sim::MostSuccEntriesBeforeCompaction(live);
  run.tg.ReserveGrowth(task_room, pool_room + pool_room / 4);
  state.clear();
  for (auto* v : {&mark, &moved}) v->clear();
  for (auto* v : {&blocked, &pos, &res_next, &min_pred, &bind_pred}) v->clear();
  cur_end.clear();
  version.clear();
  GrowScratch();
  succ_room = run.tg.succ_cnt;
  pred_room = run.tg.pred_cnt;
  Layout();
}

void DeltaSimulator::Impl::Layout() {
  const sim::Timing& tm = run.timing;
  laid.clear();
  for (int32_t t : tm.order) laid.push_back({t, 0, tm.ready[t], tm.start[t], tm.end[t]});
  LayoutFrom(0);
  placed = static_cast<int32_t>(laid.size());
  // IndexPreds for every task, reading the times from `tm` (equal to the layout's, without the slot lookups).
  for (int32_t t : tm.order) IndexPredsBy(t, [&tm](int32_t p, int32_t) { return tm.end[p]; });
}

void DeltaSimulator::Impl::LayoutFrom(int32_t from, std::span<const Placement> merged) {
  const sim::TaskGraph& tg = run.tg;
  const int32_t n = static_cast<int32_t>(laid.size() + merged.size());
  const int32_t slots = from + sim::FreshSlots(n);
  const int32_t first_chunk = from >> kChunkBits;
  const size_t chunks = static_cast<size_t>((slots >> kChunkBits) + 1);
  if (from == 0) {
    if (slot_task.capacity() < static_cast<size_t>(slots))
      ReserveSlots(static_cast<size_t>(slots) + static_cast<size_t>(slots) / 2);
    slot_task.assign(static_cast<size_t>(slots), -1);
    slot_res.assign(static_cast<size_t>(slots), -1);
    slot_mem.assign(static_cast<size_t>(slots), -1);
    std::fill(pos.begin(), pos.end(), -1);
    ClearResourceLists();
  } else {
    TruncateResourceLists(from);
    slot_task.resize(static_cast<size_t>(slots));
    slot_res.resize(static_cast<size_t>(slots));
    slot_mem.resize(static_cast<size_t>(slots));
    std::fill(slot_task.begin() + from, slot_task.end(), -1);
    std::fill(slot_res.begin() + from, slot_res.end(), -1);
    std::fill(slot_mem.begin() + from, slot_mem.end(), -1);
  }
  for (auto* v : {&slot_ready, &slot_start, &slot_end}) v->resize(static_cast<size_t>(slots));  // holes: unread
  chunk_shift.resize(chunks);
  std::fill(chunk_shift.begin() + first_chunk, chunk_shift.end(), 0);
  ForEachLaid(merged, [&](int32_t k, const Placement& q) {
    const int32_t s = from + sim::FreshSlot(k);
    slot_task[s] = q.task;
    pos[q.task] = s;
    slot_ready[s] = q.ready;
    slot_start[s] = q.start;
    slot_end[s] = q.end;
    AppendToResource(q.task, s);
  });
  // Each resource's edit lists start with room for more edits than most changes make there, so that how far the
  // changes reach on one resource (which varies with the layout they meet) rarely grows them.
  constexpr size_t kEditRoom = 64;
  for (size_t r = res_added.size(); r < static_cast<size_t>(tg.num_resources); ++r) {
    res_added.emplace_back().reserve(kEditRoom);
    res_dropped.emplace_back().reserve(kEditRoom);
    res_moved.emplace_back().reserve(kEditRoom);
    res_changed.push_back(0);
  }
  IndexChunks(first_chunk);
}

void DeltaSimulator::Impl::TruncateResourceLists(int32_t from) {
  for (int32_t r = 0; r < run.tg.num_resources; ++r) {
    sim::SlotList& v = res_slots[r];
    v.Truncate(static_cast<size_t>(std::lower_bound(v.begin(), v.end(), from) - v.begin()));
    if (v.empty()) {
      res_first[r] = -1;
      run.last_task[r] = -1;
    } else {
      const int32_t t = slot_task[v.back()];
      run.last_task[r] = t;
      res_next[t] = -1;
    }
  }
}

void DeltaSimulator::Impl::ClearResourceLists() {
  const size_t resources = static_cast<size_t>(run.tg.num_resources);
  res_slots.resize(resources);
  for (auto& v : res_slots) v.clear();
  spread_cursor.resize(resources, -1);
  spread_touched.reserve(resources);
  res_buffer_device.assign(resources, -1);
  res_first.assign(resources, -1);
  run.last_task.assign(resources, -1);
}

void DeltaSimulator::Impl::IndexChunks(int32_t first) {
  const size_t chunks = chunk_shift.size();
  chunk_min_pred.resize(chunks);
  chunk_min_bind.resize(chunks);
  chunk_min_ready.resize(chunks);
  chunk_stale.resize(chunks);
  std::fill(chunk_stale.begin() + first, chunk_stale.end(), 1);  // computed when a shift check first reads them
}

void DeltaSimulator::Impl::DropSlot(int32_t t, int32_t slot) {
  const int32_t r = EditedResource(t);
  res_dropped[r].push_back(slot);
}

void DeltaSimulator::Impl::AddSlot(int32_t t, int32_t slot) {
  const int32_t r = EditedResource(t);
  res_added[r].push_back(slot);
}

void DeltaSimulator::Impl::MoveSlot(int32_t t, int32_t from, int32_t to) {
  const int32_t r = EditedResource(t);
  res_moved[r].push_back({from, to});
}

void DeltaSimulator::Impl::WriteTimes(sim::Timing& into) const {
  into.order.clear();
  for (int32_t s = 0; s < static_cast<int32_t>(slot_task.size()); ++s) {
    const int32_t t = slot_task[s];
    if (t < 0) continue;
    const Time o = Shift(s);
    into.ready[t] = slot_ready[s] + o;
    into.start[t] = slot_start[s] + o;
    into.end[t] = slot_end[s] + o;
    into.order.push_back(t);
  }
}

void DeltaSimulator::Impl::Relayout(int32_t roomy_from, int32_t roomy_to) {
  // The same order with holes spread evenly again and every chunk's shift folded into the stored times. The
  // predecessor entries name tasks and depend only on the order and the times, so they stay right; the chunk
  // bounds name slots and are marked stale (recomputed when a shift check next reads them: the chunks no check
  // reads before the next layout are never computed). Each resource keeps its tasks in the same order, so its
  // links stand and its slot list (brought up to date by UpdateResourceSlots) is rewritten entry by entry, in
  // order; a slot's resource and buffer device move with its task.
  const int32_t old_slots = static_cast<int32_t>(slot_task.size());
  int32_t roomy = 0;  // tasks in the roomy stretch
  for (int32_t s = std::max(0, roomy_from); s < std::min(old_slots, roomy_to); ++s) roomy += slot_task[s] >= 0;
  const int32_t slots =
      sim::FreshSlots(placed - roomy) + (roomy > 0 ? roomy + roomy / (sim::kRoomyHoleEvery - 1) + 1 : 0);
  relaid_task.assign(static_cast<size_t>(slots), -1);
  // A hole's times, resource and buffer device are never read (every reader goes by a slot that holds a task).
  for (auto* v : {&relaid_ready, &relaid_start, &relaid_end}) v->resize(static_cast<size_t>(slots));
  for (auto* v : {&relaid_res, &relaid_mem}) v->resize(static_cast<size_t>(slots));
  relaid_entry.assign(static_cast<size_t>(run.tg.num_resources), 0);
  int32_t next = 0, since_hole = 0;
  for (int32_t s = 0; s < old_slots; ++s) {
    const int32_t t = slot_task[s];  // Place leaves no stale entries (as WriteTimes relies on too)
    if (t < 0) continue;
    const int32_t to = next++;  // (sim::FreshSlot(k) for the k-th task when no stretch is roomy)
    if (++since_hole >= (s >= roomy_from && s < roomy_to ? sim::kRoomyHoleEvery : sim::kHoleEvery) - 1) {
      ++next;
      since_hole = 0;
    }
    const Time o = Shift(s);
    const int32_t r = slot_res[s];
    relaid_task[to] = t;
    relaid_ready[to] = slot_ready[s] + o;
    relaid_start[to] = slot_start[s] + o;
    relaid_end[to] = slot_end[s] + o;
    relaid_res[to] = r;
    relaid_mem[to] = slot_mem[s];
    pos[t] = to;
    res_slots[r][relaid_entry[r]++] = to;
  }
  slot_task.swap(relaid_task);
  slot_ready.swap(relaid_ready);
  slot_start.swap(relaid_start);
  slot_end.swap(relaid_end);
  slot_res.swap(relaid_res);
  slot_mem.swap(relaid_mem);
  chunk_shift.assign(static_cast<size_t>((slots >> kChunkBits) + 1), 0);
  IndexChunks();
}

void DeltaSimulator::Impl::IndexPreds(int32_t t) {
  IndexPredsBy(t, [this](int32_t, int32_t slot) { return slot_end[slot] + Shift(slot); });
}

void DeltaSimulator::Impl::RefreshChunk(int32_t chunk) {
  const int32_t begin = chunk << kChunkBits;
  const int32_t end = std::min<int32_t>(begin + (1 << kChunkBits), static_cast<int32_t>(slot_task.size()));
  int32_t lo_pred = kNoSlot, lo_bind = kNoSlot;
  Time lo_ready = std::numeric_limits<Time>::max();
  for (int32_t s = begin; s < end; ++s) {
    const int32_t t = slot_task[s];  // (between changes every task's slot is its own: CheckIndexes)
    if (t < 0) continue;
    lo_pred = std::min(lo_pred, SlotOf(min_pred[t]));
    lo_bind = std::min(lo_bind, SlotOf(bind_pred[t]));
    lo_ready = std::min(lo_ready, slot_ready[s]);
  }
  chunk_min_pred[chunk] = lo_pred;
  chunk_min_bind[chunk] = lo_bind;
  chunk_min_ready[chunk] = lo_ready;
  chunk_stale[chunk] = 0;
}

void DeltaSimulator::Impl::LoadResourceState(int32_t slot, const std::vector<int32_t>& resources,
                                             std::vector<Time>* free, std::vector<int32_t>* last) const {
  const int32_t r = run.tg.num_resources;
  free->assign(static_cast<size_t>(r), 0);
  last->assign(static_cast<size_t>(r), -1);
  // The resources busy just before `slot` are found by reading the order backwards (consecutive slots); the others
  // by a binary search in their slot lists (sim::kResourceStateScan says why).
  size_t found = 0;
  for (int32_t s = slot - 1; s >= std::max(0, slot - sim::kResourceStateScan) && found < resources.size(); --s) {
    const int32_t t = slot_task[s];
    if (t < 0 || (*last)[slot_res[s]] >= 0) continue;
    (*last)[slot_res[s]] = t;
    (*free)[slot_res[s]] = slot_end[s] + Shift(s);
    ++found;
  }
  for (int32_t k : resources) {
    if ((*last)[k] >= 0) continue;  // found above
    const sim::SlotList& v = res_slots[k];
    const auto it = std::lower_bound(v.begin(), v.end(), slot);
    if (it == v.begin()) continue;
    const int32_t t = slot_task[*(it - 1)];
    (*last)[k] = t;
    (*free)[k] = End(t);
  }
}

void DeltaSimulator::Impl::Place(int32_t begin, int32_t cut, Time shift, const std::vector<int32_t>& reindex) {
  const int32_t rest = PlaceWindow(begin, cut, shift);
  ShiftRest(rest, shift);
  // Lay the order out afresh when few holes are left, or when this change rewrote so many slots (or displaced so
  // many more tasks than it placed anew) that the region it packed (without holes) would make later changes there
  // move many tasks (and this one already did work of that order).
  const int64_t rewritten = relocated + static_cast<int64_t>(displaced.size());
  const bool packed = static_cast<int64_t>(displaced.size()) >
                          std::max(placed / sim::kRelayoutDisplacedDivisor, sim::kRelayoutMinSlots) &&
                      displaced.size() > sim::kRelayoutDisplacedPerPlaced * window.size();
  const bool relayout = static_cast<int64_t>(slot_task.size()) - placed < placed / (2 * sim::kHoleEvery) || packed ||
                        rewritten > std::max(placed / sim::kRelayoutDivisor, sim::kRelayoutMinSlots);
  UpdateResourceSlots();
  ReindexPlaced(reindex);
  if (!relayout) SpreadChains();
  else if (packed) Relayout(begin, pos[displaced.back().task] + 1);  // the stretch the window and displaced took
  else Relayout(0, 0);
}

void DeltaSimulator::Impl::ReserveSlots(size_t slots) {
  for (auto* v : {&slot_task, &slot_res, &slot_mem}) v->reserve(slots);
  for (auto* v : {&slot_ready, &slot_start, &slot_end}) v->reserve(slots);
  const size_t chunks = (slots >> kChunkBits) + 1;
  for (auto* v : {&chunk_min_pred, &chunk_min_bind}) v->reserve(chunks);
  for (auto* v : {&chunk_shift, &chunk_min_ready}) v->reserve(chunks);
  chunk_stale.reserve(chunks);
  spread.reserve(slots);  // SpreadPacked's: at most every task
  spread_chains.reserve(chunks);
}

void DeltaSimulator::Impl::GrowSlots(int32_t s) {
  while (s >= static_cast<int32_t>(slot_task.size())) {
    const size_t slots = slot_task.size() + (size_t{1} << kChunkBits);
    slot_task.resize(slots, -1);
    for (auto* v : {&slot_ready, &slot_start, &slot_end}) v->resize(slots, 0);
    slot_res.resize(slots, -1);
    slot_mem.resize(slots, -1);
    const size_t chunks = (slots >> kChunkBits) + 1;
    chunk_shift.resize(chunks, chunk_shift.back());
    chunk_min_pred.resize(chunks, kNoSlot);
    chunk_min_bind.resize(chunks, kNoSlot);
    chunk_min_ready.resize(chunks, std::numeric_limits<Time>::max());
    chunk_stale.resize(chunks, 0);
  }
}

int32_t DeltaSimulator::Impl::AssignSlot(const Placement& q, int32_t s, int32_t cut, Time shift) {
  const int32_t t = q.task;
  if (pos[t] == s && slot_task[s] == t) {  // kept in place: its times only (what follows would change nothing else)
    const Time o = Shift(s);
    slot_ready[s] = q.ready - o;
    slot_start[s] = q.start - o;
    slot_end[s] = q.end - o;
    TouchChunk(s >> kChunkBits);
    return s + 1;
  }
  if (s >= static_cast<int32_t>(slot_task.size())) GrowSlots(s);
  const int32_t k = slot_task[s];
  if (k >= 0 && k != t && !moved[k] && pos[k] == s) {
    moved[k] = 1;
    const Time o = Shift(s) + (s >= cut ? shift : 0);
    displaced.push_back({k, s, slot_ready[s] + o, slot_start[s] + o, slot_end[s] + o});
  }
  const int32_t old = pos[t];
  if (old != s) {
    if (old >= 0) {
      MoveSlot(t, old, s);
      stale.push_back({t, old});
    } else {
      ++placed;
      AddSlot(t, s);
    }
  }
  slot_task[s] = t;
  pos[t] = s;
  const Time o = Shift(s);
  slot_ready[s] = q.ready - o;
  slot_start[s] = q.start - o;
  slot_end[s] = q.end - o;
  SetSlotOwner(s, t);
  TouchChunk(s >> kChunkBits);
  return s + 1;
}

bool DeltaSimulator::Impl::KeepsSlot(int32_t t, int32_t first) const {
  // A kept task between `first` and t's slot comes after t in the new order, so it would have to move past t; other
  // window tasks there move on when their turn comes (after t's), and holes and stale entries are free.
  const int32_t p = pos[t];
  if (p < first || p - first > (1 << kChunkBits)) return false;
  for (int32_t s = first; s < p; ++s) {
    const int32_t k = slot_task[s];
    if (k >= 0 && pos[k] == s && !moved[k]) return false;
  }
  return true;
}

int32_t DeltaSimulator::Impl::PlaceWindow(int32_t begin, int32_t cut, Time shift) {
  // The new order is the tasks that kept their slots, with the window's tasks merged in (each right after the
  // kept task it followed). A window task takes the first slot after everything before it; if a kept task sits
  // there, that one moves on too (it follows in the merge), so runs of kept tasks shift up to the next hole. A
  // window task whose previous slot comes later with no kept task in between keeps it instead (most of a large
  // change's tasks keep their order, session 49), which leaves the holes before it where they were.
  for (const Placement& q : window) moved[q.task] = 1;
  displaced.clear();
  relocated = 0;
  int32_t next = begin;
  size_t j = 0, d = 0;
  while (j < window.size() || d < displaced.size()) {
    if (d < displaced.size() && (j == window.size() || displaced[d].after < window[j].after)) {
      const Placement q = displaced[d++];  // q.after holds its old slot (a copy: AssignSlot may grow `displaced`)
      next = AssignSlot(q, next, cut, shift);
    } else {
      const Placement& q = window[j++];
      const int32_t first = std::max(next, q.after), old = pos[q.task];
      const int32_t slot = KeepsSlot(q.task, first) ? old : first;
      relocated += slot != old;
      next = AssignSlot(q, slot, cut, shift);
    }
  }
  for (const Placement& x : stale) {
    if (slot_task[x.after] != x.task || pos[x.task] == x.after) continue;
    slot_task[x.after] = -1;
  }
  return std::max(cut, next);
}

void DeltaSimulator::Impl::ShiftRest(int32_t rest, Time shift) {
  // The tasks of the first chunk one by one, later chunks as a whole.
  const int32_t slots = static_cast<int32_t>(slot_task.size());
  if (shift == 0 || rest >= slots) return;
  const int32_t c0 = rest >> kChunkBits;
  const int32_t end0 = std::min(slots, (c0 + 1) << kChunkBits);
  TouchChunk(c0);
  for (int32_t s = rest; s < end0; ++s) {
    const int32_t t = slot_task[s];
    if (t < 0 || pos[t] != s) continue;
    slot_ready[s] += shift;
    slot_start[s] += shift;
    slot_end[s] += shift;
  }
  for (size_t c = static_cast<size_t>(c0) + 1; c < chunk_shift.size(); ++c) chunk_shift[c] += shift;
}

void DeltaSimulator::Impl::ReindexPlaced(const std::vector<int32_t>& reindex) {
  // A task's entries depend on its predecessors' slots and times only, and of those only the window's tasks
  // changed (tasks displaced with their times unchanged only moved up in order, and those from `cut` on moved
  // with everything after them), so: tasks listed in `reindex` (their predecessor lists changed, or they moved
  // with the rest while their predecessors may not have) are indexed afresh, and a task the window feeds
  // compares its entries with the moved predecessor, or is indexed afresh when an entry names a moved task
  // (which may now be later or end earlier). Chunk bounds are lowered to match (they are lower bounds; touched
  // chunks are recomputed when next needed).
  const sim::TaskGraph& tg = run.tg;
  for (const Placement& x : displaced) moved[x.task] = 0;
  reindexed.clear();
  for (int32_t x : reindex) ReindexOnce(x);
  for (const Placement& q : window) {
    const int32_t p = q.task;
    const int32_t p_slot = pos[p];
    const Time p_arrival = End(p) + tg.resource_delay[tg.resource[p]];
    for (int32_t k = 0; k < tg.succ_cnt[p]; ++k) {
      const int32_t x = tg.succ_pool[tg.succ_off[p] + k];
      if (mark[x]) continue;
      const int32_t b = bind_pred[x], m = min_pred[x];
      if (m < 0 || b < 0 || m == p || b == p || moved[m] || moved[b]) {
        ReindexOnce(x);
        continue;
      }
      const int32_t chunk = pos[x] >> kChunkBits;
      if (p_slot < pos[m]) {
        min_pred[x] = p;
        chunk_min_pred[chunk] = std::min(chunk_min_pred[chunk], p_slot);
      }
      const Time b_arrival = End(b) + tg.resource_delay[tg.resource[b]];
      if (p_arrival > b_arrival || (p_arrival == b_arrival && p_slot > pos[b])) {
        bind_pred[x] = p;
        chunk_min_bind[chunk] = std::min(chunk_min_bind[chunk], p_slot);
      }
    }
  }
  for (const Placement& q : window) moved[q.task] = 0;
  for (int32_t x : reindexed) mark[x] = 0;
}

void DeltaSimulator::Impl::ReindexOnce(int32_t x) {
  if (mark[x]) return;
  mark[x] = 1;
  reindexed.push_back(x);
  IndexPreds(x);
  TouchChunk(pos[x] >> kChunkBits);
}

void DeltaSimulator::Impl::Materialize() const {
  const int32_t n = run.tg.num_tasks();
  sim::Timing& m = materialized;
  m.ready.resize(static_cast<size_t>(n));
  m.start.resize(static_cast<size_t>(n));
  m.end.resize(static_cast<size_t>(n));
  m.res_prev = run.timing.res_prev;
  WriteTimes(m);
}

void DeltaSimulator::Impl::MaterializeTimes() const {
  const size_t n = static_cast<size_t>(run.tg.num_tasks());
  materialized.start.resize(n);
  materialized.end.resize(n);
  for (int32_t s = 0; s < static_cast<int32_t>(slot_task.size()); ++s) {
    const int32_t t = slot_task[s];
    if (t < 0) continue;
    materialized.start[t] = slot_start[s] + Shift(s);
    materialized.end[t] = slot_end[s] + Shift(s);
  }
}

void DeltaSimulator::Impl::ResetStates(std::span<const Placement> retimed) {
  // Re-timing a task undid what marking it dirty added to its successors' counts; only dirty tasks left behind
  // by an early stop still block theirs. Every task re-timed (a dense run re-times clean ones too) is in the window.
  const sim::TaskGraph& tg = run.tg;
  for (int32_t t : scratch.pending) {
    if (state[t] == kDirty)
      for (int32_t k = 0; k < tg.succ_cnt[t]; ++k) blocked[tg.succ_pool[tg.succ_off[t] + k]] = 0;
    state[t] = kClean;
  }
  for (const Placement& q : retimed) state[q.task] = kClean;
}

void DeltaSimulator::Impl::Finish(int32_t begin, int32_t cut, Time shift, const std::vector<int32_t>* last_before_cut) {
  const sim::TaskGraph& tg = run.tg;
  // Garbage from replaced groups grows with every change (new tasks are appended, so the tasks a change touches
  // spread over ever more memory); once it is a fifth of the live graph and the changes since the last compaction
  // re-timed enough tasks, or once it is as large as the live graph, the change is placed and the task graph
  // compacted (Compact; sim::kCompactAfterRetimed says why). Compacting at a fifth rather than at twice the live
  // graph made the median change 4-8% and the mean 6-16% cheaper in paired runs on nmt and transformer graphs when
  // a compaction was a full rebuild.
  retimed_since_compact += retimed;
  const size_t live = static_cast<size_t>(live_tasks), tasks = static_cast<size_t>(tg.num_tasks());
  const bool some_garbage = tasks > live + live / 5 + 1024 || tg.succ_pool.size() > 3 * live + 16384;
  const bool much_garbage = tasks > sim::MostTasksBeforeCompaction(live) ||
                            tg.succ_pool.size() > sim::MostSuccEntriesBeforeCompaction(live);
  const bool compact =
      some_garbage && (much_garbage || retimed_since_compact >= sim::kCompactAfterRetimed * live_tasks);
  const bool merge = static_cast<int64_t>(window.size()) >
                     std::max(placed / sim::kMergeDivisor, sim::kRelayoutMinSlots);
  const bool track_peaks = kept_peaks.active() && KeptPeaksBefore(cut, shift, last_before_cut);
  int32_t removed_last = -1;  // the last slot a removed task leaves
  for (int32_t t : scratch.removed) {
    removed_last = std::max(removed_last, pos[t]);
    state[t] = kClean;
    slot_task[pos[t]] = -1;
    if (!merge) {
      DropSlot(t, pos[t]);
      stale.push_back({t, pos[t]});
    }
    pos[t] = -1;
    --placed;
  }
  ResetStates(merge ? std::span<const Placement>() : window);  // LayoutMerged puts the window's back as it reads it
  if (merge) LayoutMerged(begin, cut, shift, removed_last);
  else Place(begin, cut, shift, scratch.reindex);
  if (compact) {
    Compact();
    if (track_peaks) {  // the noted tasks renamed as the compaction renamed them (every noted live task is kept)
      const std::vector<int32_t>& new_id = run.new_ids();
      size_t kept = 0;
      for (int32_t t : peak_retimed)
        if (new_id[t] >= 0) peak_retimed[kept++] = new_id[t];
      peak_retimed.resize(kept);
    }
  }
  if (track_peaks) KeptPeaksAfter();
}

}  // namespace devplace
