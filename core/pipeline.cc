#include "core/pipeline.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

namespace devplace {
namespace {

constexpr std::pair<PipelineSchedule, std::string_view> kScheduleNames[] = {
    {PipelineSchedule::kGPipe, "gpipe"},
    {PipelineSchedule::kOneFOneB, "1f1b"},
    {PipelineSchedule::kEagerOneFOneB, "eager-1f1b"}};

Error StageError(const PipelineStage& stage, const std::string& what) {
  return Error{"stage '" + stage.name + "': " + what};
}

// Marks the forward ops of `stage` in *stage_of (as `index`); errors name the stage.
Status MarkStageOps(const PipelinePlan& plan, int32_t index, const Graph& graph,
                    const std::unordered_map<std::string, int32_t>& layer_rank, std::vector<int32_t>* stage_of) {
  const PipelineStage& stage = plan.stages[index];
  const StageOps& r = stage.ops;
  auto in_range = [&](OpId op) -> bool {
    if (r.kind == StageOps::Kind::kOpRange)
      return graph.topological_rank(op) >= graph.topological_rank(r.first_op) &&
             graph.topological_rank(op) <= graph.topological_rank(r.last_op);
    const int32_t rank = layer_rank.at(graph.op(op).layer);
    return rank >= layer_rank.at(r.first_layer) && rank <= layer_rank.at(r.last_layer);
  };
  if (r.kind == StageOps::Kind::kOpRange) {
    for (OpId end : {r.first_op, r.last_op}) {
      if (end < 0 || end >= graph.num_ops()) return StageError(stage, "op range names no op of the graph");
      if (graph.op(end).role != OpRole::kForward)
        return StageError(stage, "op range ends at '" + graph.op(end).name + "', which is not a forward op");
    }
    if (graph.topological_rank(r.first_op) > graph.topological_rank(r.last_op))
      return StageError(stage, "op range is empty: '" + graph.op(r.first_op).name + "' comes after '" +
                                   graph.op(r.last_op).name + "' in the topological order");
  } else {
    for (const std::string* end : {&r.first_layer, &r.last_layer})
      if (!layer_rank.contains(*end))
        return StageError(stage, "no forward op has layer '" + *end + "' in graph '" + graph.name() + "'");
    if (layer_rank.at(r.first_layer) > layer_rank.at(r.last_layer))
      return StageError(stage, "layer range is empty: '" + r.first_layer + "' comes after '" + r.last_layer + "'");
  }
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    if (graph.op(op).role != OpRole::kForward || !in_range(op)) continue;
    if ((*stage_of)[op] >= 0)
      return StageError(stage, "op '" + graph.op(op).name + "' is also in stage '" +
                                   plan.stages[(*stage_of)[op]].name + "'");
    (*stage_of)[op] = index;
  }
  return Status::Ok();
}

// Scales the op to micro-batch size (StageGraph's rule); returns the factor its outputs shrank by (1 when it has
// no sample dimension), or 0 when `microbatches` does not divide a sample dimension.
int64_t ToMicrobatch(Op* op, int32_t microbatches) {
  int64_t factor = 1;
  for (PartitionDim& dim : op->dims) {
    if (dim.kind != DimKind::kSample) continue;
    if (dim.size % microbatches != 0) return 0;
    if (dim.output_axis >= 0 && dim.output_axis < static_cast<int32_t>(op->shape.size()) &&
        op->shape[dim.output_axis] == dim.size)
      op->shape[dim.output_axis] /= microbatches;
    dim.size /= microbatches;
    factor = microbatches;
  }
  op->flops /= static_cast<double>(factor);
  return factor;
}

}  // namespace

Expected<StageGraph> ShardedStageGraph(const PipelinePlan& plan, int32_t stage, const Graph& graph,
                                       const std::vector<int32_t>& stage_of) {
  const PipelineStage& st = plan.stages[stage];
  const int32_t M = plan.microbatches;
  StageGraph out;
  GraphBuilder b(graph.name() + "-" + st.name);
  std::vector<OpId> id(static_cast<size_t>(graph.num_ops()), -1);
  std::vector<int64_t> factor;
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    if (stage_of[op] != stage) continue;
    Op o = graph.op(op);
    const int64_t f = ToMicrobatch(&o, M);
    if (f == 0)
      return StageError(st, std::to_string(M) + " micro-batches do not divide a sample dimension of op '" +
                                graph.op(op).name + "'");
    id[op] = b.add_op(std::move(o));
    out.ops.push_back(op);
    factor.push_back(f);
  }
  for (const Edge& e : graph.edges())
    if (id[e.src] >= 0 && id[e.dst] >= 0)
      b.add_edge(id[e.src], id[e.dst],
                 graph.op(e.dst).role == OpRole::kUpdate ? e.bytes : e.bytes / factor[id[e.src]]);
  Expected<Graph> built = std::move(b).Build();
  if (!built.ok()) return StageError(st, built.error().message);
  out.graph = std::move(*built);
  const Mesh mesh = StageMesh(st);
  Expected<ShardingPlan> propagated = PropagateSharding(out.graph, mesh, st.sharding);
  if (!propagated.ok()) return StageError(st, "sharding: " + propagated.error().message);
  Expected<Strategy> lowered = LowerSpecs(out.graph, propagated->specs, mesh);
  if (!lowered.ok()) return StageError(st, "sharding: " + lowered.error().message);
  out.strategy = std::move(*lowered);
  return out;
}

