// The PyTorch execution-trace importer on a minimal hand-made trace in the layout of schema 1.1.0 (and 1.0.1's
// flat layout): one op per outermost operator, FLOPs not counted twice, edges through tensors, parameters from
// the optimizer's writes, roles, the first of several iterations, communication, and one-line errors. The real
// traces of tests/data/real/pytorch_et/ are checked beside.
#include <gtest/gtest.h>

#include <string>

#include "datasets/import/importers.h"

namespace devplace {
namespace {

// A tensor value: [tensor id, storage id, offset, elements, element bytes, device].
std::string T(int id, int elements) {
  std::string value = "[";
  for (int v : {id, id, 0, elements, 4}) value += std::to_string(v) + ",";
  return value + "\"cuda:0\"]";
}

// A node of schema 1.0.2 and later; `in`/`out` are the values, shapes and types arrays' contents.
std::string Node(int id, const std::string& name, int parent, bool op, const std::string& in_values = "",
                 const std::string& in_shapes = "", const std::string& in_types = "", const std::string& out_values = "",
                 const std::string& out_shapes = "", const std::string& out_types = "") {
  return "{\"id\": " + std::to_string(id) + ", \"name\": \"" + name + "\", \"ctrl_deps\": " + std::to_string(parent) +
         ", \"inputs\": {\"values\": [" + in_values + "], \"shapes\": [" + in_shapes + "], \"types\": [" + in_types +
         "]}, \"outputs\": {\"values\": [" + out_values + "], \"shapes\": [" + out_shapes + "], \"types\": [" +
         out_types + "]}, \"attrs\": [{\"name\": \"op_schema\", \"type\": \"string\", \"value\": \"" +
         (op ? name + "(...)" : "") + "\"}]}";
}

const std::string F = "\"Tensor(float)\"";

// y = linear(x, w, b) (calling t and addmm), z = relu(y), the backward of relu, an all-reduce of the gradient, a
// wait, SGD updating w and b; then a second iteration that is left out.
std::string SmallTrace() {
  const std::string x = T(10, 128), w = T(20, 512), b = T(30, 32), y = T(40, 256), z = T(50, 256), g = T(60, 256),
                    gz = T(61, 256), gw = T(70, 512);
  std::string nodes = Node(1, "[pytorch|profiler|execution_trace|process]", 1, false) + ",\n" +
                      Node(2, "[pytorch|profiler|execution_trace|thread]", 1, false) + ",\n" +
                      Node(3, "ProfilerStep#1", 2, false) + ",\n" +
                      Node(4, "aten::linear", 3, true, x + "," + w + "," + b, "[8,16],[32,16],[32]", F + "," + F + "," + F,
                           y, "[8,32]", F) + ",\n" +
                      Node(5, "aten::t", 4, true, w, "[32,16]", F, T(21, 512), "[16,32]", F) + ",\n" +
                      Node(6, "aten::addmm", 4, true, b + "," + x + "," + T(21, 512), "[32],[8,16],[16,32]",
                           F + "," + F + "," + F, y, "[8,32]", F) + ",\n" +
                      Node(7, "aten::relu", 3, true, y, "[8,32]", F, z, "[8,32]", F) + ",\n" +
                      Node(8, "autograd::engine::evaluate_function: ReluBackward0", 3, false) + ",\n" +
                      Node(9, "aten::threshold_backward", 8, true, g + "," + z + ",0", "[8,32],[8,32],[]",
                           F + "," + F + ",\"Int\"", gz, "[8,32]", F) + ",\n" +
                      Node(10, "record_param_comms", 3, false, "[" + gz + "],7,\"allreduce\"", "[[8,32]],[],[]",
                           "\"GenericList[Tensor(float)]\",\"Int\",\"String\"", "[" + gz + "]", "[[8,32]]",
                           "\"GenericList[Tensor(float)]\"") + ",\n" +
                      Node(11, "record_param_comms", 3, false, "7,\"wait\"", "[],[]", "\"Int\",\"String\"") + ",\n" +
                      Node(12, "Optimizer.step#SGD.step", 3, false) + ",\n" +
                      Node(13, "aten::add_", 12, true, w + "," + gw, "[32,16],[32,16]", F + "," + F) + ",\n" +
                      Node(14, "aten::add_", 12, true, b + "," + T(71, 32), "[32],[32]", F + "," + F) + ",\n" +
                      Node(15, "ProfilerStep#2", 2, false) + ",\n" +
                      Node(16, "aten::relu", 15, true, y, "[8,32]", F, z, "[8,32]", F);
  return "{\"schema\": \"1.1.0-chakra.0.0.4\", \"pid\": 7, \"nodes\": [\n" + nodes + "]}";
}

Expected<ImportResult> Import(const std::string& text) { return ImportChakraTrace(text, "t.json", "t"); }

TEST(ImportPyTorchEt, OutermostOperatorsWithTensorEdgesAndParameters) {
  Expected<ImportResult> r = Import(SmallTrace());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->format, "pytorch_et");
  const Graph& g = r->graph;
  ASSERT_EQ(g.num_ops(), 6);  // linear, relu, threshold_backward, the all-reduce, two add_ (the wait is no op)
  const OpId linear = g.find("aten::linear"), relu = g.find("aten::relu"), bwd = g.find("aten::threshold_backward");
  const OpId ar = g.find("record_param_comms");
  ASSERT_GE(linear, 0);
  ASSERT_GE(relu, 0);
  ASSERT_GE(bwd, 0);
  ASSERT_GE(ar, 0);
  // linear's own formula (2 M K N + bias), not again the addmm it calls.
  EXPECT_EQ(g.op(linear).flops, 2.0 * 8 * 16 * 32 + 8 * 32);
  EXPECT_EQ(g.op(linear).type, "linear");
  EXPECT_EQ(g.op(linear).shape, (std::vector<int64_t>{8, 32}));
  EXPECT_EQ(g.op(relu).flops, 256.0);
  EXPECT_EQ(g.op(bwd).role, OpRole::kBackward);
  EXPECT_EQ(g.op(ar).type, "all_reduce");
  EXPECT_EQ(OutputBytes(g.op(ar)), 256 * 4);
  EXPECT_EQ(g.op(g.find("aten::add_#13")).role, OpRole::kUpdate);
  // w and b are read by linear and updated by the optimizer: parameters of linear. The gradients are not.
  EXPECT_EQ(g.op(linear).param_bytes, (512 + 32) * 4);
  EXPECT_EQ(g.total_param_bytes(), (512 + 32) * 4);
  // Edges follow the tensors: linear -> relu -> threshold_backward -> all-reduce.
  ASSERT_EQ(g.num_edges(), 3);
  for (const auto& [src, dst] : {std::pair{linear, relu}, {relu, bwd}, {bwd, ar}}) {
    bool found = false;
    for (const Edge& e : g.edges()) found = found || (e.src == src && e.dst == dst && e.bytes == 256 * 4);
    EXPECT_TRUE(found) << g.op(src).name << " -> " << g.op(dst).name;
  }
  ASSERT_EQ(r->measured_seconds.size(), 6u);
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("2 iterations"), std::string::npos) << r->warnings[0];
}

