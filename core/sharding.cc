#include "core/sharding.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "core/partition.h"

namespace devplace {

ShardingSpec ShardingSpec::Replicated(int32_t rank) {
  ShardingSpec s;
  s.dims.resize(static_cast<size_t>(rank));
  return s;
}

bool ShardingSpec::is_replicated() const {
  return partial.empty() && std::all_of(dims.begin(), dims.end(), [](const auto& d) { return d.empty(); });
}

namespace {

int64_t AxesProduct(const std::vector<int32_t>& axes, const Mesh& mesh) {
  int64_t n = 1;
  for (int32_t a : axes) n *= mesh.shape[a];
  return n;
}

std::string AxesText(const std::vector<int32_t>& axes, const Mesh& mesh) {
  if (axes.empty()) return "-";
  if (axes.size() == 1) return mesh.axes[axes[0]];
  std::string out = "(";
  for (size_t i = 0; i < axes.size(); ++i) out += (i ? ", " : "") + mesh.axes[axes[i]];
  return out + ")";
}

int32_t FirstReductionDim(const Op& op) {
  for (size_t k = 0; k < op.dims.size(); ++k)
    if (op.dims[k].kind == DimKind::kReduction && op.dims[k].output_axis < 0) return static_cast<int32_t>(k);
  return -1;
}

}  // namespace

int64_t ShardCount(const ShardingSpec& spec, int32_t axis, const Mesh& mesh) { return AxesProduct(spec.dims[axis], mesh); }

int64_t SpecParts(const ShardingSpec& spec, const Mesh& mesh) {
  int64_t n = AxesProduct(spec.partial, mesh);
  for (const auto& d : spec.dims) n *= AxesProduct(d, mesh);
  return n;
}

Status ValidateSpec(const ShardingSpec& spec, const std::vector<int64_t>& shape, const Mesh& mesh, bool allow_padding) {
  if (spec.dims.size() != shape.size())
    return Error{"spec has " + std::to_string(spec.dims.size()) + " dims but the tensor has rank " +
                 std::to_string(shape.size()) + " (shape " + FormatShape(shape) + ")"};
  std::vector<char> used(static_cast<size_t>(mesh.rank()), 0);
  auto use = [&](int32_t a) -> Status {
    if (a < 0 || a >= mesh.rank()) return Error{"mesh axis " + std::to_string(a) + " is not in mesh '" + mesh.name + "'"};
    if (used[a]) return Error{"mesh axis '" + mesh.axes[a] + "' is used twice"};
    used[a] = 1;
    return Status::Ok();
  };
  for (size_t i = 0; i < shape.size(); ++i) {
    for (int32_t a : spec.dims[i])
      if (Status st = use(a); !st.ok()) return st;
    const int64_t shards = AxesProduct(spec.dims[i], mesh);
    if (shards > shape[i])
      return Error{"axis " + std::to_string(i) + " (extent " + std::to_string(shape[i]) + ") cannot be cut into " +
                   std::to_string(shards) + " shards"};
    if (!allow_padding && shape[i] % shards != 0)
      return Error{"axis " + std::to_string(i) + " (extent " + std::to_string(shape[i]) + ") is not divisible by " +
                   std::to_string(shards) + " shards (set pad: true to allow uneven shards)"};
  }
  for (int32_t a : spec.partial)
    if (Status st = use(a); !st.ok()) return st;
  return Status::Ok();
}

std::string FormatSpec(const ShardingSpec& spec, const Mesh& mesh) {
  std::string out = "[";
  for (size_t i = 0; i < spec.dims.size(); ++i) out += (i ? ", " : "") + AxesText(spec.dims[i], mesh);
  out += "]";
  if (!spec.partial.empty()) {
    std::string p = AxesText(spec.partial, mesh);
    out += " partial" + (p.front() == '(' ? p : "(" + p + ")");
  }
  return out;
}

Expected<std::vector<std::vector<int32_t>>> DimAxesOf(const Op& op, const ShardingSpec& spec) {
  std::vector<std::vector<int32_t>> dim_axes(op.dims.size());
  for (size_t a = 0; a < spec.dims.size(); ++a) {
    if (spec.dims[a].empty()) continue;
    auto it = std::find_if(op.dims.begin(), op.dims.end(),
                           [&](const PartitionDim& d) { return d.output_axis == static_cast<int32_t>(a); });
    if (it == op.dims.end())
      return Error{"op '" + op.name + "' (" + op.type + ") cannot split its output axis " + std::to_string(a) +
                   " (no partitionable dimension slices it)"};
    dim_axes[it - op.dims.begin()] = spec.dims[a];
  }
  if (!spec.partial.empty()) {
    const int32_t r = FirstReductionDim(op);
    if (r < 0) return Error{"op '" + op.name + "' (" + op.type + ") has no reduction dimension to be partial over"};
    dim_axes[r] = spec.partial;
  }
  return dim_axes;
}

OpConfig LowerDimAxes(const std::vector<std::vector<int32_t>>& dim_axes, const Mesh& mesh) {
  OpConfig config;
  std::vector<int32_t> degrees;
  std::vector<char> used(static_cast<size_t>(mesh.rank()), 0);
  int64_t parts = 1;
  for (const auto& axes : dim_axes) {
    degrees.push_back(static_cast<int32_t>(AxesProduct(axes, mesh)));
    parts *= degrees.back();
    for (int32_t a : axes) used[a] = 1;
  }
  if (parts > 1) config.degrees = std::move(degrees);
  // Copies run over the axes no dimension uses (row-major, the last axis fastest); within a copy, the parts.
  int64_t copies = 1;
  for (int32_t a = 0; a < mesh.rank(); ++a)
    if (!used[a]) copies *= mesh.shape[a];
  std::vector<int64_t> coords(static_cast<size_t>(mesh.rank()), 0);
  config.devices.reserve(static_cast<size_t>(parts * copies));
  for (int64_t c = 0; c < copies; ++c) {
    int64_t rest_copy = c;
    for (int32_t a = mesh.rank(); a-- > 0;) {
      if (used[a]) continue;
      coords[a] = rest_copy % mesh.shape[a];
      rest_copy /= mesh.shape[a];
    }
    for (int64_t p = 0; p < parts; ++p) {
      int64_t rest = p;
      for (size_t k = dim_axes.size(); k-- > 0;) {
        const int64_t degree = AxesProduct(dim_axes[k], mesh);
        int64_t index = rest % degree;
        rest /= degree;
        for (size_t j = dim_axes[k].size(); j-- > 0;) {
          const int32_t a = dim_axes[k][j];
          coords[a] = index % mesh.shape[a];
          index /= mesh.shape[a];
        }
      }
      config.devices.push_back(mesh.device_at(coords));
    }
  }
  return config;
}

Expected<OpConfig> LowerSpec(const Op& op, const ShardingSpec& spec, const Mesh& mesh, bool allow_padding) {
  if (Status st = ValidateSpec(spec, op.shape, mesh, allow_padding); !st.ok())
    return Error{"op '" + op.name + "': " + st.error().message};
  Expected<std::vector<std::vector<int32_t>>> dim_axes = DimAxesOf(op, spec);
  if (!dim_axes.ok()) return dim_axes.error();
  for (size_t k = 0; k < op.dims.size(); ++k)
    if (AxesProduct((*dim_axes)[k], mesh) > op.dims[k].size)
      return Error{"op '" + op.name + "': dimension " + std::to_string(k) + " (size " + std::to_string(op.dims[k].size) +
                   ") cannot be cut into " + std::to_string(AxesProduct((*dim_axes)[k], mesh)) + " parts"};
  return LowerDimAxes(*dim_axes, mesh);
}

std::optional<ShardingSpec> LiftConfig(const Op& op, const OpConfig& config, const Mesh& mesh) {
  ShardingSpec spec = ShardingSpec::Replicated(static_cast<int32_t>(op.shape.size()));
  const bool plain = std::all_of(config.degrees.begin(), config.degrees.end(), [](int32_t d) { return d == 1; });
  if (plain) {
    const std::vector<std::vector<int32_t>> none(op.dims.size());
    if (config.devices == LowerDimAxes(none, mesh).devices) return spec;
    return std::nullopt;
  }
  if (config.degrees.size() != op.dims.size()) return std::nullopt;
  // Search assignments of mesh axes (extent > 1) to dimensions whose extents multiply to each degree; the device
  // list then decides (lowering is injective on such assignments).
  std::vector<std::vector<int32_t>> dim_axes(op.dims.size());
  std::vector<char> used(static_cast<size_t>(mesh.rank()), 0);
  std::function<bool(size_t, int64_t)> assign = [&](size_t k, int64_t remaining) -> bool {
    if (k == op.dims.size()) return LowerDimAxes(dim_axes, mesh) == config;
    if (remaining == 1) return assign(k + 1, k + 1 < op.dims.size() ? config.degrees[k + 1] : 1);
    for (int32_t a = 0; a < mesh.rank(); ++a) {
      if (used[a] || mesh.shape[a] == 1 || remaining % mesh.shape[a] != 0) continue;
      used[a] = 1;
      dim_axes[k].push_back(a);
      if (assign(k, remaining / mesh.shape[a])) return true;
      dim_axes[k].pop_back();
      used[a] = 0;
    }
    return false;
  };
  if (!assign(0, config.degrees[0])) return std::nullopt;
  const int32_t reduction = FirstReductionDim(op);
  for (size_t k = 0; k < op.dims.size(); ++k) {
    if (dim_axes[k].empty()) continue;
    const int32_t axis = op.dims[k].output_axis;
    if (axis >= 0 && axis < static_cast<int32_t>(spec.dims.size()) && spec.dims[axis].empty()) {
      spec.dims[axis] = dim_axes[k];
    } else if (static_cast<int32_t>(k) == reduction) {
      spec.partial = dim_axes[k];
    } else {
      return std::nullopt;
    }
  }
  return spec;
}

std::string_view ToString(ReshardKind kind) {
  switch (kind) {
    case ReshardKind::kAllReduce: return "all-reduce";
    case ReshardKind::kReduceScatter: return "reduce-scatter";
    case ReshardKind::kAllGather: return "all-gather";
    case ReshardKind::kAllToAll: return "all-to-all";
    case ReshardKind::kSlice: return "slice";
  }
  return "?";
}

namespace {

// Where mesh axis `a` splits a spec: the tensor axis and the position among that axis's mesh axes, or {-1, -1}.
std::pair<int32_t, int32_t> Placement(const ShardingSpec& spec, int32_t a) {
  for (size_t t = 0; t < spec.dims.size(); ++t)
    for (size_t j = 0; j < spec.dims[t].size(); ++j)
      if (spec.dims[t][j] == a) return {static_cast<int32_t>(t), static_cast<int32_t>(j)};
  return {-1, -1};
}

}  // namespace

std::vector<ReshardStep> ReshardingSteps(const ShardingSpec& from, const ShardingSpec& to) {
  int32_t axes = 0;
  for (const ShardingSpec* s : {&from, &to}) {
    for (const auto& d : s->dims)
      for (int32_t a : d) axes = std::max(axes, a + 1);
    for (int32_t a : s->partial) axes = std::max(axes, a + 1);
  }
  std::vector<ReshardStep> steps;
  for (int32_t a = 0; a < axes; ++a) {
    const auto [src, src_pos] = Placement(from, a);
    const auto [dst, dst_pos] = Placement(to, a);
    const bool partial = std::find(from.partial.begin(), from.partial.end(), a) != from.partial.end();
    if (partial) {
      steps.push_back({dst < 0 ? ReshardKind::kAllReduce : ReshardKind::kReduceScatter, a, -1, dst});
    } else if (src >= 0 && dst < 0) {
      steps.push_back({ReshardKind::kAllGather, a, src, -1});
    } else if (src >= 0 && (src != dst || src_pos != dst_pos)) {
      steps.push_back({ReshardKind::kAllToAll, a, src, dst});
    } else if (src < 0 && dst >= 0) {
      steps.push_back({ReshardKind::kSlice, a, -1, dst});
    }
  }
  return steps;
}

ShardingSpec InputSpecFor(const Op& consumer, const ShardingSpec& consumer_spec, const Op& producer) {
  ShardingSpec needed = ShardingSpec::Replicated(static_cast<int32_t>(producer.shape.size()));
  const std::vector<std::vector<int32_t>> dim_axes = DimAxesOf(consumer, consumer_spec).value();
  for (size_t k = 0; k < dim_axes.size(); ++k) {
    const int32_t a = consumer.dims[k].input_axis;
    if (dim_axes[k].empty() || a < 0 || a >= static_cast<int32_t>(needed.dims.size()) || !needed.dims[a].empty())
      continue;
    needed.dims[a] = dim_axes[k];
  }
  return needed;
}

std::vector<std::vector<ReshardStep>> ForwardEdgeResharding(const Graph& graph, const std::vector<ShardingSpec>& specs) {
  std::vector<std::vector<ReshardStep>> steps(static_cast<size_t>(graph.num_edges()));
  for (int32_t e = 0; e < graph.num_edges(); ++e) {
    const Edge& edge = graph.edge(e);
    const Op& producer = graph.op(edge.src);
    const Op& consumer = graph.op(edge.dst);
    if (producer.role != OpRole::kForward || consumer.role != OpRole::kForward) continue;
    steps[e] = ReshardingSteps(specs[edge.src], InputSpecFor(consumer, specs[edge.dst], producer));
  }
  return steps;
}

Expected<Strategy> LowerSpecs(const Graph& graph, const std::vector<ShardingSpec>& specs, const Mesh& mesh,
                              int32_t weight_shard_axis) {
  if (static_cast<int32_t>(specs.size()) != graph.num_ops())
    return Error{"have " + std::to_string(specs.size()) + " specs for " + std::to_string(graph.num_ops()) + " ops"};
  Strategy strategy;
  strategy.configs.reserve(specs.size());
  for (OpId i = 0; i < graph.num_ops(); ++i) {
    const Op& op = graph.op(i);
    Expected<OpConfig> c = LowerSpec(op, specs[i], mesh);
    if (!c.ok()) return c.error();
    if (weight_shard_axis >= 0 && op.role != OpRole::kUpdate) {
      const OpId f = op.role == OpRole::kBackward ? graph.find(op.forward_op) : i;
      const bool uses = std::any_of(specs[i].dims.begin(), specs[i].dims.end(), [&](const std::vector<int32_t>& d) {
        return std::find(d.begin(), d.end(), weight_shard_axis) != d.end();
      });
      c->shard_weights = f >= 0 && graph.op(f).param_bytes > 0 && uses && Layout(op, *c).replicas > 1;
    }
    strategy.configs.push_back(std::move(*c));
  }
  return strategy;
}

}  // namespace devplace
