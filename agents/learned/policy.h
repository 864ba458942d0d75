// The learned placement policies (LibTorch; internal to devplace_learn):
// - TransformerPlacer (GDP-style, one-shot MDP): GraphSAGE embeddings of the colocation groups, a
//   feature-conditioning (FiLM) layer driven by a graph/machine summary so one policy serves many graphs, a
//   Transformer encoder run segment by segment with the previous segment's states as memory (Transformer-XL
//   recurrence, so graphs far longer than a segment are placed), and per-group device logits (a learned
//   per-device-index output plus a device-feature term, plus per-device lines in the cumulative compute share,
//   whose upper envelope is a contiguous split, in topological order and, with PolicyConfig::layer_split, in the
//   layer sequence); a value head on the pooled states.
// - PlacetoPolicy (Placeto-style, iterative MDP): GraphSAGE over group features plus the current placement,
//   logits for the current group from its embedding and the pooled graph embedding, and a value head.
// Logits cover the topology's devices, plus the environment's data-parallel action when the policy config has
// data_parallel_action (env/config.h), or its SOAP split candidates when it has soap (transformer only: each
// candidate is scored from the group's state and the candidate's features, env/observation.h CandidateFeature);
// masking (MaskedLogProbs) removes illegal ones.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "config/experiment_config.h"
#include "core/status.h"
#include "env/game.h"
#include "env/observation.h"
#include "gnn/graphsage.h"

namespace devplace {

// The static tensors of a game: group features [N, kTransformerNodeFeatures] (the environment's
// kNodeFeatureDim columns plus the cumulative compute share in topological order; with the data-parallel
// action, kParallelNodeFeatures more: the split's benefit ratio saving / (saving + sync), 0.5 when both are 0,
// and its net gain N (saving - sync) / total clamped to [-4, 4], where saving = the group's compute time on the
// reference device minus its slowest split part, sync = PlacementGame::group_sync_seconds, total = the graph's
// compute time on the reference device and N the number of groups), group edges, device features [D, Fd].
inline constexpr int64_t kTransformerNodeFeatures = kNodeFeatureDim + 1;
inline constexpr int64_t kParallelNodeFeatures = 2;
struct GameTensors {
  SageGraph graph;
  torch::Tensor device_x;
  torch::Tensor candidate_x;  // SOAP games: [N, C, kCandidateFeatureDim] (PlacementGame::candidate_features)
  // [N, 1]: each group's position in the layer sequence, the compute share (kNodeComputeShare) of the layers
  // before its layer (core/colocation.h GroupLayerIndex: data-flow order) plus half its own layer's, in [0, 1];
  // groups of one layer share it. Read by policies with PolicyConfig::layer_split.
  torch::Tensor layer_position;
  // [N] int64: the action the human-expert heuristic's placement takes for each group (AddExpertHint); read by
  // policies with PolicyConfig::expert_hint, undefined until AddExpertHint.
  torch::Tensor expert_action;
  // [N, A] float: per group and action, the compute share the expert's placement puts on the action's devices from
  // the other groups, averaged over those devices, times the device count (1: an even spread; AddExpertHint).
  torch::Tensor expert_load;
  // [A, A] float: env/draft_cost.h ActionReshardSecondsPerByte (producer action, consumer action), and its
  // transpose; [E] float: each group edge's bytes (GroupEdgeBytes) times N / the graph's total reference compute
  // seconds, so that bytes x seconds per byte is in units of the mean group's compute time. Read by policies with
  // PolicyConfig::draft_cost, undefined until AddDraftCosts.
  torch::Tensor draft_per_byte, draft_per_byte_t, draft_edge_weight;
  // [2] float: the speedups over the reference device of the expert's placement and of the best uniform split
  // (PlacementGame::uniform_step_time), each log(reference time / its penalised step time) / log(devices) clamped to
  // [-1, 1] (0 on one device or without uniform splits). Read by policies with PolicyConfig::strategy_context,
  // undefined until AddStrategyContext.
  torch::Tensor strategy_context;
  int64_t num_devices = 0;
  int64_t num_actions = 0;  // num_devices plus the game's split candidates
};
GameTensors MakeGameTensors(const PlacementGame& game);
// Sets tensors->expert_action to the device the "expert" search (agents/expert_placer.h, on the game's graph,
// machine and cost model; one simulation per device count) gives each group's first member, and
// tensors->expert_load from it. Like the simulations behind the game's uniform candidate columns, the search is
// part of building the policy's input, not an evaluation of a placement the policy proposes. Errors when the search
// fails.
Status AddExpertHint(const PlacementGame& game, GameTensors* tensors);
// Sets tensors->draft_per_byte, draft_per_byte_t and draft_edge_weight (above).
void AddDraftCosts(const PlacementGame& game, GameTensors* tensors);
// Sets tensors->strategy_context (above); one simulation of the expert's placement. Precondition: AddExpertHint ran.
Status AddStrategyContext(const PlacementGame& game, GameTensors* tensors);
// The inputs `config` reads beyond MakeGameTensors: AddExpertHint with expert_hint, AddDraftCosts with draft_cost,
// AddStrategyContext with strategy_context. Errors as those.
Status AddPolicyInputs(const PolicyConfig& config, const PlacementGame& game, GameTensors* tensors);

// Per-group logits [N, A] over the game's actions (devices, then the data-parallel action if any) and the value
// of the initial state (scalar).
struct OneShotOutput {
  torch::Tensor logits;
  torch::Tensor value;
  // PolicyConfig::coherence: [N, 2] each group's weight of its neighbours' first-pass votes for device actions
  // (column 0) and split actions (column 1); undefined otherwise.
  torch::Tensor coherence;
  // PolicyConfig::draft_cost: [N, 1] each group's weight of its actions' draft resharding cost; undefined otherwise.
  torch::Tensor draft;
};

class XlLayerImpl : public torch::nn::Module {
 public:
  XlLayerImpl(int64_t hidden, int64_t heads, int64_t feedforward);
  // x [L, 1, H]; memory [M, 1, H] or undefined. Pre-norm attention over (memory, x), then a feed-forward block.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& memory);

