// The ONNX importer: the exported torchvision / torch.nn models against their independent FLOP and parameter
// counts (datasets/onnx/*.reference.json), batch override, layers, operator mapping, folding of shape
// subgraphs, and one-line errors on malformed models. Small models are written here with a minimal protobuf
// encoder, so that any structure (including broken ones) can be built.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "datasets/import/importers.h"

namespace devplace {
namespace {

const std::string kOnnxDir = std::string(DEVPLACE_SOURCE_DIR) + "/datasets/onnx/";

// --- a minimal protobuf writer for ONNX messages (field numbers from onnx.proto) -------------------------
class Proto {
 public:
  Proto& Varint(int field, uint64_t value) {
    Key(field, 0);
    Raw(value);
    return *this;
  }
  Proto& Bytes(int field, const std::string& bytes) {
    Key(field, 2);
    Raw(bytes.size());
    out_ += bytes;
    return *this;
  }
  Proto& Message(int field, const Proto& m) { return Bytes(field, m.out_); }
  const std::string& str() const { return out_; }

 private:
  void Key(int field, int wire) { Raw(static_cast<uint64_t>(field) << 3 | wire); }
  void Raw(uint64_t v) {
    while (v >= 0x80) {
      out_ += static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    out_ += static_cast<char>(v);
  }
  std::string out_;
};

constexpr int kFloat = 1, kInt64 = 7;

// ValueInfoProto of a tensor; a negative extent is written as the symbolic dim "batch".
Proto Value(const std::string& name, std::vector<int64_t> dims, int elem = kFloat) {
  Proto shape;
  for (int64_t d : dims) {
    Proto dim;
    if (d < 0)
      dim.Bytes(2, "batch");
    else
      dim.Varint(1, static_cast<uint64_t>(d));
    shape.Message(1, dim);
  }
  Proto tensor;
  tensor.Varint(1, elem).Message(2, shape);
  Proto type;
  type.Message(1, tensor);
  Proto v;
  v.Bytes(1, name).Message(2, type);
  return v;
}

Proto IntAttr(const std::string& name, int64_t value) {
  Proto a;
  a.Bytes(1, name).Varint(3, static_cast<uint64_t>(value)).Varint(20, 2);  // INT
  return a;
}

// A Constant node producing an int64 vector (or a scalar).
Proto ConstantNode(const std::string& out, std::vector<int64_t> values, bool scalar = false) {
  Proto t;
  if (!scalar) t.Varint(1, values.size());
  t.Varint(2, kInt64);
  for (int64_t x : values) t.Varint(7, static_cast<uint64_t>(x));
  Proto attr;
  attr.Bytes(1, "value").Message(5, t).Varint(20, 4);  // TENSOR
  Proto n;
  n.Bytes(2, out).Bytes(3, out + "_const").Bytes(4, "Constant").Message(5, attr);
  return n;
}

Proto Node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out, std::string name = "",
           std::vector<Proto> attrs = {}) {
  Proto n;
  for (const auto& x : in) n.Bytes(1, x);
  for (const auto& x : out) n.Bytes(2, x);
  n.Bytes(3, name.empty() ? op + "_" + out[0] : name).Bytes(4, op);
  for (const auto& a : attrs) n.Message(5, a);
  return n;
}

std::string Model(const std::vector<Proto>& nodes, const std::vector<Proto>& inputs, const std::vector<Proto>& outputs) {
  Proto g;
  for (const auto& n : nodes) g.Message(1, n);
  g.Bytes(2, "test");
  for (const auto& v : inputs) g.Message(11, v);
  for (const auto& v : outputs) g.Message(12, v);
  Proto opset;
  opset.Bytes(1, "").Varint(2, 17);
  Proto m;
  m.Varint(1, 8).Message(8, opset).Message(7, g);
  return m.str();
}

Expected<ImportResult> Import(const std::string& bytes, ImportOptions options = {}) {
  options.derive_training = false;
  return ImportOnnxModel(bytes, "m.onnx", "m", options);
}

// An error is one line naming the file.
void ExpectOneLineError(const Expected<ImportResult>& r, const std::string& fragment) {
  ASSERT_FALSE(r.ok());
  const std::string& msg = r.error().message;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_EQ(msg.rfind("m.onnx: ", 0), 0u) << msg;
  EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
}

double ForwardFlops(const Graph& g) {
  double f = 0;
  for (const Op& op : g.ops())
    if (op.role == OpRole::kForward) f += op.flops;
  return f;
}

std::set<std::string> Types(const Graph& g) {
  std::set<std::string> types;
  for (const Op& op : g.ops()) types.insert(op.type);
  return types;
}

int CountType(const Graph& g, const std::string& type) {
  int n = 0;
  for (const Op& op : g.ops()) n += op.type == type;
  return n;
}

// --- the exported models -------------------------------------------------------------------------------
const char* const kModels[] = {"resnet18",    "alexnet",     "squeezenet1_0",     "densenet121",
                               "mobilenet_v3_small", "gru_seq2seq", "lstm_lm", "transformer_small",
                               "resnet50",    "vgg16",       "mobilenet_v2",      "inception_v3"};

TEST(ImportOnnx, ExportedModelsMatchTheIndependentCount) {
  for (const char* name : kModels) {
    SCOPED_TRACE(name);
    const nlohmann::json ref = nlohmann::json::parse(ReadFile(kOnnxDir + name + ".reference.json").value());
    ImportOptions options;
    options.batch = 1;
    options.derive_training = false;
    Expected<ImportResult> r = ImportModelFile(kOnnxDir + name + ".onnx", options);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_TRUE(r->warnings.empty()) << r->warnings.front();
    const Graph& g = r->graph;
    const double reference = ref["forward_flops"].get<double>();
    EXPECT_NEAR(ForwardFlops(g) / reference, 1.0, 0.01) << ForwardFlops(g) << " vs " << reference;
    EXPECT_EQ(g.total_param_bytes(), 4 * ref["param_count"].get<int64_t>());
    // Shape computations and weight preprocessing folded away.
    for (const char* folded : {"shape", "constant", "constantofshape", "identity", "unknown"})
      EXPECT_EQ(Types(g).count(folded), 0u) << folded;
    for (const Op& op : g.ops()) EXPECT_GT(NumElements(op), 0) << op.name;
  }
}

TEST(ImportOnnx, TrainingGraphIsDerived) {
  Expected<ImportResult> r = ImportModelFile(kOnnxDir + "resnet18.onnx");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Graph& g = r->graph;
  EXPECT_EQ(r->format, "onnx");
  EXPECT_GT(g.count_role(OpRole::kBackward), 60);
  EXPECT_EQ(g.count_role(OpRole::kUpdate), 41);  // 20 conv + 20 batch norm + fc own parameters
  EXPECT_GT(g.total_flops(), 2.5 * ForwardFlops(g));
  // The symbolic batch without --batch is 1, with a warning.
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("'batch'"), std::string::npos);
}

TEST(ImportOnnx, BatchOverrideScalesEveryOp) {
  ImportOptions one, eight;
  one.batch = 1;
  eight.batch = 8;
  one.derive_training = eight.derive_training = false;
  for (const char* name : {"resnet18", "transformer_small", "gru_seq2seq"}) {
    SCOPED_TRACE(name);
    Graph a = ImportModelFile(kOnnxDir + name + ".onnx", one).value().graph;
    Graph b = ImportModelFile(kOnnxDir + name + ".onnx", eight).value().graph;
    ASSERT_EQ(a.num_ops(), b.num_ops());
    EXPECT_NEAR(ForwardFlops(b) / ForwardFlops(a), 8.0, 1e-9);
    EXPECT_EQ(a.total_param_bytes(), b.total_param_bytes());
    EXPECT_EQ(b.op(0).shape[0], 8);
  }
}

TEST(ImportOnnx, LayersAndTypesFromNodeNames) {
  Graph g = Import(ReadFile(kOnnxDir + "resnet18.onnx").value(), {.batch = 2}).value().graph;
  const OpId conv = g.find("layer1/layer1.0/conv1/Conv");
  ASSERT_GE(conv, 0);
  EXPECT_EQ(g.op(conv).type, "conv2d");
  EXPECT_EQ(g.op(conv).layer, "layer1/layer1.0/conv1");
  EXPECT_EQ(g.op(conv).shape, (std::vector<int64_t>{2, 64, 56, 56}));
  EXPECT_EQ(g.op(conv).param_bytes, 64 * 64 * 3 * 3 * 4);
  EXPECT_DOUBLE_EQ(g.op(conv).flops, 2.0 * 2 * 64 * 56 * 56 * 64 * 9);
  const OpId bn = g.find("bn1/BatchNormalization");
  ASSERT_GE(bn, 0);
  EXPECT_EQ(g.op(bn).param_bytes, 2 * 64 * 4);  // scale and shift; running statistics are buffers
  const OpId flatten = g.find("Flatten");
  ASSERT_GE(flatten, 0);
  EXPECT_EQ(g.op(flatten).layer, "avgpool");  // unscoped: the producer's layer
  EXPECT_EQ(CountType(g, "add"), 8);
  EXPECT_EQ(CountType(g, "matmul"), 1);
}

TEST(ImportOnnx, AttentionRecurrentAndEmbeddingPatterns) {
  Graph t = Import(ReadFile(kOnnxDir + "transformer_small.onnx").value(), {.batch = 4}).value().graph;
  EXPECT_EQ(CountType(t, "attention_scores"), 2);
  EXPECT_EQ(CountType(t, "attention_context"), 2);
  EXPECT_EQ(CountType(t, "softmax"), 2);
  EXPECT_EQ(CountType(t, "layer_norm"), 4);
  EXPECT_EQ(CountType(t, "embedding"), 1);
  EXPECT_EQ(CountType(t, "batched_matmul"), 0);
  Graph s = Import(ReadFile(kOnnxDir + "gru_seq2seq.onnx").value(), {.batch = 4}).value().graph;
  EXPECT_EQ(CountType(s, "gru"), 2);
  EXPECT_EQ(CountType(s, "embedding"), 2);
  Graph l = Import(ReadFile(kOnnxDir + "lstm_lm.onnx").value(), {.batch = 4}).value().graph;
  EXPECT_EQ(CountType(l, "lstm"), 2);
  EXPECT_EQ(CountType(l, "dropout"), 1);
}

// --- small hand-built models ---------------------------------------------------------------------------
TEST(ImportOnnx, ShapeSubgraphFoldsAndFollowsTheBatch) {
  // y = Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])): only the reshape is placed.
  std::string m = Model({Node("Shape", {"x"}, {"s"}), ConstantNode("zero", {0}, true),
                         Node("Gather", {"s", "zero"}, {"n"}, "", {IntAttr("axis", 0)}), ConstantNode("axes", {0}),
                         Node("Unsqueeze", {"n", "axes"}, {"n1"}), ConstantNode("rest", {-1}),
                         Node("Concat", {"n1", "rest"}, {"target"}, "", {IntAttr("axis", 0)}),
                         Node("Reshape", {"x", "target"}, {"y"}, "flat/Reshape"), Node("Relu", {"y"}, {"z"}, "act/Relu")},
                        {Value("x", {-1, 4, 6})}, {Value("z", {-1, 24})});
  Expected<ImportResult> r = Import(m, {.batch = 3});
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Graph& g = r->graph;
  ASSERT_EQ(g.num_ops(), 3);
  EXPECT_EQ(g.op(0).type, "input");
  EXPECT_EQ(g.op(1).type, "reshape");
  EXPECT_EQ(g.op(1).shape, (std::vector<int64_t>{3, 24}));
  EXPECT_EQ(g.op(2).flops, 72.0);
  ASSERT_EQ(g.num_edges(), 2);
  EXPECT_EQ(g.edge(0).bytes, 3 * 24 * 4);
}

TEST(ImportOnnx, StaticWeightInputsAreParameters) {
  // Without symbolic dims, a graph input used only as a MatMul weight is a parameter.
  std::string m = Model({Node("MatMul", {"x", "w"}, {"y"}, "fc/MatMul")}, {Value("x", {2, 4}), Value("w", {4, 3})},
                        {Value("y", {2, 3})});
  Graph g = Import(m, {.batch = 5}).value().graph;
  ASSERT_EQ(g.num_ops(), 2);
  EXPECT_EQ(g.op(0).shape, (std::vector<int64_t>{5, 4}));
  EXPECT_EQ(g.op(1).type, "matmul");
  EXPECT_EQ(g.op(1).param_bytes, 48);
  EXPECT_DOUBLE_EQ(g.op(1).flops, 2.0 * 5 * 4 * 3);
}

TEST(ImportOnnx, UnknownOperatorWarnsWithZeroFlops) {
  std::string m = Model({Node("Relu", {"x"}, {"a"}), Node("Shrink", {"a"}, {"b"}, "odd"), Node("Relu", {"b"}, {"c"})},
                        {Value("x", {-1, 8})}, {Value("c", {-1, 8})});
  Expected<ImportResult> r = Import(m, {.batch = 2});
  ASSERT_TRUE(r.ok()) << r.error().message;
  const OpId odd = r->graph.find("odd");
  ASSERT_GE(odd, 0);
  EXPECT_EQ(r->graph.op(odd).flops, 0.0);
  EXPECT_EQ(r->graph.op(odd).type, "shrink");
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("'Shrink'"), std::string::npos);
  EXPECT_EQ(r->graph.num_edges(), 3);  // kept in the data flow
}

