// Pipeline strategies: the graph cut into stages, each stage's ops run on its own devices, and micro-batches
// streamed through them under a schedule (GPipe, 1F1B, eager-1F1B). A PipelinePlan is a value type; the
// simulator prices it (sim/pipeline.h) and core/pipeline_json.h reads and writes it. Format: docs/formats.md.
//
// Submeshes: a stage's submesh is its device list (row-major) over an optional shape (StageMesh). Its `spec` lays
// out the tensors it sends and receives on that submesh; tensors crossing stages are resharded between the two
// layouts as PipelinePlan::reshard says (cross-mesh resharding, core/reshard.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph.h"
#include "core/mesh.h"
#include "core/reshard.h"
#include "core/sharding.h"
#include "core/sharding_propagation.h"
#include "core/status.h"
#include "core/strategy.h"
#include "core/topology.h"

namespace devplace {

// How micro-batches are ordered on each stage. With S stages and M micro-batches, stage i (0-based) runs W(i)
// forwards first, then alternates one backward and one forward while forwards remain, then the rest of the
// backwards: GPipe W = M (all forwards, then all backwards), 1F1B W = min(M, S - i), eager-1F1B
// W = min(M, 2(S - i) - 1) (more forwards in flight, so activations are sent early and their transfers hide
// behind compute).
enum class PipelineSchedule : uint8_t { kGPipe, kOneFOneB, kEagerOneFOneB };
// "gpipe", "1f1b", "eager-1f1b".
std::string_view ToString(PipelineSchedule schedule);
// Parses the names ToString gives; false on an unknown name.
bool ParsePipelineSchedule(std::string_view text, PipelineSchedule* schedule);

// One entry of a stage's schedule: the forward or the backward of a micro-batch.
struct StageStep {
  bool forward = true;
  int32_t microbatch = 0;
  bool operator==(const StageStep&) const = default;
};

// Forwards stage `stage` (0-based) of `num_stages` runs before its first backward (PipelineSchedule's W).
int32_t WarmupForwards(PipelineSchedule schedule, int32_t num_stages, int32_t stage, int32_t microbatches);
// The order of stage `stage`'s 2 * microbatches steps: W forwards, then one backward and one forward while
// forwards remain, then the remaining backwards. Micro-batches go forward and backward in increasing order.
std::vector<StageStep> StageOrder(PipelineSchedule schedule, int32_t num_stages, int32_t stage,
                                  int32_t microbatches);

// Which forward ops a stage holds (its backward and update ops follow their forward op).
// - kOpRange: the forward ops whose position in the graph's topological order lies between those of first_op and
//   last_op (both forward ops, inclusive).
// - kLayerRange: the forward ops whose layer lies between first_layer and last_layer (inclusive) in the order
//   of ForwardLayerOrder.
struct StageOps {
  enum class Kind : uint8_t { kOpRange, kLayerRange };
  Kind kind = Kind::kOpRange;
  OpId first_op = -1, last_op = -1;
  std::string first_layer, last_layer;
  bool operator==(const StageOps&) const = default;
};

// One stage: its ops and its submesh. One device runs the stage's ops whole; k > 1 devices run them
// data-parallel (each op split along its sample dimension over the k devices, weights replicated, gradients
// all-reduced once per step).
struct PipelineStage {
  std::string name;               // unique within the plan
  StageOps ops;
  std::vector<DeviceId> devices;  // the submesh's devices, row-major over `shape`
  std::vector<int32_t> shape;     // optional submesh shape, product = devices.size(); empty = 1-D
  // Layout of every tensor the stage sends or receives, seen as a 2-D tensor [samples, features], on the stage's
  // submesh, in Alpa's notation (ParseAlpaSpec over axes 0, 1, ... of `shape`): "S01,R" splits the samples over
  // both axes of a 2-D submesh, "S0,R" over axis 0 only (each sample block replicated over axis 1, as a
  // tensor-parallel stage holds its activations), "R,R" replicates them, "S0,S1" tiles them. Empty: the samples
  // split over every axis (data parallelism). The stage's compute is priced the same for every layout (each device
  // a 1/k share of every op); the layout decides what crosses the stages, and its sample-split axes decide which
  // devices all-reduce a weight gradient (those holding the same weight shard: 1/t of the weights each, t the
  // product of the other axes' extents).
  std::string spec;
  // Intra-stage sharding of the stage's ops (empty: none, the ops run data parallel as said above): annotations
  // over the stage's submesh (StageMesh, axes "a0", "a1", ...) propagated over the stage's ops and lowered
  // (core/sharding_propagation.h, core/sharding.h), as `devplace shard` does for a whole graph (ShardedStageGraph).
  // The simulator then runs every micro-batch's forward and backward as that lowering's tasks at micro-batch size,
  // with their collectives (a Megatron stage's all-reduces, resharding between differently sharded ops), and the
  // gradient synchronisation and updates once per step. `spec` still gives the layout of what crosses stages.
  std::vector<ShardingAnnotation> sharding;
  bool operator==(const PipelineStage&) const = default;
};

// How the tensors crossing from one stage to another are carried (cross-mesh resharding, core/reshard.h): per
// stage pair, the unit tasks between the two stages' layouts; their senders and issue order chosen by `balance`
// on an idle machine (sim/reshard.h), then every micro-batch's tasks carried by `method` inside the step, on the
// same links as everything else. The defaults (send/recv, naive) send each slice from its lowest holder.
struct PipelineResharding {
  ReshardMethod method = ReshardMethod::kSendRecv;
  ReshardBalance balance = ReshardBalance::kNaive;
  int32_t chunks = 32;       // chunks of a broadcast (>= 1)
  // Every data slice carries 1 byte instead of its size: a "signal only" bound on what faster resharding could
  // gain (the cross-stage dependencies stay, their transfer time nearly vanishes).
  bool signal_only = false;
  bool operator==(const PipelineResharding&) const = default;
};

// A pipeline strategy. Stages are listed in pipeline order: data flows from lower to higher stages in the
// forward pass (a stage may also feed any later stage directly, as U-shaped skip connections do).
struct PipelinePlan {
  std::vector<PipelineStage> stages;
  int32_t microbatches = 1;
  PipelineSchedule schedule = PipelineSchedule::kOneFOneB;
  // Split each backward into an activation-gradient task and a weight-gradient task that runs after it, so the
  // gradient sent to the previous stage leaves before the weight gradient is computed.
  bool delay_weight_gradients = false;
  PipelineResharding reshard;
  bool operator==(const PipelinePlan&) const = default;
};

// Upper bound on micro-batches per step (a sign of a unit error beyond it).
inline constexpr int32_t kMaxMicrobatches = 1 << 16;

// Upper bound on PipelineResharding::chunks.
inline constexpr int32_t kMaxReshardChunks = 1 << 12;

// The stage's submesh: its devices over its shape (1-D when empty), axes named "a0", "a1", ...
Mesh StageMesh(const PipelineStage& stage);
// The stage's layout (PipelineStage::spec) parsed on StageMesh, or the default (samples split over every axis);
// errors when the text does not parse, has other than two entries, or uses a mesh axis twice.
Expected<ShardingSpec> StageSpec(const PipelineStage& stage);

// A sharded stage (PipelineStage::sharding) as a graph of its own at micro-batch size, and its lowering.
struct StageGraph {
  // The stage's ops (in OpId order) and the edges between them, at micro-batch size: every op with a sample
  // dimension has its sample dimensions, output extents along them, FLOPs, and the bytes of the edges it feeds
  // (but those into update ops: weight gradients) divided by the micro-batches; ops without one are unchanged.
  Graph graph;
  std::vector<OpId> ops;  // per op of `graph`: the op of the full graph
  Strategy strategy;      // the stage's annotations propagated over `graph` on StageMesh and lowered
};
// Builds stage `stage`'s StageGraph (stage_of from AssignStages). Errors name the stage: a sample dimension the
// micro-batches do not divide, annotations that do not propagate (matching no op of the stage, not fitting).
Expected<StageGraph> ShardedStageGraph(const PipelinePlan& plan, int32_t stage, const Graph& graph,
                                       const std::vector<int32_t>& stage_of);

// The distinct layer names of the graph's forward ops in order of first appearance along its topological order
// (the order layer ranges refer to).
std::vector<std::string> ForwardLayerOrder(const Graph& graph);

// The stage of every op (indexed by OpId): forward ops by the stages' ranges, backward and update ops by their
// forward op. Errors name the stage or the op: a range naming unknown or non-forward ops or unknown layers,
// an empty range, a forward op in no stage or in two, a backward/update op whose forward op is missing, and an
// edge against the data flow (forward ops may feed only their own or later stages, backward ops only their own
// or earlier stages' backward and update ops: the stages must be a topological cut).
Expected<std::vector<int32_t>> AssignStages(const PipelinePlan& plan, const Graph& graph);

// Checks the plan against the graph and machine: at least one stage, 1 <= microbatches <= kMaxMicrobatches,
// unique non-empty stage names, devices known and used by one stage only, a shape (if given) with positive
// extents multiplying to the device count, a layout StageSpec accepts, 1 <= reshard.chunks <= kMaxReshardChunks,
// AssignStages, ShardedStageGraph for every stage with sharding annotations, and micro-batches that fit: microbatches x a stage's devices at most the batch (the graph's
// largest sample dimension). Errors name the stage:
// "stage 'dec': device 'gpu0' is already used by stage 'enc'".
Status ValidatePipelinePlan(const PipelinePlan& plan, const Graph& graph, const Topology& topology);

}  // namespace devplace
