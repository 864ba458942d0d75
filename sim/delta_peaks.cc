// The delta simulator's memory peaks for the devices that may run out of memory (internal to sim/): RiskyPeaks,
// which reads them from kept_peaks, and Finish's upkeep of them through each change.
#include <algorithm>

#include "sim/delta_impl.h"

namespace devplace {

using sim::Time;

const std::vector<int64_t>& DeltaSimulator::Impl::RiskyPeaks() const {
  if (risky_valid) return risky_memo;
  // A device whose buffers, all alive at once, fit cannot overflow: its bound stands for its peak. The peaks of
  // the others are kept in kept_peaks (risky[d]: device d may overflow).
  const int32_t devices = topology.num_devices();
  risky_memo.resize(static_cast<size_t>(devices));
  risky.assign(static_cast<size_t>(devices), 0);
  int32_t num_risky = 0;
  for (DeviceId d = 0; d < devices; ++d) {
    risky_memo[d] = run.static_bytes[d] + run.totals.held[d];
    risky[d] = risky_memo[d] > topology.device(d).memory_bytes;
    num_risky += risky[d];
  }
  if (num_risky > 0) {
    const sim::TaskGraph& tg = run.tg;
    // Devices at risk whose peaks are not kept yet: their buffers gathered once, from the slot lists of the
    // resources that may hold one, and kept from then on (kept_peaks).
    kept_peaks.Reserve(std::max(tg.num_tasks(), task_room));
    for (DeviceId d = 0; d < devices; ++d) {
      if (!risky[d] || kept_peaks.tracked(d)) continue;
      peak_buffers.clear();
      for (int32_t r = 0; r < tg.num_resources; ++r) {
        const int32_t holder = res_buffer_device[r];
        if (holder != d && holder != kSeveralDevices) continue;
        for (int32_t s : res_slots[r]) {
          if (slot_mem[s] != d) continue;
          const int32_t t = slot_task[s];
          const Time shift = Shift(s);
          peak_buffers.push_back(
              {t, slot_start[s] + shift,
               sim::BufferFreeAfter(tg, t, slot_end[s] + shift, [this](int32_t u) { return End(u); }),
               tg.mem_bytes[t]});
        }
      }
      kept_peaks.Track(d, devices, peak_buffers);
    }
    for (DeviceId d = 0; d < devices; ++d)
      if (risky[d]) risky_memo[d] = run.static_bytes[d] + kept_peaks.Peak(d);
  }
  risky_valid = true;
  return risky_memo;
}

bool DeltaSimulator::Impl::KeptPeaksBefore(int32_t cut, Time shift, const std::vector<int32_t>* last_before_cut) {
  const sim::TaskGraph& tg = run.tg;
  // Sized for task_room tasks (at least), so that changes until the next compaction do not grow them.
  kept_peaks.Reserve(std::max(tg.num_tasks(), task_room));
  if (peak_noted.size() < static_cast<size_t>(tg.num_tasks()))
    peak_noted.resize(static_cast<size_t>(std::max(tg.num_tasks(), task_room)), 0);
  if (++peak_stamp == 0) {
    std::fill(peak_noted.begin(), peak_noted.end(), 0);
    peak_stamp = 1;
  }
  peak_retimed.clear();
  auto note = [&](int32_t t) {
    if (peak_noted[t] == peak_stamp) return;
    peak_noted[t] = peak_stamp;
    peak_retimed.push_back(t);
  };
  auto note_with_preds = [&](int32_t t) {
    note(t);
    const int32_t* p = tg.pred_pool.data() + tg.pred_off[t];
    for (int32_t k = 0; k < tg.pred_cnt[t]; ++k)
      if (tg.alive[p[k]]) note(p[k]);
  };
  for (int32_t t : scratch.removed) note(t);
  for (int32_t t : scratch.patched) note(t);
  for (const Placement& q : window) note_with_preds(q.task);
  // The stretches the ordered pass jumped over moved by their own shifts (the tasks with their buffers' frees, the
  // predecessors with those of the buffers the stretch read last).
  for (const sim::OrderedScratch::Jump& j : scratch.ordered.jumps)
    for (int32_t s = j.from; s < j.to; ++s)
      if (slot_task[s] >= 0) note_with_preds(slot_task[s]);
  // The rest (the tasks from `cut` on that are not noted) moves by `shift`: every event of theirs lies at or after
  // the ready time of the first of them, and so do the frees of the buffers whose latest reader is one of them.
  // The events that lie there (or, for an advance, where the rest moves to) but do not move are those of the tasks
  // before `cut` that end there and of the buffers those read: noted, so that only moving events are left there.
  const int32_t slots = static_cast<int32_t>(slot_task.size());
  int32_t first = shift != 0 ? cut : slots;  // (no rest moves without a shift)
  for (; first < slots; ++first) {
    const int32_t t = slot_task[first];
    if (t >= 0 && pos[t] == first && peak_noted[t] != peak_stamp) break;
  }
  const bool moves = shift != 0 && first < slots;
  const Time rest_ready = moves ? Ready(slot_task[first]) : 0;
  if (moves) {
    // Each resource's tasks before `cut`, walked back from the last along the links (which still describe the
    // order before the change).
    const Time still = rest_ready + std::min<Time>(0, shift);
    for (int32_t r = 0; r < tg.num_resources; ++r) {
      int32_t t = -1;
      if (last_before_cut) {
        t = (*last_before_cut)[r];
      } else {
        const sim::SlotList& list = res_slots[r];
        const auto it = std::lower_bound(list.begin(), list.end(), cut);
        if (it != list.begin()) t = slot_task[*(it - 1)];
      }
      for (; t >= 0; t = run.timing.res_prev[t]) {
        if (End(t) < still) break;
        if (tg.alive[t]) note_with_preds(t);
      }
    }
  }
  // A change whose noted buffers are a large share of those kept would take out and put back more events than
  // tracking them afresh reads.
  int64_t kept_noted = 0;
  for (int32_t t : peak_retimed) kept_noted += kept_peaks.held(t) || kept_peaks.tracked(BufferDevice(t));
  if (kept_noted * sim::kKeptPeaksNotedDivisor > kept_peaks.num_buffers()) {
    kept_peaks.Clear();
    return false;
  }
  // Removed tasks' buffers leave. For an advance, the noted tasks' events where the rest moves to are taken out,
  // so that the shift keeps the order; every other event from the rest's start on, noted or not, moves with the
  // rest, and KeptPeaksAfter puts each noted task's events where they belong (most stay where the shift put them).
  for (int32_t t : scratch.removed) kept_peaks.Erase(t);
  if (moves) {
    if (shift < 0)
      for (int32_t t : peak_retimed) kept_peaks.Take(t, rest_ready + shift, rest_ready);
    kept_peaks.Shift(rest_ready, shift);
  }
  return true;
}

void DeltaSimulator::Impl::KeptPeaksAfter() {
  const sim::TaskGraph& tg = run.tg;
  for (int32_t t : peak_retimed) {
    const int32_t device = BufferDevice(t);
    if (device < 0 || !tg.alive[t] || pos[t] < 0 || !kept_peaks.tracked(device)) {
      kept_peaks.Erase(t);
      continue;
    }
    kept_peaks.Put(t, device, Start(t), sim::BufferFreeBy(tg, t, [this](int32_t u) { return End(u); }),
                  tg.mem_bytes[t]);
  }
}

}  // namespace devplace
