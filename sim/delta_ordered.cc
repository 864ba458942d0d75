// The delta simulator's ordered pass (DeltaSweep::RunOrdered): a large change re-timed along the previous order.
//
// A full run dequeues tasks in (ready, key) order, and a task's times depend only on its inputs' ends and on the
// order of its resource's tasks. When a change moves many tasks but leaves each resource's order as it was (most
// large changes on transformer and layered graphs: docs/environment-speed-log.md, session 49), timing the tasks
// along the previous order, each from its inputs and its resource's last end, gives the full run's times with no
// ready queue. The pass checks that premise as it goes: each resource's tasks must leave it in increasing (ready,
// key) order. A schedule in which every resource's tasks run in that order is the one a full run computes (by
// induction over the tasks in (ready, key) order: each task's inputs come earlier in that order, and its resource's
// previous task is the one before it in that order there). Where a resource's order breaks, the pass puts the state
// back and RunDense re-times the change with its queue.
//
// Besides the previous order from the cursor on (stream A), a few tasks have no place in it: the change's new tasks
// and the dirty tasks the merge left behind its cursor. They wait until their inputs are re-timed, then join a heap
// by (ready, key) and leave it before the first task of A that comes after them. A task of A whose input has not
// been re-timed takes the heap's first tasks until it has; if the heap runs dry first, the task leaves A and waits
// with them. The pass stops at a shifted rest as RunDense does, once no task waits, if besides each resource's
// first task of the rest comes after the last one the pass re-timed there (RunDense's order makes sure of that).
//
// While tasks wait for inputs far ahead, the stretch of the order up to the first task that could depend on them
// often just moves by the shift: the pass checks it as the shifted rest is checked (StretchShifted), moves it in the
// layout as a whole and goes on after it, its tasks settled with their new times and each resource's last task
// there taken as the last one the pass ran on it. The argument above still holds: the stretch's tasks get their
// times from their inputs and resources (checked), and everything re-timed after them is checked against them.
#include <algorithm>
#include <cstddef>
#include <limits>

#include "sim/delta_sweep.h"

