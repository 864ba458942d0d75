// GPT-style decoder-only language models (GPT-2/GPT-3 architecture, Megatron-LM layout): pre-norm layers of
// multi-head self-attention (separate q, k, v projections, head-major so that tensor parallelism splits heads) and a
// 4h GELU feed-forward network, learned position embeddings, a final layer norm and an output layer tied to the
// token embedding.
#pragma once

#include <cstdint>

#include "datasets/layers.h"

namespace devplace {

struct GptConfig {
  int32_t layers = 24;
  int64_t hidden = 2048;
  int64_t heads = 32;
  int64_t sequence = 1024;
  int64_t vocab = 51200;  // GPT-2's 50257 padded to a multiple of 1024, as Megatron-LM and Alpa do
  int64_t batch = 8;
  // Mixture of experts (GShard): with experts > 0 every other layer (1, 3, ...) has an MoE feed-forward network of
  // `experts` experts (4h each) with top-2 gating; each example is a group whose experts take
  // ceil(capacity_factor * 2 * sequence / experts) tokens each.
  int64_t experts = 0;
  double capacity_factor = 1.0;
};

// Expert capacity per group of `config` (0 for a dense model).
int64_t ExpertCapacity(const GptConfig& config);

// The GPT-3 1.3B and 2.6B configurations of Alpa's GPT benchmark (sequence 1024, vocabulary 51200): 24 layers of
// 2048 with 32 heads, and 32 layers of 2560 with 32 heads.
GptConfig Gpt1p3b(int64_t batch);
GptConfig Gpt2p6b(int64_t batch);
// A GShard-style MoE GPT on the shape of Alpa's smallest MoE benchmark (sequence 1024, 8 layers of 768, 16 heads,
// vocabulary 32000, 8 experts), every other feed-forward network an MoE layer, capacity factor 1.
GptConfig GptMoe8(int64_t batch);

// Adds the whole model to `b`: scopes "input", "embedding", "decoder/layer<l>" (ops attention_norm, attention_q,
// attention_k, attention_v, attention_scores, attention_probs, attention_context, attention_out, attention_residual,
// ffn_norm, ffn1, ffn_act, ffn2, ffn_residual; MoE layers have gate, gate_probs, gating, dispatch, expert_ffn1,
// expert_act, expert_ffn2, combine instead of ffn1 .. ffn2), "decoder/final" (norm) and "head" (logits, loss).
// Parameters: 12 h^2 + 13 h per dense layer, 4 h^2 + 8 h + h E + E (8 h^2 + 5 h) per MoE layer, plus
// (vocab + sequence) * h + 2 h.
void BuildGpt(LayerBuilder& b, const GptConfig& config);

}  // namespace devplace
