#include "core/sharding_propagation.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <string_view>


namespace devplace {

namespace {

using DimAxes = std::vector<std::vector<int32_t>>;

// The op types propagation knows, by family (the families' rules all follow from the ops' dims, see the header).
constexpr std::string_view kKnownTypes[] = {
    // graph inputs
    "input",
    // element-wise
    "relu", "tanh", "sigmoid", "gelu", "add", "sub", "mul", "div", "add_n", "mean_n", "dropout", "lstm_cell_state",
    "lstm_output", "erf", "exp", "log", "sqrt", "pow", "neg", "abs", "clip", "leakyrelu", "hardswish", "hardsigmoid",
    "silu", "elu", "selu", "where", "cast", "identity",
    // contractions
    "matmul", "batched_matmul", "einsum", "lstm_gates", "conv1d", "conv2d", "conv3d", "depthwise_conv1d",
    "depthwise_conv2d", "group_conv1d", "group_conv2d", "attention_scores", "attention_context",
    "additive_attention_scores",
    // normalisation and softmax
    "batch_norm", "layer_norm", "instance_norm", "lrn", "softmax", "log_softmax",
    // reshape / transpose, concat / split
    "reshape", "flatten", "transpose", "squeeze", "unsqueeze", "concat", "stack", "split", "slice",
    // embedding gathers
    "embedding", "gather",
    // mixture of experts (GShard): gating, dispatch and combine einsums, per-expert matmuls
    "moe_gating", "moe_dispatch", "moe_combine", "moe_expert_matmul",
    // pooling and reductions
    "max_pool2d", "avg_pool2d", "max_pool1d", "avg_pool1d", "global_avg_pool", "global_max_pool", "reduce_mean",
    "reduce_sum", "reduce_max", "softmax_cross_entropy", "sampled_softmax_loss"};

constexpr std::string_view kHighwayPrefix = "highway_";  // fused element-wise highway cells (PTB NAS family)

int64_t Product(const std::vector<int32_t>& axes, const Mesh& mesh) {
  int64_t n = 1;
  for (int32_t a : axes) n *= mesh.shape[a];
  return n;
}

// The dims a spec can express: the first dim slicing each output axis and the first reduction dim.
std::vector<char> ExpressibleDims(const Op& op) {
  std::vector<char> ok(op.dims.size(), 0);
  std::set<int32_t> axes_seen;
  bool reduction_seen = false;
  for (size_t k = 0; k < op.dims.size(); ++k) {
    const PartitionDim& d = op.dims[k];
    if (d.output_axis >= 0) {
      ok[k] = axes_seen.insert(d.output_axis).second;
    } else if (d.kind == DimKind::kReduction && !reduction_seen) {
      ok[k] = 1;
      reduction_seen = true;
    }
  }
  return ok;
}

// The dim of `op` whose output_axis is `axis`, or -1.
int32_t DimOfAxis(const Op& op, int32_t axis) {
  for (size_t k = 0; k < op.dims.size(); ++k)
    if (op.dims[k].output_axis == axis) return static_cast<int32_t>(k);
  return -1;
}

ShardingSpec SpecOf(const Op& op, const DimAxes& axes) {
  ShardingSpec spec = ShardingSpec::Replicated(static_cast<int32_t>(op.shape.size()));
  for (size_t k = 0; k < op.dims.size(); ++k) {
    if (axes[k].empty()) continue;
    if (op.dims[k].output_axis >= 0) spec.dims[op.dims[k].output_axis] = axes[k];
    else spec.partial = axes[k];
  }
  return spec;
}

struct Proposal {
  int32_t dim;
  const std::vector<int32_t>* axes;  // a neighbour's split (neighbours' splits do not change while one op merges)
  int64_t shards;
};

class Propagator {
 public:
  Propagator(const Graph& graph, const Mesh& mesh) : g_(graph), mesh_(mesh), axes_(graph.num_ops()), fixed_(graph.num_ops(), 0) {
    for (OpId o = 0; o < g_.num_ops(); ++o) {
      axes_[o].resize(g_.op(o).dims.size());
      expressible_.push_back(ExpressibleDims(g_.op(o)));
    }
  }

  void Fix(OpId o, DimAxes axes) {
    axes_[o] = std::move(axes);
    fixed_[o] = 1;
  }
  bool fixed(OpId o) const { return fixed_[o] != 0; }
  DimAxes& axes(OpId o) { return axes_[o]; }

  // Sweeps forward then backward over the forward ops until nothing changes, first proposing only for dims that
  // slice an input (or of ops without inputs), then for all; returns the number of sweeps.
  int32_t Run() {
    std::vector<OpId> order;
    for (OpId o : g_.topological_order())
      if (g_.op(o).role == OpRole::kForward && !fixed_[o]) order.push_back(o);
    int32_t sweeps = 0;
    for (all_dims_ = false;; all_dims_ = true) {
      for (bool changed = true; changed;) {
        changed = false;
        ++sweeps;
        for (OpId o : order) changed |= Visit(o);
        for (auto it = order.rbegin(); it != order.rend(); ++it) changed |= Visit(*it);
      }
      if (all_dims_) return sweeps;
    }
  }

