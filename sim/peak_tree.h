// Memory peaks kept up to date across changes (internal to sim/): the delta simulator's alternative to a pass over
// every buffer of a device after each change.
//
// Each tracked device keeps its buffers' events (an allocation at the buffer's start, a free at its free time) in
// a treap ordered as the peak pass orders them (by time, frees before allocations at equal times). Every node holds
// its subtree's byte sum and largest running sum, so the device's peak is read at the root. A change re-times a few
// tasks and moves a whole rest of the schedule by one amount; the events of the rest keep their order, so that move
// is a split and a lazily added offset, and only the events of the few re-timed buffers are taken out and put back.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "sim/engine.h"

namespace devplace::sim {

class PeakTree {
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
  // Takes out those of task `task`'s events that lie at time `from` or later.
  void Take(int32_t task, Time from);
  // Moves every event at time `from` or later by `delta`, on every tracked device. No event may lie in
  // [from + min(0, delta), from) (the caller takes those out first), so the order is kept.
  void Shift(Time from, Time delta);
  // Task `task`'s buffer as the tree holds it (its device, start, free and bytes; device -1 when it holds none).
  // O(depth); for checks.
  struct Held {
    int32_t device = -1;
    Time start = 0, free = 0;
    int64_t bytes = 0;
  };
  Held Find(int32_t task) const;
  // The peak of the tracked device's buffers (at least 0).
  int64_t Peak(int32_t device) const;
  // Names every event by its task's new id `new_id[task]` (>= 0 for every task holding events; below `tasks`).
  void Renumber(const std::vector<int32_t>& new_id, int32_t tasks);
  // Bytes held by the nodes.
  int64_t memory_bytes() const;

 private:
  static constexpr int32_t kNone = -1;
  // One event: its key (time << 1, | 1 for an allocation), the offset still to add to its subtree's keys, its own
  // bytes (+ for an allocation, - for a free), its subtree's sum and largest running sum, its links and priority.
  struct Node {
    int64_t key, lazy, own, sum, best;
    int32_t left, right, parent;
    uint32_t priority;
  };
  // Node of task t's free (2t) and allocation (2t + 1) events, and whether each is in a tree; device_[t]: the
  // device whose tree holds them (-1: none).
  std::vector<Node> nodes_;
  std::vector<uint8_t> present_;
  std::vector<int32_t> device_;
  std::vector<int32_t> root_;     // per device: its root (kNone: empty or untracked)
  std::vector<uint8_t> tracked_;  // per device: whether it is tracked
  int32_t num_tracked_ = 0;
  int64_t num_buffers_ = 0;
  std::vector<int32_t> path_, order_;  // scratch
  std::vector<std::pair<int64_t, int32_t>> sorted_, unsorted_;  // Track's: (key, node), sorted, and scratch
  std::vector<Node> renumbered_;
  std::vector<uint8_t> renumbered_present_;
  std::vector<int32_t> renumbered_device_;

  void Push(int32_t x);
  void Pull(int32_t x);
  void SetChild(int32_t parent, bool right, int32_t child);
  // Splits `t` into keys below `key` (*low) and the rest (*high).
  void Split(int32_t t, int64_t key, int32_t* low, int32_t* high);
  int32_t Merge(int32_t a, int32_t b);
  void InsertNode(int32_t x, int32_t device);
  void EraseNode(int32_t x, int32_t device);
  // Builds a treap of the nodes `order_` (in key order, fresh) and returns its root.
  int32_t BuildSorted();
  void InitNode(int32_t x, int64_t key, int64_t own);
  // Sorts sorted_ by key.
  void SortByKey();
  // Node x's key with the offsets still pending at its ancestors.
  int64_t KeyAt(int32_t x) const;
};

}  // namespace devplace::sim