 private:
  torch::nn::LayerNorm norm1_{nullptr}, norm2_{nullptr};
  torch::nn::MultiheadAttention attention_{nullptr};
  torch::nn::Linear ff1_{nullptr}, ff2_{nullptr};
};
TORCH_MODULE(XlLayer);

class TransformerPlacerImpl : public torch::nn::Module {
 public:
  explicit TransformerPlacerImpl(const PolicyConfig& config);
  // Preconditions: game.num_devices <= config.max_devices; the game has the data-parallel action exactly when
  // config.data_parallel_action is set, SOAP candidates exactly when config.soap is; game.expert_action is set
  // when config.expert_hint is.
  OneShotOutput forward(const GameTensors& game);
  // The second decoding pass (PolicyConfig::coherence): `logits` [B, N, A] (first-pass logits, any scale),
  // `first` [B, N] int64 (a legal first-pass action per group) and `out` this policy's output for `game`.
  // Returns logits + out.coherence's weight of the action's kind x the share of the group's neighbours (GameTensors'
  // group edges, both directions, counted with multiplicity) whose first action is that action; with
  // PolicyConfig::draft_cost also + out.draft x log1p(the action's draft cost): over the group's edges, the edge's
  // weight (draft_edge_weight) x the seconds per byte from the producer's first action to the consumer's, the
  // group taking the action on its side. Without PolicyConfig::coherence returns `logits`.
  torch::Tensor Cohere(const torch::Tensor& logits, const torch::Tensor& first, const OneShotOutput& out,
                       const GameTensors& game) const;

