// The event loop and result assembly (internal to sim/). FlexFlow's algorithm: a task enters the ready heap when
// all its predecessors have ended; the heap pops the smallest (ready time, key); start = max(ready, resource
// free); end = start + duration (durations are at least one tick); successors see end + the resource's latency.
#pragma once

#include <cstdint>
#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "core/topology.h"
#include "sim/simulator.h"
#include "sim/task_graph.h"

namespace devplace::sim {

// Per-task times and the order tasks were dequeued (see Record for which an event loop fills).
struct Timing {
  std::vector<Time> ready, start, end;
  std::vector<int32_t> res_prev;  // the task that used the same resource just before (-1: none)
  std::vector<int32_t> order;     // alive tasks in dequeue order
  // The task before each task on a critical path (see Assemble; -1: none), as Engine::Run finds it on the way;
  // empty when the times come from elsewhere.
  std::vector<int32_t> crit_prev;
};

// A min-heap with four children per node (half the depth of a binary heap; the children share a cache line),
// reusable without reallocation. `Item` needs operator<.
template <class Item>
class QuadHeap {
 public:
  void clear() { items_.clear(); }
  bool empty() const { return items_.empty(); }
  const Item& top() const { return items_.front(); }
  size_t capacity() const { return items_.capacity(); }
  void reserve(size_t n) { items_.reserve(n); }
  void push(Item item) {
    size_t i = items_.size();
    items_.push_back(item);
    while (i > 0) {
      const size_t parent = (i - 1) / 4;
      if (!(item < items_[parent])) break;
      items_[i] = items_[parent];
      i = parent;
    }
    items_[i] = item;
  }
  // Subtracts `amount` from every item (Item must be unsigned and every item at least `amount`); keeps the order.
  void Lower(Item amount) {
    for (Item& item : items_) item -= amount;
  }
  void pop() {
    const Item last = items_.back();
    items_.pop_back();
    const size_t n = items_.size();
    if (n == 0) return;
    Item* items = items_.data();
    size_t i = 0;
    while (true) {
      const size_t first = 4 * i + 1;
      if (first >= n) break;
      // The smallest child, selected without branches (the comparisons are unpredictable).
      size_t best = first;
      Item v = items[first];
      const size_t stop = first + 4 < n ? first + 4 : n;
      for (size_t c = first + 1; c < stop; ++c) {
        const Item w = items[c];
        const bool less = w < v;
        v = less ? w : v;
        best = less ? c : best;
      }
      if (!(v < last)) break;
      items[i] = v;
      i = best;
    }
    items[i] = last;
  }

 private:
  std::vector<Item> items_;
};

// A ready-heap entry when (ready, task) does not fit one 64-bit word.
struct WideItem {
  Time ready;
  int32_t task;
  bool operator<(const WideItem& o) const { return ready < o.ready || (ready == o.ready && task < o.task); }
};

// Heap keys packed into one word: (ready - base) << bits | task. The loop's ready times never decrease (every
// entry is at least the last dequeued task's ready time), so when a ready time lies too far above `base`, `base`
// moves up to the last dequeued ready time and every entry is lowered by the same amount, which keeps their order.
struct PackedKeys {
  using Item = uint64_t;
  int bits;
  uint64_t limit;  // ready - base must stay below this
  int32_t* rebases;
  Time base = 0;
  bool Fits(Time ready) const { return static_cast<uint64_t>(ready - base) < limit; }
  uint64_t Pack(Time ready, int32_t t) const {
    return (static_cast<uint64_t>(ready - base) << bits) | static_cast<uint64_t>(t);
  }
  int32_t Task(uint64_t item) const { return static_cast<int32_t>(item & ((uint64_t{1} << bits) - 1)); }
  Time Ready(uint64_t item) const { return static_cast<Time>(item >> bits) + base; }
  // Moves base up to `floor` (at most every entry's ready time), lowering the entries; false when `ready` still
  // does not fit.
  bool Rebase(Time floor, Time ready, QuadHeap<uint64_t>& heap, uint64_t* next, bool has_next) {
    const uint64_t lower = static_cast<uint64_t>(floor - base) << bits;
    heap.Lower(lower);
    if (has_next) *next -= lower;
    base = floor;
    ++*rebases;
    return Fits(ready);
  }
};

// Two-word keys: every ready time fits.
struct WideKeys {
  using Item = WideItem;
  bool Fits(Time) const { return true; }
  WideItem Pack(Time ready, int32_t t) const { return {ready, t}; }
  int32_t Task(const WideItem& item) const { return item.task; }
  Time Ready(const WideItem& item) const { return item.ready; }
  bool Rebase(Time, Time, QuadHeap<WideItem>&, WideItem*, bool) { return true; }
};

// The ready heap of an event loop with a one-entry buffer in front: a task that becomes ready and is the next to
// run (often a hop's successor) skips the heap. Pops in (ready, task) order.
template <class Keys>
class ReadyQueue {
 public:
  using Item = typename Keys::Item;
  ReadyQueue(QuadHeap<Item>& heap, Keys& keys) : heap_(heap), keys_(keys) { heap_.clear(); }
  bool empty() const { return !has_next_ && heap_.empty(); }
  // Pushes `task` ready at `ready`, re-basing the keys when needed (`floor`: the ready time of the task being
  // run, at most every entry's); false when the key does not fit even then.
  [[gnu::always_inline]] bool Push(Time floor, Time ready, int32_t task) {
    if (!keys_.Fits(ready) && !keys_.Rebase(floor, ready, heap_, &next_, has_next_)) return false;
    const Item item = keys_.Pack(ready, task);
    if (!has_next_) {
      next_ = item;
      has_next_ = true;
    } else if (item < next_) {
      heap_.push(next_);
      next_ = item;
    } else {
      heap_.push(item);
    }
    return true;
  }
  // Whether `task` ready at `ready` would be the next to leave the queue if pushed now (the buffer is empty and it
  // comes before the heap's first entry): the caller may then run it at once instead of pushing and popping it.
  [[gnu::always_inline]] bool RunsNext(Time ready, int32_t task) const {
    return !has_next_ && keys_.Fits(ready) && (heap_.empty() || keys_.Pack(ready, task) < heap_.top());
  }
  // Pushes straight into the heap (before the loop starts).
  void PushInitial(Time ready, int32_t task) { heap_.push(keys_.Pack(ready, task)); }
  // The first entry, or null when the queue is empty; valid until the next push or pop.
  const Item* Peek() const {
    if (has_next_ && (heap_.empty() || next_ < heap_.top())) return &next_;
    return heap_.empty() ? nullptr : &heap_.top();
  }
  // Removes and returns the first entry (the queue must not be empty).
  Item Pop() {
    if (has_next_ && (heap_.empty() || next_ < heap_.top())) {
      has_next_ = false;
      return next_;
    }
    const Item item = heap_.top();
    heap_.pop();
    return item;
  }
  // The heap's first entry's task, probably the next to run (-1: none), for prefetching.
  int32_t PeekHeap() const { return heap_.empty() ? -1 : keys_.Task(heap_.top()); }

