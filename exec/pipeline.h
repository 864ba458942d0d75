// Executing a pipeline plan (core/pipeline.h; docs/executor.md, "Pipelines"): the plan becomes a strategy that
// splits every op of a stage into its micro-batches' sample slices on the stage's devices, run by the partitioned
// executor (Executor::CreatePipeline) with each device's stage steps in the schedule's order. LibTorch-free header.
#pragma once

#include <vector>

#include "core/graph.h"
#include "core/pipeline.h"
#include "core/status.h"
#include "core/strategy.h"
#include "core/topology.h"
#include "exec/profiler.h"

namespace devplace {

// The strategy a pipeline plan runs as. With M micro-batches, every forward and backward op of a stage of k devices
// is split along its sample dimension (output axis 0) into M x k parts, part m x k + j (micro-batch m's j-th sample
// slice) on the stage's device j - the shares the simulator prices (sim/pipeline_build.h) - and every update op is
// copied on each of the stage's devices. A graph input whose out-edges carry part of it (the ids of one time step,
// which the executor reads from the whole input) runs whole on the stage's first device, in micro-batch 0. A device thus holds several parts of one op, so this is the executor's
// internal form, not a strategy ValidateStrategy accepts. Errors are one line naming the stage or op:
// ValidatePipelinePlan's, and what the executor does not run - intra-stage sharding annotations, a stage layout
// other than the samples split over all its devices (PipelineStage::spec empty or equal to that), weight gradients
// delayed, signal-only resharding, and an op without a sample dimension at output axis 0 of at least M x k.
Expected<Strategy> MicrobatchStrategy(const Graph& graph, const Topology& topology, const PipelinePlan& plan);

// ProfileParts (exec/profiler.h) for the op parts a pipeline plan runs (its MicrobatchStrategy's, keyed as the
// simulator's pipeline looks them up: an op's FLOPs over its M x k parts). Errors: MicrobatchStrategy's and
// ProfileParts'.
Expected<std::vector<OpTiming>> ProfilePipelineParts(const Graph& graph, const Topology& topology,
                                                     const PipelinePlan& plan, const ProfileOptions& options);

}  // namespace devplace
