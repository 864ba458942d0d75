// One change's run through DeltaSimulator::Impl::Apply (internal to sim/): the steps that rebuild the changed
// groups (delta.cc) and the merged sweep that re-times what the change reaches (delta_sweep.cc), with the state
// they share. delta.cc's opening comment describes the algorithm.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "sim/delta_impl.h"

namespace devplace {

// Lives for one Apply call. It owns only that call's state: the scalars below and the changed ops' previous
// configs. It borrows the simulator `m` (task graph, strategy, layout, per-task states and the window it fills)
// and the lists in m.scratch (`sc`), which stay with the simulator so that they are not allocated again for
// every change. The steps run in the order they are declared, each after the one before it; each says what it
// leaves for the next.
class DeltaSimulator::Impl::DeltaSweep {
 public:
  DeltaSweep(Impl& m, bool query) : m(m), sc(m.scratch), tg(m.run.tg), query(query) {}

  // 1. Collect changes: clears the scratch lists and puts the ops whose config `changes` alters in sc.ops
  // (sorted, unique). Returns false when there are none (nothing else is touched). Otherwise writes the new
  // configs into the strategy (the old ones kept for old_configs()), moves the ops' static memory in
  // run.static_bytes from the old configs to the new (per device in sc.old_static / sc.new_static), and for a
  // query saves the totals in m.undo.
  bool CollectChanges(std::span<const std::pair<OpId, OpConfig>> changes);
  // 2. Group: the edges of the changed ops and the edges that may carry a shared transfer a changed consumer
  // joins or leaves (sc.edges), the consumers of their outputs (sc.consumers), and the groups to rebuild, ops
  // first (sc.rebuilt_groups).
  void FindGroups();
  // 3. Remove old tasks: the rebuilt groups' tasks die (sc.removed) and leave the totals.
  void RemoveOldTasks();
  // 4. Build new groups: appends the rebuilt groups' new tasks [first_new, num_tasks), adds them to the totals
  // and sizes the per-task arrays. When the new schedule could run past the horizon, puts the previous strategy
  // back (a query by rolling back, a made change by a full rebuild) and returns the error.
  Status BuildNewGroups();
  // 5. Patch adjacency: builds the new tasks' successor and predecessor lists from the rebuilt groups'
  // dependencies, and patches the lists of surviving tasks that named a removed task or gain a dependency
  // (a query saves them in m.undo first). sc.reindex gets every task whose predecessor list changed.
  void PatchAdjacency();
  // 6. Seed: the tasks the sweep starts from (sc.seeds: new tasks and the consumers' compute tasks), the removed
  // tasks marked kRemoved, and the first slot the sweep must look at (begin).
  void Seed();
  // 7. Sweep: re-times what the change reaches, filling m.window with the re-timed tasks in their new order,
  // and stops at the end of the order or where the rest is provably the previous schedule shifted (then the
  // dirty tasks behind the cursor join the window with their shifted times). Afterwards begin(), cut(),
  // rest_shift() and the resource state give what Finish or the query's step needs.
  void Sweep();

  int32_t begin() const { return begin_; }
  // The first slot of the part of the order that keeps its slots and moves by rest_shift() (all slots: none).
  int32_t cut() const { return shifted_ ? cursor_ : slots_; }
  sim::Time rest_shift() const { return shifted_ ? shift_ : 0; }
  // Each resource's last task before cut() in the order before the change (-1: none), when a rest moves (else
  // null).
  const std::vector<int32_t>* last_before_cut() const { return shifted_ ? &sc.last : nullptr; }
  // The step a query reads from the finished sweep (before the tasks' states are reset).
  sim::Time QueryStep() const { return m.QueryStep(sc.free, shifted_, cursor_, shift_); }
  std::span<const std::pair<OpId, OpConfig>> old_configs() const { return sc.old_configs.view(); }

