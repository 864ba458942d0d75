#include "sim/memory_profile.h"

#include <algorithm>

#include "core/check.h"

namespace devplace::sim {
namespace {
constexpr size_t kBlock = 128;
}  // namespace

void MemoryProfile::Refresh(Block* block) {
  int64_t sum = 0, best = 0;
  for (const Event& e : block->events) {
    sum += e.delta;
    best = std::max(best, sum);
  }
  block->sum = sum;
  block->max_prefix = best;
}

void MemoryProfile::AssignSorted(std::vector<Event> events) {
  blocks_.clear();
  for (size_t i = 0; i < events.size(); i += kBlock) {
    Block b;
    b.events.assign(events.begin() + static_cast<std::ptrdiff_t>(i),
                    events.begin() + static_cast<std::ptrdiff_t>(std::min(events.size(), i + kBlock)));
    Refresh(&b);
    blocks_.push_back(std::move(b));
  }
}

size_t MemoryProfile::FindBlock(const Event& event) const {
  // The first block whose last event is not below `event` (or the last block).
  size_t lo = 0, hi = blocks_.size();
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (Less(blocks_[mid].events.back(), event)) lo = mid + 1;
    else hi = mid;
  }
  return std::min(lo, blocks_.size() - 1);
}

void MemoryProfile::Insert(const Event& event) {
  if (blocks_.empty()) blocks_.emplace_back();
  const size_t b = blocks_[0].events.empty() ? 0 : FindBlock(event);
  std::vector<Event>& ev = blocks_[b].events;
  ev.insert(std::upper_bound(ev.begin(), ev.end(), event, Less), event);
  if (ev.size() > 2 * kBlock) {
    Block tail;
    tail.events.assign(ev.begin() + static_cast<std::ptrdiff_t>(kBlock), ev.end());
    ev.resize(kBlock);
    Refresh(&tail);
    blocks_.insert(blocks_.begin() + static_cast<std::ptrdiff_t>(b) + 1, std::move(tail));
  }
  Refresh(&blocks_[b]);
}

void MemoryProfile::Erase(const Event& event) {
  DEVPLACE_CHECK(!blocks_.empty(), "erase from an empty memory profile");
  const size_t b = FindBlock(event);
  std::vector<Event>& ev = blocks_[b].events;
  auto it = std::lower_bound(ev.begin(), ev.end(), event, Less);
  DEVPLACE_CHECK(it != ev.end() && !Less(event, *it), "memory event not found");
  ev.erase(it);
  if (ev.empty() && blocks_.size() > 1) {
    blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(b));
    return;
  }
  Refresh(&blocks_[b]);
}

int64_t MemoryProfile::Peak() const {
  int64_t run = 0, best = 0;
  for (const Block& b : blocks_) {
    best = std::max(best, run + b.max_prefix);
    run += b.sum;
  }
  return best;
}

}  // namespace devplace::sim
