// Per-op estimates the placement heuristics (expert, m-TOPO, m-ETF, graph partitioners) work from: compute time
// on each device when the op runs whole there, and the memory the op pins on the device that holds it.
#pragma once

#include <cstdint>
#include <vector>

#include "core/colocation.h"
#include "core/graph.h"
#include "core/topology.h"
#include "sim/cost_model.h"

namespace devplace {

// Estimates for every op of a graph on every device of a topology.
struct OpEstimates {
  // seconds[op * num_devices + device]: the op run whole on the device (the cost model's price).
  std::vector<double> seconds;
  // Bytes the op keeps on its device during a step: weights, gradients and optimizer state for ops with
  // parameters ((2 + optimizer_state_factor) x param_bytes), plus the output of forward ops, which is kept
  // for the backward pass. (Backward outputs are short-lived and not counted.)
  std::vector<int64_t> memory_bytes;
  int32_t num_devices = 0;

  double time(OpId op, DeviceId device) const { return seconds[static_cast<size_t>(op) * num_devices + device]; }
  // Mean of time(op, d) over devices: the device-independent weight used by partitioners.
  double mean_time(OpId op) const;
};

OpEstimates EstimateOps(const Graph& graph, const Topology& topology, const CostModel& cost,
                        double optimizer_state_factor = 2.0);

// Per-group sums of the estimates (a group is placed as a unit).
struct GroupEstimates {
  std::vector<double> mean_seconds;   // sum over members of mean_time
  std::vector<int64_t> memory_bytes;  // sum over members
};
GroupEstimates SumByGroup(const OpEstimates& estimates, const OpGroups& groups);

}  // namespace devplace
