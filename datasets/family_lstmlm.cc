// lstmlm: stacked-LSTM word language models in the style of Zaremba et al. 2014 (the "small", "medium" and
// "large" PTB LSTMs and their WikiText-2 variants): an embedding, L LSTM layers unrolled over T steps with
// weights shared across steps, and a full softmax over the vocabulary. Small recurrent cells whose best
// placement is usually a layer per device (the layers' wavefront runs in parallel), not a split of each matmul.
// Scaled by the unroll length.
#include <string>

#include "datasets/family_generators.h"

namespace devplace {

namespace {

struct LstmLmConfig {
  int64_t batch = 20;
  int64_t hidden = 650;
  int64_t vocab = 10000;
  int32_t layers = 2;
};

void BuildLstmLm(LayerBuilder& b, const LstmLmConfig& c, int64_t steps) {
  b.SetScope("input");
  const OpId ids = b.Input("token_ids", {c.batch, steps}, DType::kI32);
  const OpId labels = b.Input("labels", {c.batch, steps}, DType::kI32);
  std::vector<LstmState> states(c.layers);
  std::vector<OpId> outputs;
  for (int64_t t = 0; t < steps; ++t) {
    const std::string step = "_t" + std::to_string(t);
    b.SetScope("embedding");
    OpId x = b.Embedding(ids, c.vocab, c.hidden, "lookup" + step, "embedding", t);
    for (int32_t l = 0; l < c.layers; ++l) {
      const std::string scope = "layer" + std::to_string(l);
      b.SetScope(scope);
      states[l] = b.LstmStep({x}, states[l], c.hidden, scope, "lstm" + step);
      x = states[l].h;
    }
    outputs.push_back(x);
  }
  b.SetScope("softmax");
  const OpId logits = b.Linear({b.Stack(outputs, "outputs")}, c.vocab, true, "logits");
  b.SoftmaxCrossEntropy(logits, labels, "loss");
}

}  // namespace

FamilyGenerator MakeLstmLmGenerator(Rng& rng) {
  LstmLmConfig c;
  c.batch = rng.Pick(std::vector<int64_t>{16, 20, 32, 64});
  c.hidden = rng.Pick(std::vector<int64_t>{200, 400, 650, 1000, 1500});
  c.vocab = rng.Pick(std::vector<int64_t>{10000, 33278});
  c.layers = static_cast<int32_t>(rng.Int(2, 4));
  FamilyGenerator gen;
  gen.natural_scale = rng.Int(10, 35);
  gen.min_scale = 1;
  gen.build = [c](LayerBuilder& b, int64_t steps) { BuildLstmLm(b, c, steps); };
  return gen;
}

}  // namespace devplace
