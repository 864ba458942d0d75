#include "sim/cost_error.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/quantile.h"

namespace devplace {

namespace {

struct Samples {
  std::vector<double> errors, ratios;
  double measured = 0.0, analytic = 0.0;
};

CostErrorRow Summarise(const std::string& kind, const std::string& type, const Samples& s) {
  CostErrorRow row;
  row.device_kind = kind;
  row.op_type = type;
  row.ops = static_cast<int32_t>(s.errors.size());
  row.measured_seconds = s.measured;
  row.analytic_seconds = s.analytic;
  row.median_abs_error = NearestRankQuantile(s.errors, 0.5);
  row.p90_abs_error = NearestRankQuantile(s.errors, 0.9);
  row.median_ratio = NearestRankQuantile(s.ratios, 0.5);
  return row;
}

}  // namespace

Expected<std::vector<CostErrorRow>> CompareAnalyticWithProfile(const Graph& graph, const Topology& topology,
                                                                const CostTable& table,
                                                                const AnalyticCostOptions& analytic) {
  if (Status s = ValidateAnalyticCostOptions(analytic); !s.ok()) return s.error();
  const CostModel measured_model = MakeProfiledCostModel(table);
  const CostModel analytic_model = MakeAnalyticCostModel(analytic);
  std::vector<std::string> kinds;
  for (const OpTiming& e : table.entries)
    if (std::find(kinds.begin(), kinds.end(), e.device_kind) == kinds.end()) kinds.push_back(e.device_kind);
  std::vector<CostErrorRow> rows;
  for (const std::string& kind : kinds) {
    DeviceId device = -1;
    for (DeviceId d = 0; d < topology.num_devices() && device < 0; ++d)
      if (topology.device(d).kind == kind) device = d;
    if (device < 0) continue;
    const OpConfig whole{{device}, {}};
    std::map<std::string, Samples> by_type;
    Samples all;
    for (OpId op = 0; op < graph.num_ops(); ++op) {
      const PartCost m = measured_model.ComputeCost(graph, op, whole, 0, topology.device(device));
      if (m.fallback) continue;
      const double a = analytic_model.ComputeTime(graph, op, whole, 0, topology.device(device));
      for (Samples* s : {&by_type[graph.op(op).type], &all}) {
        s->errors.push_back(std::abs(a - m.seconds) / m.seconds);
        s->ratios.push_back(a / m.seconds);
        s->measured += m.seconds;
        s->analytic += a;
      }
    }
    if (all.errors.empty()) continue;
    std::vector<std::pair<std::string, Samples*>> types;
    for (auto& [type, samples] : by_type) types.emplace_back(type, &samples);
    std::stable_sort(types.begin(), types.end(),
                     [](const auto& a, const auto& b) { return a.second->measured > b.second->measured; });
    for (auto& [type, samples] : types) rows.push_back(Summarise(kind, type, *samples));
    rows.push_back(Summarise(kind, "all", all));
  }
  if (rows.empty())
    return Error{"graph '" + graph.name() + "': the cost table measures none of its ops on a device kind of topology '" +
                 topology.name() + "'"};
  return rows;
}

}  // namespace devplace
