// Internal to exec/: the executable form of a strategy that splits ops over devices (docs/executor.md,
// "Partitioned execution"). Every op part becomes a unit on its device computing the region core/partition.h gives
// it: its inputs are assembled from the parts of their producers that own the regions it needs (tiled for
// activations, summed for gradients), each producer part's tensor copied once per destination device; a forward op
// split along a reduction dimension reduce-scatters its partial sums; the weight gradients of replicated parts are
// all-reduced per shard; and each part of an update op runs Adam on its range of the flat weights. Parts whose
// computation is known to equal their region of the whole op's run the op's real computation built for the part's
// shapes; the others run a stand-in with the part's FLOPs (counted like the plain executor's stand-ins).
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <vector>

#include "core/graph.h"
#include "core/partition.h"
#include "core/status.h"
#include "core/strategy.h"
#include "core/topology.h"
#include "exec/kernels.h"
#include "exec/task_program.h"

namespace devplace::exec {

// A box of a slot's tensor placed at a box of an assembled input.
struct Piece {
  int32_t slot = -1;
  std::vector<int64_t> src_lo, dst_lo, size;
};

// One input of a unit, assembled on its device before its kernel runs.
struct Assembly {
  std::vector<int64_t> shape;
  at::ScalarType type = at::kFloat;
  bool sum = false;                     // pieces are partial gradients, added up (else they tile the shape)
  std::vector<Piece> pieces;            // none: zeros
  const EdgeTensor* cut = nullptr;      // set: the edge carries part of the assembled tensor (ForEdge)
  int64_t cut_lo = 0, cut_len = -1;     // with cut: the rows of it the part reads (Need::cut_lo; -1: all)
  int64_t index_bound = 2;              // integer inputs: exclusive bound of the values the kernel accepts
  // An update part's gradient: flat shard gradients (slot, flat indices; undefined indices: the slot holds the
  // gradient in the flat weights' order from 0) scattered into `full` elements, of which the range [lo, lo + len) is
  // the input (a view of the slot when one such gradient covers it).
  std::vector<std::pair<int32_t, at::Tensor>> scatter;
  int64_t full = 0, lo = 0, len = 0;
};

// The weights a forward or backward part computes with: the owner's flat weights at `index` (all of them when
// undefined), on the part's device; refreshed after every step. A ZeRO-3 part (OpConfig::shard_weights) keeps only
// its piece [piece_lo, piece_lo + piece_len) of them between its uses (the rest zero): its all-gathers fill the rest
// in place before the forward and the backward part compute, and a zero task frees it after each.
struct PartWeights {
  OpId owner = -1;
  at::Tensor index;
  at::Tensor w;
  int64_t piece_lo = 0, piece_len = -1;  // -1: all of w is kept

  // Zeros w outside the kept piece.
  void KeepPiece();
};

// An update part's Adam state over its range of the owner's flat weights.
struct UpdateRange {
  OpId owner = -1;
  int64_t lo = 0, len = 0;
  at::Tensor w, m, v, next_w, next_m, next_v;
  int64_t step = 0;
};

class PartKernel {
 public:
  virtual ~PartKernel() = default;
  // Computes the unit's output ports from its assembled inputs (`out` has one entry per port).
  virtual void Run(const std::vector<at::Tensor>& in, std::vector<at::Tensor>& out) = 0;
};

struct Unit {
  OpId op = 0;
  int32_t part = 0;
  DeviceId device = 0;
  at::Device torch_device{at::kCPU};
  bool stand_in = false;
  Box out_box, owned;               // port 0's region of the op's output, and the part of it this unit owns
  at::Tensor grad_index;            // backward units with weights: the flat weight indices of their gradient
  int32_t weight_port = -1;         // backward units with weights: the port of their weight gradient
  int64_t weight_elements = 0;      // backward units with weights: the elements of that (flat) gradient
  std::vector<Assembly> inputs;     // one per in-edge of the op, in graph order
  std::vector<int32_t> out_slots;   // one per output port
  std::unique_ptr<PartKernel> kernel;
};

struct PartPlan {
  TaskProgram program;
  std::vector<Unit> units;
  std::vector<std::vector<int32_t>> unit_of;  // [op][part]
  std::vector<std::vector<int32_t>> task_of;  // [op][part]: the unit's compute task
  std::vector<std::unique_ptr<PartWeights>> weights;
  std::vector<std::unique_ptr<UpdateRange>> updates;
  std::vector<at::Tensor> full_weights;  // by owner OpId (on the CPU), the weights every part's are taken from
  std::vector<EdgeTensor> edges;         // by edge id (what Assembly::cut points to)
  // By backward op: 1 when its replicas reduce-scatter the weight gradient (ZeRO-3), so replica i holds the sum of
  // chunk i only (exec/collectives.h's chunks of the flat gradient).
  std::vector<char> scattered_gradient;

