#include "sim/partition.h"

#include <algorithm>

namespace devplace::sim {

int64_t ParamBytesOf(const Graph& graph, OpId op) {
  const Op& o = graph.op(op);
  if (o.role == OpRole::kForward) return o.param_bytes;
  const OpId f = graph.forward_op_of(op);
  return f < 0 ? o.param_bytes : graph.op(f).param_bytes;
}

int32_t WeightPieces(const Op& op, const OpConfig& config) {
  const PartLayout layout = Layout(op, config);
  return layout.shards * (config.shard_weights ? layout.replicas : 1);
}

int32_t WeightPiece(const Op& op, const OpConfig& config, int32_t part) {
  if (!config.shard_weights) return ShardIndex(op, config, part);
  return ShardIndex(op, config, part) * Layout(op, config).replicas + ReplicaIndex(op, config, part);
}

PartWork PartWorkOf(const Graph& graph, OpId op, const OpConfig& config, int32_t part, std::vector<int64_t>* shape) {
  PartWork work;
  work.op = &graph.op(op);
  work.bytes_accessed = PartBytesAccessed(graph, op, config, part, shape);
  work.shape = *shape;
  work.flops = work.op->flops / Layout(*work.op, config).distinct;
  return work;
}

int64_t PartBytesAccessed(const Graph& graph, OpId op, const OpConfig& config, int32_t part,
                          std::vector<int64_t>* shape) {
  const Op& o = graph.op(op);
  const Box computed = ComputedBox(o, config, part);
  shape->resize(static_cast<size_t>(computed.rank));
  for (int32_t a = 0; a < computed.rank; ++a) (*shape)[a] = computed.hi[a] - computed.lo[a];
  const int64_t total = std::max<int64_t>(1, NumElements(o));
  const PartLayout layout = Layout(o, config);
  double bytes = static_cast<double>(OutputBytes(o)) * static_cast<double>(Volume(computed)) /
                 static_cast<double>(total);
  bytes += static_cast<double>(ParamBytesOf(graph, op)) / layout.shards;
  for (int32_t e : graph.in_edges(op)) {
    const Edge& edge = graph.edge(e);
    const Op& producer = graph.op(edge.src);
    const Box need = NeededBox(o, config, part, producer);
    bytes += static_cast<double>(edge.bytes) * static_cast<double>(Volume(need)) /
             static_cast<double>(std::max<int64_t>(1, NumElements(producer)));
  }
  return static_cast<int64_t>(bytes);
}

}  // namespace devplace::sim