 private:
  // Sweep's parts. StartSweep sets the resource state at `begin` and marks and queues the seeds; RunSweep merges
  // the two streams up to the end or a shifted rest (returns whether it found one) and leaves the cursor in
  // cursor_; TakeShiftedRest appends the dirty tasks behind the cursor, shifted, to the window.
  void StartSweep();
  // FindGroups' part for in-edge `edge` of a changed op whose config was `old_config`: when its producer (an
  // unchanged forward op) shares transfers, adds the edges that may carry the transfer of its tensor to a device
  // the consumer used or uses (before or after the change: the smallest edge to a plain consumer there, every edge
  // to a partitioned one there) and their consumers.
  void AddSharers(int32_t edge, const OpConfig& old_config);
  bool RunSweep();
  void TakeShiftedRest();
  // Whether the sweep, with its cursor at slot i, has re-timed so large a share of what it passed that re-timing
  // what is still unsettled with a plain event loop (RunDense) is likely cheaper than merging on: the merge
  // re-times a task at two to three times the loop's cost (the rule and its measurement: delta_sweep.cc). RunSweep
  // asks it as the re-timed count grows.
  bool GoesDense(int32_t i) const;
  // Re-times the unsettled tasks (dirty, or clean at slot >= *cursor) with a plain event loop over them, as a full
  // run would from the sweep's state at that slot (each resource free at sc.free, the settled tasks' ends final),
  // and appends them to the window in their new order, after the last task passed unchanged. Stops early where
  // the rest is the previous schedule shifted (returns true; *cursor: the first unsettled slot), else at the end
  // (false; *cursor: the slot count). Leaves every blocked count zero, and the sweep's state as RunSweep's loop
  // leaves it at the same point.
  bool RunDense(int32_t* cursor);
  // How RunOrdered ended: at a shifted rest, at the end of the order, or where the order does not hold (then
  // nothing it did is left).
  enum class Ordered { kShifted, kEnd, kReordered };
  // Re-times what RunDense would, from the same state, without a ready queue: the tasks of the previous order
  // from *cursor on, each at its slot, with the out-of-order ones (new, or dirty behind the cursor) merged in by
  // (ready, key) once their inputs are re-timed. Where every resource's tasks leave it in increasing (ready, key)
  // order, as a full run dequeues them, that is the full run's schedule; the window is then sorted into the new
  // order and the sweep's state left as RunDense leaves it (cursor and outcome likewise). Otherwise the first
  // resource found out of order stops the pass, which puts back the sweep's state and window as it found them
  // (delta_ordered.cc).
  Ordered RunOrdered(int32_t* cursor);

