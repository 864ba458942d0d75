// Internal to the ONNX importer (datasets/import/onnx_*.cc): tensor facts gathered from the model, the small
// constant evaluator that folds shape computations, shape inference, and the operator table.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <onnx/onnx_pb.h>

#include "core/graph.h"
#include "core/status.h"

namespace devplace::onnx_import {

// Tensors with more elements than this are never evaluated at import time (shape tensors are tiny).
inline constexpr int64_t kMaxFoldElements = 1 << 16;

// Product of non-negative extents, or -1 when one is negative or the product of the non-zero extents exceeds
// `limit` (so that no partial product of the extents can overflow, even in an empty tensor).
int64_t CheckedCount(const std::vector<int64_t>& dims, int64_t limit);

// A tensor value known at import time. Integral and bool tensors keep `ints`, floating ones `reals`.
struct ConstValue {
  int32_t elem_type = 0;  // onnx::TensorProto_DataType
  std::vector<int64_t> shape;
  std::vector<int64_t> ints;
  std::vector<double> reals;

  bool is_int() const;
  int64_t size() const;
};

// What inference knows about a tensor: element type and shape (-1 for an unknown extent).
struct TensorInfo {
  int32_t elem_type = 0;
  bool has_shape = false;
  std::vector<int64_t> dims;

