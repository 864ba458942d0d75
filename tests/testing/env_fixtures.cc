#include "tests/testing/env_fixtures.h"

#include <gtest/gtest.h>

#include <utility>

#include "core/training_graph.h"

namespace devplace::envtest {
namespace {

class PeakRateImpl : public CostModelImpl {
 public:
  PartCost Cost(const PartWork& work, const Device& device) const override {
    return {work.flops / device.peak_flops_f32, false};
  }
  std::string Describe() const override { return "test: flops / peak"; }
};

Graph Derive(const Graph& forward) {
  Expected<Graph> g = DeriveTrainingGraph(forward);
  EXPECT_TRUE(g.ok()) << g.error().message;
  return std::move(g).value();
}

}  // namespace

CostModel PeakRateCost() { return CostModel(std::make_shared<PeakRateImpl>()); }

Device MakeDevice(const std::string& name, double peak, int64_t memory_bytes, const std::string& host) {
  return Device{.name = name, .kind = "test", .host = host, .peak_flops_f32 = peak, .peak_flops_f16 = peak,
                .memory_bandwidth = 1e11, .memory_bytes = memory_bytes};
}

Topology Pair(int n, int64_t memory_bytes, double bandwidth, double latency) {
  TopologyBuilder b(Numbered("pair", n));
  for (int i = 0; i < n; ++i) b.add_device(MakeDevice(Numbered("d", i), 1e9, memory_bytes));
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) b.add_bidirectional_link(i, j, bandwidth, latency, "nvlink");
  Expected<Topology> t = std::move(b).Build();
  EXPECT_TRUE(t.ok()) << t.error().message;
  return std::move(t).value();
}

Topology TwoHosts(int64_t memory_bytes) {
  TopologyBuilder b("two-hosts");
  for (int i = 0; i < 4; ++i)
    b.add_device(MakeDevice(Numbered("d", i), i < 2 ? 2e9 : 1e9, memory_bytes, i < 2 ? "h0" : "h1"));
  const NodeId s0 = b.add_switch({"s0", "h0"}), s1 = b.add_switch({"s1", "h1"});
  for (int i = 0; i < 4; ++i) b.add_bidirectional_link(i, i < 2 ? s0 : s1, 1e10, 1e-6, "pcie");
  b.add_bidirectional_link(s0, s1, 1e9, 1e-5, "ethernet");
  Expected<Topology> t = std::move(b).Build();
  EXPECT_TRUE(t.ok()) << t.error().message;
  return std::move(t).value();
}

Op MakeOp(const std::string& name, double flops, std::vector<int64_t> shape, int64_t param_bytes) {
  Op op{.name = name, .type = "matmul", .layer = name, .shape = std::move(shape)};
  // Splittable along the batch (data parallelism), as every op of these graphs has a leading batch axis.
  if (!op.shape.empty()) op.dims = {PartitionDim{DimKind::kSample, 0, 0, op.shape[0]}};
  op.flops = flops;
  op.param_bytes = param_bytes;
  return op;
}

Graph MlpTrainingGraph(int layers) {
  GraphBuilder b(Numbered("mlp", layers));
  OpId prev = b.add_op(MakeOp("x", 1e4, {64, 256}));
  for (int l = 0; l < layers; ++l) {
    OpId fc = b.add_op(MakeOp(Numbered("fc", l), 2.0 * 64 * 256 * 256, {64, 256}, (256 * 256 + 256) * 4));
    Op relu = MakeOp(Numbered("relu", l), 64 * 256, {64, 256});
    relu.type = "relu";
    OpId r = b.add_op(relu);
    b.add_edge(prev, fc);
    b.add_edge(fc, r);
    prev = r;
  }
  Expected<Graph> g = std::move(b).Build();
  EXPECT_TRUE(g.ok()) << g.error().message;
  return Derive(*g);
}

Graph MatmulTrainingGraph(int layers) {
  GraphBuilder b(Numbered("matmul", layers));
  OpId prev = b.add_op(MakeOp("x", 1e4, {64, 256}));
  for (int l = 0; l < layers; ++l) {
    Op fc = MakeOp(Numbered("fc", l), 2.0 * 64 * 256 * 256, {64, 256}, (256 * 256 + 256) * 4);
    fc.dims = {PartitionDim{DimKind::kSample, 0, 0, 64}, PartitionDim{DimKind::kParameter, 1, -1, 256},
               PartitionDim{DimKind::kReduction, -1, 1, 256}};
    OpId f = b.add_op(fc);
    Op relu = MakeOp(Numbered("relu", l), 64 * 256, {64, 256});
    relu.type = "relu";
    relu.dims = {PartitionDim{DimKind::kSample, 0, 0, 64}, PartitionDim{DimKind::kAttribute, 1, 1, 256}};
    OpId r = b.add_op(relu);
    b.add_edge(prev, f);
    b.add_edge(f, r);
    prev = r;
  }
  Expected<Graph> g = std::move(b).Build();
  EXPECT_TRUE(g.ok()) << g.error().message;
  return Derive(*g);
}

