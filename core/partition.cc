#include "core/partition.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#include "core/check.h"

namespace devplace {
namespace {

// Multi-index digit of `part` for dim `j` (row-major over degrees).
int32_t Digit(const OpConfig& config, int32_t part, size_t j) {
  int32_t stride = 1;
  for (size_t k = config.degrees.size(); k-- > j + 1;) stride *= config.degrees[k];
  return (part / stride) % config.degrees[j];
}

bool IsShardKind(DimKind kind) { return kind == DimKind::kParameter || kind == DimKind::kReduction; }

// Combined index of `part` over the dims selected by `pick` (row-major among them).
template <class Pick>
int32_t CombinedIndex(const Op& op, const OpConfig& config, int32_t part, Pick pick) {
  int32_t index = 0;
  for (size_t j = 0; j < config.degrees.size(); ++j) {
    if (!pick(op.dims[j])) continue;
    index = index * config.degrees[j] + Digit(config, part, j);
  }
  return index;
}

void Slice(Box* box, int32_t axis, int32_t parts, int32_t index) {
  const int64_t lo = box->lo[axis], extent = box->hi[axis] - box->lo[axis];
  box->hi[axis] = lo + extent * (index + 1) / parts;
  box->lo[axis] = lo + extent * index / parts;
}

// `*box` cut to part `part`'s slice along every partitioned dimension of `op` whose axis (member `axis_of` of
// its PartitionDim: output_axis or input_axis) lies inside the box, in dimension order. In place, with the part's
// digits taken in one pass: this runs for every part and input of every op the simulator builds.
void SliceByDims(Box* box, const Op& op, const OpConfig& config, int32_t part, int32_t PartitionDim::*axis_of) {
  const size_t n = config.degrees.size();
  std::array<int32_t, 32> digits;
  const bool one_pass = n <= digits.size();  // else (an op with more dims than that) digit by digit
  for (size_t j = n; one_pass && j-- > 0;) {  // row-major: the last dimension varies fastest; copies are dropped
    const int32_t d = config.degrees[j];
    if (d == 1) {  // most dims of a split op are whole: no division
      digits[j] = 0;
      continue;
    }
    digits[j] = part % d;
    part /= d;
  }
  for (size_t j = 0; j < n; ++j) {
    const int32_t axis = op.dims[j].*axis_of;
    if (axis < 0 || axis >= box->rank || config.degrees[j] == 1) continue;
    Slice(box, axis, config.degrees[j], one_pass ? digits[j] : Digit(config, part, j));
  }
}

}  // namespace

Box FullBox(const std::vector<int64_t>& shape) {
  DEVPLACE_CHECK(shape.size() <= static_cast<size_t>(kMaxRank), "rank above kMaxRank");
  Box box;
  box.rank = static_cast<int32_t>(shape.size());
  // Over all kMaxRank axes: a fixed-length loop compiles to vector moves, a copy of `rank` extents to a string
  // operation (core/CMakeLists.txt: DEVPLACE_SHORT_STRINGOPS).
  const int64_t* extent = shape.data();
  for (int32_t a = 0; a < kMaxRank; ++a) box.hi[a] = a < box.rank ? extent[a] : 0;
  return box;
}

int64_t Volume(const Box& box) {
  int64_t v = 1;
  for (int32_t a = 0; a < box.rank; ++a) v *= std::max<int64_t>(0, box.hi[a] - box.lo[a]);
  return v;
}

int64_t OverlapVolume(const Box& a, const Box& b) {
  DEVPLACE_CHECK(a.rank == b.rank);
  int64_t v = 1;
  for (int32_t k = 0; k < a.rank; ++k) {
    const int64_t lo = std::max(a.lo[k], b.lo[k]), hi = std::min(a.hi[k], b.hi[k]);
    if (hi <= lo) return 0;
    v *= hi - lo;
  }
  return v;
}

Box Intersection(const Box& a, const Box& b) {
  Box r = a;
  for (int32_t k = 0; k < r.rank; ++k) {
    r.lo[k] = std::max(a.lo[k], b.lo[k]);
    r.hi[k] = std::max(r.lo[k], std::min(a.hi[k], b.hi[k]));
  }
  return r;
}

bool SameBox(const Box& a, const Box& b) {
  if (a.rank != b.rank) return false;
  for (int32_t k = 0; k < a.rank; ++k)
    if (a.lo[k] != b.lo[k] || a.hi[k] != b.hi[k]) return false;
  return true;
}

PartLayout Layout(const Op& op, const OpConfig& config) {
  PartLayout layout;
  layout.parts = config.num_parts();
  for (size_t j = 0; j < config.degrees.size(); ++j) {
    const int32_t d = config.degrees[j];
    layout.distinct *= d;
    if (op.dims[j].kind == DimKind::kReduction) layout.reduction *= d;
    if (IsShardKind(op.dims[j].kind)) layout.shards *= d;
    else layout.replicas *= d;
  }
  layout.copies = layout.parts / layout.distinct;
  return layout;
}

int32_t CopyIndex(const OpConfig& config, int32_t part) {
  int32_t distinct = 1;
  for (int32_t d : config.degrees) distinct *= d;
  return part / distinct;
}

int32_t ReductionIndex(const Op& op, const OpConfig& config, int32_t part) {
  return CombinedIndex(op, config, part, [](const PartitionDim& d) { return d.kind == DimKind::kReduction; });
}

int32_t ReductionRing(const Op& op, const OpConfig& config, int32_t part) {
  const PartLayout layout = Layout(op, config);
  return CopyIndex(config, part) * (layout.distinct / layout.reduction) +
         CombinedIndex(op, config, part, [](const PartitionDim& d) { return d.kind != DimKind::kReduction; });
}

int32_t ShardIndex(const Op& op, const OpConfig& config, int32_t part) {
  return CombinedIndex(op, config, part, [](const PartitionDim& d) { return IsShardKind(d.kind); });
}

int32_t ReplicaIndex(const Op& op, const OpConfig& config, int32_t part) {
  return CombinedIndex(op, config, part, [](const PartitionDim& d) { return !IsShardKind(d.kind); });
}

Box ComputedBox(const Op& op, const OpConfig& config, int32_t part) {
  Box box = FullBox(op.shape);
  SliceByDims(&box, op, config, part, &PartitionDim::output_axis);
  return box;
}

Box OwnedBox(const Op& op, const OpConfig& config, int32_t part) {
  Box box = ComputedBox(op, config, part);
  int32_t reduction = 1;  // Layout's `reduction`, without the rest of the layout (this runs for every part)
  for (size_t j = 0; j < config.degrees.size(); ++j)
    if (op.dims[j].kind == DimKind::kReduction) reduction *= config.degrees[j];
  if (reduction == 1 || box.rank == 0) return box;
  // Reduce-scatter: each ring member keeps one slice of the box along its longest axis (lowest axis on ties).
  int32_t axis = 0;
  for (int32_t a = 1; a < box.rank; ++a)
    if (box.hi[a] - box.lo[a] > box.hi[axis] - box.lo[axis]) axis = a;
  Slice(&box, axis, reduction, ReductionIndex(op, config, part));
  return box;
}

Box NeededBox(const Op& consumer, const OpConfig& config, int32_t part, const Op& producer) {
  // A backward op's saved output of its own forward op (same shape and dims): the region the part computes.
  if (!consumer.forward_op.empty() && consumer.forward_op == producer.name && consumer.shape == producer.shape)
    return ComputedBox(consumer, config, part);
  Box box = FullBox(producer.shape);
  SliceByDims(&box, consumer, config, part, &PartitionDim::input_axis);
  return box;
}

namespace {

// Whether, along every axis of a tensor of `shape`, the product of the degrees of the dims whose `axis_of` is that
// axis divides its extent.
bool AxesDivide(const std::vector<int64_t>& shape, const Op& op, const OpConfig& config,
                int32_t PartitionDim::*axis_of) {
  // Only the axes some dim of degree > 1 cuts (bit a of `cut`) can fail; most configs cut one axis.
  std::array<int64_t, kMaxRank> product;
  uint32_t cut = 0;
  const auto rank = static_cast<int32_t>(shape.size());
  for (size_t j = 0; j < config.degrees.size(); ++j) {
    const int32_t axis = op.dims[j].*axis_of;
    if (config.degrees[j] == 1 || axis < 0 || axis >= rank || axis >= kMaxRank) continue;
    if ((cut >> axis & 1u) == 0) product[axis] = 1;
    cut |= 1u << axis;
    product[axis] *= config.degrees[j];
  }
  for (int32_t a = 0; cut != 0; ++a, cut >>= 1)
    if ((cut & 1u) != 0 && shape[a] % product[a] != 0) return false;
  return true;
}

}  // namespace

bool PartsAlike(const Graph& graph, OpId op, const OpConfig& config) {
  const Op& o = graph.op(op);
  if (!AxesDivide(o.shape, o, config, &PartitionDim::output_axis)) return false;
  for (int32_t e : graph.in_edges(op))
    if (!AxesDivide(graph.op(graph.edge(e).src).shape, o, config, &PartitionDim::input_axis)) return false;
  return true;
}

int32_t NearestCopy(const Topology& topology, const OpConfig& config, const PartLayout& layout, int32_t part,
                    DeviceId device) {
  if (layout.copies == 1) return part;  // the only copy
  int32_t best = part;
  size_t best_hops = SIZE_MAX;
  for (int32_t c = 0; c < layout.copies; ++c) {
    const int32_t p = part + c * layout.distinct;
    if (config.devices[p] == device) return p;
    const size_t hops = topology.route(config.devices[p], device).size();
    if (hops < best_hops) {
      best = p;
      best_hops = hops;
    }
  }
  return best;
}

int32_t ShardSource(const Op& op, const OpConfig& config, int32_t shard, DeviceId device) {
  int32_t source = -1;
  for (int32_t p = 0; p < config.num_parts(); ++p) {
    if (ShardIndex(op, config, p) != shard) continue;
    if (config.devices[p] == device) return p;
    if (source < 0 || ReplicaIndex(op, config, p) < ReplicaIndex(op, config, source)) source = p;
  }
  return source;
}

}  // namespace devplace