  // Shape known with every extent >= 0.
  bool is_static() const;
};

using ValueMap = std::unordered_map<std::string, ConstValue>;
using InfoMap = std::unordered_map<std::string, TensorInfo>;

// Whether `elem_type` is an integral or bool ONNX element type.
bool IsIntegralType(int32_t elem_type);
// Size in bytes of one element, or 0 for types devplace cannot size (strings, complex, unknown).
int64_t ElementBytes(int32_t elem_type);
// ONNX's name of an element type ("STRING", "FLOAT16"), or "unknown (N)".
std::string ElementTypeName(int32_t elem_type);
// The devplace dtype with the same element size (and kind where one exists). Precondition: ElementBytes > 0.
DType ToDType(int32_t elem_type);

// Models newer than Debian's libonnx 1.12 (IR > 8, opset > 17): rewrites the nodes whose schemas changed since
// opset 17 to their opset-17 forms (ReduceX axes from an input back to an attribute, Split's num_outputs, Resize's
// and Pad's new defaults, Cast's saturate, ...) and says opset 17 and IR 8, with one warning. Errors name the node
// whose form opset 17 cannot express.
Status DowngradeToKnownOpset(onnx::ModelProto* model, const std::string& source, std::vector<std::string>* warnings);

// The integer values of a constant tensor of `g` (an initializer or a Constant node's value) named `name`;
// false when it is neither or not integral.
bool ConstantInts(const onnx::GraphProto& g, const std::string& name, std::vector<int64_t>* out);

// Lowers sequence values whose structure is known at import time to the tensor ops they amount to, so that
// the rest of the importer sees tensors only: SequenceEmpty/Construct/Insert/Erase (constant positions) build
// lists of tensors, SplitToSequence becomes a Split (plus Squeezes without keepdims; constant split sizes or a
// statically known axis extent), SequenceAt an Identity, SequenceLength a Constant and ConcatFromSequence a
// Concat (after Unsqueezes with new_axis). The graph's nodes must be in topological order. Returns whether
// anything was lowered; errors name the node whose sequence is only known at run time (computed positions,
// run-time split sizes, sequences from Loop or graph inputs, other readers).
Expected<bool> LowerSequences(onnx::ModelProto* model, const std::string& source);

// Reads the external data of small initializers (those the evaluator may fold) from files relative to
// `model_dir` (empty: the working directory), then runs ONNX's checker with that directory. Errors name the
// tensor and the file.
Status PrepareAndCheck(onnx::ModelProto* model, const std::string& model_dir, const std::string& source);

// Reads an initializer or Constant tensor. Returns false (no error) when it is too large to fold or of a type
// the evaluator does not handle; an Error when the tensor is malformed (data size inconsistent with dims).
Expected<bool> ReadTensor(const onnx::TensorProto& tensor, const std::string& source, ConstValue* out);
// An ONNX tensor holding `value`, named `name`.
onnx::TensorProto WriteTensor(const ConstValue& value, const std::string& name);

// Evaluates `node` when every input it reads has a known value (Shape and Size only need the input's static
// shape from `infos`). Returns false when the node cannot be evaluated; fills one value per output otherwise.
bool EvaluateNode(const onnx::NodeProto& node, const ValueMap& values, const InfoMap& infos,
                  std::vector<ConstValue>* outputs);

// The fully static shapes the model declares for its tensors (value_info and graph outputs).
InfoMap DeclaredShapes(const onnx::GraphProto& g);

// Runs ONNX shape inference on `model` (whose data inputs already carry concrete dims) to a fixed point with
// the evaluator: nodes in `foldable` (shape-only and constant nodes) whose values become computable are
// replaced by initializers, so that Reshape/Expand/Slice targets are known, and inference runs again.
// `order` is a topological order of model.graph().node(). When nothing more can be folded, tensors still
// untyped get the type of Gradient's `xs` (ai.onnx.preview.training) or, for standard-domain nodes, their static
// shape in `declared` (the model's own value_info and outputs, when they still hold), with one warning each, and
// inference runs again. Fills `infos` (every tensor inference typed) and `values` (every folded tensor). Errors
// are ONNX's inference failures, as one line naming `source`.
Status InferShapes(const onnx::ModelProto& model, const std::vector<int>& order,
                   const std::unordered_set<int>& foldable, const InfoMap& declared, const std::string& source,
                   InfoMap* infos, ValueMap* values, std::vector<std::string>* warnings);

// Inputs of an op that hold its weights (Conv W and B, Gemm B and C, BatchNormalization's four, recurrent
// W/R/B, an embedding table, ...): a graph input consumed only at such slots is a parameter, not data.
bool IsWeightSlot(const std::string& op_type, int input_index);
// BatchNormalization's running mean and variance: weight slots that are buffers, not trainable parameters.
bool IsBufferSlot(const std::string& op_type, int input_index);

// What the importer knows about one node when mapping it to an op. Entries of `inputs`/`outputs` are null for
// absent optional tensors; `input_is_data[i]` says whether input i is computed from the model's data inputs
// (otherwise it is a weight or a constant).
struct NodeView {
  const onnx::NodeProto* node = nullptr;
  std::vector<const TensorInfo*> inputs;
  std::vector<char> input_is_data;
  std::vector<const TensorInfo*> outputs;
  bool input0_from_softmax = false;  // input 0 is produced by a Softmax (possibly through a Dropout)
  bool feeds_softmax = false;        // output 0 is consumed by a Softmax (possibly through a Mul/Div/Add scaling)
};

// The devplace op a node maps to. `known` is false for operators without a rule (type is then the ONNX
// op_type in lower case, FLOPs 0). `shape` is the op's output shape.
struct OpRule {
  bool known = true;
  std::string type;
  double flops = 0.0;
  std::vector<int64_t> shape;
  std::vector<PartitionDim> dims;
};

// Maps a node whose tensors all have static shapes. Errors name the node (e.g. inconsistent Conv weights).
Expected<OpRule> MapNode(const NodeView& view, const std::string& source);

// Attribute helpers (defaults when the attribute is absent or of another type).
int64_t AttrInt(const onnx::NodeProto& node, const std::string& name, int64_t fallback);
std::string AttrString(const onnx::NodeProto& node, const std::string& name, const std::string& fallback);
std::vector<int64_t> AttrInts(const onnx::NodeProto& node, const std::string& name);
std::vector<std::string> AttrStrings(const onnx::NodeProto& node, const std::string& name);
bool HasAttr(const onnx::NodeProto& node, const std::string& name);

// "node 'name' (OpType)" for messages.
std::string Describe(const onnx::NodeProto& node);

}  // namespace devplace::onnx_import