  // Task x becomes dirty: it blocks its successors until it is re-timed.
  void MarkDirty(int32_t x);
  // Queues dirty task x (no longer blocked) in the heap by its new ready time; PushAt with that time given.
  void Push(int32_t x);
  void PushAt(int32_t x, sim::Time ready);
  // What Retime tells about a re-timed task: when its output arrives at its successors, whether its end moved
  // (always for a new task), and whether it is new.
  struct Retimed {
    sim::Time arrival;
    bool end_changed;
    bool is_new;
  };
  // The arrays Retime and Reaches read and write, as plain pointers for the loops to keep in locals: the loops push
  // onto vectors (the window, the pending list, the heap), after which the compiler reloads whatever is read
  // through m, sc or tg (a vector's data pointer, and the reference to the vector's owner). None of them is
  // resized during a sweep, so a copy taken when the sweep starts stays valid to its end.
  struct Arrays {
    const int32_t* resource;       // tg's, per task
    const sim::Time* duration;     // tg's, per task
    const sim::Time* res_delay;    // tg's, per resource
    const int32_t* pos;            // m's, per task
    const int32_t* bind_pred;      // m's, per task
    const sim::Time* slot_ready;   // m's, per slot
    const sim::Time* slot_end;     // m's, per slot
    const sim::Time* chunk_shift;  // m's, per chunk
    sim::TaskState* state;         // m's, per task
    sim::Time* cur_end;            // m's, per task
    sim::Time* free;               // sc's, per resource
    int32_t* processed_last;       // sc's, per resource
    // As Impl's Shift, Ready and End, and DeltaSweep's EndNow.
    sim::Time Shift(int32_t slot) const { return chunk_shift[slot >> sim::kChunkBits]; }
    sim::Time Ready(int32_t t) const { return slot_ready[pos[t]] + Shift(pos[t]); }
    sim::Time End(int32_t t) const { return slot_end[pos[t]] + Shift(pos[t]); }
    sim::Time EndNow(int32_t t) const { return state[t] == sim::kDone ? cur_end[t] : End(t); }
  };
  // The arrays as they stand (after StartSweep has sized the per-resource ones).
  Arrays LoadArrays() const;
  // Re-times task x, ready at `ready`, as both loops do: takes its resource (sc.free), records its new end and
  // window entry (after after_), marks it done, and updates the counts and bounds the shifted-rest check reads.
  [[gnu::always_inline]] Retimed Retime(const Arrays& a, int32_t x, sim::Time ready);
  // RunOrdered's parts: whether the rest from slot f on is the previous schedule shifted, each resource's tasks
  // there coming after its last one re-timed; puts the state back as the pass found it.
  bool OrderedRestShifted(int32_t f);
  void UndoOrdered(size_t window_size, int64_t retimed, int32_t max_settled, sim::Time shift, int32_t new_pending,
                   int32_t after);
  // RunOrdered's jumps. Whether the stretch [f, g) of the order (clean tasks and holes only, none of them an input
  // the waiting tasks watch or a successor of one) runs exactly `delta` later, each resource's first task there
  // after the last one the pass re-timed there: the checks of ShiftedRest on the stretch alone. Every task outside
  // the settled ones and the stretch comes later on its resource (the pass's order check) and feeds no task of the
  // stretch, so the stretch's times do not depend on them.
  bool StretchShifted(int32_t f, int32_t g, sim::Time delta);
  // Moves the layout's slots [from, to) by delta (whole chunks by their shift), so that the stretch's tasks read
  // as settled with their new times; the same call with -delta puts them back.
  void ShiftStretch(int32_t from, int32_t to, sim::Time delta);
  // The shift of the stretch a pass jumped over that holds `slot` (0: none). (Inline: the shift checks of every
  // sweep ask it, nearly always with no stretch jumped over.)
  sim::Time JumpedBy(int32_t slot) const {
    for (const sim::OrderedScratch::Jump& j : sc.ordered.jumps)
      if (slot >= j.from && slot < j.to) return j.shift;
    return 0;
  }
  // Whether clean task s, a successor of x just re-timed, must be re-timed too: x's end moved and x is new, bound
  // s or now arrives after s was ready (else s keeps its ready time).
  static bool Reaches(const Arrays& a, const Retimed& rt, int32_t x, int32_t s) {
    return rt.end_changed && a.state[s] == sim::kClean &&
           (rt.is_new || a.bind_pred[s] == x || rt.arrival > a.Ready(s));
  }
  // Re-times task x, ready at `ready`, with the sweep's cursor at slot i: appends it to the window, takes its
  // resource, and dirties (and queues) the successors its new end reaches.
  void Process(const Arrays& a, int32_t x, sim::Time ready, int32_t i);
  // x's end as it stands in the sweep: re-timed now, or as last simulated.
  sim::Time EndNow(int32_t x) const { return m.state[x] == sim::kDone ? m.cur_end[x] : m.End(x); }
  // Whether task x is settled with the cursor at slot i: re-timed, or clean and passed.
  bool Settled(int32_t x, int32_t i) const {
    return m.state[x] == sim::kDone || (m.state[x] == sim::kClean && m.pos[x] < i);
  }
  // Resource r's first task of the previous order from the cursor on (-1: none), by way of sc.last.
  int32_t NextOnResource(int32_t r) const { return sc.last[r] >= 0 ? m.res_next[sc.last[r]] : m.res_first[r]; }
  // Whether task u, with the unsettled tasks moving by delta, gets its old ready time + delta.
  bool ReadyMatches(int32_t u, int32_t i, sim::Time delta) const;

  // Shifted-rest check: whether every unsettled task (dirty, or clean at slot >= i) will run exactly `delta` later
  // than in the previous run (delta.cc's opening comment).
  bool ShiftedRest(int32_t i, sim::Time delta);
  // Whether r's first unsettled task (its earliest dirty one, or its first at slot >= i) finds r as before + delta
  // (or waits for its inputs in both runs). Reads the per-resource first pending tasks of the current check.
  bool ResourceShifted(int32_t r, int32_t i, sim::Time delta) const;
  // Whether every clean task in slots [i, end) with a predecessor before i (or none) gets its ready time + delta.
  bool CleanRestShifted(int32_t i, sim::Time delta, int32_t end);
  // Whether clean task t (at a slot from i on) keeps the rest from being shifted; `latest`: the latest arrival
  // of a settled task (used when delta < 0).
  bool TaskFails(int32_t t, int32_t i, sim::Time delta, sim::Time latest) const;

