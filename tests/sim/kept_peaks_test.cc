// KeptPeaks (sim/kept_peaks.h) against a plain peak computation over random buffers: buffers put and erased, shifts
// of every event from a time on (with events taken out before and put back after), bulk tracking, renumbering.
#include "sim/kept_peaks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "tests/testing/sim_fixtures.h"

namespace devplace::sim {
namespace {

struct Buffer {
  int32_t device = -1;  // -1: the task holds no buffer
  Time start = 0, free = 0;
  int64_t bytes = 0;
};

// The largest running sum of `device`'s events in time order, frees before allocations at equal times (at least 0).
int64_t PlainPeak(const std::vector<Buffer>& buffers, int32_t device) {
  std::vector<std::pair<int64_t, int64_t>> events;  // (time << 1 | allocation, bytes)
  for (const Buffer& b : buffers) {
    if (b.device != device) continue;
    events.push_back({b.free << 1, -b.bytes});
    events.push_back({(b.start << 1) | 1, b.bytes});
  }
  std::sort(events.begin(), events.end());
  int64_t sum = 0, peak = 0;
  for (const auto& [key, bytes] : events) peak = std::max(peak, sum += bytes);
  return peak;
}

Buffer RandomBuffer(std::mt19937_64& rng, int32_t devices) {
  Buffer b;
  b.device = testing::UniformInt(rng, devices);
  b.start = testing::UniformInt(rng, 1000);
  b.free = b.start + testing::UniformInt(rng, 200);
  b.bytes = 1 + testing::UniformInt(rng, 1000);
  return b;
}

void ExpectPeaks(KeptPeaks& kept, const std::vector<Buffer>& buffers, int32_t devices, int step) {
  for (int32_t d = 0; d < devices; ++d) ASSERT_EQ(kept.Peak(d), PlainPeak(buffers, d)) << "step " << step;
  int64_t held = 0;
  for (size_t t = 0; t < buffers.size(); ++t) {
    held += buffers[t].device >= 0;
    ASSERT_EQ(kept.held(static_cast<int32_t>(t)), buffers[t].device >= 0) << "step " << step << " task " << t;
  }
  ASSERT_EQ(kept.num_buffers(), held) << "step " << step;
}

TEST(KeptPeaks, EqualsAPlainPeakOverRandomEdits) {
  constexpr int32_t kDevices = 3, kTasks = 1000;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    std::mt19937_64 rng(seed);
    std::vector<Buffer> buffers(kTasks);
    KeptPeaks kept;
    kept.Reserve(kTasks);
    // Devices 0 and 1 tracked from a first set of buffers, device 2 from empty.
    for (int32_t t = 0; t < kTasks / 2; ++t) buffers[t] = RandomBuffer(rng, kDevices - 1);
    for (int32_t d = 0; d < kDevices; ++d) {
      std::vector<KeptPeaks::Buffer> given;
      for (int32_t t = 0; t < kTasks; ++t)
        if (buffers[t].device == d) given.push_back({t, buffers[t].start, buffers[t].free, buffers[t].bytes});
      kept.Track(d, kDevices, given);
      EXPECT_TRUE(kept.tracked(d));
    }
    ExpectPeaks(kept, buffers, kDevices, -1);
    for (int step = 0; step < 2000; ++step) {
      const int32_t t = testing::UniformInt(rng, kTasks);
      const int what = testing::UniformInt(rng, 3);
      if (what == 0 && buffers[t].device < 0) {
        buffers[t] = RandomBuffer(rng, kDevices);
        kept.Put(t, buffers[t].device, buffers[t].start, buffers[t].free, buffers[t].bytes);
      } else if (what == 1) {
        kept.Erase(t);
        buffers[t].device = -1;
      } else if (what == 2) {
        // Every event from `from` on moves by `delta`. The events of the buffers with an event in the gap that
        // lie there are taken out first (their later events move with the others), and those buffers put back
        // afterwards: half with their old times, half with new ones.
        const Time from = testing::UniformInt(rng, 1200), delta = testing::UniformInt(rng, 201) - 100;
        const Time gap_begin = from + std::min<Time>(0, delta);
        std::vector<int32_t> taken;
        for (int32_t u = 0; u < kTasks; ++u) {
          const Buffer& b = buffers[u];
          if (b.device < 0) continue;
          if ((b.start >= gap_begin && b.start < from) || (b.free >= gap_begin && b.free < from)) {
            kept.Take(u, gap_begin, from);
            taken.push_back(u);
          }
        }
        kept.Shift(from, delta);
        for (int32_t u = 0; u < kTasks; ++u) {
          Buffer& b = buffers[u];
          if (b.device < 0 || std::find(taken.begin(), taken.end(), u) != taken.end()) continue;
          if (b.start >= from) b.start += delta;
          if (b.free >= from) b.free += delta;
        }
        for (int32_t u : taken) {
          if (testing::UniformInt(rng, 2) == 0) buffers[u] = RandomBuffer(rng, kDevices);
          kept.Put(u, buffers[u].device, buffers[u].start, buffers[u].free, buffers[u].bytes);
        }
        // A few buffers held throughout (shifted or not) get new times, nearby or anywhere.
        for (int k = 0; k < 4; ++k) {
          const int32_t u = testing::UniformInt(rng, kTasks);
          Buffer& b = buffers[u];
          if (b.device < 0) continue;
          if (k % 2 == 0) {
            const Time move = testing::UniformInt(rng, 21) - 10;
            b.start = std::max<Time>(0, b.start + move);
            b.free = std::max(b.start, b.free + move);
          } else {
            b = RandomBuffer(rng, kDevices);
          }
          kept.Put(u, b.device, b.start, b.free, b.bytes);
        }
      }
      ExpectPeaks(kept, buffers, kDevices, step);
      if (::testing::Test::HasFailure()) return;
    }
    // Renumbered by a random permutation (with room for more tasks), the peaks stay and later edits still hold.
    std::vector<int32_t> new_id(kTasks);
    for (int32_t t = 0; t < kTasks; ++t) new_id[t] = t;
    std::shuffle(new_id.begin(), new_id.end(), rng);
    kept.Renumber(new_id, kTasks + 50);
    std::vector<Buffer> renamed(kTasks + 50);
    for (int32_t t = 0; t < kTasks; ++t) renamed[new_id[t]] = buffers[t];
    ExpectPeaks(kept, renamed, kDevices, -2);
    for (int32_t t = 0; t < kTasks + 50; ++t) {
      if (t % 3 == 0) {
        kept.Erase(t);
        renamed[t].device = -1;
      } else if (renamed[t].device < 0) {
        renamed[t] = RandomBuffer(rng, kDevices);
        kept.Put(t, renamed[t].device, renamed[t].start, renamed[t].free, renamed[t].bytes);
      }
    }
    ExpectPeaks(kept, renamed, kDevices, -3);
    // Renumbered again (Renumber keeps spare tables between calls), and then cleared: nothing is held.
    std::vector<int32_t> second_id(kTasks + 50);
    for (int32_t t = 0; t < kTasks + 50; ++t) second_id[t] = t;
    std::shuffle(second_id.begin(), second_id.end(), rng);
    kept.Renumber(second_id, kTasks + 80);
    std::vector<Buffer> renamed_again(kTasks + 80);
    for (int32_t t = 0; t < kTasks + 50; ++t) renamed_again[second_id[t]] = renamed[t];
    ExpectPeaks(kept, renamed_again, kDevices, -4);
    kept.Clear();
    EXPECT_FALSE(kept.active());
    for (int32_t t = 0; t < kTasks + 80; ++t) ASSERT_FALSE(kept.held(t)) << "task " << t;
  }
}

}  // namespace
}  // namespace devplace::sim