  // Assembles the unit's inputs from `slots` and runs its kernel into its output slots.
  void RunUnit(int32_t unit, std::vector<at::Tensor>& slots) const;
  // Seeded inputs of the unit's assembled shapes (integers within their bounds), for timing its kernel alone.
  std::vector<at::Tensor> SyntheticInputs(int32_t unit, uint64_t seed) const;
  // Makes the weights the update parts wrote current, in every part that holds them.
  void CommitUpdates();
  // The value of `op` after a step (row-major over its whole shape), from `slots`: a forward op's output, a
  // backward op's weight gradient that an update reads (after synchronisation: of each weight range, the lowest
  // part's), an update op's new weights; empty when none.
  std::vector<float> Value(const Graph& graph, const Strategy& strategy, OpId op,
                           const std::vector<at::Tensor>& slots) const;
};

// What a backward part receives and computes: per in-edge its role (kSavedOutput, kGradient, or the forward input
// slot a saved input fills), the part's forward input shapes and types, its output shape, and which input
// gradients its out-edges need.
struct BackwardRoles {
  static constexpr int kSavedOutput = -2, kGradient = -1;
  std::vector<int> role;
  std::vector<std::vector<int64_t>> slot_shapes;
  std::vector<at::ScalarType> slot_types;
  std::vector<int64_t> out_shape;
  std::vector<char> need;
};

// Whether an update op reads backward op `op`'s output: the weight gradient of a weight's owner. A backward op of an
// op that uses weights another op owns (an unrolled RNN's later time steps, datasets/layers.h's shared weights)
// computes a weight gradient no update reads, so it is neither synchronised between replicas (nor accumulated over
// a pipeline's micro-batches) nor reported as a value, as the simulator prices it (sim/partition.h's ParamBytesOf
// is 0 for such an op).
bool UpdateReads(const Graph& graph, OpId op);

// The part kernels. Forward: the output from the inputs (port 0). Backward: the gradient of each forward input
// slot (ports 0 .. slots-1, zeros where not computed) and the weight gradient (port `slots`). Update: Adam on the
// range (port 0: the new weights of the range). Input: its slice of the graph input (port 0).
std::unique_ptr<PartKernel> MakePartInput(at::Tensor data);
std::unique_ptr<PartKernel> MakePartForward(std::shared_ptr<const OpImpl> impl, const PartWeights* weights);
std::unique_ptr<PartKernel> MakePartBackward(std::shared_ptr<const OpImpl> impl, const PartWeights* weights,
                                             BackwardRoles roles, const at::Device& device);
std::unique_ptr<PartKernel> MakePartUpdate(UpdateRange* range);

// Builds the plan. `device_of` maps topology devices to LibTorch devices. With `sync_replicas` false the weight
// gradients of replicated parts are left unsynchronised (a pipeline adds its own accumulation and all-reduce:
// exec/pipeline_schedule.h). Errors as BuildPlan's.
Expected<PartPlan> BuildPartPlan(const Graph& graph, const Topology& topology, const Strategy& strategy,
                                 const std::vector<at::Device>& device_of, uint64_t seed, bool sync_replicas = true);

}  // namespace devplace::exec
