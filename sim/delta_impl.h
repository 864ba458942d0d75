// DeltaSimulator's state (internal to sim/): shared by delta.cc, delta_sweep.cc and delta_ordered.cc (the
// incremental run, by way of the DeltaSweep of delta_sweep.h), delta_index.cc (the layout of the dequeue order,
// its indexes, placing a change), delta_merge.cc (laying a large change out), delta_query.cc (rolling a query back
// after its sweep), delta_peaks.cc (the memory peaks kept through changes), delta_slot_lists.cc (applying the slot
// lists' edits) and delta_simulator.cc (the public methods); delta_tuning.h holds its layout and tuning constants.
//
// The dequeue order lives in slots: slot_task[s] is the task at slot s (-1: a hole), slots increase along the
// order, and a fresh layout leaves a hole after every few tasks. A change rewrites the slots of the part of the
// order it re-simulated (using the holes there, or absorbing a few of the following tasks when it needs more
// room; a long run of those spreads the stretch it packed, SpreadChains) and leaves every later task in its slot.
// A task's times are its stored times plus the shift of its slot's chunk, so moving the rest of the schedule by a
// constant costs one addition per chunk, not per task.
#pragma once

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "sim/full_run.h"
#include "sim/memory.h"
#include "sim/parts_query_chooser.h"
#include "sim/slot_list.h"
#include "sim/delta_ordered.h"
#include "sim/delta_tuning.h"
#include "sim/kept_peaks.h"
#include "sim/simulator.h"

namespace devplace {
namespace sim {
// Task states during a change: unchanged so far, to be re-timed, re-timed, replaced by the change. A type of its
// own rather than uint8_t: a store of a char type may alias anything, so after each one the compiler reloads every
// vector's data pointer the sweep's loops read.
enum TaskState : uint8_t { kClean = 0, kDirty = 1, kDone = 2, kRemoved = 3 };

// A dirty task in the sweep's heap, by its new (ready, key); `version` tells a stale entry from the current one.
struct DeltaItem {
  Time ready;
  uint64_t key;
  int32_t task;
  uint32_t version;
  bool operator<(const DeltaItem& o) const { return ready < o.ready || (ready == o.ready && key < o.key); }
};

// ReadyQueue keys (sim/engine.h) for a loop over tasks of a patched task graph, whose ids do not follow the
// tie-break keys: entries are DeltaItems ordered by (ready, key), so every ready time fits.
struct TieBreakKeys {
  using Item = DeltaItem;
  const uint64_t* key;  // per task
  bool Fits(Time) const { return true; }
  DeltaItem Pack(Time ready, int32_t t) const { return {ready, key[t], t, 0}; }
  int32_t Task(const DeltaItem& item) const { return item.task; }
  Time Ready(const DeltaItem& item) const { return item.ready; }
  bool Rebase(Time, Time, QuadHeap<DeltaItem>&, DeltaItem*, bool) { return true; }
};

// A list of (op, config) pairs that keeps its entries' device lists when it is emptied and refilled: refilling it
// with configs of no more devices than before does not allocate (a vector's clear() would free them).
class ConfigList {
 public:
  void Clear() { size_ = 0; }
  void Append(OpId op, const OpConfig& config) {
    if (size_ == entries_.size()) {
      entries_.emplace_back(op, config);
    } else {
      entries_[size_].first = op;
      entries_[size_].second = config;  // copy-assigned: reuses the entry's capacity
    }
    ++size_;
  }
  void Assign(std::span<const std::pair<OpId, OpConfig>> from) {
    Clear();
    for (const auto& [op, config] : from) Append(op, config);
  }
  std::span<const std::pair<OpId, OpConfig>> view() const { return {entries_.data(), size_}; }
  bool Equals(std::span<const std::pair<OpId, OpConfig>> other) const {
    const auto end = entries_.begin() + static_cast<std::ptrdiff_t>(size_);
    return std::equal(other.begin(), other.end(), entries_.begin(), end);
  }