 private:
  // The mesh axes `producer`'s output axis `axis` is split over (nullptr if none).
  const std::vector<int32_t>* OutputAxes(OpId producer, int32_t axis) const {
    const Op& p = g_.op(producer);
    if (axis < 0 || axis >= static_cast<int32_t>(p.shape.size())) return nullptr;
    const int32_t k = DimOfAxis(p, axis);
    return k < 0 || axes_[producer][k].empty() ? nullptr : &axes_[producer][k];
  }

  // Proposals from the neighbours of `o`: block j of d along a producer's output axis a corresponds to part j of d
  // of a consumer dimension with input_axis a (as the simulator slices inputs, sim/partition.h NeededBox).
  // Only dims of `o` still unsplit and expressible are proposed for; until all_dims_, only those slicing an input
  // (a split of a dim that slices no input makes every part read its inputs whole: an all-gather of them) or of ops
  // without forward inputs.
  void Collect(OpId o, std::vector<Proposal>* out) const {
    const Op& op = g_.op(o);
    const bool has_inputs = std::any_of(g_.in_edges(o).begin(), g_.in_edges(o).end(),
                                        [&](int32_t e) { return g_.op(g_.edge(e).src).role == OpRole::kForward; });
    auto open = [&](int32_t k) {
      return expressible_[o][k] && axes_[o][k].empty() && (all_dims_ || !has_inputs || op.dims[k].input_axis >= 0);
    };
    for (int32_t e : g_.in_edges(o)) {  // forward: producers' output splits
      const OpId p = g_.edge(e).src;
      if (g_.op(p).role != OpRole::kForward) continue;
      for (size_t k = 0; k < op.dims.size(); ++k)
        if (open(static_cast<int32_t>(k)))
          if (const auto* x = OutputAxes(p, op.dims[k].input_axis))
            out->push_back({static_cast<int32_t>(k), x, Product(*x, mesh_)});
    }
    for (int32_t e : g_.out_edges(o)) {  // backward: consumers' input slicing
      const OpId c = g_.edge(e).dst;
      const Op& cop = g_.op(c);
      if (cop.role != OpRole::kForward) continue;
      for (size_t kc = 0; kc < cop.dims.size(); ++kc) {
        const int32_t a = cop.dims[kc].input_axis;
        if (axes_[c][kc].empty() || a < 0 || a >= static_cast<int32_t>(op.shape.size())) continue;
        if (const int32_t k = DimOfAxis(op, a); k >= 0 && open(k))
          out->push_back({k, &axes_[c][kc], Product(axes_[c][kc], mesh_)});
      }
    }
  }

  bool Visit(OpId o) {
    proposals_.clear();
    Collect(o, &proposals_);
    if (proposals_.empty()) return false;
    std::stable_sort(proposals_.begin(), proposals_.end(),
                     [](const Proposal& a, const Proposal& b) { return a.shards > b.shards; });
    const Op& op = g_.op(o);
    DimAxes& mine = axes_[o];
    used_.assign(static_cast<size_t>(mesh_.rank()), 0);
    for (const auto& axes : mine)
      for (int32_t a : axes) used_[a] = 1;
    bool changed = false;
    for (const Proposal& p : proposals_) {
      if (!mine[p.dim].empty() || op.dims[p.dim].size % p.shards != 0) continue;
      if (op.dims[p.dim].output_axis >= 0 && op.shape[op.dims[p.dim].output_axis] % p.shards != 0) continue;
      if (std::any_of(p.axes->begin(), p.axes->end(), [&](int32_t a) { return used_[a] != 0; })) continue;
      for (int32_t a : *p.axes) used_[a] = 1;
      mine[p.dim] = *p.axes;
      changed = true;
    }
    return changed;
  }

