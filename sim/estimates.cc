#include "sim/estimates.h"

#include <cmath>
#include <string>
#include <vector>

#include "sim/partition.h"

namespace devplace {

namespace {

int64_t ParamStateBytes(const Op& op, double optimizer_state_factor) {
  return static_cast<int64_t>(std::llround((2.0 + optimizer_state_factor) * static_cast<double>(op.param_bytes)));
}

}  // namespace

int64_t OpMemoryEstimate(const Op& op, double optimizer_state_factor) {
  return ParamStateBytes(op, optimizer_state_factor) + (op.role == OpRole::kForward ? OutputBytes(op) : 0);
}

int64_t OpPartMemoryEstimate(const Op& op, const OpConfig& config, double optimizer_state_factor) {
  int64_t n = 1;  // distinct parts (copies hold what their part holds)
  for (int32_t d : config.degrees) n *= d;
  bool replicated = false;
  for (size_t k = 0; k < config.degrees.size(); ++k)
    replicated |= config.degrees[k] > 1 && op.dims[k].kind == DimKind::kSample;
  const double params = (2.0 + optimizer_state_factor) * static_cast<double>(op.param_bytes);
  const int64_t state = static_cast<int64_t>(std::llround(replicated ? params : params / static_cast<double>(n)));
  return state + (op.role == OpRole::kForward ? (OutputBytes(op) + n - 1) / n : 0);
}

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
  // The whole op's work (what CostModel::ComputeTime of a one-part config prices) does not depend on the device:
  // its box geometry is computed once per op, its price once per device.
  const OpConfig whole{{0}, {}};
  std::vector<int64_t> shape;
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const PartWork work = sim::PartWorkOf(graph, op, whole, 0, &shape);
    for (DeviceId d = 0; d < e.num_devices; ++d)
      e.seconds[static_cast<size_t>(op) * e.num_devices + d] = cost.Cost(work, topology.device(d)).seconds;
    e.memory_bytes[op] = OpMemoryEstimate(graph.op(op), optimizer_state_factor);
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

Status CheckTrainingGraph(const Graph& graph) {
  if (graph.num_ops() == 0) return Error{"graph '" + graph.name() + "' has no ops"};
  for (const Op& op : graph.ops())
    if (op.flops > 0 || op.param_bytes > 0) return Status::Ok();
  return Error{"graph '" + graph.name() + "' has no op with FLOPs or parameters: nothing to train"};
}

}  // namespace devplace