 private:
  PolicyConfig config_;
  GraphSage sage_{nullptr};
  torch::nn::Linear film_{nullptr};
  std::vector<XlLayer> layers_;
  torch::nn::LayerNorm out_norm_{nullptr};
  torch::nn::Linear device_head_{nullptr}, split_head_{nullptr}, query_{nullptr}, device_key_{nullptr};
  torch::nn::Linear parallel_head_{nullptr};  // the data-parallel action's logit (config.data_parallel_action)
  // config.layer_split: per-device lines in the layer position, scaled by a per-graph gate from the FiLM context.
  torch::nn::Linear layer_head_{nullptr}, layer_gate_{nullptr};
  // SOAP candidates (config.soap): logit(g, c) = w . relu(A h_g + B x_gc) + u . x_gc, x_gc the candidate features.
  torch::nn::Linear candidate_query_{nullptr}, candidate_key_{nullptr}, candidate_head_{nullptr},
      candidate_linear_{nullptr};
  // config.coherence: per group, the weights of its neighbours' first-pass votes (zero at initialisation).
  torch::nn::Linear coherence_head_{nullptr};
  // config.expert_hint: per group, the weight added to the logit of the expert's action and the weight of the
  // expert's load on each action's devices (zero at initialisation).
  torch::nn::Linear hint_head_{nullptr};
  // config.draft_cost: per group, the weight of each action's draft resharding cost (zero at initialisation).
  torch::nn::Linear draft_head_{nullptr};
  torch::nn::Linear value1_{nullptr}, value2_{nullptr};
};
TORCH_MODULE(TransformerPlacer);

// A batch of T iterative-MDP observations of one game.
struct IterativeBatch {
  torch::Tensor node_x;      // [T, N, kNodeFeatureDim] (dynamic columns included)
  torch::Tensor placement;   // [T, N] int64, action per group (num_devices = data-parallel, -1 unplaced)
  torch::Tensor device_x;    // [T, D, kDeviceFeatureDim]
  torch::Tensor current;     // [T] int64, the group each observation moves
};
// Stacks observations (all of the same game).
IterativeBatch StackObservations(const std::vector<const Observation*>& observations);

// Logits [T, A] over the actions for the current groups and values [T].
struct IterativeOutput {
  torch::Tensor logits;
  torch::Tensor values;
};

class PlacetoPolicyImpl : public torch::nn::Module {
 public:
  explicit PlacetoPolicyImpl(const PolicyConfig& config);
  IterativeOutput forward(const IterativeBatch& batch, const torch::Tensor& edge_src, const torch::Tensor& edge_dst);

 private:
  // One-hot columns of a group's placement: max_devices, unplaced, and data-parallel when the policy has it.
  int64_t PlacementSlots() const { return config_.max_devices + (config_.data_parallel_action ? 2 : 1); }

  PolicyConfig config_;
  GraphSage sage_{nullptr};
  torch::nn::Linear hidden_{nullptr}, device_head_{nullptr}, query_{nullptr}, device_key_{nullptr};
  torch::nn::Linear parallel_head_{nullptr};  // the data-parallel action's logit (config.data_parallel_action)
  torch::nn::Linear value1_{nullptr}, value2_{nullptr};
};
TORCH_MODULE(PlacetoPolicy);

// One of the two policies, chosen by config.kind, with deterministic initialisation from `seed`.
class PolicyNet {
 public:
  PolicyNet(const PolicyConfig& config, uint64_t seed);
  const PolicyConfig& config() const { return config_; }
  bool is_transformer() const { return config_.kind == "transformer"; }
  torch::nn::Module& module();
  TransformerPlacer& transformer() { return transformer_; }
  PlacetoPolicy& placeto() { return placeto_; }
  // A deep copy (parameters copied, no shared storage).
  std::unique_ptr<PolicyNet> Clone();

 private:
  PolicyConfig config_;
  TransformerPlacer transformer_{nullptr};
  PlacetoPolicy placeto_{nullptr};
};

// Log-probabilities [..., D] of `logits` restricted to `mask` (bool, same shape; true = legal). Illegal entries
// get a log-probability of about -1e9 (probability exactly 0 after exp), so entropies stay finite.
torch::Tensor MaskedLogProbs(const torch::Tensor& logits, const torch::Tensor& mask);
// Entropy of each masked distribution: -sum p log p over the last dimension.
torch::Tensor MaskedEntropy(const torch::Tensor& log_probs);

// Picks an action (a device, or the data-parallel action) for one group from its logits over `num_actions`
// actions and its legal mask (1 = legal, at least one legal): sampled from the masked softmax with a uniform u in
// [0, 1), or the most likely legal action (lowest id on ties) when `greedy`. Never returns an illegal action.
int32_t ChooseDevice(const float* logits, const uint8_t* mask, int32_t num_actions, bool greedy, double u);

}  // namespace devplace
