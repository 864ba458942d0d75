#include "sim/memory.h"

#include <algorithm>
#include <bit>
#include <limits>

namespace devplace::sim {

Time BufferFree(const TaskGraph& tg, const Timing& timing, int32_t task) {
  Time free = timing.end[task];
  const int32_t* s = tg.succ_pool.data() + tg.succ_off[task];
  for (int32_t k = 0; k < tg.succ_cnt[task]; ++k) free = std::max(free, timing.end[s[k]]);
  return free;
}

// Sorts e[0, n) by key: insertion sort when short, else distributed into about n/4 buckets over the keys' range
// (each then sorted the same way, so that clustered keys are split again at a finer scale).
void PeakScratch::Sort(Event* e, int32_t n) {
  if (n <= 32) {
    for (int32_t i = 1; i < n; ++i) {
      const Event x = e[i];
      int32_t j = i;
      for (; j > 0 && e[j - 1].key > x.key; --j) e[j] = e[j - 1];
      e[j] = x;
    }
    return;
  }
  uint64_t lo = e[0].key, hi = e[0].key;
  for (int32_t i = 1; i < n; ++i) {
    lo = std::min(lo, e[i].key);
    hi = std::max(hi, e[i].key);
  }
  if (lo == hi) return;
  const int bits = static_cast<int>(std::bit_width(static_cast<uint32_t>(n))) - 2;
  const int shift = std::max(0, static_cast<int>(std::bit_width(hi - lo)) - bits);
  const size_t buckets = (size_t{1} << bits) + 1;
  const size_t base = nested_.size();
  nested_.resize(base + buckets + 1, 0);
  int32_t* count = nested_.data() + base + 1;
  for (int32_t i = 0; i < n; ++i) ++count[(e[i].key - lo) >> shift];
  int32_t* cursor = nested_.data() + base;  // cursor[b]: start of bucket b, then its fill position
  for (size_t b = 1; b <= buckets; ++b) cursor[b] += cursor[b - 1];
  Event* out = nested_scratch_.data();
  for (int32_t i = 0; i < n; ++i) out[cursor[(e[i].key - lo) >> shift]++] = e[i];
  std::copy(out, out + n, e);
  int32_t begin = 0;
  for (size_t b = 0; b < buckets; ++b) {
    const int32_t end = nested_[base + b];  // the fill position of bucket b is now its end
    if (end - begin > 1) Sort(e + begin, end - begin);
    begin = end;
  }
  nested_.resize(base);
}

// Each device's events are distributed into about as many buckets as it has events, over its own time range, and
// each bucket is sorted (Sort); the device's buckets in a row are then its events in time order.
std::vector<int64_t> PeakScratch::DynamicPeaks(const TaskGraph& tg, const Timing& timing) {
  const int32_t devices = tg.num_devices;
  const int32_t n = tg.num_tasks();
  std::vector<int64_t> peaks(static_cast<size_t>(devices), 0);
  // Pass 1: the events, each device's time range and event count.
  events_.resize(2 * static_cast<size_t>(n));
  bucket_.resize(2 * static_cast<size_t>(n));
  lo_.assign(static_cast<size_t>(devices), std::numeric_limits<Time>::max());
  hi_.assign(static_cast<size_t>(devices), 0);
  device_base_.assign(static_cast<size_t>(devices) + 1, 0);
  int32_t k = 0;
  for (int32_t t = 0; t < n; ++t) {
    const int64_t bytes = tg.mem_bytes[t];
    if (bytes == 0 || !tg.alive[t]) continue;
    const Time free = BufferFree(tg, timing, t), start = timing.start[t];
    const int32_t d = tg.mem_device[t];
    events_[k] = {static_cast<uint64_t>(free) << 1, -bytes};
    events_[k + 1] = {(static_cast<uint64_t>(start) << 1) | 1, bytes};
    bucket_[k] = bucket_[k + 1] = d;
    k += 2;
    lo_[d] = std::min(lo_[d], start);
    hi_[d] = std::max(hi_[d], free);
    device_base_[d + 1] += 2;
  }
  // Pass 2: bucket of every event, and the bucket counts.
  shift_.resize(static_cast<size_t>(devices));
  int32_t buckets = 0;
  for (int32_t d = 0; d < devices; ++d) {
    const int32_t count = device_base_[d + 1];
    device_base_[d] = buckets;
    if (count == 0) continue;
    const int bits = static_cast<int>(std::bit_width(static_cast<uint32_t>(count))) - 1;
    shift_[d] = std::max(0, static_cast<int>(std::bit_width(static_cast<uint64_t>(hi_[d] - lo_[d]))) - bits);
    buckets += int32_t{1} << bits;
  }
  device_base_[devices] = buckets;
  offsets_.assign(static_cast<size_t>(buckets) + 1, 0);
  int32_t* counts = offsets_.data() + 1;
  for (int32_t i = 0; i < k; ++i) {
    const int32_t d = bucket_[i];
    const int32_t b = device_base_[d] + static_cast<int32_t>((static_cast<Time>(events_[i].key >> 1) - lo_[d]) >> shift_[d]);
    bucket_[i] = b;
    ++counts[b];
  }
  for (int32_t b = 0; b < buckets; ++b) offsets_[b + 1] += offsets_[b];
  sorted_.resize(static_cast<size_t>(k));
  nested_scratch_.resize(static_cast<size_t>(k));
  // Scatter with offsets_[b] as the fill cursor of bucket b; afterwards offsets_[b] is bucket b's end.
  for (int32_t i = 0; i < k; ++i) sorted_[offsets_[bucket_[i]]++] = events_[i];
  int32_t begin = 0;
  for (int32_t b = 0; b < buckets; ++b) {
    const int32_t end = offsets_[b];
    if (end - begin > 1) Sort(sorted_.data() + begin, end - begin);
    begin = end;
  }
  begin = 0;
  for (int32_t d = 0; d < devices; ++d) {
    const int32_t end = device_base_[d + 1] > 0 ? offsets_[device_base_[d + 1] - 1] : 0;
    int64_t cur = 0, peak = 0;
    for (int32_t i = begin; i < end; ++i) {
      cur += sorted_[i].delta;
      peak = std::max(peak, cur);
    }
    peaks[d] = peak;
    begin = std::max(begin, end);
  }
  return peaks;
}

}  // namespace devplace::sim