 private:
  QuadHeap<Item>& heap_;
  Keys& keys_;
  Item next_{};
  bool has_next_ = false;
};

// How the event loop's heap keys (ready time, task id) are stored: kAuto packs them into one 64-bit word while the
// ready times in the heap fit (falling back to two words otherwise), kWide always uses two words. Both give the
// same result; kWide exists to test that.
enum class KeyMode { kAuto, kWide };

// What the event loop records in Timing: everything (what the delta simulator and timelines need), the start
// and end times and critical-path links (what SimResult needs), or nothing but each resource's last task.
enum class Record { kAll, kTimes, kStepOnly };

// Runs the whole task graph (alive tasks only) and fills `timing` (sized to the task count) as `record` says. The graph must be
// freshly built (TaskBuilder::BuildAll): its task ids then increase with the tie-break keys, so ties break by id.
// Every time must fit in a Time (CheckHorizon). Also fills timing->crit_prev. Afterwards last_end() and
// last_task() give, per resource, the end of its last task (-1 when it ran nothing) and that task.
class Engine {
 public:
  void Run(const TaskGraph& tg, Timing* timing, Record record = Record::kAll, KeyMode keys = KeyMode::kAuto);
  const std::vector<Time>& last_end() const { return last_end_; }
  const std::vector<int32_t>& last_task() const { return last_; }
  // How the last run kept its heap keys: the times one-word keys were re-based, and whether it used two words.
  int32_t last_rebases() const { return rebases_; }
  bool last_wide() const { return wide_; }
  // Bytes of scratch held between runs.
  int64_t memory_bytes() const {
    return static_cast<int64_t>(waiting_.capacity() * sizeof(Waiting) +
                                packed_.capacity() * sizeof(uint64_t) +
                                wide_heap_.capacity() * sizeof(WideItem) + free_.capacity() * sizeof(Time) +
                                last_end_.capacity() * sizeof(Time) + last_.capacity() * sizeof(int32_t));
  }

 private:
  // The event loop with heap keys `Keys` (engine.cc); false when a key did not fit (nothing else is valid then).
  template <Record kRecord, class Keys>
  bool Loop(const TaskGraph& tg, Timing* timing, QuadHeap<typename Keys::Item>& heap, Keys keys);
  // Per task while it waits for its inputs: the latest arrival so far, its predecessor, inputs still missing.
  struct Waiting {
    Time ready;
    int32_t bind;
    int32_t pending;
  };
  std::vector<Waiting> waiting_;
  std::vector<Time> free_, last_end_;
  std::vector<int32_t> last_;
  QuadHeap<uint64_t> packed_;  // (ready - base) << bits | task
  QuadHeap<WideItem> wide_heap_;
  int32_t rebases_ = 0;
  bool wide_ = false;
};

// Error when the horizon is too long to simulate in integer time.
Status CheckHorizon(const TaskTotals& totals);

// The step in ticks: the latest end plus its resource's latency, from the per-resource last ends (-1: unused).
Time StepTicks(const TaskGraph& tg, const std::vector<Time>& last_end);

// The latest of the per-resource last ends (0 when none ran): a bound on every task end.
Time MaxEnd(const std::vector<Time>& last_end);

// The SimResult of a step of `step` ticks from the aggregates, without the critical path and timeline: step time,
// per-device and per-link statistics, memory (`static_bytes` and `dynamic_peak` per device) and OOM.
SimResult AssembleTotals(const Topology& topology, Time step, const TaskTotals& totals,
                         const std::vector<int64_t>& static_bytes, const std::vector<int64_t>& dynamic_peak);

// Builds the SimResult from the aggregates. `last_end[r]` is the end of the last task on resource r (or -1 when
// the resource ran nothing) and `last_task[r]` that task; `dynamic_peak[d]` and `static_bytes[d]` are per device.
SimResult Assemble(const Topology& topology, const TaskGraph& tg, const Timing& timing,
                   const TaskTotals& totals, const std::vector<Time>& last_end, const std::vector<int32_t>& last_task,
                   const std::vector<int64_t>& static_bytes, const std::vector<int64_t>& dynamic_peak,
                   const SimOptions& options);

}  // namespace devplace::sim
