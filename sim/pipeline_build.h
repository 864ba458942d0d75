// The task graph of a pipeline step (internal to sim/): built by BuildPipelineTasks from a validated plan, run
// by the Engine like any task graph. Task ids follow creation order and keys equal ids, so ties break by id.
#pragma once

#include <cstdint>
#include <vector>

#include "core/graph.h"
#include "core/pipeline.h"
#include "core/status.h"
#include "core/topology.h"
#include "sim/cost_model.h"
#include "sim/pipeline.h"
#include "sim/simulator.h"
#include "sim/task_graph.h"

namespace devplace::sim {

struct PipelineTasks {
  TaskGraph tg;                          // tg.op holds each task's stage
  TaskTotals totals;
  std::vector<PipelineTaskKind> kind;    // per task
  std::vector<int32_t> peer;             // per task: receiving stage of a transfer, else -1
  std::vector<int32_t> microbatch;       // per task: -1 for all-reduce steps and updates
  std::vector<int64_t> stash_bytes;      // per task: the activations a forward task keeps (its mem_bytes), else 0
  std::vector<int64_t> static_bytes;     // per device: weights, gradients and optimizer state of its stage
  std::vector<int32_t> max_in_flight;    // per stage
};

// Appends a task on `resource` (a device, or num_devices + link) of `duration` ticks (at least 1), keyed by its id,
// with its pipeline labels; no buffer, no dependencies.
int32_t AppendPipelineTask(PipelineTasks* out, int32_t resource, Time duration, PipelineTaskKind kind, int32_t stage,
                           int32_t peer, int32_t microbatch);

// Builds the tasks of one step of `plan` (validated) with `stage_of` from AssignStages.
// Pricing: op o of a stage with k devices on micro-batch m and device j is the part m * k + j of o split into
// M * k parts along its sample dimension (SplitConfig over M * k places), priced by `cost` with the partition
// model's shape, FLOPs and bytes (weights are read whole by every part). An op without a sample dimension of at
// least M * k does not scale with the batch (e.g. relative positions shared by all samples): it runs whole for
// every micro-batch on every device.
// Errors when planning a stage pair's resharding fails (e.g. a step too long to simulate).
Status BuildPipelineTasks(const Graph& graph, const Topology& topology, const PipelinePlan& plan,
                          const std::vector<int32_t>& stage_of, const CostModel& cost, const SimOptions& options,
                          PipelineTasks* out);

}  // namespace devplace::sim
