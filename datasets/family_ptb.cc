// ptb: ENAS recurrent cells (Pham et al. 2018) for Penn Treebank language modelling. The cell is a random DAG
// of N nodes: node 0 reads the embedded token x_t and h_{t-1}, node l reads one earlier node j; each node is a
// highway unit c = sigmoid(W_c in), s = c * f(W_h in) + (1 - c) * prev with f in {tanh, relu, identity,
// sigmoid}; h_t averages the nodes no other node reads. Unrolled over T steps with weights shared across steps.
#include <string>

#include "datasets/family_generators.h"

namespace devplace {

namespace {

struct PtbConfig {
  int64_t batch = 64;
  int64_t hidden = 650;
  int64_t vocab = 10000;
  std::vector<int32_t> prev;  // per node: the node it reads (-1 for node 0, which reads x_t and h_{t-1})
  std::vector<int32_t> act;   // per node: 0 tanh, 1 relu, 2 identity, 3 sigmoid
};

void BuildPtb(LayerBuilder& b, const PtbConfig& c, int64_t steps) {
  static const char* const kActNames[] = {"tanh", "relu", "identity", "sigmoid"};
  static const double kActFlops[] = {kTanhFlops, kReluFlops, 0.0, kSigmoidFlops};
  const int64_t h = c.hidden;
  const auto nodes = static_cast<int32_t>(c.prev.size());
  std::vector<char> read(nodes, 0);
  for (int32_t l = 1; l < nodes; ++l) read[c.prev[l]] = 1;

  b.SetScope("input");
  const OpId ids = b.Input("token_ids", {c.batch, steps}, DType::kI32);
  const OpId labels = b.Input("labels", {c.batch, steps}, DType::kI32);
  OpId state = b.Input("initial_state", {c.batch, h});
  std::vector<OpId> outputs;
  for (int64_t t = 0; t < steps; ++t) {
    const std::string step = "_t" + std::to_string(t);
    b.SetScope("embedding");
    const OpId x = b.Embedding(ids, c.vocab, h, "lookup" + step, "embedding", t);
    std::vector<OpId> s(nodes);
    std::vector<OpId> loose;
    for (int32_t l = 0; l < nodes; ++l) {
      const std::string scope = "cell/node" + std::to_string(l);
      b.SetScope(scope);
      const OpId in = l == 0 ? state : s[c.prev[l]];
      const OpId pre = l == 0 ? b.Linear({x, state}, 2 * h, false, "matmul" + step, scope)
                              : b.Linear({in}, 2 * h, false, "matmul" + step, scope);
      // sigmoid gate, activation, and the highway mix c * f + (1 - c) * in (3 FLOPs).
      const double flops = kSigmoidFlops + kActFlops[c.act[l]] + 3.0;
      s[l] = b.Pointwise(std::string("highway_") + kActNames[c.act[l]], {pre, in}, {c.batch, h}, flops,
                         "highway" + step);
      if (!read[l]) loose.push_back(s[l]);
    }
    b.SetScope("cell/output");
    state = b.AddN(loose, true, "average" + step);
    outputs.push_back(state);
  }
  b.SetScope("softmax");
  const OpId logits = b.Linear({b.Stack(outputs, "outputs")}, c.vocab, true, "logits");
  b.SoftmaxCrossEntropy(logits, labels, "loss");
}

}  // namespace

FamilyGenerator MakePtbGenerator(Rng& rng) {
  PtbConfig c;
  c.batch = rng.Pick(std::vector<int64_t>{16, 32, 64});
  c.hidden = rng.Pick(std::vector<int64_t>{200, 400, 650, 1000});
  const auto nodes = static_cast<int32_t>(rng.Int(4, 12));
  for (int32_t l = 0; l < nodes; ++l) {
    c.prev.push_back(l == 0 ? -1 : static_cast<int32_t>(rng.Int(0, l - 1)));
    c.act.push_back(static_cast<int32_t>(rng.Int(0, 3)));
  }
  FamilyGenerator gen;
  gen.natural_scale = rng.Int(5, 35);
  gen.min_scale = 1;
  gen.build = [c](LayerBuilder& b, int64_t steps) { BuildPtb(b, c, steps); };
  return gen;
}

}  // namespace devplace
