#include "core/training_graph.h"

#include <algorithm>
#include <vector>

namespace devplace {

Expected<Graph> DeriveTrainingGraph(const Graph& forward, const TrainingOptions& options) {
  const int32_t n = forward.num_ops();
  GraphBuilder builder(forward.name());
  std::vector<std::string> group(n);
  for (OpId i = 0; i < n; ++i) {
    Op op = forward.op(i);
    if (op.role != OpRole::kForward)
      return Error{"op '" + op.name + "': training graphs are derived from forward graphs, but its role is " +
                   std::string(ToString(op.role))};
    if (op.colocation.empty()) op.colocation = op.name;
    group[i] = op.colocation;
    builder.add_op(std::move(op));
  }

  // Backward ops, created in reverse topological order so that ids follow the order gradients flow.
  std::vector<OpId> grad(n, -1);
  const std::vector<OpId>& order = forward.topological_order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Op& f = forward.op(*it);
    if (f.param_bytes == 0 && forward.in_edges(*it).empty()) continue;  // inputs/constants need no gradient
    Op b;
    b.name = f.name + "/grad";
    b.type = f.type + "_grad";
    b.layer = f.layer;
    b.role = OpRole::kBackward;
    b.shape = f.shape;
    b.dtype = f.dtype;
    b.flops = f.flops * (f.param_bytes > 0 ? options.backward_flops_ratio_with_params
                                           : options.backward_flops_ratio_without_params);
    b.colocation = group[*it];
    b.dims = f.dims;
    b.forward_op = f.name;
    grad[*it] = builder.add_op(std::move(b));
  }

  for (const Edge& e : forward.edges()) builder.add_edge(e.src, e.dst, e.bytes);
  for (OpId f = 0; f < n; ++f) {
    if (grad[f] < 0) continue;
    builder.add_edge(f, grad[f], OutputBytes(forward.op(f)));
  }
  for (const Edge& e : forward.edges()) {
    if (grad[e.dst] < 0) continue;
    builder.add_edge(e.src, grad[e.dst], e.bytes);                          // saved input activation
    if (grad[e.src] >= 0) builder.add_edge(grad[e.dst], grad[e.src], e.bytes);  // gradient of the tensor
  }

  for (OpId i = 0; i < n; ++i) {
    const Op& f = forward.op(i);
    if (f.param_bytes == 0) continue;
    Op u;
    u.name = f.name + "/update";
    u.type = "update";
    u.layer = f.layer;
    u.role = OpRole::kUpdate;
    u.dtype = f.dtype;
    const int64_t elements = std::max<int64_t>(1, f.param_bytes / DTypeBytes(f.dtype));
    u.shape = {elements};
    u.flops = options.update_flops_per_param * static_cast<double>(elements);
    u.dims = {PartitionDim{DimKind::kParameter, 0, 0, elements}};  // shardable like ZeRO's partitioned update
    u.colocation = group[i];
    u.forward_op = f.name;
    OpId update = builder.add_op(std::move(u));
    builder.add_edge(grad[i], update, f.param_bytes);
  }
  return std::move(builder).Build();
}

}  // namespace devplace
