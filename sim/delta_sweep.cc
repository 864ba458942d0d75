// The delta simulator's merged sweep (step 7 of a change, see delta_sweep.h): stream A, the previous order from
// the first slot the change reaches, and stream B, the heap of dirty tasks, merged in (ready, key) order, with
// jumps over stretches that can only pass unchanged and the check for a shifted rest (delta.cc's opening comment).
#include <algorithm>

#include "sim/delta_sweep.h"

namespace devplace {

using sim::DeltaItem;
using sim::kChunkBits;
using sim::kClean;
using sim::kDirty;
using sim::kDone;
using sim::Time;

namespace {
// GoesDense's rule, measured with callgrind on DeltaFixed (bench/sim_bench.cc) and whole iterative episodes
// (bench/env_bench.cc): it is first asked when this many tasks are re-timed, then each time the count grows by a
// quarter, and answers yes when the tasks re-timed so far are at least 1/kDenseOfPassed of the slots the cursor
// has passed since the sweep began (the change reaches much of what it passes).
constexpr int64_t kDenseFirstCheck = 256;
constexpr int64_t kDenseOfPassed = 6;
}  // namespace

// The sweep's per-task steps: they run for every task the change reaches.
void DeltaSimulator::Impl::DeltaSweep::MarkDirty(int32_t x) {
  heap_changed_ = true;
  m.state[x] = kDirty;
  sc.pending.push_back(x);
  // (The successor count and list, and the counts, through locals read once: the compiler cannot tell the
  // increments from the count and the offsets, and would read those again after each.)
  const int32_t* const succ = succ_ + tg.succ_off[x];
  int32_t* const blocked = m.blocked.data();
  for (int32_t k = 0, n = tg.succ_cnt[x]; k < n; ++k) ++blocked[succ[k]];
}

void DeltaSimulator::Impl::DeltaSweep::Push(int32_t x) {
  Time ready = 0;
  for (int32_t k = 0; k < tg.pred_cnt[x]; ++k) {
    const int32_t p = pred_[tg.pred_off[x] + k];
    ready = std::max(ready, EndNow(p) + tg.resource_delay[tg.resource[p]]);
  }
  PushAt(x, ready);
}

void DeltaSimulator::Impl::DeltaSweep::PushAt(int32_t x, Time ready) {
  m.version[x] = m.next_version++;
  sc.heap.push({ready, tg.key[x], x, m.version[x]});
  heap_changed_ = true;
}

DeltaSimulator::Impl::DeltaSweep::Arrays DeltaSimulator::Impl::DeltaSweep::LoadArrays() const {
  return {tg.resource.data(), tg.duration.data(), tg.resource_delay.data(), m.pos.data(),
          m.bind_pred.data(),  m.slot_ready.data(), m.slot_end.data(),         m.chunk_shift.data(),
          m.state.data(),      m.cur_end.data(),    sc.free.data(),            sc.processed_last.data()};
}

void DeltaSimulator::Impl::DeltaSweep::Process(const Arrays& a, int32_t x, Time ready, int32_t i) {
  heap_changed_ = true;
  const Retimed rt = Retime(a, x, ready);
  if (!rt.is_new && a.pos[x] >= i) sc.processed_ahead.push_back(x);
  const int32_t* const succ = succ_ + tg.succ_off[x];  // (with the count, read once: see MarkDirty)
  for (int32_t k = 0, n = tg.succ_cnt[x]; k < n; ++k) {
    const int32_t s = succ[k];
    if (Reaches(a, rt, x, s)) MarkDirty(s);
    if (--m.blocked[s] == 0 && a.state[s] == kDirty) {
      if (tg.pred_cnt[s] == 1) PushAt(s, rt.arrival);  // x is its only input (most hop tasks)
      else Push(s);
    }
  }
}

void DeltaSimulator::Impl::DeltaSweep::Sweep() {
  StartSweep();
  ++m.sweep_counts.sweeps;
  shifted_ = RunSweep();
  if (shifted_) TakeShiftedRest();
}

void DeltaSimulator::Impl::DeltaSweep::StartSweep() {
  // The resources that run tasks (the others need no checks), and their state at `begin`.
  std::vector<int32_t>& used_res = sc.used_res;
  std::vector<uint8_t>& used = sc.used;
  used.resize(static_cast<size_t>(tg.num_resources));
  for (int32_t r = 0; r < tg.num_resources; ++r) used[r] = m.res_first[r] >= 0;
  for (int32_t t = first_new_; t < num_tasks_; ++t) used[tg.resource[t]] = 1;
  for (int32_t r = 0; r < tg.num_resources; ++r)
    if (used[r]) used_res.push_back(r);
  m.LoadResourceState(begin_, used_res, &sc.free, &sc.last);
  m.window.clear();
  after_ = begin_;
  sc.processed_last.assign(static_cast<size_t>(tg.num_resources), -1);
  new_pending_ = num_tasks_ - first_new_;
  next_dense_check_ = kDenseFirstCheck;
  succ_ = tg.succ_pool.data();
  pred_ = tg.pred_pool.data();
  sc.pending_first.assign(static_cast<size_t>(tg.num_resources), -1);
  sc.pending_stamp.assign(static_cast<size_t>(tg.num_resources), 0);
  failed_res_ = used_res.empty() ? -1 : used_res[0];
  sc.ordered.jumps.clear();  // (JumpedBy reads them in every shift check)
  for (int32_t t : sc.seeds)
    if (m.state[t] == kClean) MarkDirty(t);
  for (int32_t t : sc.seeds)
    if (m.blocked[t] == 0) Push(t);
}

bool DeltaSimulator::Impl::DeltaSweep::RunSweep() {
  // Stream A is the order from the cursor i on (slots, skipping holes); times of tasks not yet re-timed are their
  // previous ones (Ready/Start/End), of re-timed ones (state kDone) in cur_*.
  const std::vector<int32_t>& slot_task = m.slot_task;
  const std::vector<int32_t>& slot_res = m.slot_res;
  std::vector<sim::TaskState>& state = m.state;
  std::vector<Time>& free = sc.free;
  std::vector<int32_t>& last = sc.last;
  sim::QuadHeap<DeltaItem>& heap = sc.heap;
  const Arrays a = LoadArrays();
  const int32_t slots = slots_;
  int32_t i = begin_;
  int32_t since_check = 0, check_every = 16;
  // Whether to check for a shifted rest at the next step. Besides the periodic checks (with the jumps), a change
  // often becomes a shift of the rest right at the start, after a jump, after the cursor passes tasks that are not
  // clean, or after a task is re-timed for a resource conflict, and may stop being one a few steps later.
  bool check_now = true;
  // Event-triggered checks: the sweep steps since the last check, and how many must pass before the next
  // (kMostStepsBetweenEventChecks).
  int32_t steps_since_check = 0, steps_between_event_checks = 0;
  bool shifted = false;
  while (true) {
    while (i < slots && (slot_task[i] < 0 || state[slot_task[i]] != kClean)) {
      if (slot_task[i] >= 0) {
        last[slot_res[i]] = slot_task[i];
        check_now = true;
      }
      ++i;
    }
    while (heap_changed_ && !heap.empty()) {
      const DeltaItem& top = heap.top();
      if (top.version == m.version[top.task] && state[top.task] == kDirty && m.blocked[top.task] == 0) break;
      heap.pop();
    }
    heap_changed_ = false;
    const bool has_a = i < slots;
    if (!has_a && heap.empty()) break;
    if (m.retimed >= next_dense_check_) {
      next_dense_check_ = m.retimed + m.retimed / 4;
      if (GoesDense(i)) {
        ++m.sweep_counts.dense;
        // The ordered pass first, then the plain loop where it fails. Session 53 skipped the pass for the large
        // change after a failed one (a failed pass is wasted work: on layered graphs half the large changes reorder
        // a resource's queue, found about half way through); since the pass jumps over the stretches that only
        // move, trying it every time changes the callgrind instructions of DeltaFixed by -0.3% / +0.2% / -6.6%
        // (layered / nmt / transformer) and of the 10k nmt IterativeStep episode by -2.0%.
        const Ordered ordered = RunOrdered(&i);
        if (ordered == Ordered::kReordered) {
          shifted = RunDense(&i);
        } else {
          ++m.sweep_counts.ordered;
          shifted = ordered == Ordered::kShifted;
        }
        m.sweep_counts.dense_stopped += shifted;
        break;
      }
    }
    const bool periodic = ++since_check >= check_every;
    ++steps_since_check;
    const bool event_due = check_now && steps_since_check >= steps_between_event_checks;
    if ((event_due || periodic) && new_pending_ == 0 && max_settled_ < i) {
      check_now = false;
      steps_since_check = 0;
      if (ShiftedRest(i, shift_)) {
        shifted = true;
        break;
      }
      steps_between_event_checks = std::min(2 * steps_between_event_checks + 1, sim::kMostStepsBetweenEventChecks);
    }
    if (periodic) {
      since_check = 0;
      check_every = std::min(2 * check_every, 1 << 20);
      if (const int32_t j = JumpTarget(i); j > i) {
        Jump(j);
        i = j;
        check_every = 16;
        check_now = true;
        continue;
      }
    }
    const int32_t c = has_a ? slot_task[i] : -1;
    const Time shift_c = has_a ? m.Shift(i) : 0;  // c's times: stored + the shift of its slot's chunk
    const Time ready = has_a ? m.slot_ready[i] + shift_c : 0;
    if (!heap.empty()) {
      const DeltaItem& top = heap.top();
      if (!has_a || top.ready < ready || (top.ready == ready && top.key < tg.key[c])) {
        const DeltaItem item = top;
        heap.pop();
        heap_changed_ = true;
        Process(a, item.task, item.ready, i);
        continue;
      }
    }
    const int32_t r = slot_res[i];
    last[r] = c;
    if (m.blocked[c] > 0) {
      ++i;
      MarkDirty(c);  // a predecessor is re-timed after c's old ready time, so c moves later
      continue;
    }
    if (std::max(ready, free[r]) != m.slot_start[i] + shift_c) {
      ++i;
      MarkDirty(c);
      Process(a, c, ready, i);
      check_now = true;
      continue;
    }
    free[r] = m.slot_end[i] + shift_c;
    ++i;
    after_ = i;  // c passes unchanged and keeps its slot
  }
  cursor_ = i;
  return shifted;
}

bool DeltaSimulator::Impl::DeltaSweep::GoesDense(int32_t i) const {
  // The tasks from the cursor on, estimated from the share of slots that hold one. Fewer than a merged layout
  // takes would be placed one by one (Finish), which costs more per task than the merge a sweep this large gets.
  const int64_t rest = static_cast<int64_t>(slots_ - i) * m.placed / std::max(1, slots_);
  return rest >= std::max<int64_t>(m.placed / sim::kMergeDivisor, sim::kRelayoutMinSlots) &&
         m.retimed * kDenseOfPassed >= i - begin_;
}

bool DeltaSimulator::Impl::DeltaSweep::RunDense(int32_t* cursor) {
  // Each unsettled task waits for its unsettled predecessors (counted in m.blocked) and starts from the latest
  // arrival of its settled ones; a task's successors are all unsettled (a settled task's inputs are settled).
  const int32_t i = *cursor;
  // The per-task and per-slot arrays through pointers kept in locals (Arrays says why). None is resized here.
  const Arrays a = LoadArrays();
  const int32_t* const pos = a.pos;
  const int32_t* const slot_task = m.slot_task.data();
  sim::TaskState* const state = a.state;
  const uint64_t* const key = tg.key.data();
  const int32_t slots = slots_;
  int32_t* const blocked = m.blocked.data();
  Time* const dense_ready = m.dense_ready.data();
  const int32_t* const pred_cnt = tg.pred_cnt.data();
  const int32_t* const pred_off = tg.pred_off.data();
  const int32_t* const succ_cnt = tg.succ_cnt.data();
  const int32_t* const succ_off = tg.succ_off.data();
  sim::QuadHeap<DeltaItem>& heap = sc.heap;
  std::vector<int32_t>& pending = sc.pending;
  std::vector<int32_t>& waiting = sc.dense_waiting;
  // Room for every task at once, with room to spare (so that dense runs of varying reach settle on one size).
  const size_t n = static_cast<size_t>(num_tasks_);
  if (heap.capacity() < n) heap.reserve(2 * n);
  if (m.window.capacity() < m.window.size() + n) m.window.reserve(m.window.size() + 2 * n);
  waiting.clear();
  for (std::vector<int32_t>* v : {&pending, &waiting})
    if (v->capacity() < v->size() + n) v->reserve(v->size() + 2 * n);
  // The full run's ready queue (it keeps a task that becomes ready before everything queued, as the next hop of
  // a transfer usually does, out of the heap), ordered by (ready, key).
  sim::TieBreakKeys keys{key};
  sim::ReadyQueue<sim::TieBreakKeys> queue(heap, keys);
  // A task enters the loop (its unsettled inputs counted, its settled ones' latest arrival noted, queued when
  // there are none) when one of its inputs is re-timed here, or, for a clean task that none has reached, when the
  // loop comes to its slot: its inputs are then all settled as before, so its ready time is the previous one, and
  // it enters before anything later in (ready, key) order leaves the queue. The dirty tasks enter at once.
  // So a loop that stops at a shifted rest has not looked at the tasks beyond it.
  const uint32_t run = m.NextDenseRun();
  uint32_t* const entered = m.dense_entered.data();
  auto unsettled = [&](int32_t t) { return state[t] == kDirty || (state[t] == kClean && pos[t] >= i); };
  // `from`: the task being re-timed whose successor u is (counted as unsettled: the caller then counts it off for
  // each of its entries in u's list), or -1. A task that waits is listed, so that a stop at a shifted rest can
  // clear the counts of those still waiting. (Always inlined: GCC called it once the list was added, and the
  // DeltaFixed changes took 1.7-2.2% more instructions.)
  auto enter = [&](int32_t u, int32_t from) __attribute__((always_inline)) {
    entered[u] = run;
    int32_t waits = 0;
    Time ready = 0;
    for (int32_t k = 0; k < pred_cnt[u]; ++k) {
      const int32_t p = pred_[pred_off[u] + k];
      if (p == from || unsettled(p)) ++waits;
      else ready = std::max(ready, a.EndNow(p) + a.res_delay[a.resource[p]]);
    }
    blocked[u] = waits;
    dense_ready[u] = ready;
    if (waits == 0) queue.Push(ready, ready, u);
    else waiting.push_back(u);
  };
  for (int32_t x : pending)
    if (state[x] == kDirty) enter(x, -1);
  // The tasks are re-timed as the merge's are (Retime, and Reaches for the clean successors that become dirty),
  // so that the merge's shifted-rest check applies: whenever the re-timed old tasks are exactly those before the
  // first unsettled slot d, and no new task is left, every so often.
  const int32_t* const slot_res = m.slot_res.data();
  int32_t* const last = sc.last.data();
  int32_t d = i, since_check = 0, check_every = sim::kOnePassCheckFirst;
  // The slots before f have been looked at; f's task (when f < slots) is clean and had not entered when f came
  // to it, and enters once the queue's first entry no longer comes before its (ready, key).
  int32_t f = i - 1;
  Time f_ready = 0;
  uint64_t f_key = 0;
  auto next_slot = [&] {
    for (++f; f < slots; ++f) {
      const int32_t t = slot_task[f];
      if (t < 0 || state[t] != kClean || entered[t] == run) continue;
      f_ready = a.slot_ready[f] + a.Shift(f);
      f_key = key[t];
      return;
    }
  };
  next_slot();
  while (true) {
    while (f < slots) {
      const DeltaItem* top = queue.Peek();
      if (top && (top->ready < f_ready || (top->ready == f_ready && top->key < f_key))) break;
      const int32_t t = slot_task[f];
      if (state[t] == kClean && entered[t] != run) enter(t, -1);  // else it entered after f came to it
      next_slot();
    }
    if (queue.empty()) break;
    const DeltaItem item = queue.Pop();
    const int32_t x = item.task;
    const Retimed rt = Retime(a, x, item.ready);
    const int32_t* const succ = succ_ + succ_off[x];  // (with the count, read once: see MarkDirty)
    for (int32_t k = 0, n = succ_cnt[x]; k < n; ++k) {
      const int32_t s = succ[k];
      if (Reaches(a, rt, x, s)) {  // dirty, as MarkDirty makes it, without the counts (enter counts for the loop)
        state[s] = kDirty;
        pending.push_back(s);
      }
      if (entered[s] != run) {
        if (pred_cnt[s] == 1) {
          // x is its only input (most hop tasks): it enters ready at x's arrival with nothing left to wait for
          // (its count may still hold the merge's mark of x as dirty).
          entered[s] = run;
          blocked[s] = 0;
          queue.Push(item.ready, rt.arrival, s);
          continue;
        }
        enter(s, x);
      }
      dense_ready[s] = std::max(dense_ready[s], rt.arrival);
      if (--blocked[s] == 0) queue.Push(item.ready, dense_ready[s], s);
    }
    if (new_pending_ > 0 || ++since_check < check_every) continue;
    since_check = 0;
    while (d < slots && (slot_task[d] < 0 || (state[slot_task[d]] != kClean && state[slot_task[d]] != kDirty))) {
      if (slot_task[d] >= 0) last[slot_res[d]] = slot_task[d];
      ++d;
    }
    if (max_settled_ >= d) continue;
    if (ShiftedRest(d, shift_)) {
      // The tasks left keep their previous order and times + shift; their counts of unsettled inputs go (a
      // re-timed task's count is 0 already, and a dirty task's left behind only counts dirty inputs, which
      // ResetStates clears too). The re-timed tasks come before them.
      for (int32_t u : waiting) blocked[u] = 0;
      *cursor = d;
      return true;
    }
    check_every = std::min(2 * check_every, sim::kOnePassCheckMost);
  }
  new_pending_ = 0;
  *cursor = slots;
  return false;
}

void DeltaSimulator::Impl::DeltaSweep::TakeShiftedRest() {
  // The unsettled tasks keep their previous order and times + shift: the dirty ones behind the cursor first (by
  // previous slot), then the order from the cursor on (nothing there is settled), which stays in place. The shift
  // check that stopped the sweep left exactly the dirty tasks in `pending` (every task marked dirty is listed there,
  // and the check drops those since re-timed).
  const std::vector<int32_t>& pos = m.pos;
  std::vector<int32_t>& behind = sc.behind;
  behind.clear();
  for (int32_t x : sc.pending) {
    if (pos[x] < cursor_) behind.push_back(x);
    else sc.reindex.push_back(x);  // their predecessors moved
  }
  std::sort(behind.begin(), behind.end(), [&](int32_t a, int32_t b) { return pos[a] < pos[b]; });
  for (int32_t x : behind) {
    const Time end = m.End(x) + shift_;
    m.cur_end[x] = end;
    m.window.push_back({x, after_, m.Ready(x) + shift_, m.Start(x) + shift_, end});
  }
}

bool DeltaSimulator::Impl::DeltaSweep::ReadyMatches(int32_t u, int32_t i, Time delta) const {
  Time ready = 0;
  for (int32_t k = 0; k < tg.pred_cnt[u]; ++k) {
    const int32_t p = pred_[tg.pred_off[u] + k];
    const Time arrival = EndNow(p) + tg.resource_delay[tg.resource[p]];
    ready = std::max(ready, Settled(p, i) ? arrival : arrival + delta);
  }
  return ready == m.Ready(u) + delta;
}

bool DeltaSimulator::Impl::DeltaSweep::ShiftedRest(int32_t i, Time delta) {
  if (new_pending_ > 0 || max_settled_ >= i) return false;
  // Each resource's earliest dirty task, for ResourceShifted; the tasks since re-timed leave the pending list.
  ++stamp_;
  std::vector<int32_t>& pending = sc.pending;
  size_t kept = 0;
  for (int32_t x : pending) {
    if (m.state[x] != kDirty) continue;
    pending[kept++] = x;
    const int32_t r = tg.resource[x];
    if (sc.pending_stamp[r] != stamp_ || m.pos[x] < m.pos[sc.pending_first[r]]) {
      sc.pending_stamp[r] = stamp_;
      sc.pending_first[r] = x;
    }
  }
  pending.resize(kept);
  // A resource that failed the last check usually fails this one too: try it first, and so with the dirty task
  // that did. Then the dirty tasks' ready times, before the other resources: in the 10k IterativeStep episodes (nmt
  // and transformer) they failed 32,000 checks and the resources 15,000, and the few pending tasks cost less than
  // a pass over 20-30 resources.
  if (failed_res_ >= 0 && !ResourceShifted(failed_res_, i, delta)) return false;
  if (failed_pending_ >= 0 && m.state[failed_pending_] == kDirty && !ReadyMatches(failed_pending_, i, delta))
    return false;
  for (int32_t x : pending) {
    if (!ReadyMatches(x, i, delta)) {
      failed_pending_ = x;
      return false;
    }
  }
  for (int32_t r : sc.used_res) {
    if (r != failed_res_ && !ResourceShifted(r, i, delta)) {
      failed_res_ = r;
      return false;
    }
  }
  if (delta == 0) return true;  // clean tasks' ready times are unchanged (see Process)
  return CleanRestShifted(i, delta, slots_);
}

bool DeltaSimulator::Impl::DeltaSweep::ResourceShifted(int32_t r, int32_t i, Time delta) const {
  const std::vector<int32_t>& pos = m.pos;
  int32_t u = NextOnResource(r);
  if (sc.pending_stamp[r] == stamp_ && (u < 0 || pos[sc.pending_first[r]] < pos[u])) u = sc.pending_first[r];
  if (u < 0) return true;
  // Nothing on r re-timed from u's previous slot on, and everything after u on r before slot i unsettled.
  if (sc.processed_last[r] > pos[u]) return false;
  for (int32_t x = u; x >= 0 && pos[x] < i; x = m.res_next[x])
    if (m.state[x] != kDirty) return false;
  // (u's previous task on r is settled; if the ordered pass jumped over it, its layout times have moved.)
  const int32_t p = m.run.timing.res_prev[u];
  const Time prev_end = p >= 0 ? m.End(p) - JumpedBy(pos[p]) : 0;
  const bool same = sc.free[r] == prev_end + delta;
  const bool idle = prev_end <= m.Ready(u) && sc.free[r] <= m.Ready(u) + delta;
  return same || idle;
}

bool DeltaSimulator::Impl::DeltaSweep::CleanRestShifted(int32_t i, Time delta, int32_t end) {
  // Clean tasks from i on with a predecessor before i (or none): their ready time must move by delta too.
  // Their binding predecessor (ties bind to the later slot) decides most cases without looking further: a
  // settled one before i that was not re-timed keeps its arrival, which was the old ready time, so the task
  // cannot move by delta; one from i on moves by delta, which is enough when delta > 0, and when delta < 0 if
  // nothing settled arrives later than the old ready time + delta (bounded by `latest`, the latest settled
  // arrival). Otherwise check exactly. Chunks whose tasks all pass are skipped.
  Time latest = 0;
  if (delta < 0)
    for (int32_t r : sc.used_res) latest = std::max(latest, sc.free[r] + tg.resource_delay[r]);
  // The task that failed the last scan usually fails this one too (the scan would stop there or earlier).
  if (failed_task_ >= 0 && m.pos[failed_task_] >= i && TaskFails(failed_task_, i, delta, latest)) return false;
  for (int32_t k = i; k < end;) {
    if ((k & ((1 << kChunkBits) - 1)) == 0) {
      const int32_t c = k >> kChunkBits;
      if (m.chunk_stale[c]) m.RefreshChunk(c);
      if (m.chunk_min_pred[c] >= i ||
          (m.chunk_min_bind[c] >= i && (delta > 0 || m.chunk_min_ready[c] + m.chunk_shift[c] + delta >= latest))) {
        k += 1 << kChunkBits;
        continue;
      }
    }
    const int32_t t = m.slot_task[k++];
    if (t >= 0 && TaskFails(t, i, delta, latest)) {
      failed_task_ = t;
      return false;
    }
  }
  return true;
}

bool DeltaSimulator::Impl::DeltaSweep::TaskFails(int32_t t, int32_t i, Time delta, Time latest) const {
  if (m.SlotOf(m.min_pred[t]) >= i || m.state[t] != kClean) return false;
  const int32_t b = m.bind_pred[t];
  // (A clean one the ordered pass jumped over moved with its stretch.)
  if (m.SlotOf(b) < i)
    return b < 0 || (m.state[b] == kClean && JumpedBy(m.pos[b]) == 0) || !ReadyMatches(t, i, delta);
  return delta < 0 && m.Ready(t) + delta < latest && !ReadyMatches(t, i, delta);
}

int32_t DeltaSimulator::Impl::DeltaSweep::JumpTarget(int32_t i) {
  // The first task that is not clean (dirty, re-timed from a later slot, or removed) or that a dirty task blocks,
  // the first task the heap's top comes before (every task still to be timed comes after it: each is in the heap
  // or waits for one that is), and on each resource the first task at or after i unless it finds its resource
  // free as before. Every clean task before that point passes unchanged (its inputs and, from the first task on
  // each resource on, its resource are as before), so the sweep can jump there.
  const std::vector<int32_t>& pos = m.pos;
  int32_t j = slots_;
  std::vector<int32_t>& pending = sc.pending;
  size_t kept = 0;
  for (int32_t x : pending) {
    if (m.state[x] != kDirty) continue;
    pending[kept++] = x;
    // A clean successor comes after x in the order, so only those of a dirty task behind the cursor (or new) can
    // come before it.
    if (pos[x] >= i) {
      j = std::min(j, pos[x]);
      continue;
    }
    for (int32_t k = 0; k < tg.succ_cnt[x]; ++k) {
      const int32_t y = succ_[tg.succ_off[x] + k];
      if (m.state[y] == kClean && pos[y] >= i) j = std::min(j, pos[y]);
    }
  }
  pending.resize(kept);
  for (int32_t x : sc.removed)
    if (pos[x] >= i) j = std::min(j, pos[x]);
  // Old tasks re-timed while ahead of the cursor; those it has passed leave the list.
  std::vector<int32_t>& processed_ahead = sc.processed_ahead;
  kept = 0;
  for (int32_t x : processed_ahead) {
    if (pos[x] < i) continue;
    processed_ahead[kept++] = x;
    j = std::min(j, pos[x]);
  }
  processed_ahead.resize(kept);
  if (!sc.heap.empty()) j = FirstAfterHeapTop(i, j);
  if (j - i < 2 * (1 << kChunkBits)) return -1;  // not worth it
  for (int32_t r : sc.used_res) {
    const int32_t u = NextOnResource(r);
    if (u >= 0 && pos[u] < j && std::max(m.Ready(u), sc.free[r]) != m.Start(u)) j = pos[u];
  }
  return j;
}

int32_t DeltaSimulator::Impl::DeltaSweep::FirstAfterHeapTop(int32_t i, int32_t j) const {
  const DeltaItem& top = sc.heap.top();
  int32_t lo = i, hi = j;
  while (lo < hi) {
    int32_t mid = lo + (hi - lo) / 2;
    while (mid < hi && m.slot_task[mid] < 0) ++mid;
    if (mid == hi) {
      hi = lo + (hi - lo) / 2;
      continue;
    }
    const int32_t c = m.slot_task[mid];
    const Time ready_c = m.slot_ready[mid] + m.Shift(mid);
    if (top.ready < ready_c || (top.ready == ready_c && top.key < tg.key[c])) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

void DeltaSimulator::Impl::DeltaSweep::Jump(int32_t j) {
  // Only resources with a task in [cursor, j) change; their last task before j is found in their slot lists.
  for (int32_t r : sc.used_res) {
    const int32_t x = NextOnResource(r);
    if (x < 0 || m.pos[x] >= j) continue;
    const sim::SlotList& v = m.res_slots[r];
    const int32_t y = m.slot_task[*(std::lower_bound(v.begin(), v.end(), j) - 1)];
    sc.last[r] = y;
    sc.free[r] = m.End(y);
    after_ = std::max(after_, m.pos[y] + 1);
  }
}

}  // namespace devplace
