// The event loop and result assembly (internal to sim/). FlexFlow's algorithm: a task enters the ready heap when
// all its predecessors have ended; the heap pops the smallest (ready time, key); start = max(ready, resource
// free); end = start + duration (durations are at least one tick); successors see end + the resource's latency.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "core/topology.h"
#include "sim/simulator.h"
#include "sim/task_graph.h"

namespace devplace::sim {

// Per-task times and the order tasks were dequeued.
struct Timing {
  std::vector<Time> ready, start, end;
  std::vector<int32_t> res_prev;  // the task that used the same resource just before (-1: none)
  std::vector<int32_t> order;     // alive tasks in dequeue order
};

// A heap entry.
struct HeapItem {
  Time ready;
  uint64_t key;
  int32_t task;
};

// Min-heap on (ready, key); reusable without reallocation.
class ReadyHeap {
 public:
  void clear() { items_.clear(); }
  bool empty() const { return items_.empty(); }
  const HeapItem& top() const { return items_.front(); }
  void push(const HeapItem& item);
  void pop();
  size_t capacity() const { return items_.capacity(); }

 private:
  static bool Less(const HeapItem& a, const HeapItem& b) {
    return a.ready < b.ready || (a.ready == b.ready && a.key < b.key);
  }
  std::vector<HeapItem> items_;
};

// Runs the whole task graph (alive tasks only) and fills `timing` (sized to the task count).
class Engine {
 public:
  void Run(const TaskGraph& tg, Timing* timing);
  // Bytes of scratch held between runs.
  int64_t memory_bytes() const {
    return static_cast<int64_t>(pending_.capacity() * sizeof(int32_t) + heap_.capacity() * sizeof(HeapItem) +
                                free_.capacity() * sizeof(Time) + last_.capacity() * sizeof(int32_t));
  }

 private:
  std::vector<int32_t> pending_;
  std::vector<Time> free_;
  std::vector<int32_t> last_;
  ReadyHeap heap_;
};

// Stable LSD radix sort of `items` by the unsigned key(item) of kBytes bytes, a byte per pass; passes where every
// key shares the byte are skipped. `scratch` is reused storage.
template <int kBytes = 8, class T, class Key>
void RadixSort(std::vector<T>* items, std::vector<T>* scratch, Key key) {
  const size_t n = items->size();
  if (n < 2) return;
  size_t counts[kBytes][256];
  std::memset(counts, 0, sizeof(counts));
  for (const T& item : *items) {
    const uint64_t k = key(item);
    for (int b = 0; b < kBytes; ++b) ++counts[b][(k >> (8 * b)) & 0xff];
  }
  scratch->resize(n);
  for (int b = 0; b < kBytes; ++b) {
    size_t* c = counts[b];
    if (c[(key((*items)[0]) >> (8 * b)) & 0xff] == n) continue;
    size_t sum = 0;
    for (int v = 0; v < 256; ++v) {
      const size_t x = c[v];
      c[v] = sum;
      sum += x;
    }
    for (const T& item : *items) (*scratch)[c[(key(item) >> (8 * b)) & 0xff]++] = item;
    items->swap(*scratch);
  }
}

// Time a task's buffer is freed: the latest end among the task and its successors.
Time BufferFree(const TaskGraph& tg, const Timing& timing, int32_t task);
// Peak of the buffers alive at once on each device (frees before allocations at equal times). Keeps its buffers
// between calls.
class PeakScratch {
 public:
  std::vector<int64_t> DynamicPeaks(const TaskGraph& tg, const Timing& timing);
  int64_t memory_bytes() const {
    return static_cast<int64_t>((events_.capacity() + one_.capacity() + scratch_.capacity()) * sizeof(Event) +
                                offsets_.capacity() * sizeof(int32_t));
  }

 private:
  struct Event {
    Time time;
    int64_t delta;
  };
  std::vector<Event> events_, one_, scratch_;
  std::vector<int32_t> offsets_;
};

// Aggregates that do not depend on timing: per-resource busy time, bytes and task counts, bytes moved,
// fallbacks, and the horizon (total seconds of all tasks and their latencies, a bound on any time).
struct TaskTotals {
  std::vector<Time> busy;
  std::vector<int64_t> bytes;
  std::vector<int32_t> count;
  int64_t bytes_moved = 0;
  int32_t num_tasks = 0, num_compute = 0, fallbacks = 0;
  double horizon_seconds = 0;
  // Adds (sign = +1) or removes (sign = -1) task t's contribution.
  void Add(const TaskGraph& tg, int32_t t, int sign);
  void Reset(int32_t num_resources);
};
// Error when the horizon is too long to simulate in integer time.
Status CheckHorizon(const TaskTotals& totals);

// Builds the SimResult from the aggregates. `last_end[r]` is the end of the last task on resource r (or -1 when
// the resource ran nothing) and `last_task[r]` that task; `dynamic_peak[d]` and `static_bytes[d]` are per device.
SimResult Assemble(const Topology& topology, const TaskGraph& tg, const Timing& timing,
                   const TaskTotals& totals, const std::vector<Time>& last_end, const std::vector<int32_t>& last_task,
                   const std::vector<int64_t>& static_bytes, const std::vector<int64_t>& dynamic_peak,
                   const SimOptions& options);

}  // namespace devplace::sim