// Schema 1.0.1: flat fields (parent, op_schema, input_shapes, input_types, ...).
TEST(ImportPyTorchEt, Schema101FlatLayout) {
  const std::string text = R"json({"schema": "1.0.1", "pid": 1, "nodes": [
    {"name": "[pytorch|profiler|execution_graph|process]", "id": 1, "parent": 1, "op_schema": "", "inputs": [],
     "input_shapes": [], "input_types": [], "outputs": [], "output_shapes": [], "output_types": []},
    {"name": "[pytorch|profiler|execution_graph|thread]", "id": 2, "parent": 1, "op_schema": "", "inputs": [],
     "input_shapes": [], "input_types": [], "outputs": [], "output_shapes": [], "output_types": []},
    {"name": "aten::mm", "id": 3, "parent": 2, "op_schema": "aten::mm(Tensor self, Tensor mat2) -> Tensor",
     "inputs": [[1, 1, 0, 6, 4, "cpu"], [2, 2, 0, 12, 4, "cpu"]], "input_shapes": [[2, 3], [3, 4]],
     "input_types": ["Tensor(float)", "Tensor(float)"], "outputs": [[3, 3, 0, 8, 4, "cpu"]],
     "output_shapes": [[2, 4]], "output_types": ["Tensor(float)"]},
    {"name": "aten::sum", "id": 4, "parent": 2, "op_schema": "aten::sum(Tensor self, *, ScalarType? dtype=None) -> Tensor",
     "inputs": [[3, 3, 0, 8, 4, "cpu"], "<None>"], "input_shapes": [[2, 4], []],
     "input_types": ["Tensor(float)", "None"], "outputs": [[5, 5, 0, 1, 4, "cpu"]], "output_shapes": [[]],
     "output_types": ["Tensor(float)"]}]})json";
  Expected<ImportResult> r = Import(text);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Graph& g = r->graph;
  ASSERT_EQ(g.num_ops(), 2);
  EXPECT_EQ(g.op(0).flops, 2.0 * 2 * 3 * 4);
  EXPECT_EQ(g.op(1).flops, 8.0);
  ASSERT_EQ(g.num_edges(), 1);
  EXPECT_EQ(g.edge(0).bytes, 32);
  EXPECT_TRUE(r->warnings.empty());
}

