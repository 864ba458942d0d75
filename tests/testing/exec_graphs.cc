#include "tests/testing/exec_graphs.h"

#include <map>
#include <string>

#include "core/topology_yaml.h"
#include "datasets/layers.h"

namespace devplace::testing {

Graph ConvTrainingGraph() {
  LayerBuilder b("conv-ops");
  const OpId images = b.Input("images", {2, 3, 8, 8});
  const OpId labels = b.Input("labels", {2}, DType::kI64);
  const OpId audio = b.Input("audio", {2, 3, 10});
  b.SetScope("stem");
  const OpId c1 = b.Relu(b.BatchNorm(b.Conv2d(images, ConvSpec::Same(4, 3))));
  const OpId c2 = b.Conv2d(c1, ConvSpec::Same(4, 3, 2, true), "strided");  // [2, 4, 4, 4]
  b.SetScope("branches");
  ConvSpec dw = ConvSpec::Same(4, 3);
  dw.groups = 4;
  const OpId depthwise = b.Conv2d(c2, dw, "depthwise");
  ConvSpec grouped = ConvSpec::Same(8, 1);
  grouped.groups = 2;
  const OpId rect = b.Conv2d(b.Conv2d(c2, grouped, "grouped"), ConvSpec::Rect(4, 1, 3, 1, 0, 1), "rect");
  const OpId sum = b.Add(rect, depthwise);
  const OpId prod = b.Mul(sum, b.Pool2d(c2, PoolKind::kMax, 3, 1, 1));
  const OpId cat = b.Concat({sum, prod}, 1);  // [2, 8, 4, 4]
  const OpId pooled = b.GlobalAvgPool(cat);
  const OpId flat = b.Flatten(b.Pool2d(c2, PoolKind::kAvg, 2, 2, 0));  // [2, 16]
  b.SetScope("audio");
  const OpId wave = b.CausalConv1d(audio, 4, 2, 1, true);  // [2, 4, 10]
  const OpId wave_flat = b.Flatten(b.LayerNorm(wave));     // [2, 40]
  b.SetScope("head");
  const OpId fc = b.Linear({pooled, flat, wave_flat}, 10, true, "fc");
  const OpId mix = b.AddN({b.Tanh(fc), b.Sigmoid(fc), b.Gelu(fc)}, false);
  const OpId mean = b.AddN({mix, b.Softmax(fc)}, true);
  b.SoftmaxCrossEntropy(mean, labels, "loss");
  return std::move(b).BuildTraining().value();
}

Graph SequenceTrainingGraph() {
  LayerBuilder b("sequence-ops");
  const OpId ids = b.Input("ids", {2, 5}, DType::kI32);
  const OpId labels = b.Input("labels", {2, 3}, DType::kI32);
  const OpId labels2 = b.Input("labels2", {2, 3}, DType::kI64);
  const OpId positions = b.Input("positions", {1, 3, 8});
  b.SetScope("encoder");
  const OpId keys = b.Linear({b.Embedding(ids, 11, 6, "embedding")}, 8, false, "keys");  // [2, 5, 8]
  b.SetScope("decoder");
  const OpId x0 = b.Embedding(ids, 11, 6, "lookup", "table", 0);
  const OpId x1 = b.Embedding(ids, 11, 6, "lookup", "table", 1);
  const LstmState s0 = b.LstmStep({x0}, {}, 8, "lstm");
  const LstmState s1 = b.LstmStep({x1}, s0, 8, "lstm");
  const OpId scores = b.Add(b.DotScores(s1.h, keys), b.AdditiveScores(s0.h, keys, "additive"));
  const OpId context = b.AttentionContext(b.Softmax(scores), keys);  // [2, 8]
  const OpId highway = b.Pointwise("highway_tanh", {b.Linear({context}, 16, false, "pre"), context}, {2, 8},
                                   kSigmoidFlops + kTanhFlops + 3.0, "highway");
  const OpId states = b.Stack({s0.h, highway, context});  // [2, 3, 8]
  b.SampledSoftmaxLoss(states, labels, 50, 4, "sampled_loss");
  b.SetScope("attention");
  const OpId norm = b.LayerNorm(states);
  const OpId qkv = b.Linear({norm}, 24, true, "qkv");
  const OpId r = b.Linear({positions}, 8, false, "r");
  const OpId mh = b.Add(b.MultiHeadScores(qkv, qkv, 2, 8, "content"), b.MultiHeadScores(qkv, r, 2, 8, "position"));
  const OpId attended = b.MultiHeadContext(b.Softmax(mh), qkv, 8);  // [2, 3, 8]
  b.SoftmaxCrossEntropy(b.Linear({attended}, 7, true, "logits"), labels2, "loss");
  return std::move(b).BuildTraining().value();
}

Graph TinyTransformer(int64_t batch, int64_t seq, int64_t vocab, int64_t width, int64_t heads) {
  LayerBuilder b("transformer");
  const OpId ids = b.Input("ids", {batch, seq}, DType::kI64);
  const OpId labels = b.Input("labels", {batch, seq}, DType::kI64);
  const OpId e = b.Embedding(ids, vocab, width, "embedding");
  const OpId q = b.Linear({e}, width, true, "q");
  const OpId k = b.Linear({e}, width, true, "k");
  const OpId v = b.Linear({e}, width, true, "v");
  const OpId p = b.Softmax(b.MultiHeadScores(q, k, heads, width));
  const OpId a = b.Add(e, b.Linear({b.MultiHeadContext(p, v, width)}, width, true, "proj"));
  const OpId n = b.LayerNorm(a);
  const OpId f = b.Linear({b.Gelu(b.Linear({n}, 2 * width, true, "ff1"))}, width, true, "ff2");
  b.SoftmaxCrossEntropy(b.Linear({b.Add(n, f)}, vocab, true, "logits"), labels);
  return std::move(b).BuildTraining().value();
}

Topology CpuLocal() { return ReadTopologyFile(DEVPLACE_SOURCE_DIR "/configs/topologies/cpu-local.yaml").value(); }

Strategy SpreadGroups(const Graph& graph) {
  std::map<std::string, DeviceId> group_device;
  std::vector<DeviceId> placement;
  for (const Op& op : graph.ops()) {
    auto [it, inserted] = group_device.emplace(op.colocation, static_cast<DeviceId>(group_device.size() % 2));
    placement.push_back(it->second);
  }
  return Strategy::FromPlacement(placement);
}

}  // namespace devplace::testing
