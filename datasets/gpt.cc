#include "datasets/gpt.h"

#include <string>

#include "core/check.h"

namespace devplace {

GptConfig Gpt1p3b(int64_t batch) { return GptConfig{24, 2048, 32, 1024, 51200, batch}; }
GptConfig Gpt2p6b(int64_t batch) { return GptConfig{32, 2560, 32, 1024, 51200, batch}; }

void BuildGpt(LayerBuilder& b, const GptConfig& c) {
  DEVPLACE_CHECK(c.layers >= 1 && c.hidden % c.heads == 0, "GPT: at least one layer and hidden divisible by heads");
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
    const OpId f = b.Gelu(b.Linear({b.LayerNorm(x, "ffn_norm")}, 4 * c.hidden, true, "ffn1"), "ffn_act");
    x = b.Add(x, b.Linear({f}, c.hidden, true, "ffn2"), "ffn_residual");
  }
  b.SetScope("decoder/final");
  x = b.LayerNorm(x, "norm");
  b.SetScope("head");
  b.SoftmaxCrossEntropy(b.Linear({x}, c.vocab, false, "logits", kTied), labels, "loss");
}

}  // namespace devplace
