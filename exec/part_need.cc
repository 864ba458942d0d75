#include "exec/part_need.h"

#include <set>
#include <string>

namespace devplace::exec {

namespace {

// NeededBox, except that an axis whose extent differs from the size of the dimension slicing it (an input broadcast
// along it) is needed whole.
Box Needed(const Op& consumer, const OpConfig& config, int32_t part, const Op& producer) {
  Box box = NeededBox(consumer, config, part, producer);
  for (size_t j = 0; j < config.degrees.size(); ++j) {
    const int32_t axis = consumer.dims[j].input_axis;
    if (axis < 0 || axis >= box.rank || config.degrees[j] == 1) continue;
    if (producer.shape[axis] != consumer.dims[j].size) {
      box.lo[axis] = 0;
      box.hi[axis] = producer.shape[axis];
    }
  }
  return box;
}

const std::set<std::string>& Elementwise() {
  static const std::set<std::string> types = {"relu", "tanh", "sigmoid", "gelu", "identity",
                                              "add",  "sub",  "mul",     "add_n", "mean_n"};
  return types;
}

}  // namespace

std::vector<int64_t> Extents(const Box& b) {
  std::vector<int64_t> e;
  for (int32_t a = 0; a < b.rank; ++a) e.push_back(b.hi[a] - b.lo[a]);
  return e;
}

std::vector<int64_t> Offset(const Box& inner, const Box& outer) {
  std::vector<int64_t> o;
  for (int32_t k = 0; k < inner.rank; ++k) o.push_back(inner.lo[k] - outer.lo[k]);
  return o;
}

int SlotOf(const Graph& graph, OpId f, OpId src) {
  const auto in = graph.in_edges(f);
  for (size_t s = 0; s < in.size(); ++s)
    if (graph.edge(in[s]).src == src) return static_cast<int>(s);
  return -1;
}

Need NeedOf(const Graph& graph, const Plan& base, int32_t e, const OpConfig& config, int32_t part) {
  const Edge& edge = graph.edge(e);
  const Op& u = graph.op(edge.src);
  const Op& v = graph.op(edge.dst);
  Need need;
  std::vector<int64_t> natural;
  if (u.role == OpRole::kForward) {
    natural = u.shape;
    const OpId f = v.role == OpRole::kBackward ? graph.forward_op_of(edge.dst) : -1;
    if (v.role == OpRole::kForward) need.region = Needed(v, config, part, u);
    else if (f == edge.src) need.region = ComputedBox(u, config, part);
    else if (f >= 0) need.region = Needed(graph.op(f), config, part, u);
    else need.region = FullBox(u.shape);
  } else if (u.role == OpRole::kBackward && v.role == OpRole::kBackward) {
    const OpId a = graph.forward_op_of(edge.src), b = graph.forward_op_of(edge.dst);
    need.port = a >= 0 && b >= 0 ? SlotOf(graph, a, b) : -1;
    if (need.port < 0) {
      need.zeros = true;
      return need;
    }
    natural = graph.op(b).shape;
    need.region = ComputedBox(graph.op(b), config, part);
    need.sum = true;
  } else {
    need.weight_grad = u.role == OpRole::kBackward && v.role == OpRole::kUpdate;
    need.zeros = !need.weight_grad;
    return need;
  }
  if (base.edges[e].shape != natural) {
    need.cut = &base.edges[e];
    need.region = FullBox(natural);
    // A part taking rows of its op reads its rows of a cut that carries one value per row (e.g. the ids of one
    // time step for an embedding step): the op's rows are computed row by row.
    const OpId f = v.role == OpRole::kBackward ? graph.forward_op_of(edge.dst) : -1;
    const Op& rows = f >= 0 ? graph.op(f) : v;
    if (config.num_parts() > 1 && RowsOnly(rows, config) && !rows.shape.empty() &&
        need.cut->shape == std::vector<int64_t>{rows.shape[0]}) {
      const Box box = ComputedBox(rows, config, part);
      need.cut_lo = box.lo[0];
      need.cut_len = box.hi[0] - box.lo[0];
    }
  }
  return need;
}

bool RowsOnly(const Op& op, const OpConfig& config) {
  for (size_t j = 0; j < config.degrees.size(); ++j)
    if (config.degrees[j] > 1 && !(op.dims[j].kind == DimKind::kSample && op.dims[j].output_axis == 0)) return false;
  return true;
}

std::vector<int64_t> CutShape(const EdgeTensor& cut, int64_t cut_len) {
  std::vector<int64_t> shape = cut.shape;
  if (cut_len >= 0 && !shape.empty()) shape[0] = cut_len;
  return shape;
}

bool ExactSplit(const Graph& graph, const Plan& base, OpId op, const OpConfig& config, const OpImpl& impl,
                int32_t* shard_axis) {
  const Op& o = graph.op(op);
  *shard_axis = -1;
  if (config.num_parts() == 1) return true;
  const int32_t rank = static_cast<int32_t>(o.shape.size());
  for (size_t j = 0; j < config.degrees.size(); ++j) {
    if (config.degrees[j] == 1) continue;
    const PartitionDim& d = o.dims[j];
    if (d.kind == DimKind::kSample && d.output_axis == 0) continue;
    if (d.kind == DimKind::kParameter && d.input_axis < 0 && *shard_axis < 0 &&
        impl.WeightShard(d.output_axis, 0, 1).defined()) {
      *shard_axis = d.output_axis;
      continue;
    }
    const bool normalised = (o.type == "softmax" || o.type == "layer_norm") && d.output_axis != rank - 1;
    if (d.kind == DimKind::kAttribute && d.input_axis == d.output_axis && (Elementwise().count(o.type) || normalised))
      continue;
    return false;
  }
  for (int32_t e : graph.in_edges(op)) {  // a cut in-edge: one value per row, the parts taking rows
    const std::vector<int64_t>& cut = base.edges[e].shape;
    if (cut != graph.op(graph.edge(e).src).shape &&
        !(RowsOnly(o, config) && !o.shape.empty() && cut == std::vector<int64_t>{o.shape[0]}))
      return false;
  }
  return true;
}

}  // namespace devplace::exec
