// Shape inference for the ONNX importer: ONNX's own InferShapes, alternated with the constant evaluator until
// every shape computation that can be folded has been (see InferShapes in onnx_internal.h).
#include <algorithm>
#include <exception>
#include <string>
#include <utility>

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include "datasets/import/one_line.h"
#include "datasets/import/onnx_internal.h"

namespace devplace::onnx_import {

namespace {

// Rounds of inference + folding; real models need two or three.
constexpr int kMaxRounds = 32;

void Record(const onnx::ValueInfoProto& v, InfoMap* infos) {
  if (!v.type().has_tensor_type()) return;
  const auto& tt = v.type().tensor_type();
  TensorInfo info;
  info.elem_type = tt.elem_type();
  info.has_shape = tt.has_shape();
  for (const auto& d : tt.shape().dim()) info.dims.push_back(d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value() : -1);
  (*infos)[v.name()] = std::move(info);
}

// The input and weight positions of the convolutions whose inference in ONNX 1.12 reads the weight's kernel extents
// for every spatial axis of the input without checking that the ranks agree (an out-of-bounds read, found by the
// fuzzer); -1 when the op is not one of them.
std::pair<int, int> ConvolutionInputs(const std::string& op_type) {
  if (op_type == "Conv" || op_type == "ConvTranspose" || op_type == "ConvInteger") return {0, 1};
  if (op_type == "QLinearConv") return {0, 3};
  return {-1, -1};
}

// Refuses, before ONNX's inference sees them, convolutions whose input and weight ranks are known and disagree (or
// are below 3), and whose kernel_shape / strides / dilations / pads attributes do not fit the spatial rank. Ranks
// are known from the graph inputs, the declared shapes, the initializers and the previous round's inference; a mismatch that only
// appears inside one round of ONNX's inference is not seen here (docs/reliability.md).
Status CheckConvolutionRanks(const onnx::GraphProto& g, const InfoMap& known, const std::string& source) {
  auto rank_of = [&](const std::string& name) -> int64_t {
    auto it = known.find(name);
    return it != known.end() && it->second.has_shape ? static_cast<int64_t>(it->second.dims.size()) : -1;
  };
  for (const auto& node : g.node()) {
    const auto [x, w] = ConvolutionInputs(node.op_type());
    if (x < 0 || node.input_size() <= std::max(x, w)) continue;
    const int64_t x_rank = rank_of(node.input(x)), w_rank = rank_of(node.input(w));
    const std::string where = source + ": node '" + node.name() + "' (" + node.op_type() + ")";
    if ((x_rank >= 0 && x_rank < 3) || (w_rank >= 0 && w_rank < 3))
      return Error{where + ": input rank " + std::to_string(x_rank) + " and weight rank " + std::to_string(w_rank) +
                   " must be at least 3"};
    if (x_rank >= 0 && w_rank >= 0 && x_rank != w_rank)
      return Error{where + ": input rank " + std::to_string(x_rank) + " and weight rank " + std::to_string(w_rank) +
                   " differ"};
    const int64_t spatial = (x_rank >= 0 ? x_rank : w_rank) - 2;
    if (spatial < 1) continue;
    for (const auto& attr : node.attribute()) {
      const std::string& a = attr.name();
      const int64_t expected = a == "pads" ? 2 * spatial
                               : (a == "kernel_shape" || a == "strides" || a == "dilations") ? spatial
                                                                                               : -1;
      if (expected >= 0 && attr.ints_size() > 0 && attr.ints_size() != expected)
        return Error{where + ": attribute " + a + " has " + std::to_string(attr.ints_size()) + " values, expected " +
                     std::to_string(expected) + " for " + std::to_string(spatial) + " spatial axes"};
    }
  }
  return {};
}

// Axes given to Squeeze nodes that have none (opset < 13 squeezes every extent of 1, which ONNX 1.12's
// inference of those versions does not follow), by node index.
using SqueezeAxes = std::unordered_map<int, std::vector<int64_t>>;

// The axes of extent 1 of a Squeeze node without axes (opset < 13) whose input shape is known, or false.
bool ImplicitSqueezeAxes(const onnx::NodeProto& node, int64_t opset, const InfoMap& infos, std::vector<int64_t>* axes) {
  if (node.op_type() != "Squeeze" || opset >= 13 || node.input_size() != 1 || HasAttr(node, "axes")) return false;
  auto it = infos.find(node.input(0));
  if (it == infos.end() || !it->second.is_static()) return false;
  axes->clear();
  for (size_t d = 0; d < it->second.dims.size(); ++d)
    if (it->second.dims[d] == 1) axes->push_back(static_cast<int64_t>(d));
  return true;
}

// The graph given to ONNX's inference: nodes in topological order minus the folded ones, initializers with the
// data of large tensors dropped (inference only needs their dims), folded values as initializers.
onnx::ModelProto WorkingModel(const onnx::ModelProto& model, const std::vector<int>& order,
                              const std::vector<char>& folded, const ValueMap& values,
                              const std::vector<std::string>& folded_outputs, const SqueezeAxes& squeeze_axes,
                              const InfoMap& adopted) {
  onnx::ModelProto work;
  // IR 3 lists every initializer among the graph inputs and makes ONNX's inference ignore initializers that are
  // not: the working model drops those inputs (initializers are constants here) and says IR 4 at least.
  work.set_ir_version(std::max<int64_t>(model.ir_version(), 4));
  *work.mutable_opset_import() = model.opset_import();
  *work.mutable_functions() = model.functions();
  const onnx::GraphProto& g = model.graph();
  onnx::GraphProto* w = work.mutable_graph();
  w->set_name(g.name());
  std::unordered_set<std::string> initializers;
  for (const auto& t : g.initializer()) initializers.insert(t.name());
  for (const auto& in : g.input())
    if (!initializers.count(in.name())) *w->add_input() = in;
  *w->mutable_output() = g.output();
  for (const auto& t : g.initializer()) {
    onnx::TensorProto* copy = w->add_initializer();
    int64_t count = 1;
    for (int64_t d : t.dims()) count = d > 0 && count <= kMaxFoldElements ? count * d : count;
    if (count > kMaxFoldElements) {
      copy->set_name(t.name());
      copy->set_data_type(t.data_type());
      *copy->mutable_dims() = t.dims();
      copy->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);  // data deliberately left out
    } else {
      *copy = t;
    }
  }
  for (int i : order) {
    if (folded[i]) continue;
    onnx::NodeProto* node = w->add_node();
    *node = g.node(i);
    if (auto it = squeeze_axes.find(i); it != squeeze_axes.end()) {
      onnx::AttributeProto* axes = node->add_attribute();
      axes->set_name("axes");
      axes->set_type(onnx::AttributeProto_AttributeType_INTS);
      for (int64_t a : it->second) axes->add_ints(a);
    }
  }
  for (const std::string& name : folded_outputs) *w->add_initializer() = WriteTensor(values.at(name), name);
  for (const auto& [name, info] : adopted) {  // types inference cannot give, stated for it
    onnx::ValueInfoProto* v = w->add_value_info();
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(info.elem_type);
    auto* shape = tt->mutable_shape();
    for (int64_t d : info.dims) shape->add_dim()->set_dim_value(d);
  }
  return work;
}

// Whether inference's `info` (possibly partial) agrees with the static `declared` shape.
bool Compatible(const TensorInfo* info, const TensorInfo& declared) {
  if (!info || !info->has_shape) return true;
  if (info->elem_type != 0 && declared.elem_type != 0 && info->elem_type != declared.elem_type) return false;
  if (info->dims.size() != declared.dims.size()) return false;
  for (size_t d = 0; d < info->dims.size(); ++d)
    if (info->dims[d] >= 0 && info->dims[d] != declared.dims[d]) return false;
  return true;
}

std::string ShapeText(const std::vector<int64_t>& dims) {
  std::string text;
  for (int64_t d : dims) {  // appended piecewise: GCC 12 warns falsely (-Wrestrict) on "x" + std::to_string
    if (!text.empty()) text += 'x';
    text += std::to_string(d);
  }
  return text.empty() ? "scalar" : text;
}

// Types of tensors inference leaves unknown, adopted once inference and folding have done what they can:
// the outputs of ai.onnx.preview.training's Gradient (each has the type of the tensor in `xs` it differentiates
// by; ONNX states no inference for it) and, for nodes of the standard domain, the static shape the model
// declares (a shape computed from run-time values, such as Expand's target read from a graph input).
bool AdoptTypes(const onnx::GraphProto& g, const std::vector<int>& order, const std::vector<char>& folded,
                const InfoMap& declared, const std::string& source, const InfoMap& infos, InfoMap* adopted,
                std::vector<std::string>* warnings) {
  bool progress = false;
  for (int i : order) {
    const onnx::NodeProto& node = g.node(i);
    if (folded[i]) continue;
    const bool gradient = node.domain() == "ai.onnx.preview.training" && node.op_type() == "Gradient";
    if (!gradient && !node.domain().empty() && node.domain() != "ai.onnx") continue;
    const std::vector<std::string> xs = gradient ? AttrStrings(node, "xs") : std::vector<std::string>{};
    for (int k = 0; k < node.output_size(); ++k) {
      const std::string& out = node.output(k);
      auto known = infos.find(out);
      if (out.empty() || adopted->count(out) || (known != infos.end() && known->second.is_static())) continue;
      if (gradient) {
        auto x = k < static_cast<int>(xs.size()) ? infos.find(xs[k]) : infos.end();
        if (x == infos.end() || !x->second.is_static()) continue;
        (*adopted)[out] = x->second;
        progress = true;
        continue;
      }
      auto d = declared.find(out);
      if (d == declared.end() || !Compatible(known == infos.end() ? nullptr : &known->second, d->second)) continue;
      (*adopted)[out] = d->second;
      warnings->push_back(source + ": the shape of tensor '" + out + "' (at " + Describe(node) +
                          ") is not known before run time: the model's declared shape " + ShapeText(d->second.dims) +
                          " is used");
      progress = true;
    }
  }
  return progress;
}

}  // namespace

