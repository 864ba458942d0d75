// A whole simulation's state (internal to sim/): shared by Simulator, Simulate and DeltaSimulator.
#pragma once

#include <span>
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
// Checks the strategy's shape and every config (colocation is not required). When `plain` is given, it receives
// each op's device if every op runs whole on one device, and is left empty otherwise.
Status CheckStrategy(const Graph& graph, const Topology& topology, const Strategy& strategy,
                     std::vector<DeviceId>* plain = nullptr);
// Checks what the simulator needs of a graph beyond core's validation (at least one op, tensor rank).
Status CheckGraph(const Graph& graph);

struct FullRun {
  TaskGraph tg;
  Timing timing;
  TaskTotals totals;
  std::vector<Time> last_end;         // per resource, -1 when unused
  std::vector<int32_t> last_task;     // per resource, -1 when unused
  std::vector<int64_t> static_bytes;  // per device

  // Builds and runs everything for `strategy`; an error when the step is too long to simulate (CheckHorizon).
  // `record`: what the timing keeps (Engine::Run).
  Status Run(TaskBuilder& builder, Engine& engine, const Strategy& strategy, Record record);
  // With every task's times in `timing` (ready, start, end, and `order` listing the tasks of the groups): stores
  // the task groups in the order their first tasks were dequeued (ReorderGroups, which drops the tasks of replaced
  // groups), so that a pass in schedule order walks each per-task array nearly in order; remaps the timing and
  // last_task to the new ids (res_prev and crit_prev when recorded for every task, else they are reset to -1).
  // Times and keys do not change. Does not allocate when it ran before on as many tasks and groups.
  void StoreInScheduleOrder();
  // After StoreInScheduleOrder: the new id of each task it was given (-1: dropped).
  const std::vector<int32_t>& new_ids() const { return new_id_; }

 private:
  // StoreInScheduleOrder's lists.
  std::vector<int32_t> task_group_, group_order_, new_id_;
  std::vector<uint8_t> listed_;
  PermuteScratch permute_;
};

}  // namespace devplace::sim
