// Sequence values in ONNX models (opset 11+): lowered to the tensor operations they amount to when their
// structure is known at import time (see LowerSequences in onnx_internal.h).
#include <exception>
#include <set>

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include "datasets/import/onnx_internal.h"

namespace devplace::onnx_import {

namespace {

bool IsSequenceOp(const onnx::NodeProto& node) {
  static const std::set<std::string> kOps = {"SequenceEmpty",    "SequenceConstruct", "SequenceInsert",
                                             "SequenceErase",    "SequenceAt",        "SequenceLength",
                                             "SplitToSequence",  "ConcatFromSequence"};
  return (node.domain().empty() || node.domain() == "ai.onnx") && kOps.count(node.op_type());
}

// The static extents of every tensor ONNX's inference types on a copy of `model` (-1 where unknown).
std::unordered_map<std::string, std::vector<int64_t>> InferredDims(const onnx::ModelProto& model) {
  onnx::ModelProto copy = model;
  std::unordered_map<std::string, std::vector<int64_t>> dims;
  try {
    onnx::ShapeInferenceOptions options(/*check_type=*/false, /*error_mode=*/0, /*data_prop=*/false);
    onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception&) {
    return dims;  // what inference could not type is reported by the caller as unknown
  }
  auto record = [&](const onnx::ValueInfoProto& v) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
    std::vector<int64_t>& d = dims[v.name()];
    for (const auto& x : v.type().tensor_type().shape().dim()) d.push_back(x.has_dim_value() ? x.dim_value() : -1);
  };
  for (const auto& v : copy.graph().input()) record(v);
  for (const auto& v : copy.graph().value_info()) record(v);
  for (const auto& t : copy.graph().initializer()) dims[t.name()].assign(t.dims().begin(), t.dims().end());
  return dims;
}

class Lowering {
 public:
  Lowering(onnx::ModelProto* model, const std::string& source, int64_t opset)
      : g_(*model->mutable_graph()), source_(source), opset_(opset), dims_(InferredDims(*model)) {}

  Status Run();

 private:
  Status LowerNode(const onnx::NodeProto& node);
  Status SplitToSequence(const onnx::NodeProto& node, std::vector<std::string>* elements);
  void ConcatFromSequence(const onnx::NodeProto& node, const std::vector<std::string>& elements);
  // The sequence read by input `slot` of `node`, or an error when it is not one built by lowered nodes.
  Expected<const std::vector<std::string>*> Sequence(const onnx::NodeProto& node, int slot) const;
  // Constant integer position at input `slot` normalised against `count` (ONNX allows [-count, count + extra)),
  // `fallback` when the input is absent.
  Expected<int64_t> Position(const onnx::NodeProto& node, int slot, int64_t count, int64_t extra, int64_t fallback) const;
  onnx::NodeProto* Emit(const std::string& op, const std::string& name, std::vector<std::string> inputs,
                        std::vector<std::string> outputs);
  // Axes or sizes for Split/Squeeze/Unsqueeze: an attribute before opset 13, an int64 input from 13 on.
  void IntsOperand(onnx::NodeProto* node, const std::string& attr, const std::vector<int64_t>& values);
  std::string Fresh(const std::string& base) { return base + "/devplace_seq_" + std::to_string(counter_++); }
  Error Fail(const onnx::NodeProto& node, const std::string& what) const {
    return Error{source_ + ": " + Describe(node) + ": " + what};
  }

