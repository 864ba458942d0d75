#include "workflows/validate_pipeline.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>
#include <vector>

namespace devplace {

Expected<PipelinePlan> EvenPipeline(const Graph& graph, const Topology& topology, int32_t stages,
                                    int32_t microbatches, PipelineSchedule schedule) {
  const int32_t devices = topology.num_devices();
  if (stages < 1 || devices % stages != 0)
    return Error{std::to_string(stages) + " pipeline stages do not divide the " + std::to_string(devices) +
                 " devices of topology '" + topology.name() + "'"};
  const std::vector<std::string> layers = ForwardLayerOrder(graph);
  if (static_cast<int32_t>(layers.size()) < stages)
    return Error{"graph '" + graph.name() + "' has " + std::to_string(layers.size()) + " forward layers, fewer than " +
                 std::to_string(stages) + " pipeline stages"};
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < layers.size(); ++i) index.emplace(layers[i], i);
  std::vector<double> flops(layers.size(), 0.0);
  double total = 0.0;
  for (const Op& o : graph.ops()) {
    if (o.role == OpRole::kUpdate) continue;
    const OpId f = o.role == OpRole::kForward ? graph.find(o.name) : graph.find(o.forward_op);
    if (f < 0) continue;
    const auto it = index.find(graph.op(f).layer);
    if (it == index.end()) continue;
    flops[it->second] += o.flops;
    total += o.flops;
  }
  // Layer i ends stage s when the running total through it first reaches (s + 1) / stages of the whole; where that
  // cut is not a legal pipeline (a recurrence crossing it), the other cuts of the boundary are tried in order of
  // balance, the later boundaries kept as the running totals place them.
  std::vector<double> upto(layers.size());
  for (size_t i = 0; i < layers.size(); ++i) upto[i] = flops[i] + (i ? upto[i - 1] : 0.0);
  std::vector<size_t> last(static_cast<size_t>(stages), layers.size() - 1);
  for (int32_t s = 0; s + 1 < stages; ++s) {
    const double target = total * (s + 1) / stages;
    last[s] = static_cast<size_t>(s);
    while (last[s] + static_cast<size_t>(stages - s) < layers.size() && upto[last[s]] < target) ++last[s];
    last[s] = std::max(last[s], s ? last[s - 1] + 1 : 0);
  }
  auto make = [&](const std::vector<size_t>& ends) {
    PipelinePlan plan;
    plan.microbatches = microbatches;
    plan.schedule = schedule;
    const int32_t k = devices / stages;
    for (int32_t s = 0; s < stages; ++s) {
      PipelineStage stage;
      stage.name = "stage" + std::to_string(s);
      stage.ops.kind = StageOps::Kind::kLayerRange;
      stage.ops.first_layer = layers[s ? ends[s - 1] + 1 : 0];
      stage.ops.last_layer = layers[ends[s]];
      for (int32_t j = 0; j < k; ++j) stage.devices.push_back(s * k + j);
      plan.stages.push_back(std::move(stage));
    }
    return plan;
  };
  PipelinePlan plan = make(last);
  Status status = ValidatePipelinePlan(plan, graph, topology);
  for (int32_t s = 0; s + 1 < stages && !status; ++s) {
    const size_t lo = s ? last[s - 1] + 1 : 0, hi = last[s + 1] - 1;  // stage s + 1 keeps a layer
    std::vector<size_t> cuts;
    for (size_t c = lo; c <= hi && hi < layers.size(); ++c) cuts.push_back(c);
    const double target = total * (s + 1) / stages;
    std::stable_sort(cuts.begin(), cuts.end(), [&](size_t a, size_t b) {
      return std::abs(upto[a] - target) < std::abs(upto[b] - target);
    });
    for (size_t c : cuts) {
      std::vector<size_t> ends = last;
      ends[s] = c;
      PipelinePlan candidate = make(ends);
      if (ValidatePipelinePlan(candidate, graph, topology)) {
        plan = std::move(candidate);
        status = Status::Ok();
        break;
      }
    }
  }
  if (!status) return status.error();
  return plan;
}

}  // namespace devplace
