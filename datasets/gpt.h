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
};

// The GPT-3 1.3B and 2.6B configurations of Alpa's GPT benchmark (sequence 1024, vocabulary 51200): 24 layers of
// 2048 with 32 heads, and 32 layers of 2560 with 32 heads.
GptConfig Gpt1p3b(int64_t batch);
GptConfig Gpt2p6b(int64_t batch);

// Adds the whole model to `b`: scopes "input", "embedding", "decoder/layer<l>" (ops attention_norm, attention_q,
// attention_k, attention_v, attention_scores, attention_probs, attention_context, attention_out, attention_residual,
// ffn_norm, ffn1, ffn_act, ffn2, ffn_residual), "decoder/final" (norm) and "head" (logits, loss). Parameters:
// layers * (12 h^2 + 13 h) + (vocab + sequence) * h + 2 h.
void BuildGpt(LayerBuilder& b, const GptConfig& config);

}  // namespace devplace
