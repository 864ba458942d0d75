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
  // Peaks of the alive tasks' buffers, indexed by device.
  std::vector<int64_t> DynamicPeaks(const TaskGraph& tg, const Timing& timing);
  int64_t memory_bytes() const {
    return static_cast<int64_t>(
        (events_.capacity() + sorted_.capacity() + nested_scratch_.capacity()) * sizeof(Event) +
        (bucket_.capacity() + offsets_.capacity() + nested_.capacity() + device_base_.capacity() +
         shift_.capacity()) * sizeof(int32_t) +
        (lo_.capacity() + hi_.capacity()) * sizeof(Time));
  }

 private:
  struct Event {
    uint64_t key;  // time << 1 | (1 for an allocation): frees sort first at equal times
    int64_t delta;
  };
  void Sort(Event* e, int32_t n);
  std::vector<Event> events_, sorted_, nested_scratch_;
  std::vector<int32_t> bucket_, offsets_, nested_;  // nested_: a stack of Sort's bucket counts
  std::vector<Time> lo_, hi_;                       // per device: earliest and latest event
  std::vector<int32_t> device_base_, shift_;        // per device: first bucket, time shift
};

}  // namespace devplace::sim
