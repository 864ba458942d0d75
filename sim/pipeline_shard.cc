#include "sim/pipeline_shard.h"

#include <algorithm>

#include "core/check.h"
#include "sim/task_graph.h"

namespace devplace::sim {
namespace {

// Which copy of the lowering a task of it goes to.
enum class Phase : uint8_t { kForward, kBackward, kOnce };

// The lowering's task graph with every task's phase, and the tasks of each step.
struct Lowered {
  TaskGraph tg;
  std::vector<Phase> phase;   // per task
  std::vector<uint8_t> sync;  // per task: a weight-gradient ring of a backward op
};

// The lowering's task groups (built with group lists) and, to tell a backward op's gradient rings from the rest of
// its group, the same build with the backward ops' weights taken away: its groups lack exactly those rings, which
// AppendOpGroup appends last.
void Lower(const StageGraph& sg, const Topology& topology, const CostModel& cost, const SimOptions& options,
           Lowered* out, std::vector<int64_t>* static_bytes) {
  const Graph& g = sg.graph;
  PlainCostCache cache(g.num_ops(), topology.num_devices());
  TaskBuilder builder(g, topology, cost, options, &cache);
  TaskTotals totals;
  builder.BuildAll(sg.strategy, &out->tg, &totals);
  builder.StaticMemory(sg.strategy, {}, static_bytes);
  GraphBuilder b(g.name());
  for (const Op& o : g.ops()) {
    Op copy = o;
    if (o.role == OpRole::kBackward) copy.param_bytes = 0;
    b.add_op(std::move(copy));
  }
  for (const Edge& e : g.edges()) b.add_edge(e.src, e.dst, e.bytes);
  const Graph bare = std::move(b).Build().value();  // the same ops and edges, fewer weights
  PlainCostCache bare_cache(g.num_ops(), topology.num_devices());
  TaskBuilder bare_builder(bare, topology, cost, options, &bare_cache);
  TaskGraph without;
  bare_builder.BuildAll(sg.strategy, &without, &totals);
  const TaskGraph& tg = out->tg;
  out->phase.assign(static_cast<size_t>(tg.num_tasks()), Phase::kOnce);
  out->sync.assign(static_cast<size_t>(tg.num_tasks()), 0);
  auto phase_of = [&](OpRole role) {
    return role == OpRole::kForward ? Phase::kForward : role == OpRole::kBackward ? Phase::kBackward : Phase::kOnce;
  };
  for (int32_t group = 0; group < static_cast<int32_t>(tg.group_task_begin.size()); ++group) {
    const bool op_group = group < g.num_ops();
    const OpId op = op_group ? group : g.edge(group - g.num_ops()).dst;
    const int32_t begin = tg.group_task_begin[group], count = tg.group_task_count[group];
    const int32_t kept = op_group ? without.group_task_count[group] : count;
    for (int32_t i = 0; i < count; ++i) {
      out->phase[begin + i] = i < kept ? phase_of(g.op(op).role) : Phase::kOnce;
      out->sync[begin + i] = i >= kept;
      DEVPLACE_CHECK(i < kept || tg.kind[begin + i] == TaskKind::kCollective,
                     "a backward op's weight-gradient rings are not the last tasks of its group");
    }
  }
}

class Splicer {
 public:
  Splicer(const StageGraph& sg, const Lowered& low, const Topology& topology, int32_t stage,
          const std::vector<DeviceId>& devices, int32_t microbatches, PipelineTasks* out, StageMarkers* markers)
      : sg_(sg), low_(low), topology_(topology), stage_(stage), devices_(devices), M_(microbatches), out_(*out),
        markers_(*markers) {}

  void Run(const std::vector<StageStep>& order) {
    const int32_t k = static_cast<int32_t>(devices_.size());
    for (auto* v : {&markers_.f_start, &markers_.f_done, &markers_.b_start, &markers_.b_done})
      v->assign(static_cast<size_t>(k) * M_, -1);
    index_.assign(topology_.num_devices(), -1);
    for (int32_t j = 0; j < k; ++j) index_[devices_[j]] = j;
    copy_.assign(static_cast<size_t>(2) * M_ + 1, {});
    std::vector<int32_t> prev_done(static_cast<size_t>(k), -1);
    for (const StageStep& step : order) {
      const Phase phase = step.forward ? Phase::kForward : Phase::kBackward;
      std::vector<int32_t>& starts = step.forward ? markers_.f_start : markers_.b_start;
      std::vector<int32_t>& dones = step.forward ? markers_.f_done : markers_.b_done;
      const PipelineTaskKind kind = step.forward ? PipelineTaskKind::kForward : PipelineTaskKind::kBackward;
      std::vector<int32_t> start(static_cast<size_t>(k)), done(static_cast<size_t>(k));
      for (int32_t j = 0; j < k; ++j) {
        start[j] = starts[j * M_ + step.microbatch] =
            AppendPipelineTask(&out_, devices_[j], 1, kind, stage_, -1, step.microbatch);
        if (prev_done[j] >= 0) Dep(prev_done[j], start[j]);
      }
      Copy(phase, step.microbatch, Slot(phase, step.microbatch));
      for (int32_t j = 0; j < k; ++j)
        done[j] = dones[j * M_ + step.microbatch] =
            AppendPipelineTask(&out_, devices_[j], 1, kind, stage_, -1, step.microbatch);
      Chain(Slot(phase, step.microbatch), start, done);
      prev_done = done;
    }
    Copy(Phase::kOnce, -1, 2 * M_);
    Link();
  }

 private:
  size_t Slot(Phase phase, int32_t m) const { return static_cast<size_t>(phase == Phase::kForward ? m : M_ + m); }

