// LayerBuilder: builds forward graphs of deep-learning models layer by layer on top of core's GraphBuilder,
// giving every op a unique scoped name, its layer, an output shape with the batch on axis 0, dtype, parameter
// bytes, FLOPs (2 per multiply-add, plus the element-wise costs below) and its partitionable dimensions.
// Tensors are the ops that produce them: every function returns the OpId of the op it adds.
// Activation layout: images NCHW, sequences [batch, time, features], audio [batch, channels, time].
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "core/training_graph.h"

namespace devplace {

// FLOPs per output element of element-wise work (an exp/tanh/sigmoid counts as a few FLOPs).
inline constexpr double kReluFlops = 1;
inline constexpr double kAddFlops = 1;
inline constexpr double kMulFlops = 1;
inline constexpr double kSigmoidFlops = 4;
inline constexpr double kTanhFlops = 4;
inline constexpr double kGeluFlops = 8;
inline constexpr double kSoftmaxFlops = 5;       // max, subtract, exp, sum, divide
inline constexpr double kLayerNormFlops = 8;     // mean, variance, normalise, scale and shift
inline constexpr double kBatchNormFlops = 6;     // batch statistics (training mode), normalise, scale and shift
inline constexpr double kCrossEntropyFlops = 6;  // log-softmax plus the gathered log-likelihood, per logit

// A 2-D convolution. Padding is explicit zero padding on each side (symmetric).
struct ConvSpec {
  int64_t out_channels = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dilation = 1;
  int64_t groups = 1;  // groups == in_channels == out_channels is a depthwise convolution
  bool bias = false;

  // A k x k convolution with stride s and "same" padding (dilation * (k - 1) / 2 on each side), which gives
  // ceil(size / s) outputs for odd k, as TensorFlow's SAME padding does.
  static ConvSpec Same(int64_t out_channels, int64_t k, int64_t stride = 1, bool bias = false);
  // A kh x kw convolution with explicit padding.
  static ConvSpec Rect(int64_t out_channels, int64_t kh, int64_t kw, int64_t stride, int64_t pad_h, int64_t pad_w,
                       bool bias = false);
};

enum class PoolKind : uint8_t { kMax, kAvg };

// The state an LSTM layer carries from one time step to the next (-1: the zero initial state).
struct LstmState {
  OpId h = -1;
  OpId c = -1;
};

class LayerBuilder {
 public:
  explicit LayerBuilder(std::string graph_name);

  // The layer/scope of the ops added next: their names become "<scope>/<name>" and Op::layer is <scope>.
  void SetScope(std::string scope) { scope_ = std::move(scope); }
  const std::string& scope() const { return scope_; }

  // Output shape of `x`, and one extent (negative axes count from the end).
  const std::vector<int64_t>& shape(OpId x) const { return builder_.op(x).shape; }
  int64_t dim(OpId x, int axis) const;

  // A graph input (data, labels, token ids, a recurrent memory fed from the previous step).
  OpId Input(std::string_view name, std::vector<int64_t> shape, DType dtype = DType::kF32);

  // Convolution and pooling over NCHW images.
  OpId Conv2d(OpId x, const ConvSpec& spec, std::string_view name = "conv");
  OpId Pool2d(OpId x, PoolKind kind, int64_t kernel, int64_t stride, int64_t pad, std::string_view name = "pool");
  // Mean over H and W: [N, C, H, W] -> [N, C].
  OpId GlobalAvgPool(OpId x, std::string_view name = "global_pool");
  // Causal dilated 1-D convolution over [N, C, T] that keeps the length T (WaveNet).
  OpId CausalConv1d(OpId x, int64_t out_channels, int64_t kernel, int64_t dilation, bool bias,
                    std::string_view name = "conv1d");
  // Batch normalisation over axis 1 (channels) with a learned scale and shift.
  OpId BatchNorm(OpId x, std::string_view name = "bn");
  // Layer normalisation over the last axis with a learned scale and shift.
  OpId LayerNorm(OpId x, std::string_view name = "layer_norm");

