#include "datasets/transformer.h"

#include <string>

#include "core/check.h"

namespace devplace {

namespace {

class Stack {
 public:
  Stack(LayerBuilder& b, const TransformerConfig& c) : b_(b), c_(c) {}

  // Multi-head attention of `x` over `memory` (-1: self-attention), with its output projection.
  OpId Attention(OpId x, OpId memory, const std::string& name) {
    const int64_t d = c_.model_dim;
    OpId q, k, v;
    if (memory < 0 && c_.fused_qkv) {
      q = k = v = b_.Linear({x}, 3 * d, true, name + "_qkv");
    } else {
      const OpId kv_src = memory < 0 ? x : memory;
      q = b_.Linear({x}, d, true, name + "_q");
      if (c_.fused_qkv) {
        k = v = b_.Linear({kv_src}, 2 * d, true, name + "_kv");
      } else {
        k = b_.Linear({kv_src}, d, true, name + "_k");
        v = b_.Linear({kv_src}, d, true, name + "_v");
      }
    }
    const OpId scores = b_.MultiHeadScores(q, k, c_.heads, d, name + "_scores");
    const OpId probs = b_.Softmax(scores, name + "_probs");
    const OpId context = b_.MultiHeadContext(probs, v, d, name + "_context");
    return b_.Linear({context}, d, true, name + "_out");
  }

  OpId FeedForward(OpId x) {
    OpId h = b_.Linear({x}, c_.ffn_dim, true, "ffn1");
    h = c_.gelu ? b_.Gelu(h, "ffn_act") : b_.Relu(h, "ffn_act");
    return b_.Linear({h}, c_.model_dim, true, "ffn2");
  }

  // One residual sub-layer around `body`, normalised before (pre-norm) or after (post-norm).
  template <class Body>
  OpId Residual(OpId x, const std::string& name, Body body) {
    if (c_.pre_norm) return b_.Add(x, body(b_.LayerNorm(x, name + "_norm")), name + "_residual");
    return b_.LayerNorm(b_.Add(x, body(x), name + "_residual"), name + "_norm");
  }

  OpId Layer(OpId x, OpId memory, const std::string& scope) {
    b_.SetScope(scope);
    x = Residual(x, "self_attention", [&](OpId y) { return Attention(y, -1, "self_attention"); });
    if (memory >= 0)
      x = Residual(x, "cross_attention", [&](OpId y) { return Attention(y, memory, "cross_attention"); });
    return Residual(x, "ffn", [&](OpId y) { return FeedForward(y); });
  }

  // Token plus learned position embeddings of ids [N, S].
  OpId Embed(OpId ids, OpId positions, const std::string& scope) {
    b_.SetScope(scope);
    const OpId tokens = b_.Embedding(ids, c_.vocab, c_.model_dim, "tokens");
    const OpId pos = b_.Embedding(positions, c_.sequence, c_.model_dim, "positions");
    return b_.Add(tokens, pos, "sum");
  }

  OpId Run(OpId x, int32_t layers, OpId memory, const std::string& name) {
    for (int32_t l = 0; l < layers; ++l) x = Layer(x, memory, name + "/layer" + std::to_string(l));
    if (c_.pre_norm) {
      b_.SetScope(name + "/final");
      x = b_.LayerNorm(x, "norm");
    }
    return x;
  }

 private:
  LayerBuilder& b_;
  const TransformerConfig& c_;
};

}  // namespace

void BuildTransformer(LayerBuilder& b, const TransformerConfig& c) {
  DEVPLACE_CHECK(c.model_dim % c.heads == 0, "model width must divide into heads");
  b.SetScope("input");
  const std::vector<int64_t> seq = {c.batch, c.sequence};
  const OpId positions = b.Input("positions", seq, DType::kI32);
  const OpId labels = b.Input("labels", seq, DType::kI32);
  Stack stack(b, c);
  OpId top;
  if (c.kind == TransformerConfig::Kind::kEncoderDecoder) {
    b.SetScope("input");
    const OpId source = b.Input("source_ids", seq, DType::kI32);
    const OpId target = b.Input("target_ids", seq, DType::kI32);
    const OpId memory = stack.Run(stack.Embed(source, positions, "encoder/embedding"), c.encoder_layers, -1, "encoder");
    top = stack.Run(stack.Embed(target, positions, "decoder/embedding"), c.decoder_layers, memory, "decoder");
  } else {
    b.SetScope("input");
    const OpId ids = b.Input("token_ids", seq, DType::kI32);
    const bool encoder = c.kind == TransformerConfig::Kind::kEncoder;
    const std::string name = encoder ? "encoder" : "decoder";
    top = stack.Run(stack.Embed(ids, positions, name + "/embedding"), encoder ? c.encoder_layers : c.decoder_layers,
                    -1, name);
  }
  b.SetScope("head");
  const OpId logits = b.Linear({top}, c.vocab, true, "logits");
  b.SoftmaxCrossEntropy(logits, labels, "loss");
}

}  // namespace devplace
