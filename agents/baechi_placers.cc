#include "agents/baechi_placers.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <queue>
#include <tuple>

#include "sim/estimates.h"
#include "core/colocation.h"

namespace devplace {

namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The device with the most free memory (ties: lowest id).
DeviceId RoomiestDevice(const Topology& t, const std::vector<int64_t>& used) {
  DeviceId best = 0;
  for (DeviceId d = 1; d < t.num_devices(); ++d)
    if (t.device(d).memory_bytes - used[d] > t.device(best).memory_bytes - used[best]) best = d;
  return best;
}

}  // namespace

Expected<SearchResult> PlaceMTopo(const SearchProblem& problem, const SearchRequest&) {
  auto start = std::chrono::steady_clock::now();
  const Graph& graph = *problem.graph;
  const Topology& t = *problem.topology;
  OpGroups groups = ColocationGroups(graph);
  GroupEstimates est = SumByGroup(EstimateOps(graph, t, problem.cost, problem.sim.optimizer_state_factor), groups);
  double total = 0;
  for (int64_t m : est.memory_bytes) total += static_cast<double>(m);
  const int32_t devices = t.num_devices();
  std::vector<int64_t> quota(devices), used(devices, 0);
  for (DeviceId d = 0; d < devices; ++d)
    quota[d] = std::min<int64_t>(t.device(d).memory_bytes, static_cast<int64_t>(total / devices) + 1);

  std::vector<DeviceId> device_of_group(groups.num_groups());
  DeviceId current = 0;
  for (int32_t g = 0; g < groups.num_groups(); ++g) {
    int64_t need = est.memory_bytes[g];
    while (current + 1 < devices && used[current] > 0 && used[current] + need > quota[current]) ++current;
    DeviceId chosen = current;
    if (used[chosen] + need > t.device(chosen).memory_bytes) chosen = RoomiestDevice(t, used);  // last resort
    device_of_group[g] = chosen;
    used[chosen] += need;
  }
  std::vector<DeviceId> device_of_op(graph.num_ops());
  for (OpId op = 0; op < graph.num_ops(); ++op) device_of_op[op] = device_of_group[groups.group_of_op[op]];
  return SearchResult{Strategy::FromPlacement(device_of_op), 0, SecondsSince(start)};
}

Expected<SearchResult> PlaceMEtf(const SearchProblem& problem, const SearchRequest&) {
  auto start = std::chrono::steady_clock::now();
  const Graph& graph = *problem.graph;
  const Topology& t = *problem.topology;
  const int32_t devices = t.num_devices();
  OpGroups groups = ColocationGroups(graph);
  OpEstimates est = EstimateOps(graph, t, problem.cost, problem.sim.optimizer_state_factor);
  GroupEstimates group_est = SumByGroup(est, groups);

  std::vector<DeviceId> device_of_op(graph.num_ops(), -1), device_of_group(groups.num_groups(), -1);
  std::vector<double> finish(graph.num_ops(), 0.0), device_free(devices, 0.0);
  std::vector<int64_t> used(devices, 0);
  std::vector<int32_t> waiting(graph.num_ops());

  // Earliest start of `op` on `d`, or +inf if d cannot take it.
  auto start_on = [&](OpId op, DeviceId d) {
    int32_t g = groups.group_of_op[op];
    if (device_of_group[g] >= 0 && device_of_group[g] != d) return std::numeric_limits<double>::infinity();
    if (device_of_group[g] < 0 && used[d] + group_est.memory_bytes[g] > t.device(d).memory_bytes)
      return std::numeric_limits<double>::infinity();
    double ready = device_free[d];
    for (int32_t e : graph.in_edges(op)) {
      const Edge& edge = graph.edge(e);
      double arrival = finish[edge.src];
      if (device_of_op[edge.src] != d) arrival += t.transfer_time_estimate(device_of_op[edge.src], d, edge.bytes);
      ready = std::max(ready, arrival);
    }
    return ready;
  };
  // Best (start, device) for op; when no device has memory left for a new group, the roomiest one.
  auto best_device = [&](OpId op) {
    double best = std::numeric_limits<double>::infinity();
    DeviceId chosen = -1;
    for (DeviceId d = 0; d < devices; ++d) {
      double s = start_on(op, d);
      if (s < best) {
        best = s;
        chosen = d;
      }
    }
    if (chosen < 0) {
      chosen = RoomiestDevice(t, used);
      best = device_free[chosen];
      for (int32_t e : graph.in_edges(op)) best = std::max(best, finish[graph.edge(e).src]);
    }
    return std::pair(best, chosen);
  };

  // Lazy priority queue: an entry's start time can only grow as devices fill, so a popped entry whose
  // recomputed start still beats the next entry is the true earliest task.
  using Entry = std::tuple<double, int32_t, OpId>;  // (start, topological rank, op)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    waiting[op] = static_cast<int32_t>(graph.in_edges(op).size());
    if (waiting[op] == 0) ready.emplace(best_device(op).first, graph.topological_rank(op), op);
  }
  while (!ready.empty()) {
    auto [stale, rank, op] = ready.top();
    ready.pop();
    auto [start_time, d] = best_device(op);
    if (!ready.empty() && start_time > std::get<0>(ready.top())) {
      ready.emplace(start_time, rank, op);
      continue;
    }
    int32_t g = groups.group_of_op[op];
    if (device_of_group[g] < 0) {
      device_of_group[g] = d;
      used[d] += group_est.memory_bytes[g];
    }
    device_of_op[op] = d;
    finish[op] = start_time + est.time(op, d);
    device_free[d] = finish[op];
    for (int32_t e : graph.out_edges(op)) {
      OpId next = graph.edge(e).dst;
      if (--waiting[next] == 0) ready.emplace(best_device(next).first, graph.topological_rank(next), next);
    }
  }
  return SearchResult{Strategy::FromPlacement(device_of_op), 0, SecondsSince(start)};
}

}  // namespace devplace