  const Graph& g_;
  const Mesh& mesh_;
  std::vector<DimAxes> axes_;
  std::vector<char> fixed_;
  std::vector<std::vector<char>> expressible_;
  bool all_dims_ = false;            // second phase: dims that slice no input take proposals too
  std::vector<Proposal> proposals_;  // scratch of Visit
  std::vector<char> used_;           // scratch of Visit: mesh axes the visited op uses
};

// Applies the annotations: fixes every matched forward op. Fills plan->annotation_of_op and ops_per_annotation.
Status Annotate(const Graph& graph, const Mesh& mesh, const std::vector<ShardingAnnotation>& annotations,
                Propagator* prop, ShardingPlan* plan) {
  plan->ops_per_annotation.assign(annotations.size(), 0);
  for (size_t i = 0; i < annotations.size(); ++i) {
    const ShardingAnnotation& ann = annotations[i];
    auto fail = [&](const std::string& what) { return Error{ann.origin + ": " + what}; };
    for (OpId o = 0; o < graph.num_ops(); ++o) {
      const Op& op = graph.op(o);
      if (op.role != OpRole::kForward || !GlobMatch(ann.pattern, op.name)) continue;
      ++plan->ops_per_annotation[i];
      ShardingSpec spec = ann.spec;  // trailing axes not named are replicated
      if (spec.dims.size() < op.shape.size()) spec.dims.resize(op.shape.size());
      if (Status st = ValidateSpec(spec, op.shape, mesh, ann.allow_padding); !st.ok())
        return fail("op '" + op.name + "': " + st.error().message);
      Expected<OpConfig> lowered = LowerSpec(op, spec, mesh, ann.allow_padding);
      if (!lowered.ok()) return fail(lowered.error().message);
      const int32_t prev = plan->annotation_of_op[o];
      if (prev >= 0 && !(SpecOf(op, prop->axes(o)) == spec))
        return fail("conflicts with " + annotations[prev].origin + " on op '" + op.name + "' (" +
                    FormatSpec(spec, mesh) + " vs " + FormatSpec(SpecOf(op, prop->axes(o)), mesh) + ")");
      plan->annotation_of_op[o] = static_cast<int32_t>(i);
      prop->Fix(o, *DimAxesOf(op, spec));
    }
    if (plan->ops_per_annotation[i] == 0) return fail("pattern '" + ann.pattern + "' matches no forward op");
  }
  return Status::Ok();
}

// Backward ops copy their forward op's dims. Update ops split their one dim over the mesh axes that shard the
// forward op's weights (those of its parameter and reduction dims), in order: every replica of a weight shard updates
// it (copies), except over `zero_axis` (ZeRO, -1: none), which shards the update too where the forward op uses it.
void DeriveNonForward(const Graph& graph, const Mesh& mesh, int32_t zero_axis, Propagator* prop) {
  for (OpId o = 0; o < graph.num_ops(); ++o) {
    const Op& op = graph.op(o);
    if (op.role == OpRole::kForward) continue;
    const OpId f = graph.find(op.forward_op);
    if (f < 0) continue;
    const DimAxes& fa = prop->axes(f);
    if (op.role == OpRole::kBackward && op.dims.size() == fa.size()) {
      prop->axes(o) = fa;
    } else if (op.role == OpRole::kUpdate && op.dims.size() == 1) {
      const Op& fop = graph.op(f);
      std::vector<int32_t> flat;
      for (size_t k = 0; k < fa.size(); ++k)
        for (int32_t a : fa[k])
          if (fop.dims[k].kind == DimKind::kParameter || fop.dims[k].kind == DimKind::kReduction || a == zero_axis)
            flat.push_back(a);
      if (Product(flat, mesh) <= op.dims[0].size) prop->axes(o)[0] = std::move(flat);
    }
  }
}

}  // namespace

bool GlobMatch(std::string_view pattern, std::string_view name) {
  size_t p = 0, n = 0, star = std::string_view::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool HasShardingRule(std::string_view type) {
  return std::find(std::begin(kKnownTypes), std::end(kKnownTypes), type) != std::end(kKnownTypes) ||
         type.substr(0, kHighwayPrefix.size()) == kHighwayPrefix;
}

Expected<ShardingPlan> PropagateSharding(const Graph& graph, const Mesh& mesh,
                                         const std::vector<ShardingAnnotation>& annotations, int32_t zero_axis) {
  ShardingPlan plan;
  plan.annotation_of_op.assign(graph.num_ops(), -1);
  Propagator prop(graph, mesh);
  if (Status st = Annotate(graph, mesh, annotations, &prop, &plan); !st.ok()) return st.error();
  std::set<std::string> unknown_types;
  for (OpId o = 0; o < graph.num_ops(); ++o) {
    const Op& op = graph.op(o);
    if (op.role != OpRole::kForward || prop.fixed(o) || HasShardingRule(op.type)) continue;
    prop.Fix(o, DimAxes(op.dims.size()));
    plan.unknown_ops.push_back(o);
    unknown_types.insert(op.type);
  }
  plan.unknown_types.assign(unknown_types.begin(), unknown_types.end());
  plan.iterations = prop.Run();
  DeriveNonForward(graph, mesh, zero_axis, &prop);

  plan.specs.reserve(graph.num_ops());
  for (OpId o = 0; o < graph.num_ops(); ++o) {
    plan.specs.push_back(SpecOf(graph.op(o), prop.axes(o)));
    if (graph.op(o).role == OpRole::kForward && plan.specs.back().is_replicated()) plan.replicated.push_back(o);
  }
  return plan;
}

std::vector<char> NeededAnnotations(const Graph& graph, const Mesh& mesh,
                                    const std::vector<ShardingAnnotation>& annotations, const ShardingPlan& plan,
                                    int32_t zero_axis) {
  std::vector<char> needed(annotations.size(), 1);
  for (size_t i = 0; i < annotations.size(); ++i) {
    std::vector<ShardingAnnotation> others = annotations;
    others.erase(others.begin() + static_cast<std::ptrdiff_t>(i));
    if (others.empty()) continue;
    Expected<ShardingPlan> without = PropagateSharding(graph, mesh, others, zero_axis);
    needed[i] = !without.ok() || without->specs != plan.specs;
  }
  return needed;
}

}  // namespace devplace