namespace devplace {

using sim::DeltaItem;
using sim::kClean;
using sim::kDirty;
using sim::kDone;
using sim::Time;

namespace {
// The ready time of a resource no task of the pass has run on yet (every ready time is later).
constexpr Time kNoReady = std::numeric_limits<Time>::min();
}  // namespace

DeltaSimulator::Impl::DeltaSweep::Ordered DeltaSimulator::Impl::DeltaSweep::RunOrdered(int32_t* cursor) {
  sim::OrderedScratch& o = sc.ordered;
  const int32_t begin = *cursor;
  // The arrays through pointers kept in locals (Arrays says why); none is resized during the pass, and the window
  // gets room for every task first.
  const size_t window_size = m.window.size(), n = static_cast<size_t>(num_tasks_);
  if (m.window.capacity() < window_size + n) m.window.reserve(window_size + 2 * n);
  if (sc.heap.capacity() < n) sc.heap.reserve(2 * n);  // (as RunDense: room for every task, with room to spare)
  if (o.deferred.capacity() < n) o.deferred.reserve(2 * n);
  if (o.waited.capacity() < n) o.waited.reserve(2 * n);
  // (each jump passes at least a chunk's slots)
  const size_t most_jumps = static_cast<size_t>(slots_ >> sim::kChunkBits) + 1;
  if (o.jumps.capacity() < most_jumps) o.jumps.reserve(most_jumps);
  const Arrays a = LoadArrays();
  const int32_t* const slot_task = m.slot_task.data();
  const int32_t* const slot_res = m.slot_res.data();
  const int32_t* const pos = a.pos;
  const int32_t* const resource = a.resource;
  const Time* const duration = a.duration;
  const Time* const res_delay = a.res_delay;
  const Time* const slot_end = a.slot_end;
  sim::TaskState* const state = a.state;
  Time* const cur_end = a.cur_end;
  Time* const free = a.free;
  int32_t* const processed_last = a.processed_last;
  const uint64_t* const key = tg.key.data();
  const int32_t* const pred_cnt = tg.pred_cnt.data();
  const int32_t* const pred_off = tg.pred_off.data();
  int32_t* const last = sc.last.data();
  uint32_t* const watched = m.dense_entered.data();
  const int32_t slots = slots_, first_new = first_new_, after_before = after_;
  int32_t after = after_;  // (moves past each stretch the pass jumps over)
  // What the pass changes, to put back if the order breaks.
  const int64_t retimed = m.retimed;
  const int32_t max_settled = max_settled_, new_pending = new_pending_;
  const Time shift_before = shift_;
  o.pending.assign(sc.pending.begin(), sc.pending.end());
  o.free.assign(sc.free.begin(), sc.free.end());
  o.last.assign(sc.last.begin(), sc.last.end());
  o.processed_last.assign(sc.processed_last.begin(), sc.processed_last.end());
  o.deferred.clear();
  o.waited.clear();
  o.jumps.clear();
  o.res_ready.assign(static_cast<size_t>(tg.num_resources), kNoReady);
  o.res_task.assign(static_cast<size_t>(tg.num_resources), -1);
  Time* const res_ready = o.res_ready.data();
  int32_t* const res_task = o.res_task.data();
  // Whether task x, ready at `ready`, may run next on resource r: after the last task the pass ran there.
  auto in_order = [&](int32_t r, int32_t x, Time ready) {
    return ready > res_ready[r] || (ready == res_ready[r] && key[res_task[r]] < key[x]);
  };
  // The tasks of A are re-timed here, with the sweep's scalars in locals (written back for the shifted-rest check
  // and at the end): the shift of the last old task whose end moved, the last slot re-timed, the count.
  Time shift = shift_;
  int32_t last_slot = -1;
  int64_t count = 0;
  auto write_back = [&] {
    shift_ = shift;
    max_settled_ = std::max(max_settled_, last_slot);
    m.retimed += count;
    count = 0;
  };
  auto undo = [&] {
    UndoOrdered(window_size, retimed, max_settled, shift_before, new_pending, after_before);
    return Ordered::kReordered;
  };

  // Task u's ready time when its inputs are settled, with the pass at slot f (returns -1): re-timed, or old tasks
  // before the cursor left as they were (every task the pass reached is re-timed). Else its first input that is
  // not (returned).
  // (A re-timed task's arrival at its successors is in `arrival`, written as it is re-timed.)
  Time* const arrival = m.dense_ready.data();
  for (size_t k = 0; k < window_size; ++k) {
    const Placement& q = m.window[k];
    arrival[q.task] = q.end + res_delay[resource[q.task]];
  }
  auto inputs = [&](int32_t u, int32_t f, Time* ready) {
    Time at = 0;
    const int32_t* const pred = pred_ + pred_off[u];
    for (int32_t k = 0, count = pred_cnt[u]; k < count; ++k) {
      const int32_t p = pred[k];
      if (state[p] == kDone) at = std::max(at, arrival[p]);
      else if (state[p] == kClean && p < first_new && pos[p] < f) at = std::max(at, a.End(p) + res_delay[resource[p]]);
      else return p;
    }
    *ready = at;
    return -1;
  };
  // The out-of-order tasks: those whose inputs are settled join the heap; each of the others waits in the list of
  // an input that is not, and is looked at again once that input is re-timed.
  sim::QuadHeap<DeltaItem>& heap = sc.heap;
  heap.clear();
  const uint32_t watch = m.NextDenseRun();
  int32_t* const watch_first = m.watch_first.data();
  int32_t* const watch_next = m.watch_next.data();
  // Looks at out-of-order task u, the pass at slot f: returns 1 if it waits, else 0 (it joined the heap).
  auto look_at = [&](int32_t u, int32_t f) {
    Time ready = 0;
    const int32_t p = inputs(u, f, &ready);
    if (p < 0) {
      heap.push({ready, key[u], u, 0});
      return 0;
    }
    if (watched[p] != watch) {
      watched[p] = watch;
      watch_first[p] = -1;
    }
    watch_next[u] = watch_first[p];
    watch_first[p] = u;
    return 1;
  };
  // Task x was just re-timed (the pass at slot f): the tasks waiting for it are looked at again. Returns the
  // change in the count of waiting tasks.
  auto wake = [&](int32_t x, int32_t f) {
    int64_t change = 0;
    for (int32_t u = watch_first[x], next; u >= 0; u = next) {
      next = watch_next[u];
      change += look_at(u, f) - 1;
    }
    watch_first[x] = -1;
    return change;
  };
  int64_t waiting = 0;
  for (int32_t x : sc.pending)
    if (state[x] == kDirty && (x >= first_new || pos[x] < begin) && look_at(x, begin) == 1) {
      ++waiting;
      o.waited.push_back(x);
    }
  // Re-times the heap's first task, the pass at slot f, if its resource's order holds.
  auto retime_heap_top = [&](int32_t f) {
    const DeltaItem item = heap.top();
    heap.pop();
    const int32_t x = item.task, r = resource[x];
    if (!in_order(r, x, item.ready)) return false;
    res_ready[r] = item.ready;
    res_task[r] = x;
    shift_ = shift;
    arrival[x] = Retime(a, x, item.ready).arrival;
    shift = shift_;
    if (watched[x] == watch) waiting += wake(x, f);
    return true;
  };

  // The jumps: where the only tasks left out of the order wait for inputs further on (a change's new backward tasks
  // wait for the gradients of the ops after it), the stretch of the order up to the first task that could depend on
  // them often just moves by the shift (StretchShifted). The pass then moves it in the layout as a whole and goes
  // on after it, the stretch's tasks settled with their new times. Not for a query (which leaves the layout as it
  // was). Where memory peaks are kept, Finish notes the stretches' tasks as it notes the window's (KeptPeaksBefore):
  // callgrind instructions of the 10k IterativeStep episodes nmt -6.0%, transformer -8.6% against not jumping there.
  const bool may_jump = !query;
  constexpr int32_t kChunk = int32_t{1} << sim::kChunkBits;
  int64_t jumps = 0;
  // The stretch from slot f (a task of the order) the pass may jump over: up to the first input a waiting task
  // watches, successor of a waiting task, dirty task ahead, removed task or task re-timed before the pass (-1 when
  // shorter than a chunk, or when a task of the window comes after its first task). Callgrind instructions, DeltaFixed
  // nmt, against stretches of two chunks at least: a chunk -1.7%, a quarter chunk -2.8% (the nmt episode +0.4%).
  auto stretch_end = [&](int32_t f) {
    int32_t g = slots;
    for (int32_t u : o.waited) {
      if (state[u] != kDirty) continue;  // re-timed since
      Time ready = 0;
      const int32_t p = inputs(u, f, &ready);
      if (p >= 0 && p < first_new && pos[p] >= f) g = std::min(g, pos[p]);
      const int32_t* const succ = succ_ + tg.succ_off[u];
      for (int32_t k = 0, count = tg.succ_cnt[u]; k < count; ++k)
        if (succ[k] < first_new && pos[succ[k]] >= f) g = std::min(g, pos[succ[k]]);
    }
    for (int32_t x : sc.pending)
      if (state[x] == kDirty && x < first_new && pos[x] >= f) g = std::min(g, pos[x]);
    for (int32_t x : sc.removed)
      if (pos[x] >= f) g = std::min(g, pos[x]);
    for (int32_t x : sc.processed_ahead)
      if (pos[x] >= f) g = std::min(g, pos[x]);
    if (g - f < kChunk) return -1;
    const int32_t t = slot_task[f];
    const Time ready = a.Ready(t) + shift;
    for (size_t k = o.jumps.empty() ? 0 : o.jumps.back().window_at; k < m.window.size(); ++k) {
      const Placement& q = m.window[k];
      if (q.ready > ready || (q.ready == ready && key[q.task] > key[t])) return -1;
    }
    return g;
  };
  // Jumps over [f, g): the layout moves, and each resource with tasks there takes its last one as the last task the
  // pass ran on it.
  auto jump = [&](int32_t f, int32_t g) {
    ShiftStretch(f, g, shift);
    int32_t last_task = -1;
    for (int32_t s = g - 1; last_task < 0; --s) last_task = slot_task[s];
    o.jumps.push_back({f, g, shift, m.window.size(), last_task});
    after_ = after;
    Jump(g);  // (as the merge's jumps: each resource's last task before g, its end and `after`)
    after = after_;
    for (int32_t r : sc.used_res) {
      const int32_t y = last[r];
      if (y < 0 || pos[y] < f) continue;  // no task in the stretch
      res_ready[r] = a.Ready(y);
      res_task[r] = y;
    }
    ++jumps;
  };

  int32_t f = begin, check_in = sim::kOnePassCheckFirst, check_every = sim::kOnePassCheckFirst;
  while (true) {
    // Holes, removed tasks and tasks re-timed before the pass keep their slots.
    while (f < slots && (slot_task[f] < 0 || (state[slot_task[f]] != kClean && state[slot_task[f]] != kDirty))) {
      if (slot_task[f] >= 0) last[slot_res[f]] = slot_task[f];
      ++f;
    }
    if (--check_in <= 0 && heap.empty() && ((waiting == 0 && new_pending_ == 0) || (may_jump && f < slots))) {
      check_every = std::min(2 * check_every, sim::kOnePassCheckMost);
      check_in = check_every;
      write_back();
      if (waiting == 0 && new_pending_ == 0) {
        if (max_settled_ < f && OrderedRestShifted(f)) {
          *cursor = f;
          break;
        }
      } else {
        const int32_t g = stretch_end(f);
        if (g >= 0 && StretchShifted(f, g, shift)) {
          jump(f, g);
          f = g;
          check_every = check_in = sim::kOnePassCheckFirst;
          continue;
        }
      }
    }
    if (f == slots) {
      while (!heap.empty())
        if (!retime_heap_top(f)) return undo();
      if (waiting != 0 || new_pending_ != 0) return undo();  // (inputs never re-timed: not in the order)
      write_back();
      *cursor = slots;
      break;
    }
    const int32_t c = slot_task[f];
    Time ready = 0;
    bool blocked = false;
    while ((blocked = inputs(c, f, &ready) >= 0) && !heap.empty())
      if (!retime_heap_top(f)) return undo();
    if (blocked) {
      // An input is not re-timed yet, nor can the out-of-order tasks ready now give it: c leaves the order and
      // waits with them (marked dirty, so that it no longer counts as settled).
      if (state[c] == kClean) {
        state[c] = kDirty;
        o.deferred.push_back(c);
      }
      last[slot_res[f]] = c;
      ++f;
      if (look_at(c, f) == 1) {
        ++waiting;
        o.waited.push_back(c);
      }
      continue;
    }
    while (!heap.empty() && (heap.top().ready < ready || (heap.top().ready == ready && heap.top().key < key[c])))
      if (!retime_heap_top(f)) return undo();
    // Re-timed as Retime does, where the task's slot gives its resource and previous end.
    const int32_t r = slot_res[f];
    if (!in_order(r, c, ready)) return undo();
    res_ready[r] = ready;
    res_task[r] = c;
    const Time start = std::max(ready, free[r]);
    const Time end = start + duration[c];
    const Time old_end = slot_end[f] + a.Shift(f);
    if (end != old_end) shift = end - old_end;
    cur_end[c] = end;
    state[c] = kDone;
    free[r] = end;
    processed_last[r] = f;  // (the largest slot re-timed on r: the pass's slots increase, the others are before)
    last[r] = c;
    arrival[c] = end + res_delay[r];
    m.window.push_back({c, after, ready, start, end});
    ++count;
    last_slot = f;
    ++f;
    if (waiting != 0 && watched[c] == watch) waiting += wake(c, f);
  }

  // The window's tasks between two stretches the pass jumped over must come after the first one's last task too
  // (those before its first task were checked when it jumped).
  for (size_t k = 0; k < o.jumps.size(); ++k) {
    const int32_t t = o.jumps[k].last_task;
    const Time ready = a.Ready(t);
    const size_t end = k + 1 < o.jumps.size() ? o.jumps[k + 1].window_at : m.window.size();
    for (size_t x = o.jumps[k].window_at; x < end; ++x) {
      const Placement& q = m.window[x];
      if (q.ready < ready || (q.ready == ready && key[q.task] < key[t])) {
        *cursor = begin;
        return undo();
      }
    }
  }
  m.sweep_counts.ordered_jumps += jumps;
  // The order held. As RunDense leaves them: no blocked counts but those that dirty tasks left ahead add (which
  // ResetStates clears), and the tasks the pass appended to the window in their new order.
  int32_t* const blocked = m.blocked.data();
  for (int32_t x : o.pending)
    if (state[x] == kDone)
      for (int32_t k = 0; k < tg.succ_cnt[x]; ++k) blocked[succ_[tg.succ_off[x] + k]] = 0;
  // Each resource's tasks are in order already; across resources few pairs are not: an insertion sort (in the
  // DeltaFixed changes and the 10k iterative episodes at most a few hundred moves, fewer than the tasks), which
  // hands over to a full sort (the keys are unique) if it has moved more than four times the tasks. The window's
  // parts between the stretches jumped over are sorted each on its own (they are in order with each other).
  auto before = [&](const Placement& p, const Placement& q) {
    return p.ready < q.ready || (p.ready == q.ready && key[p.task] < key[q.task]);
  };
  auto sort_part = [&](size_t lo, size_t hi) {
    int64_t moves_left = 4 * static_cast<int64_t>(hi - lo);
    for (size_t k = lo + 1; k < hi; ++k) {
      if (!before(m.window[k], m.window[k - 1])) continue;
      const Placement moving = m.window[k];
      size_t j = k;
      for (; j > lo && before(moving, m.window[j - 1]); --j) m.window[j] = m.window[j - 1];
      m.window[j] = moving;
      moves_left -= static_cast<int64_t>(k - j);
      if (moves_left < 0) {
        const auto first = m.window.begin();
        std::sort(first + static_cast<std::ptrdiff_t>(lo), first + static_cast<std::ptrdiff_t>(hi), before);
        break;
      }
    }
  };
  size_t part = window_size;
  for (const sim::OrderedScratch::Jump& j : o.jumps) {
    sort_part(part, j.window_at);
    part = j.window_at;
  }
  sort_part(part, m.window.size());
  heap.clear();
  return *cursor == slots ? Ordered::kEnd : Ordered::kShifted;
}

bool DeltaSimulator::Impl::DeltaSweep::OrderedRestShifted(int32_t f) {
  if (!ShiftedRest(f, shift_)) return false;
  // The rest keeps each resource's previous order shifted; its first task on a resource must come after the
  // last one the pass re-timed there.
  const sim::OrderedScratch& o = sc.ordered;
  for (int32_t r : sc.used_res) {
    if (o.res_task[r] < 0) continue;
    const int32_t u = NextOnResource(r);
    if (u < 0) continue;
    const Time ready = m.Ready(u) + shift_;
    if (ready < o.res_ready[r] || (ready == o.res_ready[r] && tg.key[u] < tg.key[o.res_task[r]])) return false;
  }
  return true;
}

void DeltaSimulator::Impl::DeltaSweep::UndoOrdered(size_t window_size, int64_t retimed, int32_t max_settled,
                                                   Time shift, int32_t new_pending, int32_t after) {
  // The tasks the pass re-timed or deferred were clean, or dirty and listed in the dirty list (with tasks re-timed
  // before).
  sim::OrderedScratch& o = sc.ordered;
  for (auto j = o.jumps.rbegin(); j != o.jumps.rend(); ++j) ShiftStretch(j->from, j->to, -j->shift);
  o.jumps.clear();
  after_ = after;
  for (size_t k = window_size; k < m.window.size(); ++k) m.state[m.window[k].task] = kClean;
  for (int32_t x : o.deferred) m.state[x] = kClean;
  for (int32_t x : o.pending)
    if (m.state[x] == kClean) m.state[x] = kDirty;
  m.window.resize(window_size);
  sc.pending.assign(o.pending.begin(), o.pending.end());
  sc.free.assign(o.free.begin(), o.free.end());
  sc.last.assign(o.last.begin(), o.last.end());
  sc.processed_last.assign(o.processed_last.begin(), o.processed_last.end());
  m.retimed = retimed;
  max_settled_ = max_settled;
  shift_ = shift;
  new_pending_ = new_pending;
  sc.heap.clear();
}

}  // namespace devplace

