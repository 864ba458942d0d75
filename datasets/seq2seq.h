// Unrolled LSTM sequence-to-sequence models with attention (the nmt family and the zoo's GNMT).
// Every LSTM layer is unrolled over time: one gates/cell-state/output op triple per layer per step, weights
// shared across steps (owned by step 0, colocated through the layer's shared-weights key).
#pragma once

#include <cstdint>

#include "datasets/layers.h"

namespace devplace {

enum class AttentionKind : uint8_t {
  kLuong,     // multiplicative: score = h_t . (W memory), output = tanh(W_c [context, h_t]), fed to the next step
  kBahdanau,  // additive: score = v . tanh(W_q query + W_k memory)
};

struct Seq2SeqConfig {
  int64_t batch = 128;
  int64_t source_length = 50;
  int64_t target_length = 50;
  int64_t source_vocab = 32000;
  int64_t target_vocab = 32000;
  int64_t embedding = 1024;
  int64_t hidden = 1024;
  int32_t encoder_layers = 2;
  int32_t decoder_layers = 2;
  bool bidirectional_first = false;  // encoder layer 0 runs both directions (each `hidden` wide, outputs concatenated)
  int32_t residual_from = 1 << 30;   // residual connections around layers with index >= this (where widths match)
  AttentionKind attention = AttentionKind::kLuong;
  // GNMT: the bottom decoder layer computes the attention, whose context feeds every decoder layer of the same
  // step. Otherwise Luong's input feeding: the attention output of step t - 1 joins the input of layer 0.
  bool attention_to_all_layers = false;
};

// Adds the whole model (inputs, encoder, decoder, attention, projection and loss) to `b`.
void BuildSeq2Seq(LayerBuilder& b, const Seq2SeqConfig& config);

}  // namespace devplace