std::string_view ToString(PipelineSchedule schedule) {
  for (const auto& [value, name] : kScheduleNames)
    if (value == schedule) return name;
  return "?";
}

bool ParsePipelineSchedule(std::string_view text, PipelineSchedule* schedule) {
  for (const auto& [value, name] : kScheduleNames)
    if (name == text) {
      *schedule = value;
      return true;
    }
  return false;
}

int32_t WarmupForwards(PipelineSchedule schedule, int32_t num_stages, int32_t stage, int32_t microbatches) {
  switch (schedule) {
    case PipelineSchedule::kGPipe: return microbatches;
    case PipelineSchedule::kOneFOneB: return std::min(microbatches, num_stages - stage);
    case PipelineSchedule::kEagerOneFOneB: return std::min(microbatches, 2 * (num_stages - stage) - 1);
  }
  return microbatches;
}

std::vector<StageStep> StageOrder(PipelineSchedule schedule, int32_t num_stages, int32_t stage,
                                  int32_t microbatches) {
  const int32_t warmup = WarmupForwards(schedule, num_stages, stage, microbatches);
  std::vector<StageStep> order;
  order.reserve(2 * static_cast<size_t>(microbatches));
  int32_t forwards = 0, backwards = 0;
  while (forwards < warmup) order.push_back({true, forwards++});
  while (forwards < microbatches) {
    order.push_back({false, backwards++});
    order.push_back({true, forwards++});
  }
  while (backwards < microbatches) order.push_back({false, backwards++});
  return order;
}

Mesh StageMesh(const PipelineStage& stage) {
  Mesh mesh;
  mesh.name = stage.name;
  if (stage.shape.empty()) mesh.shape = {static_cast<int64_t>(stage.devices.size())};
  for (int32_t extent : stage.shape) mesh.shape.push_back(extent);
  for (size_t a = 0; a < mesh.shape.size(); ++a) mesh.axes.push_back(std::string(1, 'a').append(std::to_string(a)));
  mesh.devices = stage.devices;
  return mesh;
}

Expected<ShardingSpec> StageSpec(const PipelineStage& stage) {
  const Mesh mesh = StageMesh(stage);
  if (stage.spec.empty()) {
    ShardingSpec spec = ShardingSpec::Replicated(2);
    for (int32_t a = 0; a < mesh.rank(); ++a) spec.dims[0].push_back(a);
    return spec;
  }
  Expected<ShardingSpec> spec = ParseAlpaSpec(stage.spec, mesh);
  if (!spec.ok()) return StageError(stage, spec.error().message);
  if (spec->dims.size() != 2)
    return StageError(stage, "spec '" + stage.spec + "' has " + std::to_string(spec->dims.size()) +
                                 " entries; expected 2 (samples, features)");
  std::vector<char> used(static_cast<size_t>(mesh.rank()), 0);
  for (const std::vector<int32_t>& axes : spec->dims)
    for (int32_t a : axes)
      if (used[a]++)
        return StageError(stage, "spec '" + stage.spec + "' uses mesh axis " + std::to_string(a) + " twice");
  return spec;
}

std::vector<std::string> ForwardLayerOrder(const Graph& graph) {
  std::vector<std::string> layers;
  std::unordered_map<std::string, int32_t> seen;
  for (OpId op : graph.topological_order()) {
    const Op& o = graph.op(op);
    if (o.role == OpRole::kForward && seen.emplace(o.layer, static_cast<int32_t>(layers.size())).second)
      layers.push_back(o.layer);
  }
  return layers;
}

