// A resource's slot list for the delta simulator (internal to sim/): its tasks' slots in increasing order, stored
// with room before the first entry, so that an edit near the front of a long list can move the entries before it
// instead of those after it (DeltaSimulator::Impl::UpdateResourceSlots).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace devplace::sim {

class SlotList {
 public:
  // The entries, in increasing order (contiguous: iterators are pointers, valid until the list changes).
  int32_t* begin() { return data_.data() + head_; }
  int32_t* end() { return data_.data() + data_.size(); }
  const int32_t* begin() const { return data_.data() + head_; }
  const int32_t* end() const { return data_.data() + data_.size(); }
  size_t size() const { return data_.size() - head_; }
  bool empty() const { return size() == 0; }
  int32_t& operator[](size_t k) { return data_[head_ + k]; }
  int32_t operator[](size_t k) const { return data_[head_ + k]; }
  int32_t front() const { return data_[head_]; }
  int32_t back() const { return data_.back(); }
  void clear() {
    data_.clear();
    head_ = 0;
  }
  void push_back(int32_t slot) { data_.push_back(slot); }
  // Keeps the first `count` entries.
  void Truncate(size_t count) { data_.resize(head_ + count); }
  // Replaces the entries [first, last) by `entries`.
  void Replace(size_t first, size_t last, std::span<const int32_t> entries) {
    const auto at = [this](size_t k) { return data_.begin() + static_cast<std::ptrdiff_t>(head_ + k); };
    data_.insert(data_.erase(at(first), at(last)), entries.begin(), entries.end());
  }
  // Moves the list's start to storage index head() - shift (shift <= head(); negative: towards the end) with
  // `size` entries from there, growing the storage when the new end lies past it. Moves no entry: the caller
  // moves them in storage() (as UpdateResourceSlots does) and then calls Trim with the same size.
  void Reframe(std::ptrdiff_t shift, size_t size) {
    head_ = static_cast<size_t>(static_cast<std::ptrdiff_t>(head_) - shift);
    if (head_ + size > data_.size()) data_.resize(head_ + size);
  }
  // Ends the storage after the first `size` entries (after a Reframe and the caller's moves).
  void Trim(size_t size) { data_.resize(head_ + size); }
  // The storage, with the room before the first entry: index head() + k holds entry k.
  int32_t* storage() { return data_.data(); }
  // Storage entries before the first entry: the most an edit may move the front entries towards the start.
  size_t head() const { return head_; }

 private:
  std::vector<int32_t> data_;
  size_t head_ = 0;
};

// What applying a change's edits to a slot list needs besides the list (DeltaSimulator::Impl::UpdateResourceSlots
// and MoveEntriesInPlace), kept between changes so that edits allocate nothing once it has grown.
struct SlotListEditScratch {
  // The slots added, with the moves that could not keep their entry in place.
  std::vector<int32_t> merged_added;
  // Blocks of a slot list [begin, end) that move by `off`, entries inserted at their final positions, the final
  // positions whose link from the entry before changed, and (a block's offset, its entries) sorted by offset.
  struct Block {
    size_t begin, end;
    std::ptrdiff_t off;
  };
  struct Insert {
    size_t to;
    int32_t slot;
  };
  std::vector<Block> blocks;
  std::vector<Insert> inserts;
  std::vector<size_t> edits;
  std::vector<std::pair<std::ptrdiff_t, size_t>> offset_entries;
};

}  // namespace devplace::sim
