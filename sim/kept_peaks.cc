#include "sim/kept_peaks.h"

#include <algorithm>
#include <climits>
#include <utility>

namespace devplace::sim {

namespace {
constexpr int64_t kNoBest = INT64_MIN / 4;  // the largest running sum of no event
int64_t KeyOf(Time time, bool allocation) { return (time << 1) | (allocation ? 1 : 0); }

// SortByKey's digits: 11 bits (times of about 40 bits take four passes), at most six for a non-negative key.
constexpr int kDigitBits = 11;
constexpr int64_t kDigits = int64_t{1} << kDigitBits;
constexpr int kMaxPasses = (63 + kDigitBits - 1) / kDigitBits;

// Adds each item's digit p (p < kPasses) to count[p].
template <int kPasses>
void CountDigits(const std::vector<std::pair<int64_t, int32_t>>& items, uint32_t (*count)[kDigits]) {
  for (const auto& [key, x] : items)
    for (int p = 0; p < kPasses; ++p) ++count[p][(key >> (p * kDigitBits)) & (kDigits - 1)];
}
}  // namespace

void KeptPeaks::Clear() {
  if (num_tracked_ == 0) return;
  for (std::vector<int32_t>& blocks : order_) {
    for (int32_t b : blocks) {
      for (const Event& e : blocks_[b].events) {
        block_of_[e.id] = -1;
        device_[e.id >> 1] = -1;  // (a task holds events exactly while its device is set)
      }
      blocks_[b].events.clear();
      blocks_[b].stale = false;
      free_blocks_.push_back(b);
    }
    blocks.clear();
  }
  stale_blocks_.clear();
  std::fill(tracked_.begin(), tracked_.end(), 0);
  num_tracked_ = 0;
  num_buffers_ = 0;
}

void KeptPeaks::Reserve(int32_t tasks) {
  if (device_.size() >= static_cast<size_t>(tasks)) return;
  const size_t room = std::max(static_cast<size_t>(tasks), device_.size() + device_.size() / 2);
  block_of_.resize(2 * room, -1);
  key_of_.resize(2 * room, 0);
  device_.resize(room, -1);
  bytes_.resize(room, 0);
  renumbered_block_of_.reserve(2 * room);  // Renumber's, so that it does not allocate
  renumbered_key_of_.reserve(2 * room);
  renumbered_device_.reserve(room);
  renumbered_bytes_.reserve(room);
}

int32_t KeptPeaks::NewBlock() {
  if (free_blocks_.empty()) {
    blocks_.emplace_back();
    blocks_.back().events.reserve(2 * kBlockEvents);
    return static_cast<int32_t>(blocks_.size()) - 1;
  }
  const int32_t b = free_blocks_.back();
  free_blocks_.pop_back();
  blocks_[b].offset = blocks_[b].sum = 0;
  blocks_[b].best = kNoBest;
  return b;
}

void KeptPeaks::MarkStale(int32_t b) {
  if (blocks_[b].stale) return;
  blocks_[b].stale = true;
  stale_blocks_.push_back(b);
}

void KeptPeaks::Sum(int32_t b) {
  Block& block = blocks_[b];
  block.stale = false;
  int64_t sum = 0, best = kNoBest;
  for (const Event& e : block.events) {
    sum += e.bytes;
    best = std::max(best, sum);
  }
  block.sum = sum;
  block.best = best;
}

size_t KeptPeaks::Locate(int32_t device, int64_t key) const {
  const std::vector<int32_t>& blocks = order_[device];
  size_t low = 0, high = blocks.size();  // the answer is the last block in [low, high) with a first key below key
  while (high - low > 1) {
    const size_t mid = (low + high) / 2;
    const Block& block = blocks_[blocks[mid]];
    if (block.events.front().key + block.offset < key) low = mid;
    else high = mid;
  }
  return low;
}

void KeptPeaks::InsertEvent(int32_t id, int32_t device, int64_t key, int64_t bytes) {
  std::vector<int32_t>& blocks = order_[device];
  if (blocks.empty()) blocks.push_back(NewBlock());
  const size_t at = Locate(device, key);
  const int32_t b = blocks[at];
  {
    Block& block = blocks_[b];
    const Event e{key - block.offset, bytes, id};
    auto it = std::upper_bound(block.events.begin(), block.events.end(), e.key,
                               [](int64_t k, const Event& x) { return k < x.key; });
    block.events.insert(it, e);
    block_of_[id] = b;
    key_of_[id] = e.key;
  }
  if (blocks_[b].events.size() < 2 * kBlockEvents) {
    MarkStale(b);
    return;
  }
  // Split in two: the upper half moves to a new block after it (same offset).
  const int32_t upper = NewBlock();
  Block& block = blocks_[b];
  Block& next = blocks_[upper];
  next.offset = block.offset;
  next.events.assign(block.events.begin() + kBlockEvents, block.events.end());
  block.events.resize(kBlockEvents);
  for (const Event& e : next.events) block_of_[e.id] = upper;
  MarkStale(b);
  MarkStale(upper);
  blocks.insert(blocks.begin() + static_cast<std::ptrdiff_t>(at) + 1, upper);
}

std::vector<KeptPeaks::Event>::iterator KeptPeaks::FindInBlock(int32_t id) {
  std::vector<Event>& events = blocks_[block_of_[id]].events;
  // The first event with its key, then on to it among those with the same key.
  auto it = std::lower_bound(events.begin(), events.end(), key_of_[id],
                             [](const Event& x, int64_t k) { return x.key < k; });
  while (it->id != id) ++it;
  return it;
}

void KeptPeaks::EraseEvent(int32_t id, int32_t device) {
  const int32_t b = block_of_[id];
  Block& block = blocks_[b];
  block.events.erase(FindInBlock(id));
  block_of_[id] = -1;
  if (!block.events.empty()) {
    MarkStale(b);
    return;
  }
  std::vector<int32_t>& blocks = order_[device];
  blocks.erase(std::find(blocks.begin(), blocks.end(), b));
  block.stale = false;  // (an entry of stale_blocks_ it may have is passed over)
  free_blocks_.push_back(b);
}

bool KeptPeaks::MoveInBlock(int32_t id, int64_t key, int64_t bytes) {
  const int32_t b = block_of_[id];
  Block& block = blocks_[b];
  std::vector<Event>& events = block.events;
  const int64_t moved = key - block.offset;
  // Past the block's first key and at most its last, the event stays between the blocks before and after it.
  if (!(events.front().key < moved && moved <= events.back().key)) return false;
  const auto at = FindInBlock(id);
  const auto to = std::upper_bound(events.begin(), events.end(), moved,
                                   [](int64_t k, const Event& x) { return k < x.key; });
  // Only the events between its old and new places move, by one.
  auto place = to;
  if (to > at) place = std::rotate(at, at + 1, to);  // (to - 1)
  else std::rotate(to, at, at + 1);
  place->key = moved;
  place->bytes = bytes;
  key_of_[id] = moved;
  MarkStale(b);
  return true;
}

int64_t KeptPeaks::KeyAt(int32_t id) const { return key_of_[id] + blocks_[block_of_[id]].offset; }

void KeptPeaks::Put(int32_t task, int32_t device, Time start, Time free, int64_t bytes) {
  if (device_[task] >= 0 && device_[task] != device) Erase(task);
  const bool same_bytes = device_[task] >= 0 && bytes_[task] == bytes;
  num_buffers_ += device_[task] < 0;
  device_[task] = device;
  bytes_[task] = bytes;
  const int64_t keys[2] = {KeyOf(free, false), KeyOf(start, true)}, owns[2] = {-bytes, bytes};
  for (int32_t k = 0; k < 2; ++k) {
    const int32_t id = 2 * task + k;
    if (block_of_[id] >= 0) {
      if (KeyAt(id) == keys[k]) {
        // The same time: the bytes updated in place if they differ.
        if (same_bytes) continue;
        FindInBlock(id)->bytes = owns[k];
        MarkStale(block_of_[id]);
        continue;
      }
      if (MoveInBlock(id, keys[k], owns[k])) continue;
      EraseEvent(id, device);
    }
    InsertEvent(id, device, keys[k], owns[k]);
  }
}

void KeptPeaks::Erase(int32_t task) {
  if (static_cast<size_t>(task) >= device_.size()) return;
  const int32_t device = device_[task];
  if (device < 0) return;
  for (int32_t id = 2 * task; id < 2 * task + 2; ++id)
    if (block_of_[id] >= 0) EraseEvent(id, device);
  device_[task] = -1;
  --num_buffers_;
}

void KeptPeaks::Take(int32_t task, Time from, Time to) {
  if (static_cast<size_t>(task) >= device_.size()) return;
  const int32_t device = device_[task];
  if (device < 0) return;
  const int64_t low = KeyOf(from, false), high = KeyOf(to, false);
  for (int32_t id = 2 * task; id < 2 * task + 2; ++id) {
    if (block_of_[id] < 0) continue;
    const int64_t key = KeyAt(id);
    if (key >= low && key < high) EraseEvent(id, device);
  }
  if (block_of_[2 * task] < 0 && block_of_[2 * task + 1] < 0) {
    device_[task] = -1;
    --num_buffers_;
  }
}

void KeptPeaks::Shift(Time from, Time delta) {
  if (delta == 0) return;
  const int64_t key = KeyOf(from, false), offset = 2 * delta;
  for (size_t d = 0; d < order_.size(); ++d) {
    const std::vector<int32_t>& blocks = order_[d];
    if (blocks.empty()) continue;
    // The first block that may hold such events moves its tail; every later one holds only such events. The
    // sums do not change (the order is kept).
    const size_t at = Locate(static_cast<int32_t>(d), key);
    Block& first = blocks_[blocks[at]];
    for (Event& e : first.events)
      if (e.key + first.offset >= key) key_of_[e.id] = e.key += offset;
    for (size_t i = at + 1; i < blocks.size(); ++i) blocks_[blocks[i]].offset += offset;
  }
}

void KeptPeaks::SortByKey() {
  // Least significant digit first, over the digits the largest key uses (keys are non-negative); each pass is
  // stable. Every pass's counts come from one read of the keys.
  int64_t largest = 0;
  for (const auto& [key, x] : sorted_) largest = std::max(largest, key);
  int passes = 0;
  while (passes < kMaxPasses && (largest >> (passes * kDigitBits)) != 0) ++passes;
  unsorted_.reserve(sorted_.capacity());  // (grown as sorted_ grows)
  unsorted_.resize(sorted_.size());
  uint32_t count[kMaxPasses][kDigits];
  for (int p = 0; p < passes; ++p) std::fill(count[p], count[p] + kDigits, 0);
  switch (passes) {
    case 1: CountDigits<1>(sorted_, count); break;
    case 2: CountDigits<2>(sorted_, count); break;
    case 3: CountDigits<3>(sorted_, count); break;
    case 4: CountDigits<4>(sorted_, count); break;
    case 5: CountDigits<5>(sorted_, count); break;
    case 6: CountDigits<6>(sorted_, count); break;
    default: break;  // every key is 0
  }
  for (int p = 0; p < passes; ++p) {
    uint32_t* at = count[p];  // each digit's first index in the output
    uint32_t sum = 0;
    for (int64_t b = 0; b < kDigits; ++b) sum += std::exchange(at[b], sum);
    const int shift = p * kDigitBits;
    for (const auto& item : sorted_) unsorted_[at[(item.first >> shift) & (kDigits - 1)]++] = item;
    sorted_.swap(unsorted_);
  }
}

void KeptPeaks::Track(int32_t device, int32_t devices, std::vector<Buffer>& buffers) {
  if (order_.size() < static_cast<size_t>(devices)) {
    order_.resize(static_cast<size_t>(devices));
    tracked_.resize(static_cast<size_t>(devices), 0);
  }
  sorted_.clear();
  for (const Buffer& b : buffers) {
    device_[b.task] = device;
    bytes_[b.task] = b.bytes;
    sorted_.emplace_back(KeyOf(b.free, false), 2 * b.task);
    sorted_.emplace_back(KeyOf(b.start, true), 2 * b.task + 1);
  }
  SortByKey();
  // Room made now for as many blocks again as splits may need before the next tracking (and by half the blocks
  // made so far at least, so that a device with a few more buffers than before rarely needs more), so that changes
  // in between do not allocate.
  const size_t needed = (sorted_.size() + kBlockEvents - 1) / kBlockEvents;
  if (free_blocks_.size() < 2 * needed + 8) {
    const size_t more = std::max(2 * needed + 8 - free_blocks_.size(), blocks_.size() / 2);
    blocks_.reserve(blocks_.size() + more);
    for (size_t k = 0; k < more; ++k) {
      free_blocks_.push_back(static_cast<int32_t>(blocks_.size()));
      blocks_.emplace_back();
      blocks_.back().events.reserve(2 * kBlockEvents);
    }
  }
  stale_blocks_.reserve(blocks_.size());
  // Every device's block list gets that room too (grown by half at least), so that a device tracked later or with
  // a few more buffers does not allocate either.
  if (order_[device].capacity() < 2 * needed + 8) {
    const size_t room = std::max(2 * needed + 8, order_[device].capacity() * 3 / 2);
    for (std::vector<int32_t>& list : order_) list.reserve(room);
  }
  std::vector<int32_t>& blocks = order_[device];
  for (size_t i = 0; i < sorted_.size(); i += kBlockEvents) {
    const int32_t b = NewBlock();
    Block& block = blocks_[b];
    for (size_t k = i; k < std::min(sorted_.size(), i + kBlockEvents); ++k) {
      const auto [key, id] = sorted_[k];
      block.events.push_back({key, (id & 1) ? bytes_[id >> 1] : -bytes_[id >> 1], id});
      block_of_[id] = b;
      key_of_[id] = key;
    }
    Sum(b);
    blocks.push_back(b);
  }
  tracked_[device] = 1;
  ++num_tracked_;
  num_buffers_ += static_cast<int64_t>(buffers.size());
}

void KeptPeaks::Renumber(const std::vector<int32_t>& new_id, int32_t tasks) {
  if (num_tracked_ == 0) return;
  // The spare tables name no block and no device for any id between calls (their keys and bytes are not read),
  // so only the held entries are written, and each is reset in the old tables as it is read; the old tables are
  // the spare ones afterwards.
  const size_t room = std::max(device_.size(), static_cast<size_t>(tasks));
  renumbered_block_of_.resize(2 * room, -1);
  renumbered_key_of_.resize(2 * room);
  renumbered_device_.resize(room, -1);
  renumbered_bytes_.resize(room);
  for (const std::vector<int32_t>& blocks : order_)
    for (int32_t b : blocks)
      for (Event& e : blocks_[b].events) {
        const int32_t task = e.id >> 1, to = new_id[task];
        if (device_[task] >= 0) {  // (the task's first event read)
          renumbered_device_[to] = device_[task];
          renumbered_bytes_[to] = bytes_[task];
          device_[task] = -1;
        }
        block_of_[e.id] = -1;
        e.id = 2 * to + (e.id & 1);
        renumbered_block_of_[e.id] = b;
        renumbered_key_of_[e.id] = e.key;
      }
  block_of_.swap(renumbered_block_of_);
  key_of_.swap(renumbered_key_of_);
  device_.swap(renumbered_device_);
  bytes_.swap(renumbered_bytes_);
}

KeptPeaks::Held KeptPeaks::Find(int32_t task) const {
  Held held;
  if (static_cast<size_t>(task) >= device_.size() || device_[task] < 0) return held;
  held.device = device_[task];
  held.free = block_of_[2 * task] >= 0 ? KeyAt(2 * task) >> 1 : -1;
  held.start = block_of_[2 * task + 1] >= 0 ? KeyAt(2 * task + 1) >> 1 : -1;
  held.bytes = bytes_[task];
  return held;
}

int64_t KeptPeaks::Peak(int32_t device) {
  for (int32_t b : stale_blocks_)
    if (blocks_[b].stale) Sum(b);
  stale_blocks_.clear();
  int64_t sum = 0, peak = 0;
  for (int32_t b : order_[device]) {
    const Block& block = blocks_[b];
    peak = std::max(peak, sum + block.best);
    sum += block.sum;
  }
  return peak;
}

}  // namespace devplace::sim