  void Dep(int32_t from, int32_t to) {
    out_.tg.dep_from.push_back(from);
    out_.tg.dep_to.push_back(to);
  }

  // Copies the lowering's tasks of `phase` as step slot `slot` (micro-batch m; -1 for the once-per-step tasks).
  void Copy(Phase phase, int32_t m, size_t slot) {
    const TaskGraph& from = low_.tg;
    std::vector<int32_t>& ids = copy_[slot];
    ids.assign(static_cast<size_t>(from.num_tasks()), -1);
    TaskGraph& tg = out_.tg;
    for (int32_t t = 0; t < from.num_tasks(); ++t) {
      if (low_.phase[t] != phase) continue;
      const bool compute = from.kind[t] == TaskKind::kCompute;
      const OpRole role = sg_.graph.op(from.op[t]).role;
      const PipelineTaskKind kind = low_.sync[t] ? PipelineTaskKind::kAllReduce
                                    : !compute   ? PipelineTaskKind::kShardComm
                                    : role == OpRole::kForward  ? PipelineTaskKind::kForward
                                    : role == OpRole::kBackward ? PipelineTaskKind::kBackward
                                                                : PipelineTaskKind::kUpdate;
      const int32_t id = ids[t] =
          AppendPipelineTask(&out_, from.resource[t], from.duration[t], kind, stage_,
                             kind == PipelineTaskKind::kAllReduce ? stage_ : -1, m);
      tg.kind[id] = from.kind[t];
      tg.first_hop[id] = from.first_hop[t];
      tg.fallback[id] = from.fallback[t];
      tg.bytes[id] = from.bytes[t];
      tg.mem_bytes[id] = from.mem_bytes[t];
      tg.mem_device[id] = from.mem_device[t];
      if (compute && role == OpRole::kForward && ReadByBackward(from.op[t])) out_.stash_bytes[id] = from.mem_bytes[t];
    }
  }

  bool ReadByBackward(OpId op) const {
    for (int32_t e : sg_.graph.out_edges(op))
      if (sg_.graph.op(sg_.graph.edge(e).dst).role == OpRole::kBackward) return true;
    return false;
  }

  // Inside step slot `slot`: its first tasks on each device wait for the device's opening marker, and the closing
  // marker for its last tasks there (a transfer or collective hop ending the step counts on the device holding its
  // buffer, else on every device).
  void Chain(size_t slot, const std::vector<int32_t>& start, const std::vector<int32_t>& done) {
    const TaskGraph& from = low_.tg;
    const std::vector<int32_t>& ids = copy_[slot];
    std::vector<uint8_t> has_pred(from.num_tasks(), 0), has_succ(from.num_tasks(), 0);
    for (size_t i = 0; i < from.dep_from.size(); ++i) {
      const int32_t u = from.dep_from[i], v = from.dep_to[i];
      if (ids[u] >= 0 && ids[v] >= 0) {
        has_succ[u] = 1;
        has_pred[v] = 1;
      }
    }
    for (int32_t t = 0; t < from.num_tasks(); ++t) {
      if (ids[t] < 0) continue;
      const DeviceId on = from.resource[t] < from.num_devices ? from.resource[t] : from.mem_device[t];
      for (int32_t j = 0; j < static_cast<int32_t>(start.size()); ++j) {
        if (on >= 0 && index_[on] != j) continue;
        if (!has_pred[t]) Dep(start[j], ids[t]);
        if (!has_succ[t]) Dep(ids[t], done[j]);
      }
    }
  }

  // The lowering's dependencies between the copies: within a step, from a micro-batch's forward to its backward,
  // and from the last micro-batch's backward (or forward) to the once-per-step tasks.
  void Link() {
    const TaskGraph& from = low_.tg;
    const size_t once = static_cast<size_t>(2) * M_;
    for (size_t i = 0; i < from.dep_from.size(); ++i) {
      const int32_t u = from.dep_from[i], v = from.dep_to[i];
      const Phase pu = low_.phase[u], pv = low_.phase[v];
      if (pv == Phase::kOnce) {
        Dep(copy_[pu == Phase::kOnce ? once : Slot(pu, M_ - 1)][u], copy_[once][v]);
        continue;
      }
      DEVPLACE_CHECK(pu != Phase::kOnce && !(pu == Phase::kBackward && pv == Phase::kForward),
                     "a sharded stage's lowering runs against the training order");
      for (int32_t m = 0; m < M_; ++m) Dep(copy_[Slot(pu, m)][u], copy_[Slot(pv, m)][v]);
    }
  }

  const StageGraph& sg_;
  const Lowered& low_;
  const Topology& topology_;
  const int32_t stage_;
  const std::vector<DeviceId>& devices_;
  const int32_t M_;
  PipelineTasks& out_;
  StageMarkers& markers_;
  std::vector<int32_t> index_;                // per device: its position in the stage, or -1
  std::vector<std::vector<int32_t>> copy_;    // per step slot (forwards, backwards, once): lowering task -> id
};

}  // namespace

void AppendShardedStage(const StageGraph& sg, const Topology& topology, const CostModel& cost,
                        const SimOptions& options, const std::vector<StageStep>& order, int32_t stage,
                        const std::vector<DeviceId>& devices, int32_t microbatches, PipelineTasks* out,
                        StageMarkers* markers) {
  Lowered low;
  std::vector<int64_t> static_bytes;
  Lower(sg, topology, cost, options, &low, &static_bytes);
  for (size_t d = 0; d < static_bytes.size(); ++d) out->static_bytes[d] += static_bytes[d];
  Splicer(sg, low, topology, stage, devices, microbatches, out, markers).Run(order);
}

}  // namespace devplace::sim
