// Internal to exec/: the computation reconstructed for a forward op from its type, output shape, FLOPs,
// parameter count and the shapes of the tensors arriving on its in-edges. One OpImpl serves both the op and its
// backward op (which runs the real backward computation: transposed matmuls, convolution_backward, ...).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/graph.h"

namespace devplace::exec {

// What an OpImpl is built from.
struct OpDesc {
  const Op* op = nullptr;                          // the forward op
  std::vector<std::vector<int64_t>> input_shapes;  // per forward input slot (the op's in-edges, in order)
  std::vector<at::ScalarType> input_types;
  int64_t param_elements = 0;  // the op's weights (its own, or those of the op owning its shared weights)
  at::TensorOptions options;   // device and floating type of the op's tensors
};

// The gradients a backward op produces.
struct Grads {
  std::vector<at::Tensor> inputs;  // per forward input slot; undefined where not requested
  at::Tensor weights;              // flat [param_elements]; undefined when the op has no weights
};

// The reconstructed computation of one forward op. Run only by one thread at a time.
class OpImpl {
 public:
  virtual ~OpImpl() = default;
  // The op's output from its inputs (per slot) and its flat weights (undefined when it has none).
  virtual at::Tensor Forward(const std::vector<at::Tensor>& in, const at::Tensor& weights) const = 0;
  // Gradients w.r.t. the inputs whose `need[slot]` is set and w.r.t. the weights, from the saved inputs, the
  // saved output and the gradient of the output.
  virtual Grads Backward(const std::vector<at::Tensor>& in, const at::Tensor& out, const at::Tensor& grad_out,
                         const at::Tensor& weights, const std::vector<char>& need) const = 0;
  // Exclusive upper bound of the integer input in `slot` (token ids, labels), or 0 when it has none.
  virtual int64_t IndexBound(int slot) const {
    (void)slot;
    return 0;
  }
  // Fills a fresh flat weight buffer: by default uniform in [-s, s) with s = sqrt(3 / fan_in) (unit variance
  // outputs for unit variance inputs); normalisation ops start with scale 1 and shift 0.
  virtual void InitWeights(at::Tensor& flat, uint64_t seed) const;
  // Inputs feeding each output element (the LeCun fan-in used by InitWeights).
  virtual double FanIn() const { return 1.0; }
  // For a part computing the slice [lo, hi) of output axis `axis` (a parameter dimension: dense layers' output
  // features, convolutions' output channels, embeddings' width): the indices into this op's flat weights of the
  // shard the part holds, in the order the part's own OpImpl (built for the part's shapes) lays out its flat
  // weights. An undefined tensor when the op's weights do not shard along that axis.
  virtual at::Tensor WeightShard(int32_t axis, int64_t lo, int64_t hi) const {
    (void)axis, (void)lo, (void)hi;
    return {};
  }
};

// Builders by family; each returns nullptr when the type is not its own or the op cannot be reconstructed
// exactly (shapes, FLOPs and parameter count must all agree).
std::unique_ptr<OpImpl> MakeDenseImpl(const OpDesc& desc);        // conv, pooling, norms, matmul, embedding, LSTM gates
std::unique_ptr<OpImpl> MakeElementwiseImpl(const OpDesc& desc);  // activations, arithmetic, softmax, shape ops, cells
std::unique_ptr<OpImpl> MakeAttentionImpl(const OpDesc& desc);    // attention scores and context, losses

// The op's computation, or nullptr when it cannot be reconstructed.
std::unique_ptr<OpImpl> MakeOpImpl(const OpDesc& desc);

// A stand-in with the op's FLOPs and output size: a matmul of about `forward_flops` producing the output, and a
// backward of about `backward_flops` producing zero-valued gradients of the right sizes.
std::unique_ptr<OpImpl> MakeStandIn(const OpDesc& desc, double forward_flops, double backward_flops);

}  // namespace devplace::exec
