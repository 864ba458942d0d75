// A U-Transformer: a Transformer whose layers form a U, like U-Net's encoder and decoder. The first half of the
// layers (the encoder) keep their outputs; decoder layer j (j >= 1) merges the output of its mirror, encoder layer
// L-1-j, into its input (a projection of the concatenation, as U-Net's skip connections concatenate). Cut into
// pipeline stages, each encoder stage sends activations to its mirrored decoder stage on the other side of the
// pipeline: the workload where cross-stage (cross-mesh) communication dominates.
#include "datasets/zoo_models.h"

#include <string>
#include <vector>

namespace devplace {

namespace {

// One pre-norm layer: self-attention (fused q/k/v) and a GELU feed-forward network, each in a residual.
OpId UnetLayer(LayerBuilder& b, OpId x, int64_t width, int64_t heads) {
  const OpId qkv = b.Linear({b.LayerNorm(x, "attention_norm")}, 3 * width, true, "qkv");
  const OpId probs = b.Softmax(b.MultiHeadScores(qkv, qkv, heads, width, "scores"), "probs");
  const OpId context = b.MultiHeadContext(probs, qkv, width, "context");
  x = b.Add(x, b.Linear({context}, width, true, "attention_out"), "attention_residual");
  const OpId inner = b.Gelu(b.Linear({b.LayerNorm(x, "ffn_norm")}, 4 * width, true, "ffn1"), "ffn_act");
  return b.Add(x, b.Linear({inner}, width, true, "ffn2"), "ffn_residual");
}

}  // namespace

void BuildUTransformer(LayerBuilder& b, int32_t half_layers, int64_t batch) {
  constexpr int64_t kWidth = 1024, kHeads = 16, kSequence = 1024, kVocab = 32000;
  b.SetScope("input");
  const OpId ids = b.Input("token_ids", {batch, kSequence}, DType::kI32);
  const OpId positions = b.Input("positions", {batch, kSequence}, DType::kI32);
  const OpId labels = b.Input("labels", {batch, kSequence}, DType::kI32);
  b.SetScope("embedding");
  OpId x = b.Add(b.Embedding(ids, kVocab, kWidth, "tokens"), b.Embedding(positions, kSequence, kWidth, "positions"),
                 "sum");
  std::vector<OpId> encoder;
  for (int32_t l = 0; l < half_layers; ++l) {
    b.SetScope("encoder/layer" + std::to_string(l));
    x = UnetLayer(b, x, kWidth, kHeads);
    encoder.push_back(x);
  }
  for (int32_t j = 0; j < half_layers; ++j) {
    b.SetScope("decoder/layer" + std::to_string(j));
    if (j > 0) x = b.Linear({x, encoder[half_layers - 1 - j]}, kWidth, true, "skip_merge");
    x = UnetLayer(b, x, kWidth, kHeads);
  }
  b.SetScope("head");
  b.SoftmaxCrossEntropy(b.Linear({b.LayerNorm(x, "norm")}, kVocab, true, "logits"), labels, "loss");
}

}  // namespace devplace
