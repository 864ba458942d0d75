#include "sim/memory.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace devplace::sim {

Time BufferFree(const TaskGraph& tg, const Timing& timing, int32_t task) {
  return BufferFreeBy(tg, task, [&](int32_t t) { return timing.end[t]; });
}

const std::vector<int64_t>& PeakScratch::DynamicPeaks(const TaskGraph& tg, const Timing& timing, Time max_end) {
  const int32_t n = tg.num_tasks();
  Begin(tg.num_devices, n, max_end);
  for (int32_t t = 0; t < n; ++t) {
    const int64_t bytes = tg.mem_bytes[t];
    if (bytes == 0 || !tg.alive[t]) continue;
    Add(tg.mem_device[t], timing.start[t], BufferFree(tg, timing, t), bytes);
  }
  return Finish();
}

void PeakScratch::Begin(int32_t devices, int32_t tasks, Time max_end, bool keep_events) {
  // A few events per bucket on average (fewer where tasks hold no buffer), but at most about 2^kMaxBucketBits
  // buckets in all: Add, Count and Keep add to two of them per buffer at random, and arrays beyond the core's
  // cache cost more in misses than larger buckets cost in pass 3 (2^14: the two arrays take 256 KiB; at 2^16,
  // 1 MiB, a plain 50k-op run missed 4.7% more in all). Kept events (Add) are chained per bucket and Finish reads
  // only the chains of the buckets that may hold a higher value, so there about 16 per bucket: fewer buckets to
  // clear and bound (callgrind over a whole 10k transformer iterative episode, the delta simulator's OOM pass:
  // 3.34 G instructions at 4 per bucket, 2.98 G at 8, 2.82 G at 16, 2.83 G at 32). The two-pass path (Count,
  // Keep) checks every buffer in Keep whatever the bucket count, so there about 4 per bucket (smaller sorts).
  // bucket = device * per_device + (time >> shift).
  constexpr int kMaxBucketBits = 14;
  const int events_per_bucket_bits = keep_events ? 4 : 2;
  const uint64_t per_device_events = std::max<uint64_t>(1, 2 * static_cast<uint64_t>(tasks) / devices);
  const int device_bits = static_cast<int>(std::bit_width(static_cast<uint32_t>(devices)));
  const int max_bits = std::max(0, kMaxBucketBits - device_bits + 1);
  devices_ = devices;
  bits_ = std::max(0, std::min(static_cast<int>(std::bit_width(per_device_events)) - events_per_bucket_bits, max_bits));
  shift_ = std::max(0, static_cast<int>(std::bit_width(static_cast<uint64_t>(max_end))) - bits_);
  per_device_ = int32_t{1} << bits_;
  const size_t buckets = static_cast<size_t>(devices) * per_device_;
  upper_.resize(buckets);
  freed_.resize(buckets);
  std::memset(upper_.data(), 0, buckets * sizeof(int64_t));
  std::memset(freed_.data(), 0, buckets * sizeof(int64_t));
  if (keep_events) {
    events_.resize(2 * static_cast<size_t>(tasks));
    next_.resize(2 * static_cast<size_t>(tasks));
    head_.resize(buckets);
    std::memset(head_.data(), 0xff, buckets * sizeof(int32_t));  // -1: no event
  }
  count_ = 0;
  bounded_ = false;
  candidates_.clear();
}

void PeakScratch::Bound() {
  // Pass 2: per device, the running sum at each bucket's start and end; the best end is a lower bound.
  const int32_t per_device = per_device_;
  peaks_.assign(static_cast<size_t>(devices_), 0);
  for (int32_t d = 0; d < devices_; ++d) {
    int64_t cur = 0, best = 0;
    for (size_t b = static_cast<size_t>(d) * per_device; b < static_cast<size_t>(d + 1) * per_device; ++b) {
      const int64_t allocated = upper_[b], freed = freed_[b];
      upper_[b] = cur + allocated;
      freed_[b] = cur;
      cur += allocated - freed;
      best = std::max(best, cur);
    }
    peaks_[d] = best;
  }
  bounded_ = true;
}

const std::vector<int64_t>& PeakScratch::Finish() {
  const int32_t bits = bits_;
  if (!bounded_) {
    Bound();
    // Pass 3: the events of buckets that may hold a higher value, from their chains.
    const size_t buckets = static_cast<size_t>(devices_) * per_device_;
    for (size_t b = 0; b < buckets; ++b) {
      if (upper_[b] <= peaks_[b >> bits]) continue;
      for (int32_t e = head_[b]; e >= 0; e = next_[e]) candidates_.push_back({static_cast<int32_t>(b), events_[e]});
    }
  }
  std::vector<int64_t>& peaks = peaks_;  // the lower bounds become the peaks
  // In (bucket, time) order, replayed exactly.
  std::sort(candidates_.begin(), candidates_.end(), [](const Candidate& x, const Candidate& y) {
    return x.bucket < y.bucket || (x.bucket == y.bucket && x.event.key < y.event.key);
  });
  for (size_t i = 0; i < candidates_.size();) {
    const int32_t b = candidates_[i].bucket;
    int64_t& peak = peaks[b >> bits];
    int64_t cur = freed_[b];
    for (; i < candidates_.size() && candidates_[i].bucket == b; ++i) {
      cur += candidates_[i].event.delta;
      peak = std::max(peak, cur);
    }
  }
  return peaks_;
}

}  // namespace devplace::sim
