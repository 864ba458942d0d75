// Per-op estimates that searches and environments work from without simulating: the compute time of each op
// on each device when it runs whole there, and the memory an op pins on the device(s) that hold it. One
// definition, shared by the heuristics (expert, m-TOPO, m-ETF, the partitioners), MCMC's memory ledger and the
// environments' memory-aware masks and features.
#pragma once

#include <cstdint>
#include <vector>

#include "core/colocation.h"
#include "core/graph.h"
#include "core/status.h"
#include "core/strategy.h"
#include "core/topology.h"
#include "sim/cost_model.h"

namespace devplace {

// Bytes `op` keeps on its device during a step when it runs whole: weights, gradients and optimizer state for
// ops with parameters (round((2 + optimizer_state_factor) x param_bytes)), plus the output of forward ops, which
// is kept for the backward pass. (Backward outputs are short-lived and not counted.)
int64_t OpMemoryEstimate(const Op& op, double optimizer_state_factor);

// Bytes `op` keeps on each device of `config`: the parameter state whole when the op is split along a sample
// dimension (every part holds a replica of the weights), else 1/n of it; 1/n of a forward output (rounded up);
// n = config.num_parts(). Equals OpMemoryEstimate for a single-device config.
int64_t OpPartMemoryEstimate(const Op& op, const OpConfig& config, double optimizer_state_factor);

// Estimates for every op of a graph on every device of a topology.
struct OpEstimates {
  // seconds[op * num_devices + device]: the op run whole on the device (the cost model's price).
  std::vector<double> seconds;
  // OpMemoryEstimate of every op.
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

// A graph a training step can be placed for: at least one op, and at least one op that computes or holds
// parameters (flops > 0 or param_bytes > 0; a graph of inputs alone has nothing to train). Every search and
// the environments check it; the error names the graph, e.g. "graph 'g' has no ops". (The simulator accepts any
// graph with at least one op.)
Status CheckTrainingGraph(const Graph& graph);

}  // namespace devplace