 private:
  std::vector<std::pair<OpId, OpConfig>> entries_;
  size_t size_ = 0;  // entries_ past it are spare
};

// The lists one change works with, kept between changes so that a change does not allocate once they have
// grown; DeltaSimulator::Impl::DeltaSweep (sim/delta_sweep.h) fills them, step by step.
struct ApplyScratch {
  std::vector<OpId> ops;                        // the ops whose config changes (sorted)
  std::vector<int64_t> old_static, new_static;  // per device: the static memory of `ops` before and after
  std::vector<int32_t> edges, consumers;        // the edges of `ops` (sorted), the ops their outputs feed
  std::vector<int32_t> removed;                 // the tasks of the rebuilt groups before the change
  std::vector<int32_t> patched;                 // surviving tasks whose adjacency lists are patched
  std::vector<int32_t> reindex;                 // tasks whose predecessors changed (Place indexes them afresh)
  std::vector<int32_t> rebuilt_groups;          // `ops`, then num_ops + each of `edges`
  std::vector<int32_t> share_first;             // per device: AddSharers' smallest edge to a plain consumer there
  std::vector<int32_t> seeds;                   // the tasks the sweep starts from
  std::vector<Time> free;                       // per resource: when it is free, as the sweep goes
  std::vector<int32_t> last;                    // per resource: its last task of the previous order before the cursor
  QuadHeap<DeltaItem> heap;                     // dirty tasks no longer blocked, by new (ready, key)
  std::vector<int32_t> processed_ahead;         // old tasks re-timed ahead of the cursor (jumps drop passed ones)
  std::vector<int32_t> pending;                 // every task marked dirty, some since re-timed (the checks drop those)
  std::vector<int32_t> dense_waiting;           // DeltaSweep::RunDense: tasks that entered with inputs to wait for
  std::vector<int32_t> processed_last;          // per resource: the latest previous slot of a task re-timed (-1: none)
  std::vector<int32_t> used_res;                // the resources that run tasks
  std::vector<int32_t> pending_first;           // per resource: its earliest pending task in the current shift check
  std::vector<int32_t> behind;                  // dirty tasks behind the cursor when the sweep stops at a shifted rest
  std::vector<uint8_t> used;                    // per resource: runs tasks
  std::vector<uint32_t> pending_stamp;          // per resource: the check whose pending_first it holds
  OrderedScratch ordered;                       // DeltaSweep::RunOrdered's lists
  ConfigList old_configs;                       // the changed ops' configs before the change
};

// What a query (a change evaluated but not kept) altered in the task graph before its sweep, for Rollback.
struct QueryUndo {
  TaskTotals totals;
  int32_t tasks = 0;  // task count before the change's groups were appended
  size_t deps = 0, outs = 0, succ_pool = 0, pred_pool = 0;
  struct Group {
    int32_t group, task_begin, task_count, dep_begin, dep_count;
  };
  std::vector<Group> groups;                     // the rebuilt groups as they were
  std::vector<std::pair<OpId, int32_t>> out_begin;
  // A patched adjacency list as it was (`pred`: 0 successors, 1 predecessors); its entries are at `saved` in
  // `entries`.
  struct List {
    int32_t task;
    uint8_t pred;
    int32_t off, cnt, room, saved;
  };
  std::vector<List> lists;
  std::vector<int32_t> entries;
};
}  // namespace sim

struct DeltaSimulator::Impl {
  class DeltaSweep;  // one change's run through Apply (sim/delta_sweep.h)

  Impl(const Graph& g, const Topology& t, Strategy s, CostModel c, SimOptions o)
      : graph(g), topology(t), strategy(std::move(s)), cost(std::move(c)), options(o),
        cache(g.num_ops(), t.num_devices()), builder(graph, topology, cost, options, &cache) {}

  const Graph& graph;
  const Topology& topology;
  Strategy strategy;
  Strategy spare_strategy;  // SetStrategy's: the previous strategy (its lists kept for the next call)
  CostModel cost;
  SimOptions options;
  sim::PlainCostCache cache;
  sim::TaskBuilder builder;
  sim::Engine engine;
  // The task graph and totals; run.timing.res_prev and run.last_task (the last task of each resource) are kept up
  // to date, run.timing's times and order only describe the last full layout (a full run or a compaction).
  sim::FullRun run;
  mutable sim::PeakScratch peaks;     // memory peaks are computed on demand by result()
  mutable sim::Timing materialized;   // absolute times and the compact order, for result() and oom()
  // The peaks (static + dynamic) per device of the current schedule once device_peaks() computed them (an OOM
  // check and the penalty then read the same); every Apply and FullRebuild drops them.
  mutable std::vector<int64_t> peaks_memo;
  mutable bool peaks_valid = false;
  // Per device once RiskyPeaks() computed them: the peak (static + dynamic) where the device could not hold all
  // its buffers at once, else that bound (static + every buffer's bytes, at most its memory); dropped like
  // peaks_memo.
  mutable std::vector<int64_t> risky_memo;
  mutable std::vector<uint8_t> risky;  // RiskyPeaks' scratch
  mutable bool risky_valid = false;
  // The peaks of the devices RiskyPeaks found at risk, kept from then on through every change (Finish: the events of
  // the buffers a change re-times taken out and put back, the moved rest shifted), so that a later RiskyPeaks reads
  // them instead of passing over every buffer. Renamed with the tasks by a compaction; dropped by a full rebuild and
  // by a change that notes more than 1/kKeptPeaksNotedDivisor of the buffers they hold.
  mutable sim::KeptPeaks kept_peaks;
  mutable std::vector<sim::KeptPeaks::Buffer> peak_buffers;  // RiskyPeaks' scratch
  // KeptPeaksBefore's: the tasks whose buffers a change re-times (each once: peak_noted holds the current stamp).
  std::vector<int32_t> peak_retimed;
  std::vector<uint32_t> peak_noted;
  uint32_t peak_stamp = 0;
  int64_t retimed = 0;
  DeltaSimulator::SweepCounts sweep_counts;  // DeltaSimulator::sweep_counts
  int64_t retimed_since_compact = 0;  // tasks the changes re-timed since the last compaction or full rebuild
  int32_t live_tasks = 0;
  int32_t task_room = 0;  // tasks the per-task arrays have room for (live ones and the garbage Finish allows)

