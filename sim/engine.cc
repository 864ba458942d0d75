#include "sim/engine.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/check.h"

namespace devplace::sim {

template <Record kRecord, class Keys>
bool Engine::Loop(const TaskGraph& tg, Timing* timing, QuadHeap<typename Keys::Item>& heap, Keys keys) {
  constexpr bool kTimes = kRecord != Record::kStepOnly, kAll = kRecord == Record::kAll;
  const int32_t n = tg.num_tasks();
  ReadyQueue<Keys> queue(heap, keys);
  free_.assign(static_cast<size_t>(tg.num_resources), 0);
  last_.assign(static_cast<size_t>(tg.num_resources), -1);
  Time* ready = timing->ready.data();
  Waiting* wait = waiting_.data();
  int32_t* crit_prev = timing->crit_prev.data();
  for (int32_t t = 0; t < n; ++t) {
    wait[t] = {0, -1, tg.pred_cnt[t]};
    if (tg.pred_cnt[t] == 0 && tg.alive[t]) queue.PushInitial(0, t);
  }
  Time* start_of = timing->start.data();
  Time* end_of = timing->end.data();
  int32_t* res_prev = timing->res_prev.data();
  int32_t* order = timing->order.data();
  int32_t done = 0;
  const int32_t* succ_pool = tg.succ_pool.data();
  const int32_t* succ_off = tg.succ_off.data();
  const int32_t* succ_cnt = tg.succ_cnt.data();
  const int32_t* resource = tg.resource.data();
  const Time* duration = tg.duration.data();
  const Time* delay = tg.resource_delay.data();
  Time* free = free_.data();
  int32_t* last = last_.data();
  while (!queue.empty()) {
    const int32_t t = keys.Task(queue.Pop());
    // The heap's top is probably the next task: start loading what it will touch (large graphs miss the cache).
    if (const int32_t u = queue.PeekHeap(); u >= 0) {
      __builtin_prefetch(&wait[u]);
      __builtin_prefetch(&resource[u]);
      __builtin_prefetch(&duration[u]);
      __builtin_prefetch(&succ_off[u]);
      __builtin_prefetch(&succ_cnt[u]);
      if constexpr (kTimes) {
        __builtin_prefetch(&start_of[u], 1);
        __builtin_prefetch(&end_of[u], 1);
        __builtin_prefetch(&crit_prev[u], 1);
      }
      if constexpr (kAll) {
        __builtin_prefetch(&ready[u], 1);
        __builtin_prefetch(&res_prev[u], 1);
      }
    }
    const int32_t r = resource[t];
    const Waiting& w = wait[t];
    const Time start = std::max(w.ready, free[r]);
    const Time end = start + duration[t];
    if constexpr (kTimes) {
      start_of[t] = start;
      end_of[t] = end;
      crit_prev[t] = free[r] > w.ready ? last[r] : w.bind;  // waited for the resource, or for its input
    }
    if constexpr (kAll) {
      ready[t] = w.ready;
      res_prev[t] = last[r];
      order[done] = t;
    }
    ++done;
    free[r] = end;
    last[r] = t;
    const Time arrive = end + delay[r];
    const int32_t* s = succ_pool + succ_off[t];
    const int32_t* s_end = s + succ_cnt[t];
    for (; s != s_end; ++s) {
      // The latest arrival so far and its task (the smallest id, which is the smallest key, on ties).
      Waiting& x = wait[*s];
      const bool later = arrive > x.ready;
      const bool tie_first = arrive == x.ready && t < x.bind;
      x.ready = later ? arrive : x.ready;
      x.bind = later || tie_first ? t : x.bind;
      if (--x.pending == 0 && !queue.Push(w.ready, x.ready, *s)) return false;
    }
  }
  if constexpr (kAll) timing->order.resize(static_cast<size_t>(done));
  return true;
}

void Engine::Run(const TaskGraph& tg, Timing* timing, Record record, KeyMode keys) {
  const int32_t n = tg.num_tasks();
  const size_t r = static_cast<size_t>(tg.num_resources);
  if (record != Record::kStepOnly) {
    timing->start.resize(static_cast<size_t>(n));
    timing->end.resize(static_cast<size_t>(n));
    timing->crit_prev.resize(static_cast<size_t>(n));
  }
  if (record == Record::kAll) {
    timing->ready.resize(static_cast<size_t>(n));
    timing->res_prev.resize(static_cast<size_t>(n));
    timing->order.resize(static_cast<size_t>(n));
  }
  waiting_.resize(static_cast<size_t>(n));
  // Ties break by task id. A heap entry is one word (the ready time above a base, then the id) unless some ready
  // time lies too far above the base even after moving the base up; then the run starts again with two-word
  // entries.
  const int bits = std::max(1, static_cast<int>(std::bit_width(static_cast<uint32_t>(n))));
  rebases_ = 0;
  const PackedKeys packed{bits, uint64_t{1} << (64 - bits), &rebases_};
  auto loop = [&](auto&& heap, auto run_keys) {
    switch (record) {
      case Record::kAll: return Loop<Record::kAll>(tg, timing, heap, run_keys);
      case Record::kTimes: return Loop<Record::kTimes>(tg, timing, heap, run_keys);
      case Record::kStepOnly: return Loop<Record::kStepOnly>(tg, timing, heap, run_keys);
    }
    return false;
  };
  wide_ = keys == KeyMode::kWide || !loop(packed_, packed);
  if (wide_) loop(wide_heap_, WideKeys{});
  last_end_.assign(r, -1);
  for (size_t k = 0; k < r; ++k)
    if (last_[k] >= 0) last_end_[k] = free_[k];
}

Status CheckHorizon(const TaskTotals& totals) {
  if (static_cast<double>(totals.horizon) * kSecondsPerTick <= kMaxHorizonSeconds) return Status::Ok();
  return Error{"the tasks of this step add up to " +
               std::to_string(static_cast<double>(totals.horizon) * kSecondsPerTick) +
               " s, more than the simulator's limit of " + std::to_string(kMaxHorizonSeconds) +
               " s (check the graph's FLOPs and the machine's speeds)"};
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
    if (!timing.crit_prev.empty()) {  // found by the event loop
      t = timing.crit_prev[t];
      continue;
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

Time StepTicks(const TaskGraph& tg, const std::vector<Time>& last_end) {
  Time step = 0;
  for (int32_t r = 0; r < tg.num_resources; ++r)
    if (last_end[r] >= 0) step = std::max(step, last_end[r] + tg.resource_delay[r]);
  return step;
}

Time MaxEnd(const std::vector<Time>& last_end) {
  Time end = 0;
  for (Time e : last_end) end = std::max(end, e);
  return end;
}

SimResult AssembleTotals(const Topology& topology, Time step, const TaskTotals& totals,
                         const std::vector<int64_t>& static_bytes, const std::vector<int64_t>& dynamic_peak) {
  SimResult result;
  result.step_time = static_cast<double>(step) * kSecondsPerTick;
  const int32_t d = topology.num_devices();
  const int32_t num_resources = static_cast<int32_t>(totals.busy.size());
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
  result.links.resize(static_cast<size_t>(num_resources - d));
  for (int32_t l = 0; l < num_resources - d; ++l) {
    LinkStats& s = result.links[l];
    s.busy_seconds = static_cast<double>(totals.busy[d + l]) * kSecondsPerTick;
    s.bytes = totals.bytes[d + l];
    s.num_tasks = totals.count[d + l];
  }
  result.bytes_moved = totals.bytes_moved;
  result.num_tasks = totals.num_tasks;
  result.num_compute_tasks = totals.num_compute;
  result.cost_fallbacks = totals.fallbacks;
  return result;
}

SimResult Assemble(const Topology& topology, const TaskGraph& tg, const Timing& timing,
                   const TaskTotals& totals, const std::vector<Time>& last_end, const std::vector<int32_t>& last_task,
                   const std::vector<int64_t>& static_bytes, const std::vector<int64_t>& dynamic_peak,
                   const SimOptions& options) {
  SimResult result = AssembleTotals(topology, StepTicks(tg, last_end), totals, static_bytes, dynamic_peak);
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
