// The memory model's timeline part (internal to sim/): per-device peaks of the buffers alive at once.
// A task with mem_bytes allocates them on mem_device at its start and frees them when the last of the task and
// its successors ends; at equal times frees come before allocations.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "sim/engine.h"
#include "sim/task_graph.h"

namespace devplace::sim {

// Time a task's buffer is freed: the latest of its own end `own_end` and its successors' ends, each read from
// `end_of(successor)` (the delta simulator reads them from its layout without materialising a Timing).
template <class EndOf>
Time BufferFreeAfter(const TaskGraph& tg, int32_t task, Time own_end, const EndOf& end_of) {
  Time free = own_end;
  const int32_t* s = tg.succ_pool.data() + tg.succ_off[task];
  for (int32_t k = 0, n = tg.succ_cnt[task]; k < n; ++k) free = std::max(free, end_of(s[k]));
  return free;
}
// The same with the task's own end read from `end_of(task)` too.
template <class EndOf>
Time BufferFreeBy(const TaskGraph& tg, int32_t task, const EndOf& end_of) {
  return BufferFreeAfter(tg, task, end_of(task), end_of);
}

// BufferFreeBy with the ends of `timing`.
Time BufferFree(const TaskGraph& tg, const Timing& timing, int32_t task);

// Peak of the buffers alive at once on each device. Keeps its buffers between calls.
//
// The peak is the largest running sum over the device's events in time order. Events are summed into buckets of
// equal time span; a bucket's running sum at its end is a lower bound of the peak, and the running sum at its
// start plus its allocations an upper bound of any value inside it. Only the buckets whose upper bound exceeds
// the best lower bound (usually a handful around the peak) have their events sorted.
class PeakScratch {
 public:
  // Peaks of the alive tasks' buffers, indexed by device; `max_end` bounds every task end. (Like Finish's, the
  // result lives in the scratch until its next Begin.)
  const std::vector<int64_t>& DynamicPeaks(const TaskGraph& tg, const Timing& timing, Time max_end);
  // The same from buffers given one by one: Begin (`devices`, at most `tasks` buffers, every time at most
  // `max_end`; `keep_events`: for Add), Add for each buffer (`bytes` > 0 on `device` from `start` until `free`),
  // then Finish for the peaks (held by the scratch until its next Begin, so that a pass does not allocate).
  void Begin(int32_t devices, int32_t tasks, Time max_end, bool keep_events = true);
  void Add(int32_t device, Time start, Time free, int64_t bytes) {
    const int32_t base = device * per_device_;
    const int32_t bf = base + static_cast<int32_t>(free >> shift_), ba = base + static_cast<int32_t>(start >> shift_);
    events_[count_] = {static_cast<uint64_t>(free) << 1, -bytes};
    events_[count_ + 1] = {(static_cast<uint64_t>(start) << 1) | 1, bytes};
    next_[count_] = head_[bf];
    head_[bf] = count_;
    next_[count_ + 1] = head_[ba];
    head_[ba] = count_ + 1;
    count_ += 2;
    freed_[bf] += bytes;
    upper_[ba] += bytes;
  }
  const std::vector<int64_t>& Finish();
  // The same in two passes over the buffers without keeping their events: Begin, Count for each buffer, Bound,
  // then Keep for each buffer again (the same arguments, any order), then Finish.
  void Count(int32_t device, Time start, Time free, int64_t bytes) {
    const int32_t base = device * per_device_;
    freed_[base + static_cast<int32_t>(free >> shift_)] += bytes;
    upper_[base + static_cast<int32_t>(start >> shift_)] += bytes;
  }
  // After the Count pass: the peaks' lower bounds and which buckets may hold more.
  void Bound();
  void Keep(int32_t device, Time start, Time free, int64_t bytes) {
    const int32_t base = device * per_device_;
    const int32_t bf = base + static_cast<int32_t>(free >> shift_), ba = base + static_cast<int32_t>(start >> shift_);
    const int64_t low = peaks_[device];
    if (upper_[bf] > low) candidates_.push_back({bf, {static_cast<uint64_t>(free) << 1, -bytes}});
    if (upper_[ba] > low) candidates_.push_back({ba, {(static_cast<uint64_t>(start) << 1) | 1, bytes}});
  }
  int64_t memory_bytes() const {
    return static_cast<int64_t>((events_.capacity() * sizeof(Event) +
                                 (next_.capacity() + head_.capacity()) * sizeof(int32_t) +
                                 (upper_.capacity() + freed_.capacity()) * sizeof(int64_t) +
                                 candidates_.capacity() * sizeof(Candidate) + peaks_.capacity() * sizeof(int64_t)));
  }

 private:
  struct Event {
    uint64_t key;  // time << 1 | (1 for an allocation): frees sort first at equal times
    int64_t delta;
  };
  struct Candidate {
    int32_t bucket;
    Event event;
  };
  std::vector<Event> events_;
  // Add's events chained per bucket: head_ per bucket (-1: none), next_ per event, so that Finish reads only the
  // events of the buckets that may hold a higher value.
  std::vector<int32_t> head_, next_;
  std::vector<int64_t> upper_;        // per bucket: allocations, then the upper bound
  std::vector<int64_t> freed_;        // per bucket: frees, then the running sum at its start
  std::vector<Candidate> candidates_;
  // Between Begin and Finish: devices, bucket bits, buckets per device, time shift, events added, whether Bound
  // ran, and per device the peak's lower bound (after Bound; the peak itself after Finish).
  int32_t devices_ = 0, bits_ = 0, per_device_ = 1, shift_ = 0, count_ = 0;
  bool bounded_ = false;
  std::vector<int64_t> peaks_;
};

}  // namespace devplace::sim