  // The order's layout and its indexes.
  std::vector<int32_t> slot_task;                // task at each slot (-1: hole)
  // Stored times and resource of the task at each slot (by slot, so that walking the order reads them in turn;
  // a hole's are unread).
  std::vector<sim::Time> slot_ready, slot_start, slot_end;
  std::vector<int32_t> slot_res;
  // The device whose memory holds the buffer of the task at each slot (-1: the task holds none), so that the memory
  // pass (RiskyPeaks) picks the slots it adds from a resource's slot list without a branch per slot. Holes may
  // keep a stale entry (they are in no slot list).
  std::vector<int32_t> slot_mem;
  std::vector<sim::Time> chunk_shift;            // added to the stored times of the tasks in each chunk
  std::vector<int32_t> pos;                      // slot of each task (-1: not in the order)
  std::vector<sim::SlotList> res_slots;          // per resource: the slots of its tasks, increasing
  // Per resource, the device that holds its tasks' buffers: -1 while none has held one, kSeveralDevices when they
  // differ. Noted as tasks take slots and reset with the resource lists (so between fresh layouts it may name
  // the devices of tasks since gone, never miss one): the OOM pass walks only the slot lists of the resources
  // that may hold a buffer of a device that may overflow.
  std::vector<int32_t> res_buffer_device;
  static constexpr int32_t kSeveralDevices = -2;
  // Records task t at `slot` in slot_res and slot_mem, and its buffer's device in res_buffer_device; returns its
  // resource. Every placing of a task goes through here.
  int32_t SetSlotOwner(int32_t slot, int32_t t) {
    const int32_t r = slot_res[slot] = run.tg.resource[t];
    const int32_t device = slot_mem[slot] = BufferDevice(t);
    int32_t& d = res_buffer_device[r];
    if (device >= 0 && d != device) d = d == -1 ? device : kSeveralDevices;
    return r;
  }
  std::vector<int32_t> res_next;                 // the next task on the same resource (-1: none)
  std::vector<int32_t> res_first;                // per resource, its first task (-1: none)
  // Per task: its predecessor at the earliest slot, and the one whose arrival made it ready (the later slot on
  // ties); -1: none. They stay right when tasks that keep their times move to later slots in order.
  std::vector<int32_t> min_pred, bind_pred;
  // Per chunk: at most the least slot of those predecessors over its tasks (-1 for a task without any), and at
  // most the least stored ready time of its tasks.
  std::vector<int32_t> chunk_min_pred, chunk_min_bind;
  std::vector<sim::Time> chunk_min_ready;
  int32_t placed = 0;                // tasks in slots
  // Per task: room for its successor and predecessor lists in the pools (at least succ_cnt / pred_cnt).
  std::vector<int32_t> succ_room, pred_room;