TEST(ImportOnnx, MalformedInputsAreOneLineErrors) {
  const std::string resnet = ReadFile(kOnnxDir + "resnet18.onnx").value();
  ExpectOneLineError(Import(resnet.substr(0, resnet.size() / 2)), "not an ONNX model");
  ExpectOneLineError(Import("GIF89a this is not a protobuf at all"), "not an ONNX model");
  ExpectOneLineError(Import(""), "not an ONNX model");
  const Proto relu = Node("Relu", {"x"}, {"y"});
  ExpectOneLineError(Import(Model({Node("Add", {"x", "b"}, {"a"}, "n1"), Node("Relu", {"a"}, {"b"}, "n2")},
                                  {Value("x", {-1, 2})}, {Value("b", {-1, 2})})),
                     "cyclic graph");
  ExpectOneLineError(Import(Model({Node("Add", {"x", "nope"}, {"y"})}, {Value("x", {-1, 2})}, {Value("y", {-1, 2})})),
                     "unknown tensor 'nope'");
  ExpectOneLineError(Import(Model({Node("MatMul", {"x", "w"}, {"y"})}, {Value("x", {-1, 4}), Value("w", {5, 3})},
                                  {Value("y", {-1, 3})})),
                     "shape inference failed");
  ExpectOneLineError(Import(Model({relu}, {Value("x", {-1, 0})}, {Value("y", {-1, 0})})), "must be > 0");
  ExpectOneLineError(Import(Model({Node("NoSuchOp", {"x"}, {"y"})}, {Value("x", {-1, 2})}, {Value("y", {-1, 2})})),
                     "invalid ONNX model");
  ExpectOneLineError(Import(Model({Node("Relu", {"x"}, {"y"}), Node("Relu", {"x"}, {"y"}, "again")},
                                  {Value("x", {-1, 2})}, {Value("y", {-1, 2})})),
                     "produced twice");
}

