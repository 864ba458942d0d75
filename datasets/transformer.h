// Transformer language and translation models (Vaswani et al. 2017; BERT/GPT-style single stacks).
#pragma once

#include <cstdint>

#include "datasets/layers.h"

namespace devplace {

struct TransformerConfig {
  enum class Kind : uint8_t {
    kEncoder,         // bidirectional encoder with a token-prediction head (BERT-like)
    kDecoder,         // causal decoder language model (GPT-like)
    kEncoderDecoder,  // translation model: encoder stack, decoder stack with cross-attention
  };
  Kind kind = Kind::kEncoderDecoder;
  int32_t encoder_layers = 6;  // unused for kDecoder
  int32_t decoder_layers = 6;  // unused for kEncoder
  int64_t model_dim = 512;
  int64_t heads = 8;
  int64_t ffn_dim = 2048;
  int64_t sequence = 128;
  int64_t batch = 32;
  int64_t vocab = 32000;
  bool pre_norm = false;  // layer norm before each sub-layer (GPT-2) instead of after the residual add
  bool gelu = false;      // GELU in the feed-forward network instead of ReLU
  bool fused_qkv = true;  // one projection for q, k and v (k and v for cross-attention)
};

// Adds the whole model (inputs, embeddings, stacks, head and loss) to `b`.
void BuildTransformer(LayerBuilder& b, const TransformerConfig& config);

}  // namespace devplace
