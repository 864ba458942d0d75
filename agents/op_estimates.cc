#include "agents/op_estimates.h"

namespace devplace {

double OpEstimates::mean_time(OpId op) const {
  double sum = 0;
  for (DeviceId d = 0; d < num_devices; ++d) sum += time(op, d);
  return sum / num_devices;
}

OpEstimates EstimateOps(const Graph& graph, const Topology& topology, const CostModel& cost,
                        double optimizer_state_factor) {
  OpEstimates e;
  e.num_devices = topology.num_devices();
  e.seconds.resize(static_cast<size_t>(graph.num_ops()) * e.num_devices);
  e.memory_bytes.resize(graph.num_ops());
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    for (DeviceId d = 0; d < e.num_devices; ++d) {
      OpConfig whole{{d}, {}};
      e.seconds[static_cast<size_t>(op) * e.num_devices + d] =
          cost.ComputeTime(graph, op, whole, 0, topology.device(d));
    }
    const Op& o = graph.op(op);
    double bytes = (2.0 + optimizer_state_factor) * static_cast<double>(o.param_bytes);
    if (o.role == OpRole::kForward) bytes += static_cast<double>(OutputBytes(o));
    e.memory_bytes[op] = static_cast<int64_t>(bytes);
  }
  return e;
}

GroupEstimates SumByGroup(const OpEstimates& estimates, const OpGroups& groups) {
  GroupEstimates g;
  g.mean_seconds.assign(groups.num_groups(), 0.0);
  g.memory_bytes.assign(groups.num_groups(), 0);
  for (size_t op = 0; op < groups.group_of_op.size(); ++op) {
    int32_t group = groups.group_of_op[op];
    g.mean_seconds[group] += estimates.mean_time(static_cast<OpId>(op));
    g.memory_bytes[group] += estimates.memory_bytes[op];
  }
  return g;
}

}  // namespace devplace
