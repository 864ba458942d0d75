// Families of seeded graph generators for training and zero-shot tests. Each family draws a structure and
// hyper-parameters from the seed, so every seed gives a distinct member (see docs/datasets.md):
//   cifar10      ENAS-style convolutional networks: random normal/reduction cells stacked NASNet-style
//   ptb          ENAS-style recurrent language models: a random RNN cell unrolled over time
//   nmt          LSTM seq2seq translation models with attention (layers, lengths, batch, width vary)
//   transformer  Transformer encoders, decoders and encoder-decoders (depth, width, heads, sequence vary)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph.h"
#include "core/status.h"

namespace devplace {

struct FamilyOptions {
  // 0: the size is drawn from the family's natural range by the seed. > 0: the member is scaled (cells per
  // stack, unroll length, or depth) so that its TRAINING graph has about this many ops (within ~20%).
  int32_t target_ops = 0;
};

// {"cifar10", "ptb", "nmt", "transformer"}.
std::vector<std::string> FamilyNames();

// A training graph (DeriveTrainingGraph applied) named "<family>-seed<seed>" ("...-ops<target>" when scaled),
// deterministic in (family, seed, options). Errors on an unknown family, a negative target, or a target below
// the smallest member the seed's structure allows.
Expected<Graph> GenerateFamilyMember(std::string_view family, uint64_t seed, const FamilyOptions& options = {});

}  // namespace devplace
