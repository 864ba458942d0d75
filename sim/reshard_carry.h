// Carrying one cross-mesh unit task (core/reshard.h) with a CommBuilder (internal to sim/): shared by the resharding
// microbenchmark (sim/reshard.cc) and the pipeline's cross-stage transfers (sim/pipeline_build.cc).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/reshard.h"
#include "core/topology.h"
#include "sim/collectives.h"

namespace devplace::sim {

// Appends to `b` the sends and collectives carrying `bytes` (>= 1) of the slice of `task` from `sender` to every
// receiver of `task` by `method` (broadcasts cut into `chunks` chunks), starting after `after`. Returns, per
// receiver, the receiver and the tasks whose ends deliver the whole slice there (receivers grouped by host: the
// sender's host first, then hosts in order of their lowest receiver).
std::vector<std::pair<DeviceId, Ready>> CarryUnitTask(CommBuilder* b, const Topology& topology, const UnitTask& task,
                                                      int64_t bytes, DeviceId sender, ReshardMethod method,
                                                      int32_t chunks, const Ready& after);

}  // namespace devplace::sim
