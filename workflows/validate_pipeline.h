// The pipeline rows of a validation suite (ValidateSuite::pipelines): a plan generated for each model.
#pragma once

#include <cstdint>

#include "core/graph.h"
#include "core/pipeline.h"
#include "core/status.h"
#include "core/topology.h"

namespace devplace {

// `stages` stages over the graph's forward layers (ForwardLayerOrder), contiguous and of similar FLOPs (each layer's
// forward and backward ops): stage s ends at the first layer whose running total reaches (s + 1) / stages of the
// whole, or, where that cut is not a legal pipeline (a recurrence crosses it), at the legal cut nearest to that
// share with the other cuts kept; stage s runs on devices [s k, (s + 1) k) of the topology (k = devices / stages),
// with `microbatches` and `schedule`. Errors when `stages` does not divide the devices, the graph has fewer forward
// layers than stages, or no such cut is legal (ValidatePipelinePlan's message).
Expected<PipelinePlan> EvenPipeline(const Graph& graph, const Topology& topology, int32_t stages,
                                    int32_t microbatches, PipelineSchedule schedule);

}  // namespace devplace