  onnx::GraphProto& g_;
  const std::string& source_;
  const int64_t opset_;
  const std::unordered_map<std::string, std::vector<int64_t>> dims_;
  std::unordered_map<std::string, std::vector<std::string>> sequences_;  // sequence tensor -> element tensors
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes_;
  int counter_ = 0;
};

onnx::NodeProto* Lowering::Emit(const std::string& op, const std::string& name, std::vector<std::string> inputs,
                                std::vector<std::string> outputs) {
  onnx::NodeProto* node = nodes_.Add();
  node->set_op_type(op);
  node->set_name(name);
  for (std::string& in : inputs) node->add_input(std::move(in));
  for (std::string& out : outputs) node->add_output(std::move(out));
  return node;
}

void Lowering::IntsOperand(onnx::NodeProto* node, const std::string& attr, const std::vector<int64_t>& values) {
  if (opset_ < 13) {
    onnx::AttributeProto* a = node->add_attribute();
    a->set_name(attr);
    a->set_type(onnx::AttributeProto_AttributeType_INTS);
    for (int64_t v : values) a->add_ints(v);
    return;
  }
  ConstValue value;
  value.elem_type = onnx::TensorProto_DataType_INT64;
  value.shape = {static_cast<int64_t>(values.size())};
  value.ints = values;
  const std::string name = Fresh(node->name() + "/" + attr);
  *g_.add_initializer() = WriteTensor(value, name);
  node->add_input(name);
}

Expected<const std::vector<std::string>*> Lowering::Sequence(const onnx::NodeProto& node, int slot) const {
  auto it = slot < node.input_size() ? sequences_.find(node.input(slot)) : sequences_.end();
  if (it == sequences_.end())
    return Fail(node, "sequence '" + (slot < node.input_size() ? node.input(slot) : std::string()) +
                          "' is not built by SequenceEmpty/SequenceConstruct/SequenceInsert/SequenceErase/"
                          "SplitToSequence, so its elements are not known at import time");
  return &it->second;
}

Expected<int64_t> Lowering::Position(const onnx::NodeProto& node, int slot, int64_t count, int64_t extra,
                                     int64_t fallback) const {
  std::vector<int64_t> v = {fallback};
  if (slot < node.input_size() && !node.input(slot).empty() &&
      (!ConstantInts(g_, node.input(slot), &v) || v.size() != 1))
    return Fail(node, "position '" + node.input(slot) + "' is computed at run time (only constant positions are supported)");
  const int64_t pos = v[0] < 0 ? v[0] + count : v[0];
  if (pos < 0 || pos >= count + extra)
    return Fail(node, "position " + std::to_string(v[0]) + " is out of range for a sequence of " +
                          std::to_string(count) + " tensors");
  return pos;
}

Status Lowering::SplitToSequence(const onnx::NodeProto& node, std::vector<std::string>* elements) {
  auto it = dims_.find(node.input(0));
  const std::vector<int64_t>* shape = it == dims_.end() ? nullptr : &it->second;
  int64_t axis = AttrInt(node, "axis", 0);
  const int64_t rank = shape ? static_cast<int64_t>(shape->size()) : -1;
  if (shape && axis < 0) axis += rank;
  if (shape && (axis < 0 || axis >= rank)) return Fail(node, "axis out of range");
  const int64_t extent = shape ? (*shape)[axis] : -1;
  std::vector<int64_t> sizes;
  const bool has_split = node.input_size() > 1 && !node.input(1).empty();
  if (has_split && !ConstantInts(g_, node.input(1), &sizes))
    return Fail(node, "split sizes '" + node.input(1) + "' are computed at run time (only constant sizes are supported)");
  const auto split_dims = has_split ? dims_.find(node.input(1)) : dims_.end();
  const bool scalar_split = split_dims != dims_.end() && split_dims->second.empty();
  if (!has_split || scalar_split) {
    if (extent < 0)
      return Fail(node, "the extent of the split axis of '" + node.input(0) + "' is not known at import time");
    const int64_t chunk = has_split ? (sizes.size() == 1 ? sizes[0] : 0) : 1;
    if (chunk <= 0) return Fail(node, "split size must be > 0");
    if (extent / chunk >= kMaxFoldElements)
      return Fail(node, "splits into more than " + std::to_string(kMaxFoldElements) + " tensors");
    sizes.clear();
    for (int64_t done = 0; done < extent; done += chunk) sizes.push_back(std::min(chunk, extent - done));
  }
  if (sizes.empty()) return Fail(node, "the split makes an empty sequence");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0 || s > (int64_t{1} << 40)) return Fail(node, "split sizes must be in [0, 2^40]");
    total += s;
  }
  if (extent >= 0 && total != extent)
    return Fail(node, "split sizes add up to " + std::to_string(total) + ", not the axis extent " + std::to_string(extent));
  std::vector<std::string> parts;
  for (size_t k = 0; k < sizes.size(); ++k) parts.push_back(Fresh(node.output(0)));
  onnx::NodeProto* split = Emit("Split", node.name(), {node.input(0)}, parts);
  onnx::AttributeProto* a = split->add_attribute();
  a->set_name("axis");
  a->set_type(onnx::AttributeProto_AttributeType_INT);
  a->set_i(axis);
  IntsOperand(split, "split", sizes);
  if (has_split || AttrInt(node, "keepdims", 1) != 0) {
    *elements = std::move(parts);
    return Status::Ok();
  }
  for (const std::string& part : parts) {  // keepdims = 0 (size-1 pieces): the split axis goes
    elements->push_back(Fresh(node.output(0)));
    IntsOperand(Emit("Squeeze", node.name() + "/squeeze", {part}, {elements->back()}), "axes", {axis});
  }
  return Status::Ok();
}

