#include "datasets/gpt.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/check.h"

namespace devplace {

GptConfig Gpt1p3b(int64_t batch) { return GptConfig{24, 2048, 32, 1024, 51200, batch}; }
GptConfig Gpt2p6b(int64_t batch) { return GptConfig{32, 2560, 32, 1024, 51200, batch}; }
GptConfig GptMoe8(int64_t batch) { return GptConfig{8, 768, 16, 1024, 32000, batch, 8, 1.0}; }

int64_t ExpertCapacity(const GptConfig& c) {
  if (c.experts <= 0) return 0;
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(c.capacity_factor * 2.0 * static_cast<double>(c.sequence) /
                                                             static_cast<double>(c.experts))));
}

namespace {

// The feed-forward network of a layer, dense or (GShard) mixture of experts, on the normalised input `h`.
OpId FeedForward(LayerBuilder& b, const GptConfig& c, OpId h, bool moe) {
  if (!moe) return b.Linear({b.Gelu(b.Linear({h}, 4 * c.hidden, true, "ffn1"), "ffn_act")}, c.hidden, true, "ffn2");
  const OpId gates = b.Softmax(b.Linear({h}, c.experts, false, "gate"), "gate_probs");
  const OpId weights = b.MoeTop2Gating(gates, ExpertCapacity(c), "gating");
  const OpId dispatched = b.MoeDispatch(weights, h, "dispatch");
  const OpId f = b.Gelu(b.ExpertLinear(dispatched, 4 * c.hidden, true, "expert_ffn1"), "expert_act");
  return b.MoeCombine(weights, b.ExpertLinear(f, c.hidden, true, "expert_ffn2"), "combine");
}

}  // namespace

void BuildGpt(LayerBuilder& b, const GptConfig& c) {
  DEVPLACE_CHECK(c.layers >= 1 && c.hidden % c.heads == 0 && c.experts >= 0 && c.capacity_factor > 0,
                 "GPT: at least one layer, hidden divisible by heads, experts >= 0, capacity factor > 0");
  constexpr const char* kTied = "token_embedding";  // the output layer reuses the token embedding
  b.SetScope("input");
  const std::vector<int64_t> seq = {c.batch, c.sequence};
  const OpId ids = b.Input("token_ids", seq, DType::kI32);
  const OpId positions = b.Input("positions", seq, DType::kI32);
  const OpId labels = b.Input("labels", seq, DType::kI32);
  b.SetScope("embedding");
  OpId x = b.Add(b.Embedding(ids, c.vocab, c.hidden, "tokens", kTied),
                 b.Embedding(positions, c.sequence, c.hidden, "positions"), "sum");
  for (int32_t l = 0; l < c.layers; ++l) {
    b.SetScope("decoder/layer" + std::to_string(l));
    const OpId h = b.LayerNorm(x, "attention_norm");
    const OpId q = b.Linear({h}, c.hidden, true, "attention_q");
    const OpId k = b.Linear({h}, c.hidden, true, "attention_k");
    const OpId v = b.Linear({h}, c.hidden, true, "attention_v");
    const OpId probs = b.Softmax(b.HeadMajorScores(q, k, c.heads, "attention_scores"), "attention_probs");
    const OpId context = b.HeadMajorContext(probs, v, "attention_context");
    x = b.Add(x, b.Linear({context}, c.hidden, true, "attention_out"), "attention_residual");
    const bool moe = c.experts > 0 && l % 2 == 1;
    x = b.Add(x, FeedForward(b, c, b.LayerNorm(x, "ffn_norm"), moe), "ffn_residual");
  }
  b.SetScope("decoder/final");
  x = b.LayerNorm(x, "norm");
  b.SetScope("head");
  b.SoftmaxCrossEntropy(b.Linear({x}, c.vocab, false, "logits", kTied), labels, "loss");
}

}  // namespace devplace
