// nmt and transformer: sequence models whose architecture choices and sizes are drawn from the seed.
#include <algorithm>
#include <cmath>

#include "datasets/family_generators.h"
#include "datasets/seq2seq.h"
#include "datasets/transformer.h"

namespace devplace {

// nmt: LSTM encoder-decoder with attention (Luong et al. 2015 / GNMT-style), unrolled over the source and
// target sequences. Scaled by the source length (the target keeps its drawn length ratio).
FamilyGenerator MakeNmtGenerator(Rng& rng) {
  Seq2SeqConfig c;
  c.batch = rng.Pick(std::vector<int64_t>{32, 64, 128});
  c.hidden = rng.Pick(std::vector<int64_t>{256, 512, 1024});
  c.embedding = c.hidden;
  c.source_vocab = rng.Pick(std::vector<int64_t>{8000, 16000, 32000});
  c.target_vocab = rng.Pick(std::vector<int64_t>{8000, 16000, 32000});
  c.encoder_layers = static_cast<int32_t>(rng.Int(1, 4));
  c.decoder_layers = static_cast<int32_t>(rng.Int(1, 4));
  c.bidirectional_first = rng.Bernoulli(0.5);
  c.residual_from = rng.Bernoulli(0.5) ? 2 : (1 << 30);
  c.attention = rng.Bernoulli(0.5) ? AttentionKind::kLuong : AttentionKind::kBahdanau;
  c.attention_to_all_layers = rng.Bernoulli(0.5);
  const double ratio = 0.8 + 0.4 * rng.Real();
  FamilyGenerator gen;
  gen.natural_scale = rng.Int(10, 50);
  gen.min_scale = 2;
  gen.build = [c, ratio](LayerBuilder& b, int64_t source_length) {
    Seq2SeqConfig scaled = c;
    scaled.source_length = source_length;
    scaled.target_length = std::max<int64_t>(1, std::llround(ratio * static_cast<double>(source_length)));
    BuildSeq2Seq(b, scaled);
  };
  return gen;
}

// transformer: encoder, decoder or encoder-decoder stacks; width, heads, sequence, batch, vocabulary, norm
// placement, activation and q/k/v fusion drawn from the seed. Scaled by the depth of each stack.
FamilyGenerator MakeTransformerGenerator(Rng& rng) {
  TransformerConfig c;
  const int64_t kind = rng.Int(0, 2);
  c.kind = kind == 0 ? TransformerConfig::Kind::kEncoder
                     : (kind == 1 ? TransformerConfig::Kind::kDecoder : TransformerConfig::Kind::kEncoderDecoder);
  c.model_dim = rng.Pick(std::vector<int64_t>{256, 384, 512, 768, 1024});
  std::vector<int64_t> heads;
  for (int64_t h : {4, 8, 12, 16})
    if (c.model_dim % h == 0) heads.push_back(h);
  c.heads = rng.Pick(heads);
  c.ffn_dim = 4 * c.model_dim;
  c.sequence = rng.Pick(std::vector<int64_t>{64, 128, 256, 512});
  c.batch = rng.Pick(std::vector<int64_t>{8, 16, 32, 64});
  c.vocab = rng.Pick(std::vector<int64_t>{8000, 16000, 32000, 50000});
  c.pre_norm = rng.Bernoulli(0.5);
  c.gelu = rng.Bernoulli(0.5);
  c.fused_qkv = rng.Bernoulli(0.5);
  FamilyGenerator gen;
  const bool two_stacks = c.kind == TransformerConfig::Kind::kEncoderDecoder;
  gen.natural_scale = two_stacks ? rng.Int(1, 6) : rng.Int(2, 12);
  gen.min_scale = 1;
  gen.build = [c](LayerBuilder& b, int64_t layers) {
    TransformerConfig scaled = c;
    scaled.encoder_layers = static_cast<int32_t>(layers);
    scaled.decoder_layers = static_cast<int32_t>(layers);
    BuildTransformer(b, scaled);
  };
  return gen;
}

}  // namespace devplace