Expected<std::vector<int32_t>> AssignStages(const PipelinePlan& plan, const Graph& graph) {
  std::unordered_map<std::string, int32_t> layer_rank;
  const std::vector<std::string> layers = ForwardLayerOrder(graph);
  for (size_t k = 0; k < layers.size(); ++k) layer_rank.emplace(layers[k], static_cast<int32_t>(k));
  std::vector<int32_t> stage_of(static_cast<size_t>(graph.num_ops()), -1);
  for (int32_t s = 0; s < static_cast<int32_t>(plan.stages.size()); ++s)
    if (Status st = MarkStageOps(plan, s, graph, layer_rank, &stage_of); !st) return st.error();
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const Op& o = graph.op(op);
    if (o.role == OpRole::kForward) {
      if (stage_of[op] < 0) return Error{"op '" + o.name + "': is in no pipeline stage"};
      continue;
    }
    const OpId forward = o.forward_op.empty() ? -1 : graph.find(o.forward_op);
    if (forward < 0 || graph.op(forward).role != OpRole::kForward)
      return Error{"op '" + o.name + "': a " + std::string(ToString(o.role)) +
                   " op needs its forward op (forward_op) to be placed in a pipeline stage"};
    stage_of[op] = stage_of[forward];
  }
  // Forward ops feed their own or later stages, backward ops their own or earlier stages' backward ops.
  for (const Edge& e : graph.edges()) {
    const int32_t from = stage_of[e.src], to = stage_of[e.dst];
    if (from == to) continue;
    const bool forward = graph.op(e.src).role == OpRole::kForward;
    if (forward ? from < to : (from > to && graph.op(e.dst).role != OpRole::kForward)) continue;
    return StageError(plan.stages[to], "op '" + graph.op(e.dst).name + "' reads '" + graph.op(e.src).name +
                                           "' of stage '" + plan.stages[from].name +
                                           "' (stages must follow the data flow)");
  }
  return stage_of;
}

Status ValidatePipelinePlan(const PipelinePlan& plan, const Graph& graph, const Topology& topology) {
  if (plan.stages.empty()) return Error{"pipeline has no stages"};
  if (plan.microbatches < 1 || plan.microbatches > kMaxMicrobatches)
    return Error{"microbatches: must be in [1, " + std::to_string(kMaxMicrobatches) + "], got " +
                 std::to_string(plan.microbatches)};
  std::unordered_map<std::string, int32_t> names;
  std::vector<int32_t> user(static_cast<size_t>(topology.num_devices()), -1);
  for (int32_t s = 0; s < static_cast<int32_t>(plan.stages.size()); ++s) {
    const PipelineStage& stage = plan.stages[s];
    if (stage.name.empty()) return Error{"stage " + std::to_string(s) + ": has no name"};
    if (!names.emplace(stage.name, s).second) return StageError(stage, "the name is used by two stages");
    if (stage.devices.empty()) return StageError(stage, "has no devices");
    for (DeviceId d : stage.devices) {
      if (d < 0 || d >= topology.num_devices())
        return StageError(stage, "device " + std::to_string(d) + " is not in topology '" + topology.name() + "'");
      if (user[d] == s) return StageError(stage, "device '" + topology.device(d).name + "' is listed twice");
      if (user[d] >= 0)
        return StageError(stage, "device '" + topology.device(d).name + "' is already used by stage '" +
                                     plan.stages[user[d]].name + "'");
      user[d] = s;
    }
    if (!stage.shape.empty()) {
      int64_t product = 1;
      for (int32_t extent : stage.shape) {
        if (extent < 1) return StageError(stage, "shape extents must be >= 1");
        product *= extent;
      }
      if (product != static_cast<int64_t>(stage.devices.size()))
        return StageError(stage, "shape has " + std::to_string(product) + " places but " +
                                     std::to_string(stage.devices.size()) + " devices are given");
    }
    if (Expected<ShardingSpec> spec = StageSpec(stage); !spec.ok()) return spec.error();
  }
  if (plan.reshard.chunks < 1 || plan.reshard.chunks > kMaxReshardChunks)
    return Error{"reshard.chunks: must be in [1, " + std::to_string(kMaxReshardChunks) + "], got " +
                 std::to_string(plan.reshard.chunks)};
  Expected<std::vector<int32_t>> stage_of = AssignStages(plan, graph);
  if (!stage_of) return stage_of.error();
  int64_t batch = 0;  // the largest sample dimension of the graph
  for (const Op& o : graph.ops())
    for (const PartitionDim& dim : o.dims)
      if (dim.kind == DimKind::kSample) batch = std::max(batch, dim.size);
  for (int32_t s = 0; s < static_cast<int32_t>(plan.stages.size()); ++s)
    if (!plan.stages[s].sharding.empty())
      if (Expected<StageGraph> sg = ShardedStageGraph(plan, s, graph, *stage_of); !sg.ok()) return sg.error();
  for (const PipelineStage& stage : plan.stages) {
    const int64_t need = int64_t{plan.microbatches} * static_cast<int64_t>(stage.devices.size());
    if (batch > 0 && need > batch)
      return StageError(stage, std::to_string(plan.microbatches) + " micro-batches x " +
                                   std::to_string(stage.devices.size()) + " devices exceed the batch (" +
                                   std::to_string(batch) + ", the graph's largest sample dimension)");
  }
  return Status::Ok();
}

}  // namespace devplace
