#include "agents/group_graph.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "sim/estimates.h"

namespace devplace {

namespace {

// Scales non-negative values to integers in [1, limit] keeping their ratios (as far as rounding allows), so the
// sum over all values stays below `total_limit`.
std::vector<int32_t> ScaleToIntegers(const std::vector<double>& values, double total_limit) {
  double total = 0;
  for (double v : values) total += v;
  double scale = total > 0 ? total_limit / total : 1.0;
  std::vector<int32_t> out(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    out[i] = static_cast<int32_t>(std::clamp(std::llround(values[i] * scale), 1LL, 1LL << 30));
  return out;
}

}  // namespace

GroupGraph BuildGroupGraph(const SearchProblem& problem) {
  const Graph& graph = *problem.graph;
  GroupGraph gg;
  gg.groups = ColocationGroups(graph);
  GroupEstimates est = SumByGroup(EstimateOps(graph, *problem.topology, problem.cost), gg.groups);
  const int32_t n = gg.groups.num_groups();
  // Totals stay below 2^29 so that partitioners summing weights in 32 bits cannot overflow.
  gg.vertex_weights = ScaleToIntegers(est.mean_seconds, double(1 << 29));

  std::vector<std::map<int32_t, double>> neighbours(n);
  for (const Edge& e : graph.edges()) {
    int32_t a = gg.groups.group_of_op[e.src], b = gg.groups.group_of_op[e.dst];
    if (a == b) continue;
    neighbours[a][b] += static_cast<double>(e.bytes);
    neighbours[b][a] += static_cast<double>(e.bytes);
  }
  std::vector<double> bytes;
  gg.offsets.assign(n + 1, 0);
  for (int32_t g = 0; g < n; ++g) {
    for (const auto& [other, b] : neighbours[g]) {
      gg.adjacency.push_back(other);
      bytes.push_back(b);
    }
    gg.offsets[g + 1] = static_cast<int32_t>(gg.adjacency.size());
  }
  gg.edge_weights = ScaleToIntegers(bytes, double(1 << 29));
  return gg;
}

Strategy PlacementFromGroups(const OpGroups& groups, const std::vector<int32_t>& device_of_group) {
  std::vector<DeviceId> device_of_op(groups.group_of_op.size());
  for (size_t op = 0; op < device_of_op.size(); ++op) device_of_op[op] = device_of_group[groups.group_of_op[op]];
  return Strategy::FromPlacement(device_of_op);
}

}  // namespace devplace
