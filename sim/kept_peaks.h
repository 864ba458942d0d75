// Memory peaks kept up to date across changes (internal to sim/): the delta simulator's alternative to a pass over
// every buffer of a device after each change.
//
// Each tracked device keeps its buffers' events (an allocation at the buffer's start, a free at its free time) in
// order as the peak pass orders them (by time, frees before allocations at equal times), in blocks of about a
// hundred events, each with its events' byte sum and largest running sum, so the device's peak is one walk over its
// blocks. A change re-times a few tasks and moves a whole rest of the schedule by one amount; the events of the rest
// keep their order, so that move adds the amount to one offset per block (and to the keys of one block's tail), and
// only the events of the few re-timed buffers are taken out and put back, each within one block.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "sim/engine.h"

namespace devplace::sim {

class KeptPeaks {
 public:
  // Tracks no device and holds no event (keeps its room).
  void Clear();
  // Whether any device is tracked.
  bool active() const { return num_tracked_ > 0; }
  // Whether task `task` holds events.
  bool held(int32_t task) const { return static_cast<size_t>(task) < device_.size() && device_[task] >= 0; }
  // The number of buffers held (tasks holding events).
  int64_t num_buffers() const { return num_buffers_; }
  // Whether `device` is tracked (its peak is kept).
  bool tracked(int32_t device) const {
    return device >= 0 && static_cast<size_t>(device) < tracked_.size() && tracked_[device];
  }
  // Room for the events of tasks with ids below `tasks`; earlier events stay.
  void Reserve(int32_t tasks);
  // Starts tracking `device` (untracked, below `devices`) with the buffers (task, start, free, bytes > 0) given by
  // `buffers`, whose tasks hold no event yet.
  struct Buffer {
    int32_t task;
    Time start, free;
    int64_t bytes;
  };
  void Track(int32_t device, int32_t devices, std::vector<Buffer>& buffers);
  // Makes task `task`'s buffer `bytes` > 0 on tracked `device`, alive from `start` until `free` (Reserve'd); an
  // event it holds already with the same time and bytes stays where it is.
  void Put(int32_t task, int32_t device, Time start, Time free, int64_t bytes);
  // Takes task `task`'s events out if it holds any.
  void Erase(int32_t task);
  // Takes out those of task `task`'s events that lie at time `from` or later and before time `to`.
  void Take(int32_t task, Time from, Time to);
  // Moves every event at time `from` or later by `delta`, on every tracked device. No event may lie in
  // [from + min(0, delta), from) (the caller takes those out first), so the order is kept.
  void Shift(Time from, Time delta);
  // Task `task`'s buffer as it is held (its device, start, free and bytes; device -1 when it holds none). For
  // checks.
  struct Held {
    int32_t device = -1;
    Time start = 0, free = 0;
    int64_t bytes = 0;
  };
  Held Find(int32_t task) const;
  // The peak of the tracked device's buffers (at least 0). Recomputes the sums of the blocks edited since the last
  // call first.
  int64_t Peak(int32_t device);
  // Names every event by its task's new id `new_id[task]` (>= 0 for every task holding events; below `tasks`).
  void Renumber(const std::vector<int32_t>& new_id, int32_t tasks);

 private:
  // One event: its key (time << 1, | 1 for an allocation) less its block's offset, its bytes (+ for an
  // allocation, - for a free) and its id (2 task for a free, 2 task + 1 for an allocation).
  struct Event {
    int64_t key, bytes;
    int32_t id;
  };
  // A run of a device's events in key order: `offset` is added to every key in it (a shift of all later events
  // costs one addition per block), `sum` and `best` are its events' byte sum and largest running sum, stale
  // (`stale`, and listed in stale_blocks_) after an edit until the next Peak.
  struct Block {
    std::vector<Event> events;
    int64_t offset = 0, sum = 0, best = 0;
    bool stale = false;
  };
  static constexpr size_t kBlockEvents = 64;  // a block is split in two when it reaches twice this

  std::vector<Block> blocks_;             // every block made (its event room kept), in use or free
  std::vector<int32_t> free_blocks_;
  std::vector<int32_t> stale_blocks_;  // blocks edited since the last Peak (an entry whose block is not stale: none)
  std::vector<std::vector<int32_t>> order_;  // per tracked device: its blocks in key order
  std::vector<uint8_t> tracked_;
  std::vector<int32_t> block_of_;         // per event id: its block (-1: not held)
  std::vector<int64_t> key_of_;           // per event id held: its key less its block's offset (as in its Event)
  std::vector<int32_t> device_;           // per task: the device whose blocks hold its events (-1: none)
  std::vector<int64_t> bytes_;            // per task holding events: its buffer's bytes
  int32_t num_tracked_ = 0;
  int64_t num_buffers_ = 0;
  std::vector<std::pair<int64_t, int32_t>> sorted_, unsorted_;  // Track's: (key, event id), sorted, and scratch
  // Renumber's spare tables (block_of_, key_of_, device_ and bytes_ by the new ids); between calls they name no
  // block and no device.
  std::vector<int32_t> renumbered_block_of_, renumbered_device_;
  std::vector<int64_t> renumbered_key_of_;
  std::vector<int64_t> renumbered_bytes_;

  // A block taken from the free ones (or a new one), empty.
  int32_t NewBlock();
  // Recomputes block b's sum and best (no longer stale).
  void Sum(int32_t b);
  // Marks block b's sum and best stale.
  void MarkStale(int32_t b);
  // The position in order_[device] of the last block whose first key is below `key` (0 when none is).
  size_t Locate(int32_t device, int64_t key) const;
  void InsertEvent(int32_t id, int32_t device, int64_t key, int64_t bytes);
  void EraseEvent(int32_t id, int32_t device);
  // Held event `id`'s place among its block's events.
  [[gnu::always_inline]] inline std::vector<Event>::iterator FindInBlock(int32_t id);
  // Moves held event `id` to `key` with `bytes` inside its block when `key` lies after the block's first key and at
  // most its last (so the blocks stay in order; the events in between move by one place); false, with nothing
  // changed, otherwise.
  bool MoveInBlock(int32_t id, int64_t key, int64_t bytes);
  // Event `id`'s key (held).
  int64_t KeyAt(int32_t id) const;
  // Sorts sorted_ by key.
  void SortByKey();
};

}  // namespace devplace::sim
