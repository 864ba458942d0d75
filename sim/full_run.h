// A whole simulation's state (internal to sim/): shared by Simulator, Simulate and DeltaSimulator.
#pragma once

#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "core/strategy.h"
#include "core/topology.h"
#include "sim/engine.h"
#include "sim/task_graph.h"

namespace devplace::sim {

// Checks that `config` can run op `op` on `topology`; errors name the op.
Status CheckConfig(const Graph& graph, const Topology& topology, OpId op, const OpConfig& config);
// Checks the strategy's shape and every config (colocation is not required).
Status CheckStrategy(const Graph& graph, const Topology& topology, const Strategy& strategy);
// Checks what the simulator needs of a graph beyond core's validation (tensor rank).
Status CheckGraph(const Graph& graph);

struct FullRun {
  TaskGraph tg;
  Timing timing;
  TaskTotals totals;
  std::vector<Time> last_end;         // per resource, -1 when unused
  std::vector<int32_t> last_task;     // per resource, -1 when unused
  std::vector<int64_t> static_bytes;  // per device

  // Builds and runs everything for `strategy`; an error when the step is too long to simulate (CheckHorizon).
  // `with_groups`: keep the group lists a delta simulator needs (TaskBuilder::BuildAll).
  Status Run(TaskBuilder& builder, Engine& engine, const Strategy& strategy, const Graph& graph, bool with_groups);
};

}  // namespace devplace::sim