namespace devplace {

bool DeltaSimulator::Impl::DeltaSweep::StretchShifted(int32_t f, int32_t g, Time delta) {
  // No dirty task lies in the stretch (stretch_end stops before the first), and those behind it wait: none is
  // any resource's first task to check (ResourceShifted finds none of the new stamp).
  ++stamp_;
  const sim::OrderedScratch& o = sc.ordered;
  for (int32_t r : sc.used_res) {
    const int32_t u = NextOnResource(r);
    if (u < 0 || m.pos[u] >= g) continue;
    if (!ResourceShifted(r, f, delta)) {
      failed_res_ = r;
      return false;
    }
    if (o.res_task[r] < 0) continue;
    const Time ready = m.Ready(u) + delta;
    if (ready < o.res_ready[r] || (ready == o.res_ready[r] && tg.key[u] < tg.key[o.res_task[r]])) return false;
  }
  return CleanRestShifted(f, delta, g);
}

void DeltaSimulator::Impl::DeltaSweep::ShiftStretch(int32_t from, int32_t to, Time delta) {
  constexpr int32_t kChunk = int32_t{1} << sim::kChunkBits;
  auto by_slot = [&](int32_t lo, int32_t hi) {
    if (lo >= hi) return;
    for (int32_t s = lo; s < hi; ++s) {
      m.slot_ready[s] += delta;
      m.slot_start[s] += delta;
      m.slot_end[s] += delta;
    }
    m.TouchChunk(lo >> sim::kChunkBits);  // (its least ready time changed)
    m.TouchChunk((hi - 1) >> sim::kChunkBits);
  };
  const int32_t first_whole = (from + kChunk - 1) / kChunk * kChunk, last_whole = to / kChunk * kChunk;
  if (first_whole >= last_whole) {
    by_slot(from, to);
    return;
  }
  by_slot(from, first_whole);
  for (int32_t c = first_whole >> sim::kChunkBits; c < (last_whole >> sim::kChunkBits); ++c) m.chunk_shift[c] += delta;
  by_slot(last_whole, to);
}

}  // namespace devplace