  // Element-wise ops (inputs of equal shape).
  OpId Relu(OpId x, std::string_view name = "relu");
  OpId Tanh(OpId x, std::string_view name = "tanh");
  OpId Sigmoid(OpId x, std::string_view name = "sigmoid");
  OpId Gelu(OpId x, std::string_view name = "gelu");
  OpId Add(OpId a, OpId b, std::string_view name = "add");
  OpId Mul(OpId a, OpId b, std::string_view name = "mul");
  // Sum (or mean, `average`) of one or more tensors of equal shape.
  OpId AddN(const std::vector<OpId>& xs, bool average, std::string_view name = "add_n");
  // A fused element-wise kernel of type `type` over inputs whose elements line up with the output's
  // (e.g. an RNN cell's gate arithmetic): `flops_per_element` per output element.
  OpId Pointwise(std::string type, const std::vector<OpId>& xs, std::vector<int64_t> out_shape,
                 double flops_per_element, std::string_view name);
  // Softmax over the last axis.
  OpId Softmax(OpId x, std::string_view name = "softmax");

  // Concatenation along `axis` (all other extents equal).
  OpId Concat(const std::vector<OpId>& xs, int axis, std::string_view name = "concat");
  // Stacks tensors of equal shape [N, ...] along a new axis 1: [N, len(xs), ...] (e.g. the outputs of all time steps).
  OpId Stack(const std::vector<OpId>& xs, std::string_view name = "stack");
  // [N, ...] -> [N, prod(...)] (a view: no FLOPs).
  OpId Flatten(OpId x, std::string_view name = "flatten");

  // Dense layer over the last axis of the concatenation of `xs` (equal leading extents): [..., K] -> [..., n].
  // Ops with the same non-empty `shared_weights` key share one weight matrix: the first owns the parameters,
  // all of them get the key as colocation group (so the weights live on one device).
  OpId Linear(const std::vector<OpId>& xs, int64_t out_features, bool bias, std::string_view name = "linear",
              std::string_view shared_weights = {});
  // Embedding lookup of integer ids [N] or [N, T] -> [N, (T,) dim]. With time_step >= 0 the ids are [N, T] and
  // the op looks up only that step ([N, dim]), reading one column of ids.
  OpId Embedding(OpId ids, int64_t vocab, int64_t dim, std::string_view name = "embedding",
                 std::string_view shared_weights = {}, int64_t time_step = -1);

  // One time step of an LSTM layer (as TensorFlow unrolls it): gates = [xs, h] W + b, then the new cell state
  // c = f * c + i * g and the new output h = o * tanh(c). Three ops; weights shared through `shared_weights`.
  // The recurrent input is prev.h (`recurrent_width` wide at the first step, whose zero state costs the same;
  // 0 means `hidden`); an LSTM with a projection (LSTMP) passes its projected output as prev.h.
  LstmState LstmStep(const std::vector<OpId>& xs, LstmState prev, int64_t hidden, std::string_view shared_weights,
                     std::string_view name = "lstm", int64_t recurrent_width = 0);

  // Attention of one query per example over a memory of S positions (RNN decoders):
  // dot-product scores [N, H] x [N, S, H] -> [N, S]; additive scores v . tanh(q + k) with q [N, A], k [N, S, A];
  // the context: weights [N, S] x values [N, S, H] -> [N, H].
  OpId DotScores(OpId query, OpId keys, std::string_view name = "attention_scores");
  OpId AdditiveScores(OpId query, OpId keys, std::string_view name = "attention_scores",
                      std::string_view shared_weights = {});
  OpId AttentionContext(OpId weights, OpId values, std::string_view name = "attention_context");

  // Multi-head attention with `heads` heads over model width `width` (q, k, v may be slices of one fused
  // projection; `width` is then the per-tensor width, not the fused one):
  // scores q [N, S, *] x k [N or 1, M, *] -> [N, heads, S, M] (k with batch 1 is broadcast, e.g. position keys); context p [N, heads, S, M] x v [N, M, *] -> [N, S, width].
  OpId MultiHeadScores(OpId q, OpId k, int64_t heads, int64_t width, std::string_view name = "attention_scores");
  OpId MultiHeadContext(OpId probs, OpId v, int64_t width, std::string_view name = "attention_context");

