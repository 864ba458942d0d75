// Incrementally maintained peak of a device's memory timeline (internal to sim/): buffer allocations and frees
// as events ordered by (time, frees before allocations, task), kept in sorted blocks that each know their sum
// and largest prefix sum. Insert and erase cost O(block size); the peak costs O(number of blocks).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace devplace::sim {

class MemoryProfile {
 public:
  struct Event {
    double time;
    int32_t is_alloc;  // 0: free, 1: allocation (frees sort first at equal times)
    int32_t task;
    int64_t delta;
  };

  // Replaces the contents with `events`, which must be sorted by (time, is_alloc, task).
  void AssignSorted(std::vector<Event> events);
  void Insert(const Event& event);
  // Removes the event equal in (time, is_alloc, task); it must be present.
  void Erase(const Event& event);
  // Largest prefix sum of the deltas in time order (0 when empty).
  int64_t Peak() const;

 private:
  struct Block {
    std::vector<Event> events;
    int64_t sum = 0;
    int64_t max_prefix = 0;
  };
  static bool Less(const Event& a, const Event& b) {
    if (a.time != b.time) return a.time < b.time;
    if (a.is_alloc != b.is_alloc) return a.is_alloc < b.is_alloc;
    return a.task < b.task;
  }
  static void Refresh(Block* block);
  size_t FindBlock(const Event& event) const;
  std::vector<Block> blocks_;
};

}  // namespace devplace::sim