TEST(ImportOnnx, SymbolicDimsNeedSizes) {
  Proto dim_seq;
  dim_seq.Bytes(2, "seq");
  Proto dim_batch;
  dim_batch.Bytes(2, "batch");
  Proto dim_feat;
  dim_feat.Bytes(2, "feat");
  Proto shape;
  shape.Message(1, dim_batch).Message(1, dim_seq).Message(1, dim_feat);
  Proto tensor;
  tensor.Varint(1, kFloat).Message(2, shape);
  Proto type;
  type.Message(1, tensor);
  Proto x;
  x.Bytes(1, "x").Message(2, type);
  const std::string m = Model({Node("Relu", {"x"}, {"y"})}, {x}, {Value("y", {-1, -1, -1})});
  // Every missing size is asked for in the one line.
  ExpectOneLineError(Import(m, {.batch = 2}), "symbolic input dimensions need sizes: --dim seq=N, --dim feat=N");
  ImportOptions options{.batch = 2};
  options.dims["seq"] = 7;
  ExpectOneLineError(Import(m, options), "need sizes: --dim feat=N");
  options.dims["feat"] = 5;
  Graph g = Import(m, options).value().graph;
  EXPECT_EQ(g.op(1).shape, (std::vector<int64_t>{2, 7, 5}));
}

