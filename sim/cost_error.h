// How far the analytic roofline model is from measured op times: per device kind and op type, the relative error
// of the analytic estimate of every op of a graph (whole, on one device of the kind) against a profiled cost table
// (`devplace profile`). It tells users how far to trust the uncalibrated simulator on a machine, and which
// efficiency rules (AnalyticCostOptions::rules) would bring it closer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "core/topology.h"
#include "sim/cost_model.h"

namespace devplace {

// One (device kind, op type) group; op_type "all" is every op of the kind.
struct CostErrorRow {
  std::string device_kind;
  std::string op_type;
  int32_t ops = 0;                  // ops of the graph with a measured time
  double measured_seconds = 0.0;    // summed over those ops
  double analytic_seconds = 0.0;    // summed over those ops
  double median_abs_error = 0.0;    // |analytic - measured| / measured, median over the ops
  double p90_abs_error = 0.0;       // its 90th percentile (nearest rank)
  double median_ratio = 0.0;        // analytic / measured, median over the ops (< 1: the model is optimistic)
};

// Compares `analytic` with `table` on every op of `graph` that the table measured (ops whose signature it lacks are
// left out), for each device kind of `table` that `topology` has. Rows: per kind, op types in order of decreasing
// measured time, then the kind's "all" row. Errors when no op of the graph has a measurement on the topology.
Expected<std::vector<CostErrorRow>> CompareAnalyticWithProfile(const Graph& graph, const Topology& topology,
                                                                const CostTable& table,
                                                                const AnalyticCostOptions& analytic);

}  // namespace devplace
