// A sharded pipeline stage's tasks (internal to sim/): the stage's lowering (core/pipeline.h ShardedStageGraph) built
// at micro-batch size by the plain task builder, then copied into a pipeline step once per forward and backward of
// each micro-batch, in the stage's schedule, with the gradient synchronisation and updates once per step.
#pragma once

#include <cstdint>
#include <vector>

#include "core/pipeline.h"
#include "core/status.h"
#include "core/topology.h"
#include "sim/cost_model.h"
#include "sim/pipeline_build.h"
#include "sim/simulator.h"

namespace devplace::sim {

// Per stage device j and micro-batch m (slot j * M + m): the 1-tick marker tasks on that device that open and
// close its forward and its backward of m. Cross-stage transfers leave after a closing marker and are awaited by an
// opening one.
struct StageMarkers {
  std::vector<int32_t> f_start, f_done, b_start, b_done;
};

// Appends stage `stage`'s tasks to `out` (its static bytes added to out->static_bytes) for `order` (StageOrder of the
// plan). Micro-batch step k's tasks are the lowering's forward (backward) tasks: compute parts, collectives and
// transfers of forward (backward) op groups and of the edges into forward (backward) ops; on every device, step k's
// tasks there start after step k - 1's there ended (the markers chain them). Weight-gradient all-reduce rings of
// backward ops, update ops and the edges into them are added once, after the last micro-batch's backward. Compute
// tasks are labelled forward/backward/update, the step's collectives and transfers kShardComm, the gradient rings
// kAllReduce.
void AppendShardedStage(const StageGraph& sg, const Topology& topology, const CostModel& cost,
                        const SimOptions& options, const std::vector<StageStep>& order, int32_t stage,
                        const std::vector<DeviceId>& devices, int32_t microbatches, PipelineTasks* out,
                        StageMarkers* markers);

}  // namespace devplace::sim