  // Scratch, sized to the task count.
  std::vector<sim::TaskState> state;
  std::vector<int32_t> blocked;
  std::vector<uint32_t> version;
  std::vector<sim::Time> cur_end;    // end times of the tasks re-timed so far
  std::vector<sim::Time> dense_ready;  // DeltaSweep::RunDense: the latest arrival so far at each unsettled task
  // DeltaSweep::RunDense: the run in which each task entered its loop (see NextDenseRun); RunOrdered: the pass in
  // which a waiting task watches it, the first such task, and per waiting task the next watching the same one.
  std::vector<uint32_t> dense_entered;
  std::vector<int32_t> watch_first, watch_next;
  uint32_t dense_run = 0;
  // The number of a new RunDense loop or RunOrdered pass, which no entry of dense_entered holds yet.
  uint32_t NextDenseRun() {
    if (++dense_run == 0) {
      std::fill(dense_entered.begin(), dense_entered.end(), 0);
      dense_run = 1;
    }
    return dense_run;
  }
  std::vector<uint8_t> mark, moved;
  struct Placement {
    int32_t task;
    // window: 1 + the slot of the last task before it that keeps its slot; `laid`: the number of window tasks
    // before it; else a slot
    int32_t after;
    sim::Time ready = 0, start = 0, end = 0;  // window and displaced tasks: their times from now on
  };
  std::vector<Placement> window;     // the tasks re-timed by a change, in their new order
  std::vector<Placement> displaced, stale;            // Place's scratch
  // SpreadPacked's scratch: the tasks spread (`after`: their previous slot), per resource the entry its next one
  // rewrites (-1: not found yet), and the resources found.
  std::vector<Placement> spread;
  // LayoutFrom's and LayoutBetween's input, with absolute times, in order (so that laying it out reads it in turn):
  // run.timing's order (Layout copies it here), or the tasks of the stretch a large change rewrites that keep their
  // place in the order (LayoutMerged). The layouts merge the change's window into the latter as they write
  // (ForEachLaid), so that the window is not copied here first: each entry's `after` is the number of window tasks
  // that go before it (0 for Layout's).
  std::vector<Placement> laid;
  // Calls fn(k, q) for each task q of `laid` merged with `merged` (the window whose tasks `laid`'s `after` counts,
  // or empty), k counting from 0. (Always inlined into the layouts' loops.)
  template <typename Fn>
  [[gnu::always_inline]] inline void ForEachLaid(std::span<const Placement> merged, Fn fn) const;
  std::vector<int32_t> spread_cursor, spread_touched;
  std::vector<int32_t> to_index;  // LayoutMerged's: the tasks whose predecessor entries it indexes afresh
  std::vector<std::pair<int32_t, int32_t>> spread_chains;  // SpreadChains': the stretches to spread
  // Changes to the per-resource slot lists, applied at the end of Place: the resources changed, and per resource
  // the slots added for tasks new to the order (in increasing order), dropped for tasks leaving it (in any order),
  // and the slots of tasks that move (from, to; in increasing order of `to`).
  std::vector<int32_t> changed_res;
  std::vector<uint8_t> res_changed;  // per resource: listed in changed_res
  std::vector<std::vector<int32_t>> res_added, res_dropped;
  struct SlotMove {
    int32_t from, to;
  };
  std::vector<std::vector<SlotMove>> res_moved;
  sim::SlotListEditScratch slot_edit_scratch;  // UpdateResourceSlots' and MoveEntriesInPlace's
  // Per chunk: its bounds are stale (a change touched it since they were computed); refreshed when next needed.
  std::vector<uint8_t> chunk_stale;
  std::vector<int32_t> reindexed;  // the tasks ReindexPlaced or LayoutMerged indexed afresh (flagged in mark)
  sim::ApplyScratch scratch;
  sim::QueryUndo undo;
  // The outcome of the last query, kept until the next change: making the same change then skips its sweep.
  struct QueryMemo {
    bool valid = false;
    sim::ConfigList changes;
    std::vector<Placement> window;
    std::vector<int32_t> reindex;
    int32_t begin = 0, cut = 0;
    sim::Time shift = 0;
    int64_t retimed = 0;
  } memo;
  // Relayout's scratch (swapped with the slot arrays).
  std::vector<int32_t> relaid_task, relaid_res, relaid_mem;
  std::vector<sim::Time> relaid_ready, relaid_start, relaid_end;
  std::vector<size_t> relaid_entry;  // per resource: the entry of its slot list the relayout rewrites next
  uint32_t next_version = 1;

  sim::Time Shift(int32_t slot) const { return chunk_shift[slot >> sim::kChunkBits]; }
  // Times of a task in the order, as last simulated.
  sim::Time Ready(int32_t t) const { return slot_ready[pos[t]] + Shift(pos[t]); }
  sim::Time Start(int32_t t) const { return slot_start[pos[t]] + Shift(pos[t]); }
  sim::Time End(int32_t t) const { return slot_end[pos[t]] + Shift(pos[t]); }