std::string Numbered(const std::string& prefix, int64_t i) {
  std::string s = prefix;
  s += std::to_string(i);
  return s;
}

int32_t UniformInt(std::mt19937_64& rng, int32_t n) { return static_cast<int32_t>(rng() % static_cast<uint64_t>(n)); }

Graph RandomTrainingGraph(uint64_t seed, int ops) {
  std::mt19937_64 rng(seed);
  GraphBuilder b(Numbered("random", static_cast<int64_t>(seed)));
  std::vector<OpId> prev_layer{b.add_op(MakeOp("in", 1e5, {32, 128}))};
  int made = 1;
  for (int layer = 0; made < ops; ++layer) {
    std::vector<OpId> cur;
    const int width = 1 + UniformInt(rng, 3);
    for (int k = 0; k < width && made < ops; ++k, ++made) {
      const int64_t cols = 64 << UniformInt(rng, 3);
      const int64_t params = UniformInt(rng, 2) ? cols * 128 * 4 : 0;
      OpId op = b.add_op(MakeOp(Numbered(Numbered("l", layer) + "_", k),
                                1e5 * (1 + UniformInt(rng, 100)), {32, cols}, params));
      // One or two inputs from the previous layer (distinct).
      const int32_t first = UniformInt(rng, static_cast<int32_t>(prev_layer.size()));
      b.add_edge(prev_layer[first], op);
      if (prev_layer.size() > 1 && UniformInt(rng, 2)) {
        const int32_t second = (first + 1) % static_cast<int32_t>(prev_layer.size());
        b.add_edge(prev_layer[second], op);
      }
      cur.push_back(op);
    }
    prev_layer = std::move(cur);
  }
  Expected<Graph> g = std::move(b).Build();
  EXPECT_TRUE(g.ok()) << g.error().message;
  return Derive(*g);
}

int32_t RandomLegalAction(const PlacementState& state, std::mt19937_64& rng) {
  std::vector<int32_t> legal;
  const std::vector<uint8_t>& mask = state.LegalActionsMask();
  for (int32_t d = 0; d < static_cast<int32_t>(mask.size()); ++d)
    if (mask[d]) legal.push_back(d);
  EXPECT_FALSE(legal.empty());
  return legal[UniformInt(rng, static_cast<int32_t>(legal.size()))];
}

std::vector<Scenario> Scenarios() {
  auto g = [](Graph graph) { return std::make_shared<const Graph>(std::move(graph)); };
  auto t = [](Topology topo) { return std::make_shared<const Topology>(std::move(topo)); };
  return {
      {"mlp_pair", g(MlpTrainingGraph(3)), t(Pair(2, int64_t{16} << 30))},
      {"random_two_hosts", g(RandomTrainingGraph(7, 24)), t(TwoHosts(int64_t{16} << 30))},
      // 1.75 MiB per device for about 3.7 MB of estimated memory: the masks exclude devices, and about 40% of
      // random placements run out of memory.
      {"random_tight", g(RandomTrainingGraph(11, 30)), t(Pair(3, int64_t{7} << 18))},
      // Ops with sample, attribute, parameter and reduction dimensions (every SOAP kind can be taken).
      {"matmul_two_hosts", g(MatmulTrainingGraph(3)), t(TwoHosts(int64_t{16} << 30))},
  };
}

std::shared_ptr<const PlacementGame> MakeGame(const Scenario& scenario, const EnvConfig& config) {
  return MakeGame(scenario.graph, scenario.topology, config);
}

std::shared_ptr<const PlacementGame> MakeGame(std::shared_ptr<const Graph> graph,
                                              std::shared_ptr<const Topology> topology, const EnvConfig& config) {
  Expected<std::shared_ptr<const PlacementGame>> game =
      PlacementGame::Create(std::move(graph), std::move(topology), PeakRateCost(), config);
  EXPECT_TRUE(game.ok()) << game.error().message;
  return game.ok() ? *game : nullptr;
}

std::shared_ptr<const Graph> Share(Graph graph) { return std::make_shared<const Graph>(std::move(graph)); }
std::shared_ptr<const Topology> Share(Topology topology) {
  return std::make_shared<const Topology>(std::move(topology));
}

}  // namespace devplace::envtest
