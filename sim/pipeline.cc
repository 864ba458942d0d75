#include "sim/pipeline.h"

#include <algorithm>
#include <numeric>

#include "core/check.h"
#include "sim/engine.h"
#include "sim/full_run.h"
#include "sim/memory.h"
#include "sim/pipeline_build.h"

namespace devplace {

std::string_view ToString(PipelineTaskKind kind) {
  switch (kind) {
    case PipelineTaskKind::kForward: return "forward";
    case PipelineTaskKind::kBackward: return "backward";
    case PipelineTaskKind::kWeightGradient: return "weight_gradient";
    case PipelineTaskKind::kActivation: return "activation";
    case PipelineTaskKind::kGradient: return "gradient";
    case PipelineTaskKind::kAllReduce: return "allreduce";
    case PipelineTaskKind::kUpdate: return "update";
    case PipelineTaskKind::kShardComm: return "shard_comm";
  }
  return "?";
}

namespace {

// Per-stage statistics and the overall bubble from the assembled result and the activation peaks.
void StageStats(const PipelinePlan& plan, const sim::PipelineTasks& tasks, const std::vector<int64_t>& act_peak,
                PipelineResult* result) {
  const SimResult& r = result->sim;
  double busy = 0.0;
  int64_t devices = 0;
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    PipelineStageStats st;
    for (DeviceId d : plan.stages[s].devices) {
      st.busy_seconds = std::max(st.busy_seconds, r.devices[d].busy_seconds);
      st.activation_peak_bytes = std::max(st.activation_peak_bytes, act_peak[d]);
      st.peak_bytes = std::max(st.peak_bytes, r.devices[d].peak_bytes);
      busy += r.devices[d].busy_seconds;
      ++devices;
    }
    st.bubble_fraction = r.step_time > 0 ? 1.0 - st.busy_seconds / r.step_time : 0.0;
    st.max_in_flight = tasks.max_in_flight[s];
    result->stages.push_back(st);
  }
  result->bubble_fraction = r.step_time > 0 ? 1.0 - busy / (static_cast<double>(devices) * r.step_time) : 0.0;
}

}  // namespace

Expected<PipelineResult> SimulatePipeline(const Graph& graph, const Topology& topology, const PipelinePlan& plan,
                                          const CostModel& cost, const SimOptions& options) {
  if (Status s = ValidateSimOptions(options); !s) return s.error();
  if (Status s = sim::CheckGraph(graph); !s) return s.error();
  if (Status s = ValidatePipelinePlan(plan, graph, topology); !s) return s.error();
  const Expected<std::vector<int32_t>> stage_of = AssignStages(plan, graph);
  if (!stage_of) return stage_of.error();
  sim::PipelineTasks tasks;
  if (Status s = sim::BuildPipelineTasks(graph, topology, plan, *stage_of, cost, options, &tasks); !s)
    return s.error();
  if (Status s = sim::CheckHorizon(tasks.totals); !s) return s.error();
  sim::TaskGraph& tg = tasks.tg;
  sim::Engine engine;
  sim::Timing timing;
  engine.Run(tg, &timing, sim::Record::kAll);
  DEVPLACE_CHECK(static_cast<int32_t>(timing.order.size()) == tg.num_tasks(), "pipeline schedule deadlocked");
  const sim::Time max_end = sim::MaxEnd(engine.last_end());
  sim::PeakScratch peaks;
  const std::vector<int64_t> dynamic = peaks.DynamicPeaks(tg, timing, max_end);
  // The kept activations alone: the same replay with only the forward tasks' buffers.
  std::swap(tg.mem_bytes, tasks.stash_bytes);
  const std::vector<int64_t> kept = peaks.DynamicPeaks(tg, timing, max_end);
  std::swap(tg.mem_bytes, tasks.stash_bytes);

  PipelineResult result;
  SimOptions assemble = options;
  assemble.keep_timeline = false;
  result.sim = sim::Assemble(topology, tg, timing, tasks.totals, engine.last_end(), engine.last_task(),
                             tasks.static_bytes, dynamic, assemble);
  result.sim.critical_path.clear();  // its entries are stages, not ops
  StageStats(plan, tasks, kept, &result);
  if (options.keep_timeline) {
    std::vector<int32_t> order = timing.order;
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return timing.start[a] < timing.start[b]; });
    result.timeline.reserve(order.size());
    for (int32_t t : order)
      result.timeline.push_back({tasks.kind[t], tg.op[t], tasks.peer[t], tasks.microbatch[t], tg.resource[t],
                                 tg.bytes[t], static_cast<double>(timing.start[t]) * sim::kSecondsPerTick,
                                 static_cast<double>(timing.end[t]) * sim::kSecondsPerTick});
  }
  return result;
}

}  // namespace devplace
