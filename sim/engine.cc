#include "sim/engine.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/check.h"

namespace devplace::sim {

// A 4-ary heap: half the depth of a binary heap, and the four children share a cache line or two.
void ReadyHeap::push(const HeapItem& item) {
  size_t i = items_.size();
  items_.push_back(item);
  while (i > 0) {
    const size_t parent = (i - 1) / 4;
    if (!Less(item, items_[parent])) break;
    items_[i] = items_[parent];
    i = parent;
  }
  items_[i] = item;
}

void ReadyHeap::pop() {
  const HeapItem last = items_.back();
  items_.pop_back();
  const size_t n = items_.size();
  if (n == 0) return;
  size_t i = 0;
  while (true) {
    const size_t first = 4 * i + 1;
    if (first >= n) break;
    size_t best = first;
    const size_t stop = std::min(first + 4, n);
    for (size_t c = first + 1; c < stop; ++c)
      if (Less(items_[c], items_[best])) best = c;
    if (!Less(items_[best], last)) break;
    items_[i] = items_[best];
    i = best;
  }
  items_[i] = last;
}

void Engine::Run(const TaskGraph& tg, Timing* timing) {
  const int32_t n = tg.num_tasks();
  timing->ready.assign(static_cast<size_t>(n), 0);
  timing->start.resize(static_cast<size_t>(n));
  timing->end.resize(static_cast<size_t>(n));
  timing->res_prev.resize(static_cast<size_t>(n));
  timing->order.clear();
  timing->order.reserve(static_cast<size_t>(n));
  pending_.assign(tg.pred_cnt.begin(), tg.pred_cnt.end());
  free_.assign(static_cast<size_t>(tg.num_resources), 0);
  last_.assign(static_cast<size_t>(tg.num_resources), -1);
  heap_.clear();
  for (int32_t t = 0; t < n; ++t)
    if (pending_[t] == 0 && tg.alive[t]) heap_.push({0, tg.key[t], t});

  Time* ready = timing->ready.data();
  const int32_t* succ_pool = tg.succ_pool.data();
  while (!heap_.empty()) {
    const HeapItem item = heap_.top();
    heap_.pop();
    const int32_t t = item.task;
    const int32_t r = tg.resource[t];
    const Time start = std::max(item.ready, free_[r]);
    const Time end = start + tg.duration[t];
    timing->start[t] = start;
    timing->end[t] = end;
    timing->res_prev[t] = last_[r];
    free_[r] = end;
    last_[r] = t;
    timing->order.push_back(t);
    const Time arrive = end + tg.resource_delay[r];
    const int32_t* s = succ_pool + tg.succ_off[t];
    const int32_t* s_end = s + tg.succ_cnt[t];
    for (; s != s_end; ++s) {
      const int32_t x = *s;
      if (arrive > ready[x]) ready[x] = arrive;
      if (--pending_[x] == 0) heap_.push({ready[x], tg.key[x], x});
    }
  }
}

Time BufferFree(const TaskGraph& tg, const Timing& timing, int32_t task) {
  Time free = timing.end[task];
  const int32_t* s = tg.succ_pool.data() + tg.succ_off[task];
  for (int32_t k = 0; k < tg.succ_cnt[task]; ++k) free = std::max(free, timing.end[s[k]]);
  return free;
}

std::vector<int64_t> PeakScratch::DynamicPeaks(const TaskGraph& tg, const Timing& timing) {
  const int32_t d = tg.num_devices;
  // Events grouped by device; within a device all frees come before all allocations, so that the stable sort
  // by time leaves frees first at equal times.
  offsets_.assign(static_cast<size_t>(2 * d + 1), 0);
  for (int32_t t : timing.order)
    if (tg.mem_bytes[t] != 0) {
      ++offsets_[2 * tg.mem_device[t] + 1];
      ++offsets_[2 * tg.mem_device[t] + 2];
    }
  for (size_t k = 1; k < offsets_.size(); ++k) offsets_[k] += offsets_[k - 1];
  events_.resize(static_cast<size_t>(offsets_.back()));
  std::vector<int32_t> fill(offsets_.begin(), offsets_.end() - 1);
  for (int32_t t : timing.order) {
    if (tg.mem_bytes[t] == 0) continue;
    const int32_t dev = tg.mem_device[t];
    events_[fill[2 * dev]++] = {BufferFree(tg, timing, t), -tg.mem_bytes[t]};
    events_[fill[2 * dev + 1]++] = {timing.start[t], tg.mem_bytes[t]};
  }
  std::vector<int64_t> peaks(static_cast<size_t>(d), 0);
  for (int32_t dev = 0; dev < d; ++dev) {
    one_.assign(events_.begin() + offsets_[2 * dev], events_.begin() + offsets_[2 * dev + 2]);
    RadixSort(&one_, &scratch_, [](const Event& e) { return static_cast<uint64_t>(e.time); });
    int64_t cur = 0, peak = 0;
    for (const Event& e : one_) {
      cur += e.delta;
      peak = std::max(peak, cur);
    }
    peaks[dev] = peak;
  }
  return peaks;
}

Status CheckHorizon(const TaskTotals& totals) {
  if (totals.horizon_seconds <= kMaxHorizonSeconds) return Status::Ok();
  return Error{"the tasks of this step add up to " + std::to_string(totals.horizon_seconds) +
               " s, more than the simulator's limit of " + std::to_string(kMaxHorizonSeconds) +
               " s (check the graph's FLOPs and the machine's speeds)"};
}

void TaskTotals::Reset(int32_t num_resources) {
  busy.assign(static_cast<size_t>(num_resources), 0);
  bytes.assign(static_cast<size_t>(num_resources), 0);
  count.assign(static_cast<size_t>(num_resources), 0);
  bytes_moved = 0;
  num_tasks = num_compute = fallbacks = 0;
  horizon_seconds = 0;
}

void TaskTotals::Add(const TaskGraph& tg, int32_t t, int sign) {
  const int32_t r = tg.resource[t];
  busy[r] += sign * tg.duration[t];
  horizon_seconds += sign * static_cast<double>(tg.duration[t] + tg.resource_delay[r]) * kSecondsPerTick;
  bytes[r] += sign * tg.bytes[t];
  count[r] += sign;
  if (tg.first_hop[t]) bytes_moved += sign * tg.bytes[t];
  num_tasks += sign;
  if (tg.kind[t] == TaskKind::kCompute) {
    num_compute += sign;
    fallbacks += sign * tg.fallback[t];
  }
}

namespace {

std::string FormatBytes(int64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

// Walks back from the last task to the first: through the resource when a task waited for it, else through the
// predecessor whose arrival made it ready (smallest key on ties).
void CriticalPath(const TaskGraph& tg, const Timing& timing, const std::vector<int32_t>& last_task,
                  SimResult* result) {
  // The last task to finish is the last one on some resource (ends increase along a resource).
  int32_t t = -1;
  Time best = -1;
  for (int32_t x : last_task) {
    if (x < 0) continue;
    const Time finish = timing.end[x] + tg.resource_delay[tg.resource[x]];
    if (finish > best || (finish == best && tg.key[x] < tg.key[t])) {
      best = finish;
      t = x;
    }
  }
  std::vector<OpId> ops;
  Time compute = 0;
  while (t >= 0) {
    if (tg.kind[t] == TaskKind::kCompute) {
      ops.push_back(tg.op[t]);
      compute += tg.duration[t];
    }
    const int32_t rp = timing.res_prev[t];
    if (rp >= 0 && timing.start[t] > timing.ready[t] && timing.start[t] == timing.end[rp]) {
      t = rp;
      continue;
    }
    int32_t next = -1;
    const int32_t* p = tg.pred_pool.data() + tg.pred_off[t];
    for (int32_t k = 0; k < tg.pred_cnt[t]; ++k) {
      const int32_t x = p[k];
      const Time arrival = timing.end[x] + tg.resource_delay[tg.resource[x]];
      if (arrival == timing.ready[t] && (next < 0 || tg.key[x] < tg.key[next]))
        next = x;
    }
    t = next;
  }
  std::reverse(ops.begin(), ops.end());
  result->critical_path = std::move(ops);
  result->critical_compute_seconds = static_cast<double>(compute) * kSecondsPerTick;
}

}  // namespace

SimResult Assemble(const Topology& topology, const TaskGraph& tg, const Timing& timing,
                   const TaskTotals& totals, const std::vector<Time>& last_end, const std::vector<int32_t>& last_task,
                   const std::vector<int64_t>& static_bytes, const std::vector<int64_t>& dynamic_peak,
                   const SimOptions& options) {
  SimResult result;
  Time step = 0;
  for (int32_t r = 0; r < tg.num_resources; ++r)
    if (last_end[r] >= 0) step = std::max(step, last_end[r] + tg.resource_delay[r]);
  result.step_time = static_cast<double>(step) * kSecondsPerTick;
  const int32_t d = tg.num_devices;
  result.devices.resize(static_cast<size_t>(d));
  for (int32_t i = 0; i < d; ++i) {
    DeviceStats& s = result.devices[i];
    s.busy_seconds = static_cast<double>(totals.busy[i]) * kSecondsPerTick;
    s.utilisation = step > 0 ? static_cast<double>(totals.busy[i]) / static_cast<double>(step) : 0.0;
    s.static_bytes = static_bytes[i];
    s.peak_bytes = static_bytes[i] + dynamic_peak[i];
    s.overage_bytes = std::max<int64_t>(0, s.peak_bytes - topology.device(i).memory_bytes);
    s.num_tasks = totals.count[i];
    if (s.overage_bytes > 0) {
      result.oom = true;
      result.oom_messages.push_back("device '" + topology.device(i).name + "' needs " + FormatBytes(s.peak_bytes) +
                                    ", " + FormatBytes(s.overage_bytes) + " over its " +
                                    FormatBytes(topology.device(i).memory_bytes));
    }
  }
  result.links.resize(static_cast<size_t>(tg.num_resources - d));
  for (int32_t l = 0; l < tg.num_resources - d; ++l) {
    LinkStats& s = result.links[l];
    s.busy_seconds = static_cast<double>(totals.busy[d + l]) * kSecondsPerTick;
    s.bytes = totals.bytes[d + l];
    s.num_tasks = totals.count[d + l];
  }
  result.bytes_moved = totals.bytes_moved;
  result.num_tasks = totals.num_tasks;
  result.num_compute_tasks = totals.num_compute;
  result.cost_fallbacks = totals.fallbacks;
  CriticalPath(tg, timing, last_task, &result);
  if (options.keep_timeline) {
    result.timeline.reserve(timing.order.size());
    for (int32_t t : timing.order) {
      TimelineTask x;
      x.kind = static_cast<TimelineTask::Kind>(tg.kind[t]);
      x.op = tg.op[t];
      x.consumer = tg.consumer[t];
      x.part = tg.part[t];
      x.resource = tg.resource[t];
      x.bytes = tg.bytes[t];
      x.start = static_cast<double>(timing.start[t]) * kSecondsPerTick;
      x.end = static_cast<double>(timing.end[t]) * kSecondsPerTick;
      result.timeline.push_back(x);
    }
  }
  return result;
}

}  // namespace devplace::sim