// IR 3 (ONNX's "light" models): initializers are also graph inputs, and every float initializer is replaced by a
// ConstantOfShape; they are constants, inference sees through them, and the generated weights are parameters:
// ResNet-50 has PyTorch's 25,557,032 and bvlc AlexNet Caffe's 60,965,224.
TEST(ImportOnnx, Ir3InitializerInputsAreConstants) {
  const std::string dir = std::string(DEVPLACE_SOURCE_DIR) + "/tests/data/real/onnx/";
  ImportOptions forward{.derive_training = false};
  Expected<ImportResult> resnet = ImportModelFile(dir + "light_resnet50.onnx", forward);
  ASSERT_TRUE(resnet.ok()) << resnet.error().message;
  EXPECT_EQ(resnet->graph.total_param_bytes(), 4 * 25557032);
  EXPECT_NEAR(resnet->graph.total_flops(), 8.2e9, 0.2e9);  // 4.1 GMACs
  Expected<ImportResult> alexnet = ImportModelFile(dir + "light_bvlc_alexnet.onnx", forward);
  ASSERT_TRUE(alexnet.ok()) << alexnet.error().message;
  EXPECT_EQ(alexnet->graph.total_param_bytes(), 4 * 60965224);
}

// Unsupported constructs name themselves in one line: string tensors by their type name, sequences whose
// structure is known only at run time, a model that only hands an input back.
TEST(ImportOnnx, UnsupportedConstructsSayWhat) {
  const std::string dir = std::string(DEVPLACE_SOURCE_DIR) + "/tests/data/real/onnx/";
  for (const auto& [file, fragment] :
       {std::pair{"simple_test_strnorm_model_monday_empty_output.onnx", "element type STRING is not supported"},
        {"simple_test_sequence_model8.onnx", "(SplitToSequence): split sizes 'Splits' are computed at run time"},
        {"simple_test_sequence_model2.onnx", "no node depends on the data inputs: nothing to place"}}) {
    Expected<ImportResult> r = ImportModelFile(dir + file);
    ASSERT_FALSE(r.ok()) << file;
    EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
    EXPECT_NE(r.error().message.find(fragment), std::string::npos) << r.error().message;
  }
}

