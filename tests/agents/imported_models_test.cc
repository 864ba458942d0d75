// Every model the ONNX importer ships (datasets/onnx/) and the Chakra test trace can be searched by every
// registered algorithm, and the strategies validate and simulate.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "agents/search.h"
#include "core/device_order.h"
#include "core/topology_yaml.h"
#include "datasets/import/importers.h"

namespace devplace {
namespace {

std::vector<std::string> ImportedModelFiles() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(DEVPLACE_SOURCE_DIR "/datasets/onnx"))
    if (entry.path().extension() == ".onnx") files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  files.push_back(DEVPLACE_SOURCE_DIR "/tests/datasets/import_chakra_trace.json");
  return files;
}

TEST(ImportedModels, EveryAlgorithmPlacesEveryImportedModel) {
  Topology topology = ReadTopologyFile(DEVPLACE_SOURCE_DIR "/configs/topologies/dgx1-v100.yaml").value();
  std::vector<std::string> files = ImportedModelFiles();
  ASSERT_GE(files.size(), 8u);
  CostModel cost = MakeAnalyticCostModel();
  for (const std::string& file : files) {
    ImportOptions options;
    options.batch = 8;
    Expected<ImportResult> imported = ImportModelFile(file, options);
    ASSERT_TRUE(imported.ok()) << imported.error().message;
    const Graph& graph = imported->graph;
    for (const std::string& name : SearchAlgorithmNames()) {
      std::unique_ptr<SearchAlgorithm> algo = MakeSearchAlgorithm(name).value();
      SearchRequest request;
      request.budget.max_evaluations = 30;
      request.seed = 2;
      Expected<SearchResult> result = algo->Search(SearchProblem{&graph, &topology, cost, SimOptions{}}, request);
      // A pipeline needs every backward op's forward op (the Chakra trace's autograd ops name none): pipeline-dp
      // rejects such graphs with a reason (docs/baselines.md).
      if (name == "pipeline-dp" && !result.ok() &&
          result.error().message.find("without its forward op") != std::string::npos)
        continue;
      ASSERT_TRUE(result.ok()) << file << " / " << name << ": " << result.error().message;
      Status valid = ValidateStrategy(result->strategy, graph, topology);
      ASSERT_TRUE(valid.ok()) << file << " / " << name << ": " << valid.error().message;
      Expected<SimResult> sim = Simulate(graph, topology, result->strategy, cost);
      ASSERT_TRUE(sim.ok()) << file << " / " << name << ": " << sim.error().message;
      EXPECT_GT(sim->step_time, 0) << file << " / " << name;
    }
  }
}

// Bytes of the collective steps (gradient all-reduce) of a data-parallel step of `graph` on `topology`.
int64_t DataParallelCollectiveBytes(const Graph& graph, const Topology& topology) {
  CostModel cost = MakeAnalyticCostModel();
  std::unique_ptr<SearchAlgorithm> dp = MakeSearchAlgorithm("data-parallel").value();
  Expected<SearchResult> placed = dp->Search(SearchProblem{&graph, &topology, cost, SimOptions{}}, SearchRequest{});
  EXPECT_TRUE(placed.ok());
  if (!placed.ok()) return -1;
  SimOptions options;
  options.keep_timeline = true;
  Expected<SimResult> sim = Simulate(graph, topology, placed->strategy, cost, options);
  EXPECT_TRUE(sim.ok());
  if (!sim.ok()) return -1;
  int64_t bytes = 0;
  for (const TimelineTask& t : sim->timeline)
    if (t.kind == TimelineTask::Kind::kCollective) bytes += t.bytes;
  return bytes;
}

// One Transformer exported twice by torch.onnx.export, with its weights (initializers, some transposed by constant
// folding) and with export_params=False (weights as graph inputs, tests/data/transformer_params/make.py): both
// count PyTorch's parameters, and data parallelism all-reduces gradients of that size in both.
TEST(ImportedModels, TransformerWithoutExportedWeightsCountsItsParameters) {
  const std::string dir = DEVPLACE_SOURCE_DIR "/tests/data/transformer_params/";
  std::ifstream reference(dir + "reference.json");
  std::string text((std::istreambuf_iterator<char>(reference)), std::istreambuf_iterator<char>());
  ASSERT_NE(text.find(':'), std::string::npos);
  const int64_t param_count = std::stoll(text.substr(text.find(':') + 1));  // {"param_count": N}
  ASSERT_GT(param_count, 0);
  Topology topology = ReadTopologyFile(DEVPLACE_SOURCE_DIR "/configs/topologies/dgx1-v100.yaml").value();
  std::vector<int64_t> collective_bytes;
  for (const char* file : {"transformer_weights.onnx", "transformer_no_weights.onnx"}) {
    ImportOptions options;
    options.batch = 16;
    Expected<ImportResult> imported = ImportModelFile(dir + file, options);
    ASSERT_TRUE(imported.ok()) << imported.error().message;
    EXPECT_EQ(imported->graph.total_param_bytes(), 4 * param_count) << file;
    collective_bytes.push_back(DataParallelCollectiveBytes(imported->graph, topology));
  }
  // A ring all-reduce over the n devices in data parallelism's ring order (FastRingOrder) sends 2 (n - 1) chunks of
  // 1/n of the gradient from each device to the next, over every link of its route (one NVLink per step on the
  // DGX-1's ring; id order would route two of its steps through two links).
  const int64_t n = topology.num_devices();
  std::vector<DeviceId> ring(static_cast<size_t>(n));
  for (DeviceId d = 0; d < n; ++d) ring[d] = d;
  ring = FastRingOrder(topology, std::move(ring));
  int64_t hops = 0;
  for (DeviceId i = 0; i < n; ++i) hops += static_cast<int64_t>(topology.route(ring[i], ring[(i + 1) % n]).size());
  EXPECT_EQ(hops, n);
  const double expected = 2.0 * (n - 1) / n * hops * 4 * param_count;
  EXPECT_EQ(collective_bytes[0], collective_bytes[1]);
  EXPECT_NEAR(static_cast<double>(collective_bytes[1]), expected, 0.01 * expected);
}

}  // namespace
}  // namespace devplace
