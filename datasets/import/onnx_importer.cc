// The ONNX importer: parse and check the model, decide which graph inputs are data and which are weights, set
// the batch, infer shapes (folding shape computations), map every data-dependent node to an op and derive the
// training graph. The rules are documented in docs/importers.md.
#include <algorithm>
#include <climits>
#include <exception>
#include <map>
#include <queue>
#include <set>

#include "datasets/import/importers.h"
#include "datasets/import/one_line.h"
#include "datasets/import/onnx_internal.h"

namespace devplace {

namespace {

using namespace onnx_import;  // NOLINT: the importer's own internals

// Tensors of the graph and who produces and consumes them.
struct Tensors {
  std::unordered_map<std::string, int> producer;                         // node index
  std::unordered_map<std::string, std::vector<std::pair<int, int>>> uses;  // (node, input slot)
  std::unordered_set<std::string> initializers;
  std::unordered_set<std::string> graph_inputs;  // not initialized
};

// Checks that every tensor has one producer and every node input exists, and puts the nodes in a topological
// order (the checker and shape inference need it). Errors: "tensor produced twice", "unknown tensor", "cycle".
Status SortAndIndex(onnx::GraphProto* g, const std::string& source, Tensors* t) {
  for (const auto& init : g->initializer()) t->initializers.insert(init.name());
  for (const auto& in : g->input())
    if (!t->initializers.count(in.name())) t->graph_inputs.insert(in.name());
  const int n = g->node_size();
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < n; ++i) {
    for (const std::string& out : g->node(i).output()) {
      if (out.empty()) continue;
      if (t->initializers.count(out) || t->graph_inputs.count(out) || !producer.emplace(out, i).second)
        return Error{source + ": tensor '" + out + "' is produced twice (by " + Describe(g->node(i)) + " and before)"};
    }
  }
  std::vector<int> indegree(n, 0);
  std::vector<std::vector<int>> next(n);
  for (int i = 0; i < n; ++i) {
    for (const std::string& in : g->node(i).input()) {
      if (in.empty() || t->initializers.count(in) || t->graph_inputs.count(in)) continue;
      auto it = producer.find(in);
      if (it == producer.end())
        return Error{source + ": " + Describe(g->node(i)) + " reads unknown tensor '" + in +
                     "' (no node, initializer or graph input produces it)"};
      next[it->second].push_back(i);
      ++indegree[i];
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;  // keep the file's order where it is valid
  for (int i = 0; i < n; ++i)
    if (indegree[i] == 0) ready.push(i);
  std::vector<int> order;
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int j : next[i])
      if (--indegree[j] == 0) ready.push(j);
  }
  if (static_cast<int>(order.size()) != n) {
    for (int i = 0; i < n; ++i)
      if (indegree[i] > 0) return Error{source + ": cyclic graph: " + Describe(g->node(i)) + " is on a cycle"};
  }
  google::protobuf::RepeatedPtrField<onnx::NodeProto> sorted;
  for (int i : order) *sorted.Add() = std::move(*g->mutable_node(i));
  g->mutable_node()->Swap(&sorted);
  for (int i = 0; i < n; ++i) {
    for (const std::string& out : g->node(i).output())
      if (!out.empty()) t->producer[out] = i;
    for (int s = 0; s < g->node(i).input_size(); ++s)
      if (!g->node(i).input(s).empty()) t->uses[g->node(i).input(s)].push_back({i, s});
  }
  return Status::Ok();
}

bool HasSymbolicDim(const onnx::ValueInfoProto& v) {
  for (const auto& d : v.type().tensor_type().shape().dim())
    if (!d.has_dim_value()) return true;
  return false;
}

bool IsFloatType(int32_t t) {
  return t == onnx::TensorProto_DataType_FLOAT || t == onnx::TensorProto_DataType_FLOAT16 ||
         t == onnx::TensorProto_DataType_BFLOAT16 || t == onnx::TensorProto_DataType_DOUBLE;
}

// The data inputs (the rest of the graph inputs that have no initializer are weights): with symbolic dims in
// the model, the inputs that have one; otherwise the inputs not consumed only at weight slots.
std::set<std::string> DataInputs(const onnx::GraphProto& g, const Tensors& t) {
  bool symbolic = false;
  for (const auto& in : g.input())
    if (t.graph_inputs.count(in.name()) && HasSymbolicDim(in)) symbolic = true;
  std::set<std::string> data;
  for (const auto& in : g.input()) {
    if (!t.graph_inputs.count(in.name())) continue;
    bool weight = IsFloatType(in.type().tensor_type().elem_type()) && !HasSymbolicDim(in);
    if (weight && !symbolic) {
      auto it = t.uses.find(in.name());
      weight = it != t.uses.end();
      if (weight)
        for (auto [node, slot] : it->second) weight = weight && IsWeightSlot(g.node(node).op_type(), slot);
    }
    if (!weight) data.insert(in.name());
  }
  return data;
}

// Gives every data input concrete dims: the batch dimension from options.batch (or 1 with a warning when it
// is symbolic), other symbolic dims from options.dims. `static_batch` receives the model's own batch when
// options.batch replaced a static one (else 0).
Status SetInputDims(onnx::GraphProto* g, const std::set<std::string>& data, const ImportOptions& options,
                    const std::string& source, std::vector<std::string>* warnings, int64_t* static_batch) {
  std::string batch_symbol;
  bool symbolic = false;
  for (const auto& in : g->input()) {
    if (!data.count(in.name())) continue;
    const auto& dims = in.type().tensor_type().shape().dim();
    for (int d = 0; d < dims.size(); ++d) {
      if (dims[d].has_dim_value()) continue;
      symbolic = true;
      std::string lower = dims[d].dim_param();
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
      if (lower.find("batch") != std::string::npos && batch_symbol.empty()) batch_symbol = dims[d].dim_param();
    }
  }
  if (batch_symbol.empty()) {
    for (const auto& in : g->input()) {
      const auto& dims = in.type().tensor_type().shape().dim();
      if (data.count(in.name()) && !dims.empty() && !dims[0].has_dim_value() && !dims[0].dim_param().empty()) {
        batch_symbol = dims[0].dim_param();
        break;
      }
    }
  }
  bool warned = false;
  std::vector<std::string> missing;  // every dimension without a size, named in one error
  for (auto& in : *g->mutable_input()) {
    if (!data.count(in.name())) continue;
    const std::string where = source + ": input '" + in.name() + "'";
    if (!in.type().has_tensor_type() || !in.type().tensor_type().has_shape())
      return Error{where + ": has no tensor shape"};
    if (ElementBytes(in.type().tensor_type().elem_type()) == 0)
      return Error{where + ": element type " + ElementTypeName(in.type().tensor_type().elem_type()) +
                   " is not supported"};
    auto* dims = in.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim();
    for (int d = 0; d < dims->size(); ++d) {
      auto& dim = (*dims)[d];
      const bool sym = !dim.has_dim_value() || dim.dim_value() < 0;  // dim_value -1: unknown, as a symbol
      const std::string name = dim.dim_param();
      const bool is_batch = sym ? (name == batch_symbol || (name.empty() && d == 0)) : (!symbolic && d == 0);
      int64_t value = sym ? 1 : dim.dim_value();
      if (is_batch && options.batch > 0) {
        if (!sym) *static_batch = value;
        value = options.batch;
      } else if (sym && is_batch) {
        value = 1;
        if (!warned) warnings->push_back(source + ": symbolic batch dimension '" + name + "' set to 1 (use --batch)");
        warned = true;
      } else if (sym) {
        auto it = options.dims.find(name);
        const std::string ask = name.empty() ? "input '" + in.name() + "' dimension " + std::to_string(d) +
                                                   " (unnamed: export it with a name, or with a fixed size)"
                                             : "--dim " + name + "=N";
        if (name.empty() || it == options.dims.end()) {
          if (std::find(missing.begin(), missing.end(), ask) == missing.end()) missing.push_back(ask);
        } else {
          value = it->second;
        }
      }
      if (value <= 0) return Error{where + ": dimension " + std::to_string(d) + " must be > 0, got " + std::to_string(value)};
      dim.clear_dim_param();
      dim.set_dim_value(value);
    }
  }
  if (!missing.empty()) {
    std::string list;
    for (const std::string& m : missing) list += (list.empty() ? "" : ", ") + m;
    return Error{source + ": symbolic input dimensions need sizes: " + list};
  }
  return Status::Ok();
}

int64_t TensorBytes(const TensorInfo& info) {
  int64_t n = ElementBytes(info.elem_type);
  for (int64_t d : info.dims) n = (d > 0 && n <= (int64_t{1} << 42) / d) ? n * d : (d == 0 ? 0 : int64_t{1} << 43);
  return n;
}

// "layer1/layer1.0/conv1/Conv" -> "layer1/layer1.0/conv1"; "fc.weight" -> "fc".
std::string ScopeOf(const std::string& name, char separator) {
  const size_t cut = name.rfind(separator);
  return cut == std::string::npos ? std::string() : name.substr(0, cut);
}

// A static-batch export whose Reshape targets spell out its batch: under --batch the data reaches the Reshape with
// the new batch and leaves with the old one leading, a silently wrong graph. Refused with one line.
Status CheckBakedBatch(const onnx::GraphProto& g, const std::unordered_set<std::string>& data, const InfoMap& infos,
                       int64_t static_batch, int64_t batch, const std::string& source) {
  if (static_batch <= 0 || static_batch == batch) return Status::Ok();
  for (const onnx::NodeProto& node : g.node()) {
    if (node.op_type() != "Reshape" || node.input_size() < 1 || !data.count(node.input(0))) continue;
    auto in = infos.find(node.input(0));
    auto out = infos.find(node.output(0));
    if (in == infos.end() || out == infos.end() || in->second.dims.empty() || out->second.dims.empty()) continue;
    if (in->second.dims[0] == batch && out->second.dims[0] == static_batch)
      return Error{source + ": " + Describe(node) + ": its target shape bakes in the model's batch size " +
                   std::to_string(static_batch) + ", so --batch " + std::to_string(batch) +
                   " would give a wrong graph: export with a dynamic batch axis, or import without --batch"};
  }
  return Status::Ok();
}

// Builds the forward graph from a checked, inferred model.
class GraphAssembler {
 public:
  GraphAssembler(const onnx::GraphProto& g, const Tensors& t, const InfoMap& infos, const ValueMap& values,
                 const std::set<std::string>& data_inputs, int64_t opset, const std::string& source,
                 const std::string& name)
      : g_(g), t_(t), infos_(infos), values_(values), data_inputs_(data_inputs), opset_(opset), source_(source),
        builder_(name) {}

