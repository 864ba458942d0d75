// DeltaSimulator::CheckIndexes: the incremental layout and indexes compared with what a fresh computation from
// the current slots and times gives (for tests and debugging; internal to sim/).
#include <algorithm>
#include <string>

#include "sim/delta_impl.h"

namespace devplace {

using sim::kChunkBits;
using sim::Time;

Status DeltaSimulator::CheckIndexes() const {
  impl_->Settle();
  return impl_->CheckIndexes();
}

Status DeltaSimulator::Impl::CheckIndexes() const {
  const sim::TaskGraph& tg = run.tg;
  const int32_t slots = static_cast<int32_t>(slot_task.size());
  auto fail = [](const std::string& what) { return Status(Error{"delta simulator index: " + what}); };
  auto task_at = [](int32_t t, int32_t s) { return "task " + std::to_string(t) + " at slot " + std::to_string(s); };
  if (slot_res.size() != slot_task.size() || slot_mem.size() != slot_task.size() ||
      slot_end.size() != slot_task.size() || chunk_shift.size() <= static_cast<size_t>(slots >> kChunkBits))
    return fail("slot arrays of different sizes");
  // Slots and positions name each other; each slot knows its task's resource and buffer device.
  int32_t count = 0;
  for (int32_t s = 0; s < slots; ++s) {
    const int32_t t = slot_task[s];
    if (t < 0) continue;
    ++count;
    if (t >= tg.num_tasks() || pos[t] != s) return fail(task_at(t, s) + " has position " + std::to_string(pos[t]));
    if (slot_res[s] != tg.resource[t]) return fail(task_at(t, s) + ": slot_res differs from its resource");
    if (slot_mem[s] != BufferDevice(t)) return fail(task_at(t, s) + ": slot_mem differs from its buffer's device");
  }
  if (count != placed) return fail(std::to_string(count) + " tasks in slots, `placed` says " + std::to_string(placed));
  // Between changes every task is clean and counts no dirty input (a sweep starts from there).
  for (int32_t t = 0; t < tg.num_tasks(); ++t)
    if (state[t] != sim::kClean || blocked[t] != 0)
      return fail("task " + std::to_string(t) + " left dirty, re-timed or blocked by the last change");
  for (int32_t t = 0; t < tg.num_tasks(); ++t)
    if (pos[t] >= slots || (pos[t] >= 0 && slot_task[pos[t]] != t))
      return fail("task " + std::to_string(t) + " names slot " + std::to_string(pos[t]) + ", which does not hold it");
  // Per resource: its slot list is its tasks' slots in increasing order, linked first to last.
  std::vector<std::vector<int32_t>> lists(static_cast<size_t>(tg.num_resources));
  for (int32_t s = 0; s < slots; ++s)
    if (slot_task[s] >= 0) lists[slot_res[s]].push_back(s);
  for (int32_t r = 0; r < tg.num_resources; ++r) {
    const std::string res = "resource " + std::to_string(r);
    if (!std::equal(res_slots[r].begin(), res_slots[r].end(), lists[r].begin(), lists[r].end()))
      return fail(res + ": slot list differs from its tasks' slots");
    int32_t prev = -1;
    for (int32_t s : lists[r]) {
      const int32_t t = slot_task[s];
      if ((prev < 0 ? res_first[r] : res_next[prev]) != t) return fail(res + ": link to " + task_at(t, s));
      if (run.timing.res_prev[t] != prev) return fail(res + ": back link of " + task_at(t, s));
      prev = t;
    }
    if (run.last_task[r] != prev || (prev < 0 ? res_first[r] != -1 : res_next[prev] != -1))
      return fail(res + ": last task or end of links");
  }
  // Times: each task ready when its last input arrives, started when its resource is free as well.
  for (int32_t s = 0; s < slots; ++s) {
    const int32_t t = slot_task[s];
    if (t < 0) continue;
    Time ready = tg.pred_cnt[t] > 0 ? -1 : Ready(t);
    for (int32_t k = 0; k < tg.pred_cnt[t]; ++k) {
      const int32_t p = tg.pred_pool[tg.pred_off[t] + k];
      if (pos[p] < 0) return fail(task_at(t, s) + " has predecessor " + std::to_string(p) + " outside the order");
      ready = std::max(ready, End(p) + tg.resource_delay[tg.resource[p]]);
    }
    const int32_t prev = run.timing.res_prev[t];
    const Time start = std::max(ready, prev < 0 ? Time{0} : End(prev));
    if (Ready(t) != ready || Start(t) != start || End(t) != start + tg.duration[t])
      return fail(task_at(t, s) + ": times differ from its inputs' and its resource's");
  }
  // Each task's earliest and binding predecessor as IndexPreds would compute them now.
  for (int32_t s = 0; s < slots; ++s) {
    const int32_t t = slot_task[s];
    if (t < 0) continue;
    const auto [earliest, bind] = PredEntries(t, [this](int32_t, int32_t slot) { return slot_end[slot] + Shift(slot); });
    if (min_pred[t] != earliest) return fail(task_at(t, s) + ": earliest predecessor entry is stale");
    if (bind_pred[t] != bind) return fail(task_at(t, s) + ": binding predecessor entry is stale");
  }
  // Chunk bounds that are not marked stale bound their tasks' entries and ready times from below.
  for (int32_t c = 0; c <= (slots - 1) >> kChunkBits; ++c) {
    if (c >= static_cast<int32_t>(chunk_stale.size()) || chunk_stale[c]) continue;
    for (int32_t s = c << kChunkBits; s < std::min(slots, (c + 1) << kChunkBits); ++s) {
      const int32_t t = slot_task[s];
      if (t < 0) continue;
      if (chunk_min_pred[c] > SlotOf(min_pred[t]) || chunk_min_bind[c] > SlotOf(bind_pred[t]) ||
          chunk_min_ready[c] > slot_ready[s])
        return fail("chunk " + std::to_string(c) + "'s bounds exceed " + task_at(t, s) + "'s entries");
    }
  }
  // The kept peaks hold every buffer of a tracked device with its current times, and nothing else.
  if (kept_peaks.active()) {
    for (int32_t t = 0; t < tg.num_tasks(); ++t) {
      const sim::KeptPeaks::Held held = kept_peaks.Find(t);
      const int32_t device = pos[t] >= 0 ? BufferDevice(t) : -1;
      if (!kept_peaks.tracked(device)) {
        if (held.device >= 0)
          return fail("kept peaks hold task " + std::to_string(t) + ", which holds no tracked buffer");
        continue;
      }
      const Time free = sim::BufferFreeBy(tg, t, [this](int32_t u) { return End(u); });
      if (held.device != device || held.start != Start(t) || held.free != free || held.bytes != tg.mem_bytes[t])
        return fail("kept peaks: task " + std::to_string(t) + "'s buffer differs from its times");
    }
  }
  return Status::Ok();
}

}  // namespace devplace
