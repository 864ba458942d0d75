// The memory model's timeline part (internal to sim/): per-device peaks of the buffers alive at once.
// A task with mem_bytes allocates them on mem_device at its start and frees them when the last of the task and
// its successors ends; at equal times frees come before allocations.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/engine.h"
#include "sim/task_graph.h"

namespace devplace::sim {

// Time a task's buffer is freed: the latest end among the task and its successors.
Time BufferFree(const TaskGraph& tg, const Timing& timing, int32_t task);

// Peak of the buffers alive at once on each device. Keeps its buffers between calls.
class PeakScratch {
 public:
  // Peaks of the alive tasks' buffers, indexed by device; `max_end` bounds every task end of `timing`.
  std::vector<int64_t> DynamicPeaks(const TaskGraph& tg, const Timing& timing, Time max_end);
  int64_t memory_bytes() const {
    return static_cast<int64_t>((events_.capacity() + sorted_.capacity()) * sizeof(Event) +
                                (bucket_.capacity() + offsets_.capacity()) * sizeof(int32_t));
  }

 private:
  struct Event {
    uint64_t key;  // time << 1 | (1 for an allocation): frees sort first at equal times
    int64_t delta;
  };
  std::vector<Event> events_, sorted_;
  std::vector<int32_t> bucket_, offsets_;
};

}  // namespace devplace::sim