// The first op of `type` in `g`, or -1.
OpId FirstOfType(const Graph& g, const std::string& type) {
  for (OpId i = 0; i < g.num_ops(); ++i)
    if (g.op(i).type == type) return i;
  return -1;
}

// Sequences of static structure (ONNX's backend "simple" models) become the tensor ops they amount to.
TEST(ImportOnnx, StaticSequencesAreLowered) {
  const std::string dir = std::string(DEVPLACE_SOURCE_DIR) + "/tests/data/real/onnx/";
  ImportOptions forward{.derive_training = false};
  for (const auto& [file, type, shape] :
       {std::tuple{"simple_test_sequence_model4.onnx", "concat", std::vector<int64_t>{2, 9, 4}},  // ConcatFromSequence
        {"simple_test_sequence_model5.onnx", "concat", std::vector<int64_t>{2, 3, 4, 3}},         // with new_axis
        {"simple_test_sequence_model6.onnx", "split", std::vector<int64_t>{2, 3, 4}},             // SplitToSequence
        {"simple_test_sequence_model7.onnx", "reshape", std::vector<int64_t>{3, 4}}}) {           // keepdims = 0
    Expected<ImportResult> r = ImportModelFile(dir + file, forward);
    ASSERT_TRUE(r.ok()) << r.error().message;
    const OpId id = FirstOfType(r->graph, type);
    ASSERT_GE(id, 0) << file;
    EXPECT_EQ(r->graph.op(id).shape, shape) << file;
  }
  // SplitToSequence(x[2,3,4], axis 0, keepdims 0): a Split into two pieces, each squeezed to 3x4.
  Expected<ImportResult> at = ImportModelFile(dir + "simple_test_sequence_model7.onnx", forward);
  ASSERT_TRUE(at.ok());
  int squeezes = 0;
  for (OpId i = 0; i < at->graph.num_ops(); ++i) squeezes += at->graph.op(i).type == "reshape";
  EXPECT_EQ(squeezes, 2);
}

