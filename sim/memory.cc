#include "sim/memory.h"

#include <algorithm>
#include <bit>

namespace devplace::sim {

Time BufferFree(const TaskGraph& tg, const Timing& timing, int32_t task) {
  Time free = timing.end[task];
  const int32_t* s = tg.succ_pool.data() + tg.succ_off[task];
  for (int32_t k = 0; k < tg.succ_cnt[task]; ++k) free = std::max(free, timing.end[s[k]]);
  return free;
}

// Events are distributed into buckets by (device, time >> shift), about four per bucket, so that each bucket is
// sorted by a few steps of insertion sort; the device's buckets in a row are then its events in time order.
std::vector<int64_t> PeakScratch::DynamicPeaks(const TaskGraph& tg, const Timing& timing, Time max_end) {
  const int32_t devices = tg.num_devices;
  const int32_t n = tg.num_tasks();
  std::vector<int64_t> peaks(static_cast<size_t>(devices), 0);
  const uint64_t per_device = std::max<uint64_t>(1, 2 * static_cast<uint64_t>(n) / static_cast<uint64_t>(devices));
  const int bucket_bits = std::max(0, static_cast<int>(std::bit_width(per_device)) - 3);
  const int shift = std::max(0, static_cast<int>(std::bit_width(static_cast<uint64_t>(max_end))) - bucket_bits);
  const int32_t per_dev_buckets = int32_t{1} << bucket_bits;
  offsets_.assign(static_cast<size_t>(devices) * per_dev_buckets + 1, 0);
  events_.clear();
  bucket_.clear();
  int32_t* counts = offsets_.data() + 1;
  for (int32_t t = 0; t < n; ++t) {
    const int64_t bytes = tg.mem_bytes[t];
    if (bytes == 0 || !tg.alive[t]) continue;
    const Time free = BufferFree(tg, timing, t), start = timing.start[t];
    const int32_t base = tg.mem_device[t] * per_dev_buckets;
    const int32_t bf = base + static_cast<int32_t>(free >> shift), ba = base + static_cast<int32_t>(start >> shift);
    events_.push_back({static_cast<uint64_t>(free) << 1, -bytes});
    events_.push_back({(static_cast<uint64_t>(start) << 1) | 1, bytes});
    bucket_.push_back(bf);
    bucket_.push_back(ba);
    ++counts[bf];
    ++counts[ba];
  }
  const size_t buckets = offsets_.size() - 1;
  for (size_t b = 0; b < buckets; ++b) offsets_[b + 1] += offsets_[b];
  sorted_.resize(events_.size());
  // Scatter with offsets_[b] as the fill cursor of bucket b; afterwards offsets_[b] is bucket b's end.
  for (size_t k = 0; k < events_.size(); ++k) sorted_[offsets_[bucket_[k]]++] = events_[k];
  int32_t begin = 0;
  for (size_t b = 0; b < buckets; ++b) {
    const int32_t end = offsets_[b];
    Event* e = sorted_.data();
    if (end - begin > 32) {
      std::sort(e + begin, e + end, [](const Event& x, const Event& y) { return x.key < y.key; });
    } else {
      for (int32_t i = begin + 1; i < end; ++i) {
        const Event x = e[i];
        int32_t j = i;
        for (; j > begin && e[j - 1].key > x.key; --j) e[j] = e[j - 1];
        e[j] = x;
      }
    }
    begin = end;
  }
  begin = 0;
  for (int32_t d = 0; d < devices; ++d) {
    const int32_t end = offsets_[static_cast<size_t>(d + 1) * per_dev_buckets - 1];
    int64_t cur = 0, peak = 0;
    for (int32_t k = begin; k < end; ++k) {
      cur += sorted_[k].delta;
      peak = std::max(peak, cur);
    }
    peaks[d] = peak;
    begin = end;
  }
  return peaks;
}

}  // namespace devplace::sim