  Expected<Graph> Build(std::vector<std::string>* warnings);

 private:
  const TensorInfo* Info(const std::string& name) const;
  Status Require(const std::string& tensor, const onnx::NodeProto& node) const;
  bool IsAlias(const onnx::NodeProto& node) const;
  const onnx::NodeProto* Producer(const std::string& tensor, bool skip_dropout) const;
  bool FeedsSoftmax(const std::string& tensor) const;
  std::string UniqueName(std::string name);
  // The weight sources (initializers and weight inputs) a static tensor is computed from.
  std::vector<std::string> Sources(const std::string& tensor) const;
  // Records the weight sources of the outputs of a node that folds away (computed from weights and constants).
  void FoldNode(const onnx::NodeProto& node);
  bool IsTrainable(const std::string& source_tensor) const;
  // FLOPs of ai.onnx.preview.training's Gradient: twice the forward FLOPs of the ops on the paths from its `xs`
  // to its `y` (the ratio DeriveTrainingGraph gives a backward op).
  double GradientFlops(const onnx::NodeProto& node) const;

  const onnx::GraphProto& g_;
  const Tensors& t_;
  const InfoMap& infos_;
  const ValueMap& values_;
  const std::set<std::string>& data_inputs_;
  const int64_t opset_;
  const std::string& source_;
  GraphBuilder builder_;
  std::unordered_map<std::string, OpId> op_of_;  // data tensor -> the op producing it
  std::unordered_map<std::string, std::vector<std::string>> sources_;
  std::unordered_map<std::string, OpId> owner_;  // weight source -> op owning its parameters
  std::unordered_set<std::string> names_;
};

const TensorInfo* GraphAssembler::Info(const std::string& name) const {
  auto it = infos_.find(name);
  return it == infos_.end() ? nullptr : &it->second;
}

Status GraphAssembler::Require(const std::string& tensor, const onnx::NodeProto& node) const {
  const TensorInfo* info = Info(tensor);
  if (!info || !info->is_static()) {
    const std::string& op = node.op_type();
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      return Error{source_ + ": " + Describe(node) + " is from the custom domain '" + node.domain() +
                   "': ONNX cannot infer the shape of its output '" + tensor + "', so devplace cannot import it"};
    if (op.find("Sequence") != std::string::npos || op == "Optional" || op == "OptionalGetElement")
      return Error{source_ + ": " + Describe(node) + ": sequence and optional values are not supported (tensor '" +
                   tensor + "')"};
    for (int i = 1; i < node.input_size(); ++i) {  // a shape operand computed at run time from the data
      const TensorInfo* in = Info(node.input(i));
      if (in && (in->elem_type == onnx::TensorProto_DataType_INT64 || in->elem_type == onnx::TensorProto_DataType_INT32) &&
          (data_inputs_.count(node.input(i)) || op_of_.count(node.input(i))))
        return Error{source_ + ": the shape of tensor '" + tensor + "' (at " + Describe(node) +
                     ") depends on the values of its input '" + node.input(i) + "', known only at run time"};
    }
    return Error{source_ + ": shape inference failed: the shape of tensor '" + tensor + "' (at " + Describe(node) +
                 ") is unknown"};
  }
  if (ElementBytes(info->elem_type) == 0)
    return Error{source_ + ": tensor '" + tensor + "' (at " + Describe(node) + ") has element type " +
                 ElementTypeName(info->elem_type) + ", which is not supported"};
  return Status::Ok();
}

bool GraphAssembler::IsAlias(const onnx::NodeProto& node) const {
  if (node.op_type() == "Identity") return true;
  if (node.op_type() != "Dropout" || opset_ < 12) return false;
  if (node.input_size() < 3 || node.input(2).empty()) return true;  // no training_mode: inference
  auto it = values_.find(node.input(2));
  return it != values_.end() && it->second.size() == 1 && it->second.is_int() && it->second.ints[0] == 0;
}

const onnx::NodeProto* GraphAssembler::Producer(const std::string& tensor, bool skip_dropout) const {
  auto it = t_.producer.find(tensor);
  if (it == t_.producer.end()) return nullptr;
  const onnx::NodeProto* p = &g_.node(it->second);
  if (skip_dropout && (p->op_type() == "Dropout" || p->op_type() == "Identity") && p->input_size() > 0)
    return Producer(p->input(0), false);
  return p;
}

bool GraphAssembler::FeedsSoftmax(const std::string& tensor) const {
  auto it = t_.uses.find(tensor);
  if (it == t_.uses.end()) return false;
  for (auto [node, slot] : it->second) {
    const std::string& op = g_.node(node).op_type();
    if (op == "Softmax") return true;
    if ((op == "Mul" || op == "Div" || op == "Add" || op == "Where") && g_.node(node).output_size() > 0) {
      auto next = t_.uses.find(g_.node(node).output(0));
      if (next == t_.uses.end()) continue;
      for (auto [n2, s2] : next->second)
        if (g_.node(n2).op_type() == "Softmax") return true;
    }
  }
  return false;
}

std::string GraphAssembler::UniqueName(std::string name) {
  while (!name.empty() && name.front() == '/') name.erase(name.begin());
  if (name.empty()) name = "node";
  if (names_.insert(name).second) return name;
  for (int k = 2;; ++k) {
    std::string candidate = name + "_" + std::to_string(k);
    if (names_.insert(candidate).second) return candidate;
  }
}

std::vector<std::string> GraphAssembler::Sources(const std::string& tensor) const {
  if (t_.initializers.count(tensor) || (t_.graph_inputs.count(tensor) && !data_inputs_.count(tensor))) {
    const TensorInfo* info = Info(tensor);
    if (info && IsFloatType(info->elem_type)) return {tensor};
    return {};
  }
  auto it = sources_.find(tensor);
  return it == sources_.end() ? std::vector<std::string>{} : it->second;
}

void GraphAssembler::FoldNode(const onnx::NodeProto& node) {
  std::set<std::string> merged;
  for (const std::string& in : node.input())
    if (!in.empty())
      for (std::string& s : Sources(in)) merged.insert(std::move(s));
  if (merged.empty()) {
    // A float constant generated in the graph (Constant, ConstantOfShape: ONNX's "light" models replace every
    // initializer so) and read at a weight slot is a weight of its own.
    if (node.op_type() != "Constant" && node.op_type() != "ConstantOfShape") return;
    for (const std::string& out : node.output()) {
      const TensorInfo* info = Info(out);
      auto uses = t_.uses.find(out);
      if (!info || !IsFloatType(info->elem_type) || uses == t_.uses.end()) continue;
      for (auto [user, slot] : uses->second)
        if (IsWeightSlot(g_.node(user).op_type(), slot)) sources_[out] = {out};
    }
    return;
  }
  for (const std::string& out : node.output())
    if (!out.empty()) sources_[out].assign(merged.begin(), merged.end());
}

bool GraphAssembler::IsTrainable(const std::string& tensor) const {
  auto it = t_.uses.find(tensor);
  if (it == t_.uses.end()) return false;
  for (auto [node, slot] : it->second)
    if (!IsBufferSlot(g_.node(node).op_type(), slot)) return true;
  return false;
}

double GraphAssembler::GradientFlops(const onnx::NodeProto& node) const {
  const std::vector<std::string> xs = AttrStrings(node, "xs");
  std::unordered_map<std::string, bool> reaches;  // tensor -> computed from one of xs (memo)
  auto from_xs = [&](const std::string& tensor, auto&& self) -> bool {
    if (std::find(xs.begin(), xs.end(), tensor) != xs.end()) return true;
    auto memo = reaches.find(tensor);
    if (memo != reaches.end()) return memo->second;
    reaches[tensor] = false;
    auto p = t_.producer.find(tensor);
    bool any = false;
    if (p != t_.producer.end())
      for (const std::string& in : g_.node(p->second).input()) any = any || (!in.empty() && self(in, self));
    return reaches[tensor] = any;
  };
  std::set<OpId> counted;
  std::vector<std::string> stack = {AttrString(node, "y", "")};
  double flops = 0.0;
  while (!stack.empty()) {
    const std::string tensor = stack.back();
    stack.pop_back();
    auto p = t_.producer.find(tensor);
    auto op = op_of_.find(tensor);
    if (p == t_.producer.end() || op == op_of_.end() || !from_xs(tensor, from_xs) || !counted.insert(op->second).second)
      continue;
    flops += builder_.op(op->second).flops;
    for (const std::string& in : g_.node(p->second).input())
      if (!in.empty()) stack.push_back(in);
  }
  return 2.0 * flops;
}

Expected<Graph> GraphAssembler::Build(std::vector<std::string>* warnings) {
  for (const auto& in : g_.input()) {
    if (!data_inputs_.count(in.name())) continue;
    const TensorInfo* info = Info(in.name());
    if (!info || !info->is_static()) return Error{source_ + ": input '" + in.name() + "' has no static shape"};
    Op op;
    op.name = UniqueName(in.name());
    op.type = "input";
    op.shape = info->dims;
    op.dtype = ToDType(info->elem_type);
    if (!op.shape.empty() && op.shape[0] > 0) op.dims.push_back(PartitionDim{DimKind::kSample, 0, -1, op.shape[0]});
    op_of_[in.name()] = builder_.add_op(std::move(op));
  }
  std::map<std::string, std::pair<int, std::string>> unknown;  // op type -> (count, first node name)
  for (int i = 0; i < g_.node_size(); ++i) {
    const onnx::NodeProto& node = g_.node(i);
    bool data = false;
    for (const std::string& in : node.input()) {
      auto it = in.empty() ? op_of_.end() : op_of_.find(in);
      if (it != op_of_.end()) data = true;
    }
    if (!data || node.op_type() == "Shape" || node.op_type() == "Size") {
      FoldNode(node);
      continue;
    }
    if (IsAlias(node) && node.output_size() > 0 && node.input_size() > 0 && op_of_.count(node.input(0))) {
      op_of_[node.output(0)] = op_of_.at(node.input(0));
      continue;
    }
    NodeView view;
    view.node = &node;
    for (const std::string& in : node.input()) {
      if (in.empty()) {
        view.inputs.push_back(nullptr);
        view.input_is_data.push_back(0);
        continue;
      }
      if (Status s = Require(in, node); !s.ok()) return s.error();
      view.inputs.push_back(Info(in));
      view.input_is_data.push_back(op_of_.count(in) ? 1 : 0);
    }
    for (int k = 0; k < node.output_size(); ++k) {
      const std::string& out = node.output(k);
      const bool needed = !out.empty() && (k == 0 || t_.uses.count(out));
      if (needed) {
        if (Status s = Require(out, node); !s.ok()) return s.error();
      }
      view.outputs.push_back(needed ? Info(out) : nullptr);
    }
    if (node.input_size() > 0) {
      const onnx::NodeProto* p = Producer(node.input(0), true);
      view.input0_from_softmax = p && p->op_type() == "Softmax";
    }
    view.feeds_softmax = node.output_size() > 0 && FeedsSoftmax(node.output(0));
    Expected<OpRule> rule = MapNode(view, source_);
    if (!rule.ok()) return rule.error();
    if (node.domain() == "ai.onnx.preview.training" && node.op_type() == "Gradient") {
      rule->known = true;
      rule->type = "gradient";
      rule->flops = GradientFlops(node);
    }
    if (!rule->known) {
      auto [it, fresh] = unknown.emplace(node.domain().empty() ? node.op_type() : node.domain() + ":" + node.op_type(),
                                         std::pair<int, std::string>{0, node.name()});
      ++it->second.first;
    }
    Op op;
    op.name = UniqueName(node.name().empty() ? node.op_type() + "_" + std::to_string(i) : node.name());
    op.type = rule->type;
    op.layer = ScopeOf(op.name, '/');
    op.shape = rule->shape;
    op.dtype = ToDType(view.outputs[0] ? view.outputs[0]->elem_type : onnx::TensorProto_DataType_FLOAT);
    op.flops = rule->flops;
    op.dims = std::move(rule->dims);
    std::vector<std::string> shared;
    for (const std::string& in : node.input()) {
      if (in.empty() || op_of_.count(in)) continue;
      for (const std::string& s : Sources(in)) {
        if (!IsTrainable(s)) continue;
        auto [it, fresh] = owner_.emplace(s, builder_.num_ops());
        if (fresh)
          op.param_bytes += TensorBytes(*Info(s));
        else if (it->second != builder_.num_ops())
          shared.push_back(s);
        if (op.layer.empty()) op.layer = ScopeOf(s, '.');
      }
    }
    // Ops without a scope in their name take the layer of their first data input's producer.
    for (const std::string& in : node.input()) {
      if (!op.layer.empty()) break;
      if (auto it = op_of_.find(in); it != op_of_.end()) op.layer = builder_.op(it->second).layer;
    }
    if (!shared.empty()) {  // weights used by several ops live on one device (as LayerBuilder's shared weights)
      op.colocation = shared.front();
      builder_.mutable_op(owner_.at(shared.front())).colocation = shared.front();
    }
    const OpId id = builder_.add_op(std::move(op));
    std::map<OpId, int64_t> in_bytes;
    std::set<std::string> seen;
    for (const std::string& in : node.input()) {
      auto it = op_of_.find(in);
      if (it == op_of_.end() || !seen.insert(in).second) continue;
      in_bytes[it->second] += TensorBytes(*Info(in));
    }
    for (auto [src, bytes] : in_bytes) builder_.add_edge(src, id, bytes);
    for (const std::string& out : node.output())
      if (!out.empty()) op_of_[out] = id;
  }
  for (auto& [type, first] : unknown)
    warnings->push_back(source_ + ": operator '" + type + "' is unknown to devplace: " + std::to_string(first.first) +
                        " node(s) imported with zero FLOPs (first: '" + first.second + "')");
  if (builder_.num_ops() == static_cast<int32_t>(data_inputs_.size()))
    return Error{source_ + ": no node depends on the data inputs: nothing to place"};
  Expected<Graph> graph = std::move(builder_).Build();
  if (!graph.ok()) return Error{source_ + ": " + graph.error().message};
  return graph;
}

int64_t DefaultOpset(const onnx::ModelProto& model) {
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
  return 0;
}

Expected<ImportResult> Import(std::string_view bytes, const std::string& source, const std::string& graph_name,
                              const ImportOptions& options) {
  onnx::ModelProto model;
  if (bytes.size() > static_cast<size_t>(INT_MAX) || !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return Error{source + ": not an ONNX model (the file is not a valid ModelProto protobuf)"};
  if (!model.has_graph() || model.graph().node_size() == 0 || model.opset_import_size() == 0)
    return Error{source + ": not an ONNX model (no graph nodes or no opset imports)"};
  ImportResult result;
  result.format = "onnx";
  onnx::GraphProto* g = model.mutable_graph();
  Tensors tensors;
  if (Status s = DowngradeToKnownOpset(&model, source, &result.warnings); !s.ok()) return s.error();
  if (Status s = SortAndIndex(g, source, &tensors); !s.ok()) return s.error();
  if (Status s = PrepareAndCheck(&model, options.model_dir, source); !s.ok()) return s.error();
  const std::set<std::string> data_inputs = DataInputs(*g, tensors);
  if (data_inputs.empty()) return Error{source + ": the model has no data input"};
  int64_t static_batch = 0;
  if (Status s = SetInputDims(g, data_inputs, options, source, &result.warnings, &static_batch); !s.ok())
    return s.error();
  // What the exporter declared, for shapes only known at run time; not when --batch replaced a static batch.
  const InfoMap declared = static_batch > 0 ? InfoMap{} : DeclaredShapes(*g);
  g->clear_value_info();
  Expected<bool> lowered = LowerSequences(&model, source);
  if (!lowered.ok()) return lowered.error();
  if (*lowered) {  // new nodes and tensors: index them again
    tensors = Tensors{};
    if (Status s = SortAndIndex(g, source, &tensors); !s.ok()) return s.error();
  }
  for (auto& out : *g->mutable_output())
    if (out.type().has_tensor_type()) out.mutable_type()->mutable_tensor_type()->clear_shape();
  // Nodes that do not depend on data (Shape and Size only read the static shape) fold into constants.
  std::unordered_set<int> foldable;
  std::unordered_set<std::string> data(data_inputs.begin(), data_inputs.end());
  for (int i = 0; i < g->node_size(); ++i) {
    const onnx::NodeProto& node = g->node(i);
    bool reads_data = false;
    for (const std::string& in : node.input()) reads_data = reads_data || data.count(in);
    if (reads_data && node.op_type() != "Shape" && node.op_type() != "Size") {
      for (const std::string& out : node.output()) data.insert(out);
    } else {
      foldable.insert(i);
    }
  }
  std::vector<int> order(g->node_size());
  for (int i = 0; i < g->node_size(); ++i) order[i] = i;
  InfoMap infos;
  ValueMap values;
  if (Status s = InferShapes(model, order, foldable, declared, source, &infos, &values, &result.warnings); !s.ok()) return s.error();
  if (Status s = CheckBakedBatch(*g, data, infos, static_batch, options.batch, source); !s.ok()) return s.error();
  GraphAssembler assembler(*g, tensors, infos, values, data_inputs, DefaultOpset(model), source, graph_name);
  Expected<Graph> forward = assembler.Build(&result.warnings);
  if (!forward.ok()) return forward.error();
  if (!options.derive_training) {
    result.graph = std::move(*forward);
    return result;
  }
  Expected<Graph> training = DeriveTrainingGraph(*forward, options.training);
  if (!training.ok()) return Error{source + ": " + training.error().message};
  result.graph = std::move(*training);
  return result;
}

}  // namespace

Expected<ImportResult> ImportOnnxModel(std::string_view bytes, const std::string& source,
                                       const std::string& graph_name, const ImportOptions& options) {
  return import_detail::OneLineMessages(Import(bytes, source, graph_name, options));
}

}  // namespace devplace