// ai.onnx.preview.training's Gradient: outputs typed as its xs, FLOPs twice those of the ops from xs to y.
TEST(ImportOnnx, GradientNodeOfThePreviewTrainingDomain) {
  const std::string dir = std::string(DEVPLACE_SOURCE_DIR) + "/tests/data/real/onnx/";
  Expected<ImportResult> r =
      ImportModelFile(dir + "simple_test_gradient_of_add_and_mul.onnx", {.derive_training = false});
  ASSERT_TRUE(r.ok()) << r.error().message;
  const OpId id = FirstOfType(r->graph, "gradient");
  ASSERT_GE(id, 0);
  EXPECT_EQ(r->graph.op(id).shape, std::vector<int64_t>{});
  EXPECT_EQ(r->graph.op(id).flops, 2.0 * (1 + 1));  // d = (a + b) * a on scalars
  EXPECT_TRUE(r->warnings.empty());
}

// A shape computed from run-time values (Expand's target is a graph input) takes the model's declared static
// shape, with a warning; not when --batch replaced the model's static batch, which the declaration predates.
TEST(ImportOnnx, RunTimeShapeTakesTheDeclaredShape) {
  const std::string file = std::string(DEVPLACE_SOURCE_DIR) + "/tests/data/real/onnx/simple_test_expand_shape_model3.onnx";
  Expected<ImportResult> r = ImportModelFile(file, {.derive_training = false});
  ASSERT_TRUE(r.ok()) << r.error().message;
  const OpId id = r->graph.find("test");
  ASSERT_GE(id, 0);
  EXPECT_EQ(r->graph.op(id).shape, (std::vector<int64_t>{3, 3, 3}));
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("the model's declared shape 3x3x3 is used"), std::string::npos) << r->warnings[0];
  Expected<ImportResult> batch = ImportModelFile(file, {.batch = 2, .derive_training = false});
  ASSERT_FALSE(batch.ok());
  EXPECT_NE(batch.error().message.find("depends on the values of its input 'shape'"), std::string::npos)
      << batch.error().message;
}