void Lowering::ConcatFromSequence(const onnx::NodeProto& node, const std::vector<std::string>& elements) {
  const int64_t axis = AttrInt(node, "axis", 0);
  std::vector<std::string> inputs = elements;
  if (AttrInt(node, "new_axis", 0) != 0) {  // stack: every element gets the new axis first
    for (std::string& in : inputs) {
      const std::string expanded = Fresh(node.output(0));
      IntsOperand(Emit("Unsqueeze", node.name() + "/unsqueeze", {in}, {expanded}), "axes", {axis});
      in = expanded;
    }
  }
  onnx::NodeProto* concat = Emit("Concat", node.name(), inputs, {node.output(0)});
  onnx::AttributeProto* a = concat->add_attribute();
  a->set_name("axis");
  a->set_type(onnx::AttributeProto_AttributeType_INT);
  a->set_i(axis);
}

Status Lowering::LowerNode(const onnx::NodeProto& node) {
  const std::string& op = node.op_type();
  std::vector<std::string> elements;
  for (int i = 0; i < node.input_size(); ++i)
    if (node.input(i).empty() && (op == "SequenceConstruct" || (op == "SequenceInsert" && i == 1)))
      return Fail(node, "an element of the sequence is missing");
  if (op == "SequenceConstruct") {
    elements.assign(node.input().begin(), node.input().end());
  } else if (op == "SequenceInsert" || op == "SequenceErase") {
    Expected<const std::vector<std::string>*> seq = Sequence(node, 0);
    if (!seq.ok()) return seq.error();
    elements = **seq;
    const int64_t n = static_cast<int64_t>(elements.size());
    const bool insert = op == "SequenceInsert";
    Expected<int64_t> pos = Position(node, insert ? 2 : 1, n, insert ? 1 : 0, insert ? n : n - 1);
    if (!pos.ok()) return pos.error();
    if (insert)
      elements.insert(elements.begin() + *pos, node.input(1));
    else
      elements.erase(elements.begin() + *pos);
  } else if (op == "SplitToSequence") {
    if (Status s = SplitToSequence(node, &elements); !s.ok()) return s;
  } else if (op != "SequenceEmpty") {  // the readers: At, Length, ConcatFromSequence
    Expected<const std::vector<std::string>*> seq = Sequence(node, 0);
    if (!seq.ok()) return seq.error();
    const int64_t n = static_cast<int64_t>((*seq)->size());
    if (op == "SequenceAt") {
      Expected<int64_t> pos = Position(node, 1, n, 0, 0);
      if (!pos.ok()) return pos.error();
      Emit("Identity", node.name(), {(**seq)[*pos]}, {node.output(0)});
    } else if (op == "SequenceLength") {
      onnx::NodeProto* c = Emit("Constant", node.name(), {}, {node.output(0)});
      onnx::AttributeProto* a = c->add_attribute();
      a->set_name("value");
      a->set_type(onnx::AttributeProto_AttributeType_TENSOR);
      *a->mutable_t() = WriteTensor(ConstValue{onnx::TensorProto_DataType_INT64, {}, {n}, {}}, "");
    } else {
      if (n == 0) return Fail(node, "concatenates an empty sequence");
      ConcatFromSequence(node, **seq);
    }
    return Status::Ok();
  }
  sequences_[node.output(0)] = std::move(elements);
  return Status::Ok();
}

Status Lowering::Run() {
  for (const auto& in : g_.input())
    if (!in.type().has_tensor_type())
      return Error{source_ + ": input '" + in.name() + "' is a sequence, map or optional value: not supported"};
  for (const onnx::NodeProto& node : g_.node()) {
    if (IsSequenceOp(node)) {
      if (Status s = LowerNode(node); !s.ok()) return s;
      continue;
    }
    for (const std::string& in : node.input())
      if (sequences_.count(in))
        return Fail(node, "reads the sequence '" + in + "' (only SequenceAt, SequenceLength, SequenceInsert, "
                          "SequenceErase and ConcatFromSequence are supported as its readers)");
    *nodes_.Add() = node;
  }
  g_.mutable_node()->Swap(&nodes_);
  auto* outputs = g_.mutable_output();  // a sequence output is its elements, computed anyway
  for (int i = outputs->size() - 1; i >= 0; --i)
    if (sequences_.count((*outputs)[i].name())) outputs->DeleteSubrange(i, 1);
  return Status::Ok();
}

}  // namespace

Expected<bool> LowerSequences(onnx::ModelProto* model, const std::string& source) {
  bool any = false;
  for (const auto& node : model->graph().node()) any = any || IsSequenceOp(node);
  if (!any) return false;
  int64_t opset = 1;
  for (const auto& o : model->opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  Lowering lowering(model, source, opset);
  if (Status s = lowering.Run(); !s.ok()) return s.error();
  return true;
}

}  // namespace devplace::onnx_import