  // Jump target: the first slot from i on at which the sweep could do anything but pass clean tasks unchanged
  // (-1 when that is too near to be worth a jump).
  int32_t JumpTarget(int32_t i);
  // The first slot in [i, j) whose task comes after the heap's top (j if none), by binary search.
  int32_t FirstAfterHeapTop(int32_t i, int32_t j) const;
  // Moves the sweep's resource state from the cursor to slot j (JumpTarget), as the passed tasks leave it.
  void Jump(int32_t j);

  // Borrowed (named without a trailing underscore): the simulator, its scratch lists and its task graph.
  Impl& m;
  sim::ApplyScratch& sc;
  sim::TaskGraph& tg;
  const bool query;  // a query: m.undo records what it changes in the task graph

  // Owned, for this call only.

  // Steps 4-6.
  int32_t first_new_ = 0;          // the first new task
  int32_t num_tasks_ = 0;          // tasks after the new groups were appended
  int32_t slots_ = 0;              // slots in the layout
  int32_t begin_ = 0;              // the first slot the sweep looks at
  int32_t max_settled_ = -1;       // largest slot of a removed or re-timed task
  // The sweep. Its cursor is a parameter of the methods that read it (kept in a register); cursor_ holds where
  // it stopped. sc.free / sc.last: per resource, when it is free as the sweep goes, and the last task of the
  // previous order before the cursor (so that the next, res_next, is the first the sweep has not reached).
  const int32_t* succ_ = nullptr;  // the adjacency pools (they do not move during the sweep)
  const int32_t* pred_ = nullptr;
  int32_t after_ = 0;              // 1 + the slot of the last task passed unchanged (a task re-timed comes after)
  int32_t new_pending_ = 0;        // new tasks not yet re-timed
  int64_t next_dense_check_ = 0;   // the re-timed count at which GoesDense is asked next
  sim::Time shift_ = 0;            // end shift of the last re-timed old task whose end moved
  bool heap_changed_ = true;       // whether the heap's top may have become stale since it was last checked
  int32_t cursor_ = 0;
  bool shifted_ = false;           // the sweep stopped at a shifted rest
  // Shift checks: the current check's stamp (sc.pending_first[r] is valid where sc.pending_stamp[r] equals it),
  // the resource that failed the last check, the dirty task whose ready time last failed one, and the task that
  // failed the last scan of the clean tasks ahead.
  uint32_t stamp_ = 0;
  int32_t failed_res_ = -1;
  int32_t failed_pending_ = -1;
  int32_t failed_task_ = -1;
};

// (Here rather than in delta_sweep.cc: the ordered pass, delta_ordered.cc, inlines it too.)
inline DeltaSimulator::Impl::DeltaSweep::Retimed DeltaSimulator::Impl::DeltaSweep::Retime(const Arrays& a,
                                                                                         int32_t x, sim::Time ready) {
  const int32_t r = a.resource[x];
  const sim::Time start = std::max(ready, a.free[r]);
  const sim::Time end = start + a.duration[x];
  const bool is_new = x >= first_new_;
  const sim::Time old_end = is_new ? 0 : a.End(x);
  const bool end_changed = is_new || end != old_end;
  a.cur_end[x] = end;
  m.window.push_back({x, after_, ready, start, end});
  a.free[r] = end;
  a.state[x] = sim::kDone;
  ++m.retimed;
  if (is_new) {
    --new_pending_;
  } else {
    const int32_t slot = a.pos[x];
    max_settled_ = std::max(max_settled_, slot);
    a.processed_last[r] = std::max(a.processed_last[r], slot);
    if (end_changed) shift_ = end - old_end;
  }
  return {end + a.res_delay[r], end_changed, is_new};
}

}  // namespace devplace