// External data is resolved against the model file's directory, whatever the working directory: the Reshape
// target lives in model_ext.data and must be read to fold. tests/datasets/onnx_external/ was written by
// python3-onnx 1.12: Conv(x[1,3,8,8], W[8,3,3,3]) -> Reshape(shape=[1,-1]), saved with
// onnx.save_model(m, "model_ext.onnx", save_as_external_data=True, location="model_ext.data", size_threshold=0).
TEST(ImportOnnx, ExternalDataRelativeToTheModelFile) {
  const std::string dir = std::string(DEVPLACE_SOURCE_DIR) + "/tests/datasets/onnx_external";
  ImportOptions forward{.derive_training = false};
  Expected<ImportResult> r = ImportModelFile(dir + "/model_ext.onnx", forward);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Graph& g = r->graph;
  EXPECT_EQ(g.op(g.num_ops() - 1).shape, (std::vector<int64_t>{1, 8 * 6 * 6}));
  EXPECT_EQ(g.total_param_bytes(), 8 * 3 * 3 * 3 * 4);
  // In memory, the directory comes from the options; without it the working directory is searched, and the
  // error names the tensor and the file.
  const std::string bytes = ReadFile(dir + "/model_ext.onnx").value();
  forward.model_dir = dir;
  EXPECT_TRUE(ImportOnnxModel(bytes, "m.onnx", "m", forward).ok());
  forward.model_dir = "/nonexistent";
  Expected<ImportResult> missing = ImportOnnxModel(bytes, "m.onnx", "m", forward);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("m.onnx: tensor 'W': external data 'model_ext.data': cannot open /nonexistent/model_ext.data"), std::string::npos)
      << missing.error().message;
}

// External data must stay inside the model's directory: an absolute location, one with "..", and a file that is a
// symbolic link to somewhere outside are refused with one line naming the tensor (the location string is
// replaced in the protobuf by one of the same length, so the model stays well-formed).
TEST(ImportOnnx, ExternalDataOutsideTheModelDirectoryIsRefused) {
  namespace fs = std::filesystem;
  const std::string src = std::string(DEVPLACE_SOURCE_DIR) + "/tests/datasets/onnx_external";
  const fs::path dir = fs::path(::testing::TempDir()) / ("onnx-escape-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "model");
  const std::string bytes = ReadFile(src + "/model_ext.onnx").value();
  ImportOptions forward{.model_dir = (dir / "model").string(), .derive_training = false};
  for (const char* location : {"/tmp/model.dat", "../model_e.dat", "a/../../xx.dat"}) {
    std::string moved = bytes;
    const size_t at = moved.find("model_ext.data");
    ASSERT_NE(at, std::string::npos);
    moved.replace(at, 14, location);
    Expected<ImportResult> r = ImportOnnxModel(moved, "m.onnx", "m", forward);
    ASSERT_FALSE(r.ok()) << location;
    EXPECT_EQ(r.error().message, "m.onnx: tensor 'W': external data '" + std::string(location) +
                                     "': the location must be a relative path inside the model's directory");
  }
  // A link inside the folder to the data outside it.
  fs::copy_file(src + "/model_ext.data", dir / "outside.data");
  fs::create_symlink(dir / "outside.data", dir / "model" / "model_ext.data");
  Expected<ImportResult> linked = ImportOnnxModel(bytes, "m.onnx", "m", forward);
  ASSERT_FALSE(linked.ok());
  EXPECT_EQ(linked.error().message, "m.onnx: tensor 'W': external data 'model_ext.data': leads outside the model's "
                                    "directory (to " + (dir / "outside.data").string() + ", through a symbolic link)");
  // A link that stays inside is followed.
  fs::remove(dir / "model" / "model_ext.data");
  fs::rename(dir / "outside.data", dir / "model" / "real.data");
  fs::create_symlink("real.data", dir / "model" / "model_ext.data");
  EXPECT_TRUE(ImportOnnxModel(bytes, "m.onnx", "m", forward).ok());
  fs::remove_all(dir);
}

// Current exporters write IR 9+ and opset 18+, newer than Debian's libonnx 1.12 (IR 8, opset 17): the nodes whose
// schemas changed are rewritten to their opset-17 forms. The reproducers of tests/datasets/onnx_reproducers/
// are written by its make.py with python3-onnx.
const std::string kReproducers = std::string(DEVPLACE_SOURCE_DIR) + "/tests/datasets/onnx_reproducers/";
TEST(ImportOnnx, Opset18AndIr9Models) {
  ImportOptions forward{.batch = 2, .derive_training = false};
  Expected<ImportResult> r =
      ImportModelFile(kReproducers + "opset18_ir9.onnx", forward);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Graph& g = r->graph;
  EXPECT_EQ(g.op(g.find("mean")).shape, (std::vector<int64_t>{2, 4, 1, 1}));
  EXPECT_EQ(g.op(g.find("up")).shape, (std::vector<int64_t>{2, 4, 8, 8}));
  EXPECT_EQ(g.op(g.find("conv")).flops, 2.0 * 2 * 8 * 4 * 4 * (8 * 3 * 3));
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("IR 9, opset 18 read as IR 8, opset 17"), std::string::npos) << r->warnings[0];
}