  // The step of the current schedule in ticks: the latest end of a resource's last task plus its latency.
  sim::Time StepTicks() const;
  // risky_memo (computed when not valid): the peaks of the devices that may overflow, read from kept_peaks (a
  // device not tracked yet is tracked first, from one pass over its buffers), and the bound for the others.
  const std::vector<int64_t>& RiskyPeaks() const;
  // Builds and runs the whole strategy afresh, stores the task groups in schedule order (FullRun::
  // StoreInScheduleOrder: a re-timing then walks the per-task arrays nearly in order) and lays the order out.
  Status FullRebuild();
  // The same outcome without building or running anything: stores the live task groups in schedule order with
  // the current times (dropping the tasks of replaced groups, FullRun::StoreInScheduleOrder) and lays the order
  // out afresh. For a task graph that carries garbage; the change must be placed.
  void Compact();
  // FullRebuild's and Compact's common end: run's groups stored in schedule order, the per-task scratch reset and
  // the order laid out from run.timing.
  void StoreAndLayOut();
  // Lays the order out afresh from run.timing (absolute times and the compact order).
  void Layout();
  // Lays the tasks of `laid` merged with `merged` (ForEachLaid) out afresh from slot `from` (a chunk boundary) on,
  // after the slots before it, which keep their tasks, times and entries; leaves `placed` and the predecessor
  // entries to the caller.
  void LayoutFrom(int32_t from, std::span<const Placement> merged = {});
  // Cuts the per-resource slot lists and links at slot `from` (for LayoutFrom to append to).
  void TruncateResourceLists(int32_t from);
  // Lays the current order out afresh (holes spread evenly, chunk shifts folded into the stored times), rewriting
  // the per-resource slot lists in place (they must list every placed task; the links stay). The tasks at slots
  // [roomy_from, roomy_to) get a hole after every kRoomyHoleEvery - 1 of them, the others after every
  // kHoleEvery - 1.
  void Relayout(int32_t roomy_from, int32_t roomy_to);
  // Finish's alternative to Place for a large window: lays the new order out afresh from the chunk of slot `begin`
  // (the sweep's first slot) on (the window merged with the tasks that kept their slots, each window task after
  // those before its `after`; the tasks from `cut` on moved by `shift`; the kept ones collected into `laid` with
  // absolute times), up to where the tasks after it can keep their slots (LayoutBetween) or to the end
  // (LayoutFrom). The removed tasks must have left their slots; `removed_last` is the last slot they left (-1:
  // none). Puts the window's tasks back to clean (Finish leaves them to it).
  void LayoutMerged(int32_t begin, int32_t cut, sim::Time shift, int32_t removed_last);
  // Lays the tasks of `laid` merged with `merged` (ForEachLaid) out over slots [from, to) (chunk boundaries; at
  // least as many slots as tasks), spread evenly; the tasks from `to` on keep their slots and move by `shift`, those
  // before `from` keep theirs. Updates the per-resource slot lists and links; leaves the chunk bounds, `placed` and
  // the predecessor entries to the caller.
  void LayoutBetween(int32_t from, int32_t to, sim::Time shift, std::span<const Placement> merged);
  // After LayoutBetween rewrote the slots [from, to) (chunk boundaries; every later task kept its slot): marks
  // the bounds of their chunks, and of the later chunks whose bounds name a slot there, stale (recomputed when a
  // shift check next reads them). The other later chunks' bounds stand, lowered by the caller where one of their
  // tasks' entries changes. (Marking every later chunk stale instead made the next shift checks recompute them
  // all.)
  void StaleChunksBetween(int32_t from, int32_t to);
  // Spreads the tasks of the stretch of slots [begin, end) (the one a change packed) and of the stretch after it
  // evenly over their slots, with their order and times, so that changes there find holes again; keeps the
  // indexes right. Returns the end of the slots spread.
  int32_t SpreadPacked(int32_t begin, int32_t end);
  // After Place: spreads the stretches where PlaceWindow moved more than kSpreadChain kept tasks in a row.
  void SpreadChains();
  // Empties the per-resource slot lists and links (every resource without tasks), for a layout to append to.
  void ClearResourceLists();
  // The device whose memory holds task t's buffer, -1 when it holds none (what slot_mem keeps per slot).
  int32_t BufferDevice(int32_t t) const { return run.tg.mem_bytes[t] > 0 ? run.tg.mem_device[t] : -1; }
  // Gives task t `slot` (its resource in slot_res, its buffer's device in slot_mem) and appends it to its
  // resource's slot list and links: `slot` comes after every slot appended since ClearResourceLists. (Here, to be
  // inlined into the layouts' loops.)
  void AppendToResource(int32_t t, int32_t slot) {
    const int32_t r = SetSlotOwner(slot, t);
    res_slots[r].push_back(slot);
    const int32_t prev = run.last_task[r];
    run.timing.res_prev[t] = prev;
    if (prev >= 0) res_next[prev] = t;
    else res_first[r] = t;
    res_next[t] = -1;
    run.last_task[r] = t;
  }
  // Sizes the chunk bounds to the layout, those from chunk `first` on stale (RefreshChunk computes one when a
  // shift check reads it).
  void IndexChunks(int32_t first = 0);
  void GrowScratch();
  // Free time and last task of each resource just before slot `slot`, looked up for `resources` (a list that
  // includes every resource with tasks; the others are free at 0 with no last task).
  void LoadResourceState(int32_t slot, const std::vector<int32_t>& resources, std::vector<sim::Time>* free,
                         std::vector<int32_t>* last) const;
  // Gives the window's tasks (final absolute times in cur_*) slots from `begin` on, moving tasks that kept their
  // slots on where they are in the way (those from `cut` on by `shift`), moves the rest of the schedule by
  // `shift`, and updates the indexes (or lays the order out afresh when due); `reindex` lists tasks whose
  // predecessors changed.
  void Place(int32_t begin, int32_t cut, sim::Time shift, const std::vector<int32_t>& reindex);
  // Place's steps, in order. PlaceWindow gives the window's tasks their slots (and the kept tasks in the way, in
  // `displaced`, the slots after them) and returns the first slot of the rest (at least `cut`), whose tasks keep
  // their slots; ShiftRest moves those by `shift`; UpdateResourceSlots applies the recorded slot changes to the
  // per-resource slot lists and links; ReindexPlaced recomputes the predecessor entries the placing changed.
  int32_t PlaceWindow(int32_t begin, int32_t cut, sim::Time shift);
  // Whether window task t (its `moved` flag set), whose turn in PlaceWindow comes at slot `first`, can keep its
  // previous slot: it lies at or after `first`, within a chunk of it, with no kept task between.
  bool KeepsSlot(int32_t t, int32_t first) const;
  // PlaceWindow's count of window tasks given a slot other than their previous one (the new ones included): the
  // slots it rewrote, which decide a relayout.
  int64_t relocated = 0;
  void ShiftRest(int32_t rest, sim::Time shift);
  void UpdateResourceSlots();
  void ReindexPlaced(const std::vector<int32_t>& reindex);
  // Links the tasks at entries x - 1 and x (x > 0) of a resource's slot list `v` (res_next, run.timing.res_prev).
  // (Here, to be inlined into the layouts' loops.)
  void LinkEntries(const sim::SlotList& v, size_t x) {
    const int32_t p = slot_task[v[x - 1]], q = slot_task[v[x]];
    res_next[p] = q;
    run.timing.res_prev[q] = p;
  }
  // Sets resource r's first and last task from its slot list and ends the links there.
  void CloseResourceEnds(int32_t r);
  // Puts q's task at slot s (growing the layout when s is past its end), displacing a kept task found there (its
  // times moved by `shift` when s >= cut); returns s + 1.
  int32_t AssignSlot(const Placement& q, int32_t s, int32_t cut, sim::Time shift);
  // Grows the slot arrays and chunk bounds until slot s exists.
  void GrowSlots(int32_t s);
  // Gives the slot arrays and chunk bounds room for `slots` slots. A fresh layout that outgrows them reserves half
  // as many again as it takes, for the slots that placed changes append at its end until the next rebuild, so
  // that appending them does not allocate (tests/sim/delta_alloc_test.cc).
  void ReserveSlots(size_t slots);
  // IndexPreds(x) unless x was already indexed afresh by this placing (listed in `reindexed`, flagged in mark).
  void ReindexOnce(int32_t x);
  // Records that task t's slot list entry at `slot` goes, is added (in increasing slot order per resource), or
  // moves from `from` to `to` (in increasing order of `to` per resource, and with the adds).
  void DropSlot(int32_t t, int32_t slot);
  void AddSlot(int32_t t, int32_t slot);
  void MoveSlot(int32_t t, int32_t from, int32_t to);
  // Task t's resource, listed in changed_res (once) as having edits recorded. (Here, to be inlined.)
  int32_t EditedResource(int32_t t) {
    const int32_t r = run.tg.resource[t];
    if (!res_changed[r]) {
      res_changed[r] = 1;
      changed_res.push_back(r);
    }
    return r;
  }
  // UpdateResourceSlots' first step for resource r: rewrites the entry of each recorded move whose new slot lies
  // between its neighbours' (the task keeps its place in the list, and its links); records the others as a drop
  // and an add.
  void MoveEntriesInPlace(int32_t r);
  void TouchChunk(int32_t chunk) { chunk_stale[chunk] = 1; }
  // Recomputes min_pred and bind_pred of task t (its predecessors' slots and times are final).
  void IndexPreds(int32_t t);
  // IndexPreds with predecessor p's end time given by end_of(p, slot of p).
  template <typename EndOf>
  void IndexPredsBy(int32_t t, EndOf end_of) {
    const auto [earliest, bind] = PredEntries(t, end_of);
    min_pred[t] = earliest;
    bind_pred[t] = bind;
  }
  // Task t's earliest predecessor (by slot) and binding one (the latest arrival, the later slot on ties) from its
  // predecessors' slots and end times end_of(p, slot of p); -1 for each when it has none. (Always inlined: with
  // three calls in LayoutMerged, GCC called it, about 16 instructions more per task.)
  template <typename EndOf>
  [[gnu::always_inline]] inline std::pair<int32_t, int32_t> PredEntries(int32_t t, EndOf end_of) const;
  // DeltaSimulator::CheckIndexes.
  Status CheckIndexes() const;
  // The slot of a predecessor entry (-1: none).
  int32_t SlotOf(int32_t pred) const { return pred < 0 ? -1 : pos[pred]; }
  // Recomputes a chunk's bounds from the layout (and marks them fresh).
  void RefreshChunk(int32_t chunk);
  // Writes every task's absolute ready/start/end times (arrays already sized to the task count) and the compact
  // order from the layout into `into`.
  void WriteTimes(sim::Timing& into) const;
  // Fills `materialized` from the layout; MaterializeTimes writes only the start and end times (what the memory
  // peaks read), leaving its other fields as they were.
  void Materialize() const;
  void MaterializeTimes() const;
  // Puts the tasks a sweep marked back to clean (those marked dirty, in scratch.pending, and `retimed`, its window
  // or none of it when the caller puts those back itself) and clears what those still dirty added to blocked counts.
  void ResetStates(std::span<const Placement> retimed);
  // Makes a swept change: the removed tasks leave their slots, the window is placed (the order from `cut` on
  // moves by `shift`), the layout is re-spread when due and the task graph compacted when its garbage is.
  // `last_before_cut`, when given (the sweep's, which stopped at `cut`), holds each resource's last task before slot
  // `cut` (-1: none).
  void Finish(int32_t begin, int32_t cut, sim::Time shift, const std::vector<int32_t>* last_before_cut);
  // Finish's upkeep of kept_peaks, before the change is placed (the layout still holds the old times, but for the
  // stretches the ordered pass jumped over): notes the tasks whose buffer events the change moves other than by the
  // rest's shift (removed, re-timed and patched tasks, the tasks of those stretches, the predecessors of both, and
  // the tasks before `cut` that end at or after the time the rest starts, shift included, with their
  // predecessors), takes their events out and shifts the rest's. False when the change
  // notes so many buffers that the kept peaks are dropped instead. `last_before_cut` as Finish's (else each
  // resource's slot list is searched).
  bool KeptPeaksBefore(int32_t cut, sim::Time shift, const std::vector<int32_t>* last_before_cut);
  // After the change is placed: puts the noted tasks' buffers back with their new times.
  void KeptPeaksAfter();
  // Checks that every change names an op of the graph and a config that can run it.
  Status CheckChanges(std::span<const std::pair<OpId, OpConfig>> changes) const;
  // SetConfigs' changes made in parts of ops near each other in the order (sim::kSamePartSlots), the latest part
  // first, each by Apply (delta_simulator.cc says why); `retimed` counts the tasks of every part. A change just
  // asked about (the query's outcome kept) or in one part is made whole. On an error, the parts already made are
  // undone before it is returned. With `query_step`, StepTimeIf's: a change of several parts is asked about whole
  // or by parts (parts_queries): every part but the last made and the last asked about (its step time goes to
  // *query_step, in ticks), the made parts undone, last first, by the next call (Settle) unless it makes the same
  // change.
  Status ApplyInParts(std::span<const std::pair<OpId, OpConfig>> changes, sim::Time* query_step = nullptr);
  // Undoes the first `made` parts of ApplyInParts' change, last first, each whole; adds the tasks they re-time to
  // *retimed_total.
  Status UndoParts(size_t made, int64_t* retimed_total);
  // A query by parts leaves the parts it made in place (pending_parts of them, ApplyInParts' scratch still
  // describing them; pending_retimed: the tasks they re-timed; asked_changes: the change asked about) until the
  // next call: making that change next keeps them and makes the asked part from the query's outcome (a searcher
  // accepts most proposals it asks about); any other call first undoes them (Settle: every public method, the
  // const ones included, since the simulator they describe is the one before the query).
  size_t pending_parts = 0;
  int64_t pending_retimed = 0;
  sim::ConfigList asked_changes;
  void Settle();
  // How StepTimeIf asks about changes of several parts (DeltaSimulator::set_parts_queries), and with kMeasured the
  // query being timed: its span and way, and its seconds so far (the query, then its follow-up: Settle's undo of
  // its made parts, or the making of the asked change), recorded into parts_chooser when the follow-up ends or
  // the next query begins (RecordTimedQuery).
  DeltaSimulator::PartsQueries parts_queries = DeltaSimulator::PartsQueries::kMeasured;
  sim::PartsQueryChooser parts_chooser;
  struct TimedQuery {
    bool open = false, by_parts = false;
    int32_t span = 0;
    double seconds = 0;
  } timed;
  void RecordTimedQuery();
  // Makes SetConfigs' change in parts (or, with `query_step`, asks about it by parts), op_order and part_ends
  // already set: ApplyInParts' loop.
  Status MakeParts(std::span<const std::pair<OpId, OpConfig>> changes, sim::Time* query_step);
  // Makes the change a query by parts has just asked about: its made parts stay, and the asked part is made from
  // the query's outcome.
  Status MakeAskedParts();
  // ApplyInParts' scratch: the previous configs of the ops it has changed so far, (earliest slot, index) per
  // change, where each part ends in that order, and the part being made.
  sim::ConfigList changed_before, part;
  std::vector<std::pair<int32_t, int32_t>> op_order;
  std::vector<size_t> part_ends;
  // Applies `changes` and re-simulates, by the steps of a DeltaSweep (sim/delta_sweep.h). With `query_step`, only
  // evaluates them: the step time they would give goes to *query_step (in ticks) and the simulator is left as it
  // was.
  Status Apply(std::span<const std::pair<OpId, OpConfig>> changes, sim::Time* query_step = nullptr);
  // Records the groups, sizes and per-op output entries that appending the rebuilt groups will change.
  void SaveGroups(const std::vector<int32_t>& rebuilt_groups);
  // Records task t's successor (pred = 0) or predecessor (pred = 1) list before it is patched.
  void SaveList(int32_t t, uint8_t pred);
  // Undoes what a query did to the task graph, the strategy and the totals (the scratch lists still hold the
  // query's ops, removed tasks and static memory; `old_configs` the ops' previous configs).
  void Rollback(std::span<const std::pair<OpId, OpConfig>> old_configs);
  // The step (in ticks) after a query's sweep: `free` per resource from the sweep, and when it stopped early at
  // slot `cut`, the unsettled rest moves by `shift` (call before the tasks' states are reset).
  sim::Time QueryStep(const std::vector<sim::Time>& free, bool stopped, int32_t cut, sim::Time shift) const;
};

template <typename Fn>
void DeltaSimulator::Impl::ForEachLaid(std::span<const Placement> merged, Fn fn) const {
  const Placement* const kept = laid.data();
  const size_t kept_size = laid.size(), merged_size = merged.size();
  size_t j = 0;
  int32_t k = 0;
  for (size_t i = 0; i < kept_size; ++i) {
    for (const size_t before = static_cast<size_t>(kept[i].after); j < before; ++j) fn(k++, merged[j]);
    fn(k++, kept[i]);
  }
  for (; j < merged_size; ++j) fn(k++, merged[j]);
}

// (Here because delta_index.cc, delta_merge.cc and delta_check.cc all instantiate it.)
template <typename EndOf>
std::pair<int32_t, int32_t> DeltaSimulator::Impl::PredEntries(int32_t t, EndOf end_of) const {
  const sim::TaskGraph& tg = run.tg;
  if (tg.pred_cnt[t] == 1) {  // its one input is both (most hop tasks): nothing to read or compare
    const int32_t p = tg.pred_pool[tg.pred_off[t]];
    return {p, p};
  }
  int32_t earliest = -1, bind = -1, earliest_pos = INT32_MAX, bind_pos = -1;
  sim::Time best = -1;
  for (int32_t k = 0; k < tg.pred_cnt[t]; ++k) {
    const int32_t p = tg.pred_pool[tg.pred_off[t] + k];
    const int32_t slot = pos[p];
    if (slot < earliest_pos) {
      earliest_pos = slot;
      earliest = p;
    }
    const sim::Time arrival = end_of(p, slot) + tg.resource_delay[tg.resource[p]];
    if (arrival > best || (arrival == best && slot > bind_pos)) {
      best = arrival;
      bind = p;
      bind_pos = slot;
    }
  }
  return {earliest, bind};
}

}  // namespace devplace
