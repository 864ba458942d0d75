// Pipeline plans in the executor: the micro-batch strategy and the executor's entry points (the schedule itself is
// exec/pipeline_schedule.cc).
#include "exec/pipeline.h"

#include <optional>
#include <string>
#include <vector>

#include "exec/backend.h"
#include "exec/executor.h"

namespace devplace {

namespace {

Error StageError(const PipelineStage& stage, const std::string& what) {
  return Error{"stage '" + stage.name + "': " + what + " (docs/executor.md, \"Pipelines\")"};
}

// What the executor cannot run of the plan's options and stages, as one line; Ok otherwise.
Status CheckExecutable(const PipelinePlan& plan) {
  if (plan.delay_weight_gradients)
    return Error{"pipeline: delay_weight_gradients is not executed: the executor computes each backward whole"};
  if (plan.reshard.signal_only)
    return Error{"pipeline: reshard.signal_only is a simulated bound (1-byte slices) and cannot be executed"};
  for (const PipelineStage& stage : plan.stages) {
    if (!stage.sharding.empty())
      return StageError(stage, "intra-stage sharding annotations are not executed; the executor runs a stage "
                               "data parallel over its devices");
    Expected<ShardingSpec> spec = StageSpec(stage);
    if (!spec.ok()) return spec.error();
    ShardingSpec data_parallel = ShardingSpec::Replicated(2);
    for (int32_t a = 0; a < StageMesh(stage).rank(); ++a) data_parallel.dims[0].push_back(a);
    if (!(*spec == data_parallel))
      return StageError(stage, "layout '" + stage.spec + "' is not executed; the executor runs a stage's samples "
                               "split over all its devices (an empty spec)");
  }
  return Status::Ok();
}

// A graph input (a forward op without in-edges or weights: seeded data) with an out-edge carrying part of its output
// (e.g. the ids of one time step): the executor's parts reading such an edge need the whole input.
bool CutInput(const Graph& graph, OpId op) {
  const Op& o = graph.op(op);
  if (o.role != OpRole::kForward || !graph.in_edges(op).empty() || o.param_bytes > 0) return false;
  for (int32_t e : graph.out_edges(op))
    if (graph.edge(e).bytes < OutputBytes(o)) return true;
  return false;
}

}  // namespace

Expected<Strategy> MicrobatchStrategy(const Graph& graph, const Topology& topology, const PipelinePlan& plan) {
  if (Status s = ValidatePipelinePlan(plan, graph, topology); !s) return s.error();
  if (Status s = CheckExecutable(plan); !s) return s.error();
  Expected<std::vector<int32_t>> stage_of = AssignStages(plan, graph);
  if (!stage_of) return stage_of.error();
  const int32_t M = plan.microbatches;
  Strategy strategy;
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const Op& o = graph.op(op);
    const PipelineStage& stage = plan.stages[(*stage_of)[op]];
    const auto k = static_cast<int32_t>(stage.devices.size());
    if (o.role == OpRole::kUpdate) {  // every device of the stage updates its copy of the weights
      strategy.configs.push_back({stage.devices, std::vector<int32_t>(k > 1 ? o.dims.size() : 0, 1)});
      continue;
    }
    if (CutInput(graph, op)) {  // read whole by every micro-batch: computed once, in the first one
      strategy.configs.push_back({{stage.devices[0]}, {}});
      continue;
    }
    std::vector<DeviceId> places;
    for (int32_t m = 0; m < M; ++m) places.insert(places.end(), stage.devices.begin(), stage.devices.end());
    std::optional<OpConfig> split = SplitConfig(o, places);
    bool by_sample = M * k == 1;
    if (split)
      for (size_t d = 0; d < split->degrees.size(); ++d)
        by_sample = by_sample || (split->degrees[d] > 1 && o.dims[d].kind == DimKind::kSample &&
                                  o.dims[d].output_axis == 0);
    if (!split || !by_sample)
      return StageError(stage, "op '" + o.name + "' has no sample dimension at output axis 0 of at least " +
                                   std::to_string(M) + " micro-batches x " + std::to_string(k) +
                                   " devices, so it cannot run per micro-batch");
    strategy.configs.push_back(std::move(*split));
  }
  return strategy;
}

Expected<Executor> Executor::CreatePipeline(const Graph& graph, const Topology& topology, const PipelinePlan& plan,
                                            const ExecOptions& options) {
  if (Status s = ValidateExecOptions(options); !s.ok()) return s.error();
  if (graph.num_ops() == 0) return Error{"graph '" + graph.name() + "' has no ops to execute"};
  Expected<Strategy> strategy = MicrobatchStrategy(graph, topology, plan);
  if (!strategy.ok()) return strategy.error();
  Expected<BackendInfo> backend = ResolveBackend(options.backend, topology);
  if (!backend.ok()) return backend.error();
  exec::ConfigureTorch();
  return CreatePartitioned(graph, topology, *strategy, options, *backend, nullptr, {}, &plan);
}

Expected<ExecResult> ExecutePipeline(const Graph& graph, const Topology& topology, const PipelinePlan& plan,
                                     const ExecOptions& options) {
  Expected<Executor> executor = Executor::CreatePipeline(graph, topology, plan, options);
  if (!executor.ok()) return executor.error();
  return executor->Run();
}

}  // namespace devplace