// Squeeze without axes (opset < 13) squeezes every extent of 1; an LSTM may omit its first output.
TEST(ImportOnnx, SqueezeWithoutAxesAndLstmWithoutY) {
  ImportOptions forward{.derive_training = false};
  Expected<ImportResult> sq = ImportModelFile(kReproducers + "squeeze_no_axes_opset11.onnx", forward);
  ASSERT_TRUE(sq.ok()) << sq.error().message;
  EXPECT_EQ(sq->graph.op(sq->graph.find("sq")).shape, (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(sq->graph.op(sq->graph.find("unsq")).shape, (std::vector<int64_t>{1, 5, 3}));
  Expected<ImportResult> lstm = ImportModelFile(kReproducers + "lstm_without_y.onnx", forward);
  ASSERT_TRUE(lstm.ok()) << lstm.error().message;
  const OpId id = lstm->graph.find("lstm");
  ASSERT_GE(id, 0);
  EXPECT_EQ(lstm->graph.op(id).type, "lstm");
  EXPECT_EQ(lstm->graph.op(id).param_bytes, (16 * 3 + 16 * 4) * 4);
}

// A static batch spelled out in a Reshape target cannot follow --batch: one line, not a wrong graph.
TEST(ImportOnnx, BatchBakedIntoReshapeIsRefusedUnderBatch) {
  EXPECT_TRUE(ImportModelFile(kReproducers + "baked_batch.onnx").ok());
  Expected<ImportResult> r = ImportModelFile(kReproducers + "baked_batch.onnx", {.batch = 8});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("node 'flatten' (Reshape): its target shape bakes in the model's batch size 1"),
            std::string::npos)
      << r.error().message;
}

TEST(ImportOnnx, ConvolutionRankMismatchIsRefusedBeforeOnnxInference) {
  Expected<ImportResult> r = ImportModelFile(kReproducers + "conv_rank_mismatch.onnx");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("node 'conv' (Conv): input rank 3 and weight rank 4 differ"), std::string::npos)
      << r.error().message;
}

TEST(ImportModelFile, DispatchesOnContent) {
  Expected<ImportResult> missing = ImportModelFile("/nonexistent/model.onnx");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("/nonexistent/model.onnx"), std::string::npos);
  Expected<ImportResult> onnx = ImportModelFile(kOnnxDir + "alexnet.onnx");
  ASSERT_TRUE(onnx.ok()) << onnx.error().message;
  EXPECT_EQ(onnx->format, "onnx");
  EXPECT_EQ(onnx->graph.name(), "alexnet");
}

}  // namespace
}  // namespace devplace
