#include "sim/collectives.h"

#include <algorithm>
#include <map>
#include <span>
#include <string>

#include "core/check.h"

namespace devplace::sim {

CommBuilder::CommBuilder(const Topology& topology, const SimOptions& options, TaskGraph* tg,
                         const CommOptions& comm)
    : topology_(topology), options_(options), tg_(*tg), comm_(comm) {
  if (comm.fresh) ResetSingleGroup(topology, tg);
}

int32_t CommBuilder::NewTask(int32_t resource, Time duration, int64_t bytes) {
  const int32_t id = tg_.num_tasks();
  tg_.resource.push_back(resource);
  tg_.duration.push_back(std::max<Time>(1, duration));
  tg_.key.push_back(static_cast<uint64_t>(id));
  tg_.kind.push_back(TaskKind::kCollective);
  tg_.first_hop.push_back(0);
  tg_.alive.push_back(1);
  for (auto* v : {&tg_.op, &tg_.part, &tg_.consumer, &tg_.mem_device}) v->push_back(-1);
  tg_.bytes.push_back(bytes);
  tg_.mem_bytes.push_back(0);
  tg_.fallback.push_back(0);
  for (auto* v : {&tg_.succ_off, &tg_.succ_cnt, &tg_.pred_off, &tg_.pred_cnt}) v->push_back(0);
  if (comm_.on_task) comm_.on_task(id);
  return id;
}

void CommBuilder::Dep(int32_t from, int32_t to) {
  tg_.dep_from.push_back(from);
  tg_.dep_to.push_back(to);
}

Ready CommBuilder::Hops(DeviceId src, DeviceId dst, int64_t bytes, const Ready& after, bool step) {
  DEVPLACE_CHECK(src != dst && bytes > 0, "a send needs two devices and bytes");
  const std::span<const LinkId> links = topology_.route(src, dst);
  const int64_t hops = static_cast<int64_t>(links.size());
  const int64_t segments = comm_.segmented ? SegmentCount(bytes, hops, options_) : 1;
  Ready lasts;
  for (int64_t s = 0; s < segments; ++s) {
    const int64_t seg = bytes * (s + 1) / segments - bytes * s / segments;
    int32_t prev = -1;
    for (int64_t h = 0; h < hops; ++h) {
      const HopCost hop = HopOf(topology_, links[h], dst, static_cast<double>(seg), step);
      const int32_t t = NewTask(hop.resource, ToTicks(hop.seconds), seg);
      if (h == 0) {
        tg_.first_hop[t] = 1;
        for (int32_t a : after) Dep(a, t);
      } else {
        Dep(prev, t);
      }
      prev = t;
    }
    lasts.push_back(prev);
  }
  return lasts;
}

std::vector<Ready> CommBuilder::RingSteps(const std::vector<DeviceId>& members, int64_t bytes, int32_t steps,
                                          int32_t own_until, const std::vector<Ready>& after) {
  const int32_t n = static_cast<int32_t>(members.size());
  DEVPLACE_CHECK(after.size() == members.size(), "one ready list per member");
  std::vector<Ready> received(static_cast<size_t>(n)), done(static_cast<size_t>(n));
  const int64_t chunk = std::max<int64_t>(1, bytes / n);
  for (int32_t k = 0; k < steps; ++k) {
    std::vector<Ready> next(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) {
      Ready deps = received[i];
      if (k < own_until) deps.insert(deps.end(), after[i].begin(), after[i].end());
      const int32_t to = (i + 1) % n;
      next[to] = Hops(members[i], members[to], chunk, deps, true);
      for (int32_t t : next[to]) {
        tg_.mem_bytes[t] = tg_.bytes[t];
        tg_.mem_device[t] = members[to];
      }
      done[to].insert(done[to].end(), next[to].begin(), next[to].end());
    }
    received = std::move(next);
  }
  return done;
}

std::vector<Ready> CommBuilder::AllGather(const std::vector<DeviceId>& members, int64_t bytes,
                                          const std::vector<Ready>& after) {
  if (members.size() < 2) return after;
  return RingSteps(members, bytes, static_cast<int32_t>(members.size()) - 1, 1, after);
}

std::vector<Ready> CommBuilder::ReduceScatter(const std::vector<DeviceId>& members, int64_t bytes,
                                              const std::vector<Ready>& after) {
  if (members.size() < 2) return after;
  const int32_t n = static_cast<int32_t>(members.size());
  return RingSteps(members, bytes, n - 1, n - 1, after);
}

std::vector<Ready> CommBuilder::AllReduce(const std::vector<DeviceId>& members, int64_t bytes,
                                          const std::vector<Ready>& after) {
  if (members.size() < 2) return after;
  const int32_t n = static_cast<int32_t>(members.size());
  return RingSteps(members, bytes, 2 * (n - 1), n - 1, after);
}

std::vector<Ready> CommBuilder::AllToAll(const std::vector<DeviceId>& members, int64_t bytes,
                                         const std::vector<Ready>& after) {
  const int32_t n = static_cast<int32_t>(members.size());
  std::vector<Ready> done = after;
  const int64_t chunk = std::max<int64_t>(1, bytes / std::max(1, n));
  for (int32_t k = 1; k < n; ++k)
    for (int32_t i = 0; i < n; ++i) {
      const int32_t to = (i + k) % n;
      const Ready lasts = Hops(members[i], members[to], chunk, after[i], true);
      done[to].insert(done[to].end(), lasts.begin(), lasts.end());
    }
  return done;
}

std::vector<Ready> CommBuilder::Broadcast(DeviceId root, const std::vector<DeviceId>& receivers, int64_t bytes,
                                          int32_t chunks, const Ready& after) {
  DEVPLACE_CHECK(chunks >= 1, "a broadcast needs at least one chunk");
  const int32_t n = static_cast<int32_t>(receivers.size());
  const int64_t c = std::min<int64_t>(chunks, bytes);
  std::vector<Ready> held(static_cast<size_t>(n) + 1), done(static_cast<size_t>(n));
  for (int64_t k = 0; k < c; ++k) {
    const int64_t size = bytes * (k + 1) / c - bytes * k / c;
    held[0] = after;
    for (int32_t j = 0; j < n; ++j) {
      const DeviceId from = j == 0 ? root : receivers[j - 1];
      held[j + 1] = Hops(from, receivers[j], size, held[j], true);
      if (k == c - 1) done[j] = held[j + 1];
    }
  }
  return done;
}

std::vector<Ready> CommBuilder::HierarchicalAllReduce(const std::vector<DeviceId>& members, int64_t bytes,
                                                      const std::vector<Ready>& after) {
  // Members by host, in first-appearance order of the hosts.
  std::vector<std::vector<int32_t>> hosts;
  std::map<std::string, size_t> host_index;
  for (size_t i = 0; i < members.size(); ++i) {
    auto [it, added] = host_index.emplace(topology_.device(members[i]).host, hosts.size());
    if (added) hosts.emplace_back();
    hosts[it->second].push_back(static_cast<int32_t>(i));
  }
  const size_t k = hosts[0].size();
  for (const auto& h : hosts) DEVPLACE_CHECK(h.size() == k, "hierarchical all-reduce needs equal hosts");
  if (hosts.size() == 1 || k == 1) return AllReduce(members, bytes, after);
  auto select = [&](const std::vector<int32_t>& idx, const std::vector<Ready>& from, std::vector<DeviceId>* devs) {
    std::vector<Ready> r;
    devs->clear();
    for (int32_t i : idx) {
      devs->push_back(members[i]);
      r.push_back(from[i]);
    }
    return r;
  };
  std::vector<Ready> state(members.size());
  std::vector<DeviceId> devs;
  for (const auto& h : hosts) {
    const std::vector<Ready> rs = ReduceScatter(devs, bytes, select(h, after, &devs));
    for (size_t j = 0; j < k; ++j) state[h[j]] = rs[j];
  }
  for (size_t j = 0; j < k; ++j) {
    std::vector<int32_t> column;
    for (const auto& h : hosts) column.push_back(h[j]);
    const std::vector<Ready> ar = AllReduce(devs, static_cast<int64_t>(bytes / k), select(column, state, &devs));
    for (size_t i = 0; i < column.size(); ++i) state[column[i]] = ar[i];
  }
  for (const auto& h : hosts) {
    const std::vector<Ready> ag = AllGather(devs, bytes, select(h, state, &devs));
    for (size_t j = 0; j < k; ++j) state[h[j]] = ag[j];
  }
  return state;
}

void CommBuilder::Finish() {
  tg_.group_task_count = {tg_.num_tasks()};
  tg_.group_dep_count = {static_cast<int32_t>(tg_.dep_from.size())};
  BuildAdjacency(&tg_);
}

Expected<double> CommBuilder::Run(Engine* engine) {
  TaskTotals totals;
  totals.Reset(tg_.num_resources);
  for (int32_t t = 0; t < tg_.num_tasks(); ++t) totals.Add(tg_, t, +1);
  if (Status s = CheckHorizon(totals); !s.ok()) return s.error();
  Timing timing;
  engine->Run(tg_, &timing, Record::kStepOnly);
  return static_cast<double>(StepTicks(tg_, engine->last_end())) * kSecondsPerTick;
}

}  // namespace devplace::sim
