#include "tests/testing/learn_fixtures.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include <unistd.h>

#include "core/training_graph.h"
#include "sim/cost_model.h"

namespace devplace::learntest {

namespace {

Op MakeOp(const std::string& name, const std::string& type, double flops, int64_t param_bytes) {
  Op op{.name = name, .type = type, .layer = name, .shape = {64, 256}};
  op.dims = {PartitionDim{DimKind::kSample, 0, 0, 64}};  // the batch: the data-parallel action can split it
  op.flops = flops;
  op.param_bytes = param_bytes;
  return op;
}

}  // namespace

Graph MlpTrainingGraph(int layers) {
  GraphBuilder b("mlp");
  OpId prev = b.add_op(MakeOp("x", "input", 1e4, 0));
  for (int l = 0; l < layers; ++l) {
    std::string fc_name = "fc", relu_name = "relu";
    fc_name += std::to_string(l);
    relu_name += std::to_string(l);
    OpId fc = b.add_op(MakeOp(fc_name, "matmul", 2.0 * 64 * 256 * 256 * 64, (256 * 256 + 256) * 4));
    OpId relu = b.add_op(MakeOp(relu_name, "relu", 64 * 256, 0));
    b.add_edge(prev, fc);
    b.add_edge(fc, relu);
    prev = relu;
  }
  Expected<Graph> forward = std::move(b).Build();
  EXPECT_TRUE(forward.ok()) << forward.error().message;
  Expected<Graph> g = DeriveTrainingGraph(*forward);
  EXPECT_TRUE(g.ok()) << g.error().message;
  return std::move(g).value();
}

Topology TwoDevices(double speedup, int64_t memory_bytes) {
  TopologyBuilder b("two");
  for (int i = 0; i < 2; ++i) {
    const double peak = i == 1 ? 1e12 * speedup : 1e12;
    std::string name = "d";
    name += static_cast<char>('0' + i);
    b.add_device(Device{.name = name, .kind = "test", .host = "h0", .peak_flops_f32 = peak,
                        .peak_flops_f16 = peak, .memory_bandwidth = 1e11, .memory_bytes = memory_bytes});
  }
  b.add_bidirectional_link(0, 1, 1e10, 1e-5, "nvlink");
  Expected<Topology> t = std::move(b).Build();
  EXPECT_TRUE(t.ok()) << t.error().message;
  return std::move(t).value();
}

std::shared_ptr<const PlacementGame> MakeGame(Graph graph, Topology topology, MdpKind kind, bool memory_aware_mask,
                                              bool data_parallel_action) {
  EnvConfig config;
  config.kind = kind;
  config.memory_aware_mask = memory_aware_mask;
  config.data_parallel_action = data_parallel_action;
  auto game = PlacementGame::Create(std::make_shared<const Graph>(std::move(graph)),
                                    std::make_shared<const Topology>(std::move(topology)), MakeAnalyticCostModel(),
                                    config);
  EXPECT_TRUE(game.ok()) << game.error().message;
  return std::move(game).value();
}

std::string WriteTinyExperiment(const std::string& dir, int iterations,
                                const std::vector<std::pair<std::string, std::string>>& edits) {
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/exp.yaml";
  std::ostringstream out;
  out << "name: tiny\nseed: 3\n"
      << "topologies: [" << DEVPLACE_SOURCE_DIR << "/configs/topologies/dgx1-v100.yaml]\n"
      << "train: [{family: ptb, seeds: {from: 1, count: 2}, target_ops: 120}]\n"
      << "eval: [{family: ptb, seed: 9, target_ops: 120}]\n"
      << "policy: {hidden: 16, sage_layers: 1, transformer_layers: 1, heads: 2, feedforward: 16, segment: 8}\n"
      << "ppo: {iterations: " << iterations << ", graphs_per_iteration: 2, samples_per_graph: 4, epochs: 2, "
      << "minibatches: 2}\n"
      << "eval_every: 2\ncheckpoint_every: 2\n";
  std::string yaml = out.str();
  for (const auto& [from, to] : edits) {
    const size_t at = yaml.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) yaml.replace(at, from.size(), to);
  }
  std::ofstream(path) << yaml;
  return path;
}

std::string TempDir(const std::string& name) {
  const std::filesystem::path p = std::filesystem::temp_directory_path() /
                                  ("devplace-learn-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p.string();
}

PolicyConfig TinyPolicy(const std::string& kind, int32_t segment) {
  PolicyConfig p;
  p.kind = kind;
  p.hidden = 16;
  p.sage_layers = 2;
  p.transformer_layers = 2;
  p.heads = 2;
  p.feedforward = 16;
  p.segment = segment;
  p.max_devices = 4;
  return p;
}

}  // namespace devplace::learntest