TEST(ImportPyTorchEt, BadTracesAreOneLineErrors) {
  auto expect_error = [](const std::string& text, const std::string& fragment) {
    Expected<ImportResult> r = Import(text);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
    EXPECT_EQ(r.error().message.rfind("t.json: ", 0), 0u) << r.error().message;
    EXPECT_NE(r.error().message.find(fragment), std::string::npos) << r.error().message;
  };
  expect_error(R"({"schema": "1.0.1", "nodes": [{"name": "a"}]})", "nodes[0]: id: missing");
  expect_error(R"({"schema": "1.1.0-chakra.0.0.4", "nodes": [{"id": 1, "name": "aten::mm", "ctrl_deps": 1,
               "inputs": {"values": [1], "shapes": [], "types": []}}]})",
               "nodes[0]: inputs: expected values, shapes and types as arrays of the same length");
  expect_error(R"({"schema": "1.1.0-chakra.0.0.4", "nodes": [{"id": 1, "name": "a", "ctrl_deps": 2},
               {"id": 2, "name": "b", "ctrl_deps": 1}]})",
               "the parent chain is a cycle");
  expect_error(R"({"schema": "1.1.0-chakra.0.0.4", "nodes": [{"id": 1, "name": "ProfilerStep#1", "ctrl_deps": 1}]})",
               "no operators");
  expect_error(R"({"schema": "1.1.0-chakra.0.0.4", "nodes": [{"id": -1, "name": "x"}]})", "nodes[0]: id:");
}

// The real traces: parameters as PyTorch counts them (ResNet-50: 25,557,032; 21 Linear(1024, 1024): 22,041,600)
// and ResNet-50's training FLOPs at batch 32 (about 3 x 4.1 GMACs x 2 x 32 = 7.9e11).
TEST(ImportPyTorchEt, RealTraces) {
  const std::string dir = std::string(DEVPLACE_SOURCE_DIR) + "/tests/data/real/pytorch_et/";
  Expected<ImportResult> resnet = ImportModelFile(dir + "resnet_2gpu_et.1.1.0-chakra.0.0.4.json.gz");
  ASSERT_TRUE(resnet.ok()) << resnet.error().message;
  EXPECT_EQ(resnet->graph.total_param_bytes(), 4 * 25557032);
  EXPECT_NEAR(resnet->graph.total_flops(), 7.85e11, 0.05e11);
  int all_reduce = 0;
  for (const Op& op : resnet->graph.ops()) all_reduce += op.type == "all_reduce";
  EXPECT_EQ(all_reduce, 5);  // DDP's gradient buckets
  Expected<ImportResult> linear = ImportModelFile(dir + "linear_et.1.0.1.json.gz");
  ASSERT_TRUE(linear.ok()) << linear.error().message;
  EXPECT_EQ(linear->graph.total_param_bytes(), 4 * 21 * (1024 * 1024 + 1024));
}

}  // namespace
}  // namespace devplace