InfoMap DeclaredShapes(const onnx::GraphProto& g) {
  InfoMap declared;
  auto record = [&](const onnx::ValueInfoProto& v) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
    TensorInfo info;
    info.elem_type = v.type().tensor_type().elem_type();
    info.has_shape = true;
    for (const auto& d : v.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value() || d.dim_value() < 0) return;
      info.dims.push_back(d.dim_value());
    }
    declared[v.name()] = std::move(info);
  };
  for (const auto& v : g.value_info()) record(v);
  for (const auto& v : g.output()) record(v);
  return declared;
}

Status InferShapes(const onnx::ModelProto& model, const std::vector<int>& order,
                   const std::unordered_set<int>& foldable, const InfoMap& declared, const std::string& source,
                   InfoMap* infos, ValueMap* values, std::vector<std::string>* warnings) {
  const onnx::GraphProto& g = model.graph();
  for (const auto& t : g.initializer()) {
    ConstValue v;
    Expected<bool> read = ReadTensor(t, source, &v);
    if (!read.ok()) return read.error();
    if (*read) (*values)[t.name()] = std::move(v);
  }
  std::vector<char> folded(g.node_size(), 0);
  std::vector<std::string> folded_outputs;
  SqueezeAxes squeeze_axes;
  InfoMap adopted;
  int64_t opset = 1;
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  for (int round = 0; round < kMaxRounds; ++round) {
    onnx::ModelProto work = WorkingModel(model, order, folded, *values, folded_outputs, squeeze_axes, adopted);
    InfoMap known = declared;
    for (const auto& v : g.input()) Record(v, &known);
    for (const auto& t : g.initializer()) {
      TensorInfo info;
      info.has_shape = true;
      info.dims.assign(t.dims().begin(), t.dims().end());
      known[t.name()] = std::move(info);
    }
    for (const auto& [name, info] : *infos) known[name] = info;
    if (Status s = CheckConvolutionRanks(g, known, source); !s.ok()) return s;
    try {
      onnx::ShapeInferenceOptions options(/*check_type=*/false, /*error_mode=*/1, /*data_prop=*/false);
      onnx::shape_inference::InferShapes(work, onnx::OpSchemaRegistry::Instance(), options);
    } catch (const std::exception& e) {
      return Error{source + ": shape inference failed: " + import_detail::OneLine(e.what())};
    }
    infos->clear();
    const onnx::GraphProto& wg = work.graph();
    for (const auto& v : wg.input()) Record(v, infos);
    for (const auto& v : wg.value_info()) Record(v, infos);
    for (const auto& v : wg.output()) Record(v, infos);
    for (const auto& t : wg.initializer()) {
      TensorInfo info;
      info.elem_type = t.data_type();
      info.has_shape = true;
      for (int64_t d : t.dims()) info.dims.push_back(d >= 0 ? d : -1);
      (*infos)[t.name()] = std::move(info);
    }
    for (const auto& [name, info] : adopted)
      if (!(*infos)[name].is_static()) (*infos)[name] = info;
    bool progress = false;
    for (int i : order) {
      std::vector<int64_t> axes;
      if (!squeeze_axes.count(i) && ImplicitSqueezeAxes(g.node(i), opset, *infos, &axes)) {
        squeeze_axes[i] = std::move(axes);
        progress = true;
      }
    }
    for (int i : order) {
      if (folded[i] || !foldable.count(i)) continue;
      std::vector<ConstValue> out;
      if (!EvaluateNode(g.node(i), *values, *infos, &out)) continue;
      const std::string& name = g.node(i).output(0);
      TensorInfo info;
      info.elem_type = out[0].elem_type;
      info.has_shape = true;
      info.dims = out[0].shape;
      (*infos)[name] = std::move(info);
      (*values)[name] = std::move(out[0]);
      folded[i] = 1;
      folded_outputs.push_back(name);
      progress = true;
    }
    if (!progress) progress = AdoptTypes(g, order, folded, declared, source, *infos, &adopted, warnings);
    if (!progress) break;
  }
  return Status::Ok();
}

}  // namespace devplace::onnx_import