  // Head-major attention (Megatron-LM's layout, for tensor parallelism over heads): q [N, S, W] and k [N, M, W] with
  // W = heads * head_dim, head h in columns [h * head_dim, (h + 1) * head_dim), give scores [N, S, heads, M] whose
  // heads dimension slices axis 2 of q and k (W cut into g blocks is g groups of heads); the context of probs
  // [N, S, heads, M] and v [N, M, W] is [N, S, W], its width dimension slicing axis 2 of both (heads of probs,
  // columns of v). Both have a sample dimension; FLOPs 2 N S M W each.
  OpId HeadMajorScores(OpId q, OpId k, int64_t heads, std::string_view name = "attention_scores");
  OpId HeadMajorContext(OpId probs, OpId v, std::string_view name = "attention_context");

  // GShard mixture-of-experts pieces (Lepikhin et al. 2020), each example a group of S tokens, E experts of capacity
  // C tokens per group, as dense einsums:
  // - top-2 gating of gate probabilities [N, S, E] into dispatch/combine weights [N, S, E, C] ("moe_gating");
  // - dispatch "GSEC,GSM->GECM": weights and tokens [N, S, M] -> expert inputs [N, E, C, M] ("moe_dispatch");
  // - an expert layer "GECM,EMH->GECH" with E weight matrices [M, H] (+ bias): [N, E, C, M] -> [N, E, C, H]
  //   ("moe_expert_matmul"; its expert dimension is a parameter dimension slicing input axis 1);
  // - combine "GSEC,GECM->GSM": weights and expert outputs [N, E, C, M] -> [N, S, M] ("moe_combine").
  OpId MoeTop2Gating(OpId gate_probs, int64_t capacity, std::string_view name = "gating");
  OpId MoeDispatch(OpId weights, OpId x, std::string_view name = "dispatch");
  OpId ExpertLinear(OpId x, int64_t out_features, bool bias, std::string_view name = "expert_linear");
  OpId MoeCombine(OpId weights, OpId y, std::string_view name = "combine");

  // Softmax cross-entropy of logits [N, ..., V] against integer labels -> per-example loss [N].
  OpId SoftmaxCrossEntropy(OpId logits, OpId labels, std::string_view name = "loss");
  // Sampled softmax loss (Jean et al. 2015): features [N, T, D] scored against the true class and `samples`
  // sampled classes of a `vocab` x D output embedding (the op owns it) -> per-example loss [N].
  OpId SampledSoftmaxLoss(OpId features, OpId labels, int64_t vocab, int64_t samples,
                          std::string_view name = "sampled_softmax_loss");

  int32_t num_ops() const { return builder_.num_ops(); }
  // Exactly the number of ops DeriveTrainingGraph will produce from the ops added so far.
  int64_t training_op_count() const;

  // The forward graph. Errors only if the model code produced an invalid graph.
  Expected<Graph> BuildForward() &&;
  // The training graph: DeriveTrainingGraph of the forward graph, where the backward op of every op that uses
  // shared weights it does not own also gets the with-parameters FLOP ratio (it computes a weight gradient too).
  Expected<Graph> BuildTraining(const TrainingOptions& options = {}) &&;

 private:
  struct InputRef {
    OpId op;
    int64_t bytes;  // < 0: the producer's full output
  };
  // Adds one op with the current scope and edges from `inputs` (duplicates merged).
  OpId Emit(std::string_view name, std::string type, std::vector<int64_t> shape, double flops, int64_t param_bytes,
            std::vector<PartitionDim> dims, const std::vector<InputRef>& inputs, std::string_view shared_weights = {},
            DType dtype = DType::kF32);
  OpId Unary(OpId x, std::string type, double flops_per_element, std::string_view name);
  OpId Binary(OpId a, OpId b, std::string type, double flops_per_element, std::string_view name);
  std::string UniqueName(std::string_view name);

  GraphBuilder builder_;
  std::string scope_;
  std::unordered_set<std::string> names_;
  std::unordered_map<std::string, int32_t> name_counters_;
  std::unordered_map<std::string, int64_t> shared_param_bytes_;  // shared-weights key -> parameter bytes
  std::vector<char> has_inputs_;
  std::vector<char> shares_foreign_weights_;  // uses shared weights owned by another op
  int64_t ops_with_params_ = 0;
};

// Number of elements of a shape.
int64_t ShapeElements(const std::vector<int64_t>& shape);

}  // namespace devplace
