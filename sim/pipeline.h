// Simulation of a pipeline strategy (core/pipeline.h): per stage and micro-batch, forward and backward tasks in
// the order the schedule gives; activations and gradients resharded between the stages' layouts by the plan's
// cross-mesh resharding method (sim/reshard.h) as tasks over the topology's routes (contending on the links with
// everything else); devices holding the same weight shard all-reduce their gradients once per step; every stage
// updates its weights once per step. The tasks run on the simulator's
// event loop (sim/engine.h) and memory model (sim/memory.h). The model is described in docs/simulator.md
// ("Pipelines").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/pipeline.h"
#include "core/status.h"
#include "core/topology.h"
#include "sim/cost_model.h"
#include "sim/simulator.h"

namespace devplace {

// What a pipeline task does.
enum class PipelineTaskKind : uint8_t {
  kForward,         // a stage's forward ops on one micro-batch (one task per device of the stage; a sharded stage:
                    // one per op part, and 1-tick markers opening and closing the micro-batch on each device)
  kBackward,        // its backward ops (with delay_weight_gradients: the activation-gradient half)
  kWeightGradient,  // with delay_weight_gradients: the weight-gradient half, after kBackward
  kActivation,      // one hop of activations resharded to a later stage
  kGradient,        // one hop of gradients resharded back to an earlier stage
  kAllReduce,       // one hop of a stage's weight-gradient all-reduce (once per step)
  kUpdate,          // a stage's weight update (once per step, per device)
  kShardComm,       // a sharded stage's collective step or transfer hop inside a micro-batch's forward or backward
                    // (PipelineStage::sharding; -1 micro-batch: the edges into its updates)
};
std::string_view ToString(PipelineTaskKind kind);

// One task on the pipeline's timeline (kept with SimOptions::keep_timeline).
struct PipelineTimelineTask {
  PipelineTaskKind kind = PipelineTaskKind::kForward;
  int32_t stage = 0;       // the stage computing, sending, or all-reducing
  int32_t peer = -1;       // transfers: the receiving stage; else -1
  int32_t microbatch = -1; // -1 for all-reduce steps and updates
  int32_t resource = 0;    // device id for compute; num_devices + link id for transfers
  int64_t bytes = 0;       // bytes moved (transfer hops)
  double start = 0.0, end = 0.0;
};

// Per stage outcome (the maximum over the stage's devices where they differ).
struct PipelineStageStats {
  double busy_seconds = 0.0;            // forward, backward and update time on the busiest device of the stage
  double bubble_fraction = 0.0;         // 1 - busy_seconds / step time
  int64_t activation_peak_bytes = 0;    // peak of the forward activations kept for the backward (in-flight
                                        // micro-batches), without transfer buffers or weights
  int64_t peak_bytes = 0;               // device peak of the full memory model (static + activations + buffers)
  int32_t max_in_flight = 0;            // most micro-batches forwarded and not yet backwarded at once
};

// The result of simulating a pipeline step.
struct PipelineResult {
  // Step time, per-device and per-link statistics, peak memory, OOM (as for any strategy; critical_path and
  // timeline stay empty: see `timeline`).
  SimResult sim;
  // Mean idle fraction of the stages' devices over the step: 1 - sum(busy) / (devices x step time). With S equal
  // stages, M micro-batches, free links and no update it is (S-1)/(M+S-1) for GPipe and 1F1B.
  double bubble_fraction = 0.0;
  std::vector<PipelineStageStats> stages;
  std::vector<PipelineTimelineTask> timeline;  // in start order; empty unless SimOptions::keep_timeline
};

// Simulates one training step of `graph` under `plan` (validated with ValidatePipelinePlan; errors name the
// stage). Each stage's tasks are priced by `cost` on its ops at micro-batch size.
Expected<PipelineResult> SimulatePipeline(const Graph& graph, const Topology& topology, const PipelinePlan& plan,
                                          const CostModel& cost, const SimOptions& options = {});

// Chrome trace of a pipeline step (needs SimOptions::keep_timeline): a track per device with tasks named
// "F3", "B3", "W3", "update", and a track per link direction with "act 3 s0->s1", "grad 3 s1->s0",
// "allreduce s0", "comm 3 s0" (a sharded stage's collectives and transfers of micro-batch 3; stage names in full).
Expected<std::string> PipelineChromeTraceJson(const PipelineResult& result, const PipelinePlan& plan,
                                              const Topology& topology);
Status WritePipelineChromeTrace(const PipelineResult& result, const PipelinePlan& plan, const Topology& topology,
                                const std::string& path);

}  // namespace devplace
