// Internal to exec/: a pipeline plan's order and gradient accumulation over the partitioned plan of its
// MicrobatchStrategy (exec/pipeline.h), and the per-step times of the stage steps.
#pragma once

#include <cstdint>
#include <vector>

#include "core/graph.h"
#include "core/pipeline.h"
#include "core/status.h"
#include "exec/executor.h"
#include "exec/part_plan.h"
#include "exec/task_program.h"

namespace devplace::exec {

// The stage steps of a scheduled plan and which compute tasks make each.
struct PipelineLabels {
  std::vector<PipelineStepTime> steps;  // per device in the schedule's order (times unset)
  std::vector<int32_t> step_of_task;    // per task of the program: its index in `steps`, or -1
};

// Adds to `plan` (built by BuildPartPlan from MicrobatchStrategy(graph, topology, pipeline) without replica
// synchronisation) what makes it the pipeline's step:
// - order: on device j of stage s, the compute tasks of each stage step of StageOrder (a micro-batch's forward or
//   backward ops of the stage, in the graph's topological order) chained one after another in the schedule's
//   order, then the stage's update ops; copies and collective steps run on their workers when ready;
// - gradients: each backward op's weight gradient of micro-batch m on device j added into micro-batch 0's (one
//   task per micro-batch, in micro-batch order, on the device's worker), the sums all-reduced over the stage's
//   devices (a ring, exec/collectives.h) and only then read by the updates.
// Errors when the tasks wait on each other in a cycle (an op's split that mixes micro-batches).
Expected<PipelineLabels> SchedulePipeline(const Graph& graph, const PipelinePlan& pipeline, PartPlan* plan);

// The stage steps' spans in one step (`times` of the program's tasks), in seconds since `origin`.
std::vector<PipelineStepTime> PipelineStepTimes(const PipelineLabels& labels, const TaskTimes& times, double origin);

}  // namespace devplace::exec
